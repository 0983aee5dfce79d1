/* serve.c — the exec service inside a sandbox. One forked "shepherd" per connection: it
 * becomes a child subreaper, starts the command in a new session, and so can find and kill
 * every process the command started (they all stay below it, however they daemonize). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/localproto.h"
#include "init.h"

/* How long a client may take to send its request: it sends it at once, so this only guards
 * against a stuck peer holding a shepherd forever. */
#define REQUEST_TIMEOUT_MS 10000
/* Processes one kill_tree pass can track; a sandbox with more is a fork bomb, and the
 * repeated passes still get them all. */
#define MAX_PROCS 32768
/* Passes before kill_tree gives up; each pass kills everything it saw. */
#define MAX_KILL_ROUNDS 2000

struct proc {
	pid_t pid, ppid;
	char state;
};

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, REQUEST_TIMEOUT_MS) <= 0)
			return -1;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void send_result(int conn, int wstatus, int exec_errno, int killed)
{
	struct lp_result r = {LP_MAGIC, wstatus, exec_errno, (uint32_t)killed};
	ssize_t n = send(conn, &r, sizeof r, MSG_NOSIGNAL);
	(void)n;
}

/* Reads the process table of this pid namespace. */
static size_t scan_procs(struct proc *ps, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL && n < max) {
		char path[64], buf[512], *rp;
		int fd;
		ssize_t len;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		rp = strrchr(buf, ')');	/* comm may hold spaces and parentheses */
		if (rp == NULL || rp[1] != ' ')
			continue;
		ps[n].pid = atoi(de->d_name);
		ps[n].state = rp[2];
		ps[n].ppid = atoi(rp + 4);
		n++;
	}
	closedir(d);
	return n;
}

/* SIGKILLs every live descendant of this process; returns how many it found. */
static size_t kill_descendants(struct proc *ps)
{
	size_t n = scan_procs(ps, MAX_PROCS), i, live = 0;
	static char mark[MAX_PROCS];
	int changed = 1;

	memset(mark, 0, n);
	while (changed) {
		changed = 0;
		for (i = 0; i < n; i++) {
			if (mark[i])
				continue;
			if (ps[i].ppid == getpid()) {
				mark[i] = 1;
				changed = 1;
			} else {
				size_t j;
				for (j = 0; j < n; j++) {
					if (mark[j] && ps[j].pid == ps[i].ppid) {
						mark[i] = 1;
						changed = 1;
						break;
					}
				}
			}
		}
	}
	for (i = 0; i < n; i++) {
		if (mark[i] && ps[i].state != 'Z' && ps[i].state != 'X') {
			kill(ps[i].pid, SIGKILL);
			live++;
		}
	}
	return live;
}

/* Kills the command's whole tree and reaps it, recording the command's own status. */
static void kill_tree(pid_t child, int *done, int *wstatus)
{
	static struct proc ps[MAX_PROCS];
	int round;

	kill(-child, SIGKILL);
	for (round = 0; round < MAX_KILL_ROUNDS; round++) {
		size_t live = kill_descendants(ps);
		int st;
		pid_t p;

		while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
			if (p == child) {
				*done = 1;
				*wstatus = st;
			}
		}
		if (p < 0 && errno == ECHILD)
			return;
		if (live == 0)
			usleep(1000);
	}
}

static void start_child(char **argv, char **env, const char *workdir, int fds[3], int errw)
{
	sigset_t all;
	int i, hi[3], err;

	sigemptyset(&all);
	for (i = 1; i < NSIG; i++)
		signal(i, SIG_DFL);
	sigprocmask(SIG_SETMASK, &all, NULL);
	setsid();
	/* Move the three fds out of the way before placing them, whatever their numbers. */
	for (i = 0; i < 3; i++)
		hi[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
	for (i = 0; i < 3; i++)
		if (hi[i] < 0 || dup2(hi[i], i) < 0)
			goto fail;
	for (i = 0; env[i]; i++)
		putenv(env[i]);
	/* No workdir: stay where the service runs (an image's WorkingDir, else "/"). */
	if (workdir[0] && chdir(workdir) < 0) {
		err = errno;
		if (write(errw, &err, sizeof err) < 0)
			_exit(126);
		_exit(126);
	}
	execvp(argv[0], argv);
fail:
	err = errno;
	if (write(errw, &err, sizeof err) < 0)
		_exit(127);
	_exit(127);
}

/* Splits the payload into workdir, argv and env; every string must end inside it. */
static int parse_payload(char *p, uint32_t len, char **workdir, char ***argv, char ***env)
{
	uint32_t argc, envc, i;
	char *end = p + len, **a, **e;

	if (len < 8)
		return -1;
	memcpy(&argc, p, 4);
	memcpy(&envc, p + 4, 4);
	if (argc == 0 || argc > LP_MAX_ARGS || envc > LP_MAX_ARGS)
		return -1;
	p += 8;
	a = calloc((size_t)argc + 1, sizeof *a);
	e = calloc((size_t)envc + 1, sizeof *e);
	if (a == NULL || e == NULL)
		goto fail;
	for (i = 0; i < 1 + argc + envc; i++) {
		char *nul = memchr(p, '\0', (size_t)(end - p));
		if (nul == NULL)
			goto fail;
		if (i == 0)
			*workdir = p;
		else if (i <= argc)
			a[i - 1] = p;
		else
			e[i - 1 - argc] = p;
		p = nul + 1;
	}
	*argv = a;
	*env = e;
	return 0;
fail:
	free(a);
	free(e);
	return -1;
}

static int shepherd(int conn)
{
	struct lp_hdr h;
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	struct iovec iov = {&h, sizeof h};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf};
	struct cmsghdr *c;
	int fds[3] = {-1, -1, -1}, nfds = 0, errp[2], sfd, wstatus = 0, done = 0, exec_errno = 0;
	char *payload, *workdir = NULL, **argv = NULL, **env = NULL;
	sigset_t chld;
	pid_t child;
	ssize_t n;

	n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return 1;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			if (nfds > 3)
				nfds = 3;
			memcpy(fds, CMSG_DATA(c), (size_t)nfds * sizeof(int));
		}
	}
	if ((size_t)n < sizeof h && read_full(conn, (char *)&h + n, sizeof h - (size_t)n) < 0)
		return 1;
	if (h.magic != LP_MAGIC)
		return 1;
	if (h.type == LP_PING) {
		send_result(conn, 0, 0, 0);
		return 0;
	}
	if (h.type != LP_EXEC || nfds != 3 || h.len > LP_MAX_PAYLOAD)
		return 1;
	payload = malloc((size_t)h.len + 1);
	if (payload == NULL || read_full(conn, payload, h.len) < 0)
		return 1;
	if (parse_payload(payload, h.len, &workdir, &argv, &env) < 0)
		return 1;

	prctl(PR_SET_CHILD_SUBREAPER, 1);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	signal(SIGCHLD, SIG_DFL);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || pipe2(errp, O_CLOEXEC) < 0)
		return 1;
	child = fork();
	if (child < 0) {
		send_result(conn, 0, errno, 0);	/* EAGAIN: at the sandbox's process limit */
		return 1;
	}
	if (child == 0) {
		close(conn);
		close(errp[0]);
		start_child(argv, env, workdir, fds, errp[1]);
	}
	close(errp[1]);
	close(fds[0]);
	close(fds[1]);
	close(fds[2]);
	if (read(errp[0], &exec_errno, sizeof exec_errno) != sizeof exec_errno)
		exec_errno = 0;
	close(errp[0]);

	while (!done) {
		struct pollfd p[2] = {{.fd = conn, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		struct signalfd_siginfo si;
		char b;
		pid_t w;
		int st;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[0].revents) {
			/* LP_KILL, a hang-up or garbage: the caller gave up; nothing may outlive it. */
			n = read(conn, &b, 1);
			(void)n;
			kill_tree(child, &done, &wstatus);
			send_result(conn, wstatus, exec_errno, 1);
			return 0;
		}
		while (read(sfd, &si, sizeof si) == sizeof si)
			;
		while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
			if (w == child) {
				done = 1;
				wstatus = st;
			}
		}
	}
	send_result(conn, wstatus, exec_errno, 0);
	return 0;
}

int init_serve(int listen_fd)
{
	signal(SIGCHLD, SIG_IGN);	/* shepherds are reaped by the kernel */
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		pid_t p;

		if (conn < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
			    errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				if (errno != EINTR && errno != ECONNABORTED)
					usleep(10000);
				continue;
			}
			return 111;
		}
		p = fork();
		if (p == 0) {
			close(listen_fd);
			_exit(shepherd(conn));
		}
		if (p < 0)	/* EAGAIN: the sandbox's process limit is reached; say so */
			send_result(conn, 0, errno, 0);
		close(conn);
	}
}
