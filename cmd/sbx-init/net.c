/* net.c — the supervisor's half of a sandbox's network (see lib/local/localnet.h): it holds
 * bubblewrap after the namespaces exist and before anything runs in them (--info-fd for the
 * sandbox's pid, --block-fd to hold it), connects the namespace with the helper the plan names
 * (pasta for NAT, sbx-proxy for -allow-host), waits until the helper is ready, and then lets
 * the sandbox start. The helper is the supervisor's child, runs as the sandbox's host user,
 * dies with the supervisor (PR_SET_PDEATHSIG) and is killed at teardown. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"
#include "localnet.h"
#include "init.h"

/* How long a helper may take to connect the namespace: pasta needs well under a second. */
#define NET_READY_TIMEOUT_MS 10000
/* The plan is a few dozen short lines, bubblewrap's info a few hundred bytes. */
#define PLAN_MAX 16384
#define INFO_MAX 4096
/* Arguments a plan may give its helper. */
#define PLAN_ARGS_MAX 64
/* The descriptors bubblewrap gets for --info-fd and --block-fd. */
#define INFO_FD 5
#define BLOCK_FD 6

static struct {
	int active;			/* a plan was loaded */
	int proxy;			/* mode proxy */
	int slirp;			/* mode slirp: NAT by slirp4netns (else pasta) */
	int resolv;			/* DIR/resolv.conf goes in at LOCALNET_RESOLV_FD */
	int cabundle;			/* copies of DIR/ca-bundle.crt from LOCALNET_CA_FD on */
	char *helper, *args[PLAN_ARGS_MAX + 1];
	size_t nargs;
	char *text;
	int info[2], block[2], resolv_fd, ca_fd[2];
	int exit_w;			/* slirp4netns exits when this closes */
	int secrets;			/* -secret: the feed for sbx-proxy, or -1 */
	pid_t pid;			/* the helper */
} np = {.info = {-1, -1}, .block = {-1, -1}, .resolv_fd = -1, .ca_fd = {-1, -1}, .exit_w = -1,
	.secrets = -1,
	.pid = -1};

void net_secrets(int fd)
{
	np.secrets = fd;
}

int net_load(const char *dir)
{
	char path[4096], *line, *save = NULL;

	snprintf(path, sizeof path, "%s/%s", dir, LOCALNET_PLAN);
	np.text = fs_read_small(path, PLAN_MAX, NULL);
	if (np.text == NULL)
		return errno == ENOENT ? 0 : -1;
	for (line = strtok_r(np.text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *val = strchr(line, ' ');
		if (val == NULL)
			return -1;
		*val++ = '\0';
		if (strcmp(line, "mode") == 0) {
			np.proxy = strcmp(val, "proxy") == 0;
			np.slirp = strcmp(val, "slirp") == 0;
		}
		else if (strcmp(line, "helper") == 0)
			np.helper = val;
		else if (strcmp(line, "resolv") == 0)
			np.resolv = 1;
		else if (strcmp(line, "cabundle") == 0)
			np.cabundle = atoi(val) == 2 ? 2 : 1;
		else if (strcmp(line, "arg") == 0 && np.nargs < PLAN_ARGS_MAX)
			np.args[np.nargs++] = val;
		else
			return -1;
	}
	if (np.helper == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/resolv.conf", dir);
	if (np.resolv && (np.resolv_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/%s", dir, LOCALNET_CA_FILE);
	for (int i = 0; i < np.cabundle; i++)
		if ((np.ca_fd[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return -1;
	if (pipe2(np.info, O_CLOEXEC) < 0 || pipe2(np.block, O_CLOEXEC) < 0)
		return -1;
	np.active = 1;
	return 1;
}

char **net_bwrap_argv(char **argv)
{
	size_t n = 0, i;
	char **v;

	if (!np.active)
		return argv;
	while (argv[n])
		n++;
	v = calloc(n + 5, sizeof *v);
	if (v == NULL)
		return NULL;
	v[0] = argv[0];
	v[1] = "--info-fd";
	v[2] = "5";
	v[3] = "--block-fd";
	v[4] = "6";
	for (i = 1; i <= n; i++)
		v[i + 4] = argv[i];
	return v;
}

/* Places fds[i] at targets[i] whatever the numbers involved (first out of the way). */
static int place_fds(const int *fds, const int *targets, int n)
{
	int hi[8];

	for (int i = 0; i < n; i++)
		if ((hi[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64)) < 0)
			return -1;
	for (int i = 0; i < n; i++)
		if (dup2(hi[i], targets[i]) < 0)
			return -1;
	return 0;
}

int net_child_fds(void)
{
	int fds[5] = {np.info[1], np.block[0], np.resolv_fd, np.ca_fd[0], np.ca_fd[1]};
	int to[5] = {INFO_FD, BLOCK_FD, LOCALNET_RESOLV_FD, LOCALNET_CA_FD, LOCALNET_CA_FD + 1};
	int n = 2;

	if (!np.active)
		return 0;
	if (np.resolv)
		n = 3;
	if (np.cabundle) {
		/* (no resolv.conf in proxy mode: the CA copies follow the block at once) */
		fds[n] = np.ca_fd[0];
		to[n++] = LOCALNET_CA_FD;
		if (np.cabundle == 2) {
			fds[n] = np.ca_fd[1];
			to[n++] = LOCALNET_CA_FD + 1;
		}
	}
	return place_fds(fds, to, n);
}

/* Reads bubblewrap's info until its closing brace; the sandbox's pid or -1. */
static pid_t read_child_pid(int fd)
{
	char buf[INFO_MAX];
	size_t got = 0;
	const char *k;

	while (got < sizeof buf - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;
		if (poll(&p, 1, NET_READY_TIMEOUT_MS) <= 0)
			return -1;
		n = read(fd, buf + got, sizeof buf - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = '\0';
		if (strchr(buf, '}'))
			break;
	}
	buf[got] = '\0';
	k = strstr(buf, "\"child-pid\"");
	if (k == NULL || (k = strchr(k, ':')) == NULL)
		return -1;
	return (pid_t)atol(k + 1);
}

/* Root's helper runs as the sandbox's host user, which cannot open a /dev/net/tun that only
 * root may (some hosts make it 0600). In the supervisor's private mount namespace a node of
 * its own, usable by anyone, takes that place; bubblewrap's /dev inside never shows it. */
static void private_tun(void)
{
	struct stat st;

	if (stat("/dev/net/tun", &st) < 0 || (st.st_mode & 0006) == 0006)
		return;
	if (mkdir("/run/sbx-tun", 0755) < 0 && errno != EEXIST)
		return;
	if (mount("sbx-tun", "/run/sbx-tun", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=16k") < 0)
		return;
	if (mknod("/run/sbx-tun/tun", S_IFCHR | 0666, st.st_rdev) < 0 ||
	    chmod("/run/sbx-tun/tun", 0666) < 0)
		return;
	mount("/run/sbx-tun/tun", "/dev/net/tun", NULL, MS_BIND, NULL);
}

/* Becomes the sandbox's host user (uid "-": stay) and dies with the supervisor. */
static int become(const char *uid, const char *gid, pid_t parent)
{
	if (strcmp(uid, "-") != 0) {
		uid_t u = (uid_t)strtoul(uid, NULL, 10);
		gid_t g = (gid_t)strtoul(gid, NULL, 10);
		if (setgroups(0, NULL) < 0 || setresgid(g, g, g) < 0 || setresuid(u, u, u) < 0)
			return -1;
	}
	/* After the uid change, which would clear it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		return -1;
	return 0;
}

/* Starts the helper with fds placed at 3, 4, ... and extra arguments after the plan's. */
static pid_t spawn_helper(const char *dir, const char *uid, const char *gid, const int *fds,
			  int nfds, char *const *extra)
{
	char *argv[PLAN_ARGS_MAX + 16], path[4096];
	int targets[8], log, i, n = 0;
	pid_t parent = getpid(), p;

	snprintf(path, sizeof path, "%s/%s", dir, LOCALNET_HELPER_LOG);
	log = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	argv[n++] = np.helper;
	for (size_t k = 0; k < np.nargs; k++)
		argv[n++] = np.args[k];
	for (i = 0; extra[i]; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	p = fork();
	if (p != 0) {
		if (log >= 0)
			close(log);
		return p;
	}
	for (i = 1; i < NSIG; i++)
		signal(i, SIG_DFL);
	{
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	i = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (i >= 0) {
		dup2(i, 0);
		dup2(i, 1);
	}
	if (log >= 0)
		dup2(log, 2);
	for (i = 0; i < nfds; i++)
		targets[i] = 3 + i;
	if (place_fds(fds, targets, nfds) < 0 || become(uid, gid, parent) < 0) {
		fprintf(stderr, "cannot start %s: %s\n", np.helper, strerror(errno));
		_exit(EXIT_FAIL);
	}
	execv(np.helper, argv);
	fprintf(stderr, "cannot run %s: %s%s\n", np.helper, strerror(errno),
		errno == EACCES ? " (it runs as the sandbox's host user, who must be able to reach "
				  "and execute it)" : "");
	_exit(EXIT_CMD_NOT_FOUND);
}

/* Waits for the helper's readiness on fd: some bytes (ready) or EOF (it failed). */
static int wait_ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b[64];

	if (poll(&p, 1, NET_READY_TIMEOUT_MS) <= 0)
		return -1;
	return read(fd, b, sizeof b) > 0 ? 0 : -1;
}

/* Enters the sandbox's user and network namespaces (in a child: a process that has joined
 * a user namespace cannot leave it). */
static int enter_sandbox_net(int ufd, int nfd)
{
	if (setns(ufd, CLONE_NEWUSER) < 0 && geteuid() != 0)
		return -1;
	return setns(nfd, CLONE_NEWNET);
}

/* Waits until bubblewrap has brought the sandbox's loopback up: it does so after it wrote its
 * info and before it blocks, and pasta configuring the namespace at the same time makes
 * bubblewrap's netlink requests fail now and then. */
static int wait_loopback(int ufd, int nfd)
{
	pid_t p = fork();
	int st;

	if (p == 0) {
		struct ifreq ifr = {0};
		int s;
		if (enter_sandbox_net(ufd, nfd) < 0 ||
		    (s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
			_exit(1);
		snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
		for (int waited = 0; waited < NET_READY_TIMEOUT_MS; waited++) {
			if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP))
				_exit(0);
			usleep(1000);
		}
		_exit(1);
	}
	if (p < 0)
		return -1;
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The proxy's listening socket on the sandbox's loopback, made by a child that enters the
 * sandbox's user and network namespaces and hands the socket back over a Unix socket: the
 * only way out of a -allow-host sandbox is this port, accepted on the host side. */
static int sandbox_listener(int ufd, int nfd)
{
	int sp[2], s = -1, one = 1, st;
	char cbuf[CMSG_SPACE(sizeof(int))] = {0}, byte = 0;
	struct iovec iov = {&byte, 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf};
	struct cmsghdr *c;
	pid_t p;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0)
		return -1;
	p = fork();
	if (p == 0) {
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons(LOCALNET_PROXY_PORT),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		close(sp[0]);
		if (enter_sandbox_net(ufd, nfd) < 0)
			_exit(1);
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		/* Bound even should the loopback have no address yet. */
		if (s < 0 || setsockopt(s, IPPROTO_IP, IP_FREEBIND, &one, sizeof one) < 0 ||
		    bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s, 128) < 0)
			_exit(1);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &s, sizeof s);
		_exit(sendmsg(sp[1], &mh, 0) == 1 ? 0 : 1);
	}
	close(sp[1]);
	if (p > 0) {
		struct pollfd pf = {.fd = sp[0], .events = POLLIN};
		if (poll(&pf, 1, NET_READY_TIMEOUT_MS) > 0 && recvmsg(sp[0], &mh, MSG_CMSG_CLOEXEC) == 1 &&
		    (c = CMSG_FIRSTHDR(&mh)) && c->cmsg_type == SCM_RIGHTS)
			memcpy(&s, CMSG_DATA(c), sizeof s);
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
	}
	close(sp[0]);
	return s;
}

/* Long: the supervisor's network start in its required order (namespaces, helper, loopback,
 * resolver, proxy), each step undone by the one exit path. */
int net_start(const char *dir, const char *uid, const char *gid)
{
	int nfd = -1, ufd = -1, rd[2] = {-1, -1}, rc = -1;
	char nspath[64];
	pid_t child = -1;

	if (!np.active)
		return 0;
	close(np.info[1]);
	close(np.block[0]);
	np.info[1] = np.block[0] = -1;
	if ((child = read_child_pid(np.info[0])) <= 1)
		goto out;
	snprintf(nspath, sizeof nspath, "/proc/%ld/ns/net", (long)child);
	if ((nfd = open(nspath, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (ufd = ioctl(nfd, NS_GET_USERNS)) < 0 || wait_loopback(ufd, nfd) < 0 ||
	    pipe2(rd, O_CLOEXEC) < 0)
		goto out;
	if (np.slirp) {
		char *extra[] = {"--ready-fd=5", "--exit-fd=6", "--netns-type=path",
				 "--userns-path=/proc/self/fd/3", "/proc/self/fd/4", "tap0", NULL};
		int ex[2];
		if (strcmp(uid, "-") != 0)
			private_tun();
		if (pipe2(ex, O_CLOEXEC) < 0)
			goto out;
		{
			int fds[4] = {ufd, nfd, rd[1], ex[0]};
			np.pid = spawn_helper(dir, uid, gid, fds, 4, extra);
		}
		close(ex[0]);
		np.exit_w = ex[1];
	} else if (!np.proxy) {
		char *extra[] = {"--userns", "/proc/self/fd/3", "--netns", "/proc/self/fd/4", "-P",
				 "/proc/self/fd/5", NULL};
		int fds[3] = {ufd, nfd, rd[1]};
		/* pasta opens its pid file by name, as the sandbox's user. */
		if (strcmp(uid, "-") != 0) {
			private_tun();
			if (fchown(rd[1], (uid_t)strtoul(uid, NULL, 10), (gid_t)strtoul(gid, NULL, 10)) < 0)
				goto out;
		}
		np.pid = spawn_helper(dir, uid, gid, fds, 3, extra);
	} else {
		char *extra[] = {"-listen-fd", "3", "-log-fd", "4", "-ready-fd", "5", NULL, NULL,
				 NULL};
		int lsn = sandbox_listener(ufd, nfd), logfd;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, LOCALNET_LOG);
		logfd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (lsn >= 0 && logfd >= 0) {
			int fds[4] = {lsn, logfd, rd[1], np.secrets};
			if (np.secrets >= 0) {
				extra[6] = "-secrets-fd";
				extra[7] = "6";
			}
			np.pid = spawn_helper(dir, uid, gid, fds, np.secrets >= 0 ? 4 : 3, extra);
		}
		if (np.secrets >= 0) {
			close(np.secrets);
			np.secrets = -1;
		}
		if (lsn >= 0)
			close(lsn);
		if (logfd >= 0)
			close(logfd);
	}
	close(rd[1]);
	rd[1] = -1;
	if (np.pid <= 0 || wait_ready(rd[0]) < 0)
		goto out;
	if (write(np.block[1], "go", 2) != 2)
		goto out;
	rc = 0;
out:
	/* Without the sandbox's pid bubblewrap itself failed, and its log says why. */
	if (rc < 0 && np.pid <= 0 && child > 1) {
		char path[4096], msg[] = "cannot connect the sandbox's network namespace\n";
		snprintf(path, sizeof path, "%s/%s", dir, LOCALNET_HELPER_LOG);
		fs_write_atomic(path, msg, strlen(msg), 0600);
	}
	for (int i = 0; i < 2; i++)
		if (rd[i] >= 0)
			close(rd[i]);
	if (nfd >= 0)
		close(nfd);
	if (ufd >= 0)
		close(ufd);
	close(np.info[0]);
	np.info[0] = -1;
	/* On failure the sandbox dies here, before its block opens: bubblewrap's child is held
	 * before its parent-death signal is armed, and end of file on the block would let it
	 * start, orphaned and without its network. Killing its pid 1 ends the whole sandbox. */
	if (rc < 0 && child > 1)
		kill(child, SIGKILL);
	if (rc == 0) {
		close(np.block[1]);
		np.block[1] = -1;
	}
	return rc;
}

void net_stop(void)
{
	int st;

	if (np.block[1] >= 0) {
		close(np.block[1]);
		np.block[1] = -1;
	}
	if (np.exit_w >= 0) {
		close(np.exit_w);
		np.exit_w = -1;
	}
	if (np.pid <= 0)
		return;
	kill(np.pid, SIGKILL);
	while (waitpid(np.pid, &st, 0) < 0 && errno == EINTR)
		;
	np.pid = -1;
}
