/* portfwd.c — reaching a local sandbox's loopback from the host (see portfwd.h for the parts).
 *
 * Which namespace: the sandbox's supervisor (cmd/sbx-init/supervise.c) holds DIR/lock while the
 * sandbox lives and wrote its pid to DIR/supervisor.pid; its child is bubblewrap, and
 * bubblewrap's child (the sandbox's pid 1) is the first process in the sandbox's network
 * namespace. Pids are reused, so each step is checked after it is pinned: the supervisor's
 * pidfd is taken before the lock is seen held (so the pidfd is the lock holder's), and the
 * sandbox process's /proc directory is opened before its parent is read from it (an open
 * /proc/PID directory never follows the pid to another process).
 *
 * Entering it: setns into a network namespace takes CAP_SYS_ADMIN over the user namespace that
 * owns it and in one's own, so the helper first joins that user namespace (bubblewrap's, whose
 * owner is this user: a process of its owner has every capability in it), as the supervisor's
 * network start does. Root can skip that step. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/nsfs.h>
#include <netinet/in.h>

#include "gojson.h"
#include "name.h"
#include "paths.h"
#include "portfwd.h"
#include "xalloc.h"

/* supervisor.pid and a record are a line or a small document of ours. */
#define SMALL_FILE_MAX 4096
/* How long -close waits for a forward to end after SIGTERM (it only closes sockets). */
#define STOP_WAIT_MS 5000
/* How long the helper may take to hand over a socket: it only calls socket(2). */
#define HELPER_WAIT_MS 5000

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static char *sandbox_dir(const char *ns, const char *name, struct sbx_err *e)
{
	char *root, *dir;

	if (sandbox_name_check(name, e) < 0)
		return NULL;
	if ((root = paths_state_root(e)) == NULL)
		return NULL;
	dir = xasprintf("%s/%s/%s", root, ns, name);
	free(root);
	return dir;
}

/* 1 when someone holds dir/FILE's flock, 0 when not (taking it for a moment to see). */
static int lock_held(const char *dir, const char *file)
{
	char path[PATH_MAX];
	int fd, held;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return 0;
	held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

/* A small file of ours from fd, NUL-terminated (NULL when empty, unreadable or too big). */
static char *read_fd_small(int fd)
{
	char *buf = xmalloc(SMALL_FILE_MAX + 1);
	size_t n = 0;
	ssize_t r;

	while (n < SMALL_FILE_MAX && (r = read(fd, buf + n, SMALL_FILE_MAX - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	if (n == 0 || n == SMALL_FILE_MAX) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

static long read_number(int dirfd, const char *file)
{
	char *s;
	long v;
	int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -1;
	s = read_fd_small(fd);
	close(fd);
	if (s == NULL)
		return -1;
	v = strtol(s, NULL, 10);
	free(s);
	return v;
}

/* The parent of the process whose /proc directory is pdir (field 4 of stat, after the
 * command's closing parenthesis), or -1. */
static long parent_of(int pdir)
{
	int fd = openat(pdir, "stat", O_RDONLY | O_CLOEXEC);
	char *buf = fd >= 0 ? read_fd_small(fd) : NULL, *p;
	long ppid = -1;

	if (fd >= 0)
		close(fd);
	if (buf && (p = strrchr(buf, ')')) != NULL && sscanf(p + 1, " %*c %ld", &ppid) != 1)
		ppid = -1;
	free(buf);
	return ppid;
}

/* The children of pid, from one walk of /proc (at most cap). */
static int children_of(pid_t pid, pid_t *out, int cap)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return 0;
	while (n < cap && (de = readdir(d)) != NULL) {
		int pdir;
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if ((pdir = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			continue;
		if (parent_of(pdir) == pid)
			out[n++] = (pid_t)atol(de->d_name);
		close(pdir);
	}
	closedir(d);
	return n;
}

/* Opens the network namespace of the supervisor's grandchild that is not in the supervisor's
 * own (bubblewrap's child: the sandbox). -1 when there is none (yet, or any more). */
#define KIDS_MAX 16
static int sandbox_netns(pid_t sup)
{
	pid_t kids[KIDS_MAX], grand[KIDS_MAX];
	struct stat own, st;
	char path[64];
	int nk, ng, i, j;

	snprintf(path, sizeof path, "/proc/%ld/ns/net", (long)sup);
	if (stat(path, &own) < 0)
		return -1;
	nk = children_of(sup, kids, KIDS_MAX);
	for (i = 0; i < nk; i++) {
		ng = children_of(kids[i], grand, KIDS_MAX);
		for (j = 0; j < ng; j++) {
			int pdir, fd;
			snprintf(path, sizeof path, "/proc/%ld", (long)grand[j]);
			if ((pdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
				continue;
			/* Pinned: still bubblewrap's child, so the namespace is the sandbox's. */
			fd = parent_of(pdir) == kids[i] ? openat(pdir, "ns/net", O_RDONLY | O_CLOEXEC)
							 : -1;
			close(pdir);
			if (fd >= 0 && fstat(fd, &st) == 0 &&
			    (st.st_ino != own.st_ino || st.st_dev != own.st_dev))
				return fd;
			if (fd >= 0)
				close(fd);
		}
	}
	return -1;
}

static void pf_init(struct portfwd *pf)
{
	memset(pf, 0, sizeof *pf);
	pf->sup_fd = pf->userns = pf->netns = pf->helper_sock = pf->record = -1;
	pf->helper = -1;
}

int portfwd_open(struct portfwd *pf, const char *ns, const char *name, int port,
		 struct sbx_err *e)
{
	int dfd = -1;
	long sup;

	pf_init(pf);
	pf->port = port;
	if ((pf->dir = sandbox_dir(ns, name, e)) == NULL)
		return -1;
	pf->name = xstrdup(name);
	if ((dfd = open(pf->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0 ||
	    (sup = read_number(dfd, "supervisor.pid")) <= 1 ||
	    ((pf->sup_fd = pidfd_open_((pid_t)sup)) < 0 && errno != ENOSYS) ||
	    !lock_held(pf->dir, "lock") || read_number(dfd, "supervisor.pid") != sup) {
		if (dfd >= 0)
			close(dfd);
		err_set(e, SBX_ENOTFOUND, "sandbox %s not found", name);
		goto fail;
	}
	close(dfd);
	if ((pf->netns = sandbox_netns((pid_t)sup)) < 0) {
		err_set(e, SBX_ENOTFOUND, "sandbox %s not found (no process of it runs)", name);
		goto fail;
	}
	if ((pf->userns = ioctl(pf->netns, NS_GET_USERNS)) < 0) {
		err_sys(e, errno, "cannot find the user namespace of sandbox %s", name);
		goto fail;
	}
	return 0;
fail:
	portfwd_close(pf);
	return -1;
}

char *portfwd_remote_dir(const char *backend, const char *ns, const char *name,
			 struct sbx_err *e)
{
	char *root, *dir;

	if (sandbox_name_check(name, e) < 0 || (root = paths_state_root(e)) == NULL)
		return NULL;
	/* A dot name: never a namespace of local sandboxes. */
	dir = xasprintf("%s/.ports-%s/%s/%s", root, backend, ns, name);
	free(root);
	return dir;
}

int portfwd_open_remote(struct portfwd *pf, const char *backend, const char *ns,
			const char *name, int port, struct sbx_err *e)
{
	pf_init(pf);
	pf->port = port;
	if ((pf->dir = portfwd_remote_dir(backend, ns, name, e)) == NULL)
		return -1;
	pf->name = xstrdup(name);
	if (paths_mkdirs(pf->dir, 0700, e) < 0) {
		portfwd_close(pf);
		return -1;
	}
	return 0;
}

int portfwd_alive(const struct portfwd *pf)
{
	return lock_held(pf->dir, "lock");
}

/* Closes every descriptor from 3 up but keep. */
static void close_all_but(int keep)
{
	if (keep > 3)
		syscall(SYS_close_range, 3, keep - 1, 0);
	syscall(SYS_close_range, keep + 1, ~0U, 0);
}

/* The helper: in the sandbox's network namespace, one new TCP socket per request byte on
 * sock, handed back with SCM_RIGHTS, until sock closes. It never connects, reads or writes a
 * socket of its own: the host side does, so what it can do there is only to make sockets. */
static _Noreturn void helper_main(int sock, int userns, int netns, pid_t parent)
{
	char byte;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent || null < 0)
		_exit(1);
	/* It says nothing, and must not hold its parent's terminal or pipes open. */
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	prctl(PR_SET_DUMPABLE, 0);
	if (setns(userns, CLONE_NEWUSER) < 0 && geteuid() != 0)
		_exit(2);
	if (setns(netns, CLONE_NEWNET) < 0)
		_exit(3);
	close(userns);
	close(netns);
	close_all_but(sock);
	while (recv(sock, &byte, 1, 0) == 1) {
		char cbuf[CMSG_SPACE(sizeof(int))] = {0};
		struct iovec iov = {&byte, 1};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof cbuf};
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		if (s < 0) {
			byte = 0;	/* no socket: says so with an empty message */
			mh.msg_control = NULL;
			mh.msg_controllen = 0;
		} else {
			byte = 1;
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &s, sizeof s);
		}
		if (sendmsg(sock, &mh, MSG_NOSIGNAL) != 1)
			_exit(4);
		if (s >= 0)
			close(s);
	}
	_exit(0);
}

int portfwd_start(struct portfwd *pf, struct sbx_err *e)
{
	int sp[2], st;
	pid_t parent = getpid();

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return err_sys(e, errno, "cannot make a socket pair");
	pf->helper = fork();
	if (pf->helper == 0) {
		close(sp[0]);
		helper_main(sp[1], pf->userns, pf->netns, parent);
	}
	close(sp[1]);
	if (pf->helper < 0) {
		close(sp[0]);
		return err_sys(e, errno, "cannot start the helper");
	}
	pf->helper_sock = sp[0];
	/* One socket now: the helper did enter the namespace, or says why not. */
	if ((st = portfwd_socket(pf, e)) < 0) {
		int ws = 0;
		while (waitpid(pf->helper, &ws, 0) < 0 && errno == EINTR)
			;
		pf->helper = -1;
		if (WIFEXITED(ws) && (WEXITSTATUS(ws) == 2 || WEXITSTATUS(ws) == 3))
			return err_set(e, SBX_EPERM, "cannot enter the network namespace of sandbox "
				       "%s: %s is refused to this user", pf->name,
				       WEXITSTATUS(ws) == 2 ? "its user namespace" : "setns");
		return -1;
	}
	close(st);
	return 0;
}

int portfwd_socket(struct portfwd *pf, struct sbx_err *e)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0}, byte = 1;
	struct iovec iov = {&byte, 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf};
	struct pollfd p = {.fd = pf->helper_sock, .events = POLLIN};
	struct cmsghdr *c;
	int s = -1;

	if (send(pf->helper_sock, &byte, 1, MSG_NOSIGNAL) != 1 ||
	    poll(&p, 1, HELPER_WAIT_MS) != 1 || recvmsg(pf->helper_sock, &mh, MSG_CMSG_CLOEXEC) != 1)
		return err_set(e, SBX_EIO, "the helper in sandbox %s's network namespace is gone",
			       pf->name);
	c = CMSG_FIRSTHDR(&mh);
	if (byte != 1 || c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
		return err_set(e, SBX_EIO, "cannot make a socket in sandbox %s", pf->name);
	memcpy(&s, CMSG_DATA(c), sizeof s);
	return s;
}

/* Splits "HOST:PORT" / "[HOST]:PORT" into a numeric address. 0 or -1. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len,
		      struct sbx_err *e)
{
	char host[PORTFWD_ADDR_MAX];
	const char *colon = strrchr(addr, ':'), *h = host;
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				 .ai_socktype = SOCK_STREAM}, *ai;
	char *end;
	long port;
	size_t hl;

	if (strlen(addr) >= PORTFWD_ADDR_MAX || colon == NULL || colon == addr)
		goto bad;
	hl = (size_t)(colon - addr);
	memcpy(host, addr, hl);
	host[hl] = 0;
	if (host[0] == '[') {
		if (hl < 3 || host[hl - 1] != ']')
			goto bad;
		host[hl - 1] = 0;
		h = host + 1;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (colon[1] == 0 || *end != 0 || errno != 0 || port < 0 || port > 65535)
		goto bad;
	if (getaddrinfo(h, colon + 1, &hints, &ai) != 0)
		goto bad;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
bad:
	return err_set(e, SBX_EINVAL, "-listen wants a numeric HOST:PORT (127.0.0.1:8080), "
		       "not \"%s\"", addr);
}

int portfwd_addr_check(const char *addr, struct sbx_err *e)
{
	struct sockaddr_storage ss;
	socklen_t len;

	return parse_addr(addr, &ss, &len, e);
}

static int listen_unix(struct portfwd *pf, const char *path, struct sbx_err *e)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	mode_t old;
	int s, rc;

	if (strlen(path) >= sizeof sa.sun_path || path[0] == 0)
		return err_set(e, SBX_EINVAL, "-unix path too long or empty: %s", path);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return err_sys(e, errno, "cannot make a socket");
	/* 0600 from the moment it exists: nobody else may connect, even for an instant. */
	old = umask(0177);
	rc = bind(s, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (rc < 0 || chmod(path, 0600) < 0 || listen(s, SOMAXCONN) < 0) {
		int err = errno;
		close(s);
		return err_sys(e, err, "cannot listen on %s", path);
	}
	snprintf(pf->unix_path, sizeof pf->unix_path, "%s", path);
	return s;
}

int portfwd_listen(struct portfwd *pf, const char *addr, const char *unix_path,
		   struct sbx_err *e)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char host[INET6_ADDRSTRLEN], serv[8];
	int s, one = 1;

	if (unix_path)
		return listen_unix(pf, unix_path, e);
	if (parse_addr(addr, &ss, &len, e) < 0)
		return -1;
	if ((s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return err_sys(e, errno, "cannot make a socket");
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(s, (struct sockaddr *)&ss, len) < 0 || listen(s, SOMAXCONN) < 0) {
		int err = errno;
		close(s);
		return err_sys(e, err, "cannot listen on %s", addr);
	}
	len = sizeof ss;
	getsockname(s, (struct sockaddr *)&ss, &len);
	getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, serv, sizeof serv,
		    NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(pf->listen, sizeof pf->listen, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
		 host, serv);
	return s;
}

struct json_object *portfwd_doc(const struct portfwd *pf)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(pf->name));
	json_object_object_add(o, "port", json_object_new_int(pf->port));
	if (pf->unix_path[0]) {
		json_object_object_add(o, "unix", json_object_new_string(pf->unix_path));
	} else {
		char *url = xasprintf("http://%s/", pf->listen);
		json_object_object_add(o, "url", json_object_new_string(url));
		json_object_object_add(o, "listen", json_object_new_string(pf->listen));
		free(url);
	}
	return o;
}

void portfwd_close(struct portfwd *pf)
{
	if (pf->helper_sock >= 0)
		close(pf->helper_sock);
	if (pf->helper > 0) {
		kill(pf->helper, SIGKILL);
		while (waitpid(pf->helper, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (pf->unix_path[0])
		unlink(pf->unix_path);
	if (pf->record >= 0) {
		unlink(pf->record_path);
		close(pf->record);
	}
	if (pf->sup_fd >= 0)
		close(pf->sup_fd);
	if (pf->userns >= 0)
		close(pf->userns);
	if (pf->netns >= 0)
		close(pf->netns);
	free(pf->dir);
	free(pf->name);
	pf_init(pf);
}

/* ---- detached forwards ---- */

int portfwd_record(struct portfwd *pf, struct sbx_err *e)
{
	struct json_object *o = portfwd_doc(pf);
	const char *text;
	char *ports = xasprintf("%s/ports", pf->dir), tmp[PATH_MAX];
	int rc = -1, fd;

	if (mkdir(ports, 0700) < 0 && errno != EEXIST) {
		err_sys(e, errno, "cannot make %s", ports);
		goto out;
	}
	json_object_object_add(o, "pid", json_object_new_int((int)getpid()));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	/* Written and locked under a name walk_records skips, then renamed into place (the lock
	 * goes with the file): no reader ever sees it unlocked and takes it for stale. */
	snprintf(tmp, sizeof tmp, "%s/.%ld.tmp", ports, (long)getpid());
	snprintf(pf->record_path, sizeof pf->record_path, "%s/%ld.json", ports, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0 ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text) || rename(tmp, pf->record_path) < 0) {
		err_sys(e, errno, "cannot write %s", pf->record_path);
		if (fd >= 0) {
			unlink(tmp);
			close(fd);
		}
		goto out;
	}
	pf->record = fd;
	rc = 0;
out:
	json_object_put(o);
	free(ports);
	return rc;
}

/* Each record in dir/ports: fn(record, its path, its pid, arg) for the live ones; stale ones
 * (nobody holds their lock) are removed. */
static int walk_records(const char *dir, int (*fn)(struct json_object *, const char *, pid_t,
						   void *), void *arg)
{
	char *ports = xasprintf("%s/ports", dir);
	DIR *d = opendir(ports);
	struct dirent *de;
	int rc = 0;

	free(ports);
	if (d == NULL)
		return 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		struct json_object *o, *pid;
		const char *why;
		char *s;
		int fd;

		if (de->d_name[0] == '.' || strstr(de->d_name, ".json") == NULL)
			continue;
		if ((fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
			continue;
		if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
			unlinkat(dirfd(d), de->d_name, 0);
			close(fd);
			continue;
		}
		s = read_fd_small(fd);
		close(fd);
		o = s ? gojson_parse(s, strlen(s), &why) : NULL;
		free(s);
		if (o && json_object_object_get_ex(o, "pid", &pid))
			rc = fn(o, de->d_name, (pid_t)json_object_get_int(pid), arg);
		json_object_put(o);
	}
	closedir(d);
	return rc;
}

struct list_ctx {
	int (*fn)(struct json_object *, void *);
	void *arg;
};

static int list_one(struct json_object *o, const char *file, pid_t pid, void *arg)
{
	struct list_ctx *c = arg;

	(void)file;
	(void)pid;
	return c->fn(o, c->arg);
}

/* The sandbox's directory when it lives, else NULL with SBX_ENOTFOUND. */
static char *live_dir(const char *ns, const char *name, struct sbx_err *e)
{
	char *dir = sandbox_dir(ns, name, e);

	if (dir && !lock_held(dir, "lock")) {
		free(dir);
		return err_set(e, SBX_ENOTFOUND, "sandbox %s not found", name), NULL;
	}
	return dir;
}

void portfwd_list_in(const char *dir, int (*fn)(struct json_object *rec, void *arg), void *arg)
{
	struct list_ctx c = {fn, arg};

	walk_records(dir, list_one, &c);
}

int portfwd_list(const char *ns, const char *name,
		 int (*fn)(struct json_object *rec, void *arg), void *arg, struct sbx_err *e)
{
	char *dir = live_dir(ns, name, e);

	if (dir == NULL)
		return -1;
	portfwd_list_in(dir, fn, arg);
	free(dir);
	return 0;
}

/* Adds rec's public fields (not the sandbox's name or the forward's pid) to the array arg. */
static int port_entry(struct json_object *rec, void *arg)
{
	static const char *const keep[] = {"port", "url", "listen", "unix"};
	struct json_object *o = json_object_new_object(), *v;

	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
		if (json_object_object_get_ex(rec, keep[i], &v))
			json_object_object_add(o, keep[i], json_object_get(v));
	json_object_array_add(arg, o);
	return 0;
}

struct json_object *portfwd_ports(const char *ns, const char *name)
{
	struct json_object *a = json_object_new_array();
	struct sbx_err e;

	portfwd_list(ns, name, port_entry, a, &e);	/* gone: none open */
	return a;
}

struct json_object *portfwd_remote_ports(const char *backend, const char *ns, const char *name)
{
	struct json_object *a = json_object_new_array();
	struct sbx_err e;
	char *dir = portfwd_remote_dir(backend, ns, name, &e);

	if (dir)
		portfwd_list_in(dir, port_entry, a);
	free(dir);
	return a;
}

struct stop_ctx {
	const char *dir;
	int port, n;
};

static int stop_one(struct json_object *o, const char *file, pid_t pid, void *arg)
{
	struct stop_ctx *c = arg;
	struct json_object *port;
	char path[PATH_MAX];
	int pfd;

	if (!json_object_object_get_ex(o, "port", &port) || json_object_get_int(port) != c->port ||
	    pid <= 1 || ((pfd = pidfd_open_(pid)) < 0 && errno != ENOSYS))
		return 0;
	snprintf(path, sizeof path, "ports/%s", file);
	/* The pidfd first, then the lock still held: the pidfd is then the holder's, the
	 * forward's own process, and never another that got its pid. */
	if (pfd >= 0 && lock_held(c->dir, path) &&
	    syscall(SYS_pidfd_send_signal, pfd, SIGTERM, NULL, 0) == 0) {
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		poll(&p, 1, STOP_WAIT_MS);
		c->n++;
	} else if (pfd < 0 && lock_held(c->dir, path) && kill(pid, SIGTERM) == 0) {
		/* no pidfds here: the lock, released as the forward ends, says when it has */
		for (int waited = 0; waited < STOP_WAIT_MS && lock_held(c->dir, path); waited += 10)
			usleep(10000);
		c->n++;
	}
	if (pfd >= 0)
		close(pfd);
	return 0;
}

int portfwd_stop_in(const char *dir, int port)
{
	struct stop_ctx c = {dir, port, 0};

	walk_records(dir, stop_one, &c);
	return c.n;
}

int portfwd_stop(const char *ns, const char *name, int port, int *n, struct sbx_err *e)
{
	char *dir = live_dir(ns, name, e);

	if (dir == NULL)
		return -1;
	*n = portfwd_stop_in(dir, port);
	free(dir);
	return 0;
}
