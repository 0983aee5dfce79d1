/* serve.c — the exec service inside a sandbox. It runs outside the commands' pid namespace
 * (lib/local/local_bwrap.c says why and how); one forked "shepherd" per connection (forked ahead
 * of it and waiting in accept, see init_serve) starts the command in that namespace, in a new
 * session, with the command's mark, and kills every process carrying the mark when the
 * caller gives up (LP_KILL, a hang-up, the timeout). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "local_bwrap.h"
#include "localproto.h"
#include "init.h"

/* How long a client may take to send its request: it sends it at once, so this only guards
 * against a stuck peer holding a shepherd forever. */
#define REQUEST_TIMEOUT_MS 10000
/* Passes before kill_tree gives up; each pass kills everything it saw. */
#define MAX_KILL_ROUNDS 2000

/* Output that outlives its command. A process a command leaves running (`server &`) keeps the
 * command's stdout and stderr. When those are pipes to the caller (sbx-exec's relay, an
 * agent), the caller stops reading once the command's result is in: the process then blocks
 * on a full pipe or dies of EPIPE on its next write (python -m http.server answers nothing
 * once its access log fails). A terminal keeps printing what a background job writes; the
 * nearest thing here is a log. So a command whose stdout or stderr is a pipe or socket gets a
 * pipe of the shepherd's instead, copied to the caller's while the command runs; once the
 * command has exited, what it had written is delivered, the caller's descriptors are closed
 * and the result is sent, and whatever still holds the shepherd's pipe (a background process)
 * is read to the end into BG_LOG inside the sandbox, by the shepherd confined as a command is,
 * so the log is nothing a command could not write itself. The log is capped: a write that
 * would take it past BG_LOG_CAP empties it first. It lies in the sandbox's /tmp, a tmpfs
 * sized and charged to the sandbox. A terminal or a file as stdout is passed through as
 * before: writing to it later never breaks. */
#define BG_LOG "/tmp/sbx-background.log"
#define BG_LOG_CAP (1024 * 1024)
#define RELAY_BUF (256 * 1024)	/* one read or splice of the command's output */
#define RELAY_PIPE_SZ (1024 * 1024)	/* the command's pipe, when the host allows it */

/* What every shepherd inherits from the service. */
struct service {
	int procfd;			/* /proc of the service's own pid namespace */
	struct local_cmdns ns;		/* the commands' namespaces */
	struct sock_fprog filter;	/* the commands' syscall filter */
	const char *home;		/* where commands start by default */
	int reset[NSIG];		/* the signals a command must get back at their default */
	int nreset;
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

/* One of the command's output streams taken through a pipe of the shepherd's (see BG_LOG). */
struct stream {
	int from;		/* the read end of the shepherd's pipe; -1 at its end */
	int to;			/* the caller's descriptor; -1 once closed */
	int sock;		/* to is a socket: read and sent, else spliced pipe to pipe */
	int blocked;		/* a splice found the caller's pipe full: wait for POLLOUT */
	int gone;		/* the caller stopped reading: what comes is dropped */
	char *buf;		/* RELAY_BUF bytes */
	size_t len, off;	/* read but not yet sent (a socket only) */
};

/* SIGKILLs every process but this one that carries the mark; returns how many it found.
 * Each is killed through a pidfd opened and checked first, so a pid reused meanwhile is
 * never hit. */
static size_t kill_marked(const struct service *sv, const struct local_mark *mark)
{
	int dfd = openat(sv->procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	pid_t self = getpid();
	struct dirent *de;
	size_t n = 0;

	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		pid_t pid;
		int pfd;

		/* Process directories only: a pid is a few digits, so the path always fits. */
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || strlen(de->d_name) > 20)
			continue;
		pid = atoi(de->d_name);
		if (pid == self || !local_bwrap_marked(sv->procfd, de->d_name, mark))
			continue;
		if ((pfd = pidfd_open(pid, 0)) < 0)
			continue;
		if (local_bwrap_marked(sv->procfd, de->d_name, mark) &&
		    pidfd_send_signal(pfd, SIGKILL, NULL, 0) == 0)
			n++;
		close(pfd);
	}
	closedir(d);
	return n;
}

/* Kills the command's whole tree and reaps the command, recording its status. A zombie has
 * left its namespaces, so the mark finds only the living. */
static void kill_tree(const struct service *sv, const struct local_mark *mark, pid_t child,
		      int *done, int *wstatus)
{
	int round;

	kill(-child, SIGKILL);
	for (round = 0; round < MAX_KILL_ROUNDS; round++) {
		size_t live = kill_marked(sv, mark);
		int st;

		if (!*done && waitpid(child, &st, WNOHANG) == child) {
			*done = 1;
			*wstatus = st;
		}
		if (live == 0 && *done)
			return;
		if (live == 0)
			usleep(1000);
	}
}

/* The command, between its clone and exec: its session, descriptors, environment and
 * directory, then no capability left. It shares the shepherd's memory until it execs (see
 * spawn), so a failure is left in *err as an errno (-errno for the directory) and nothing is
 * run. */
static void start_child(const struct service *sv, char **argv, char **env, const char *workdir,
			int fds[3], volatile int *errp)
{
	sigset_t all;
	int i, hi[3], err;

	sigemptyset(&all);
	for (i = 0; i < sv->nreset; i++)
		signal(sv->reset[i], SIG_DFL);
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
	/* No workdir: stay where the service runs (an image's WorkingDir, else the home). */
	if (workdir[0] && chdir(workdir) < 0) {
		err = -errno;
		goto report;
	}
	if ((err = local_bwrap_confine(&sv->filter)) < 0) {
		errno = -err;
		goto fail;
	}
	execvp(argv[0], argv);
fail:
	err = errno;
report:
	*errp = err;
	_exit(err == ENOENT ? 127 : 126);
}

struct request;

/* What the command's clone needs: the request, and where it leaves an exec failure. */
struct spawn {
	const struct service *sv;
	struct request *rq;
	volatile int err;
};

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

/* One request: the header with the three descriptors, then the payload. */
struct request {
	struct lp_hdr h;
	int fds[3], nfds;
	char *payload, *workdir, **argv, **env;
};

/* Reads a request from conn. Returns 0 or -1 (a bad request: the connection is dropped). */
static int read_request(int conn, struct request *rq)
{
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	struct iovec iov = {&rq->h, sizeof rq->h};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf};
	struct cmsghdr *c;
	ssize_t n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC);

	if (n <= 0)
		return -1;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			rq->nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			if (rq->nfds > 3)
				rq->nfds = 3;
			memcpy(rq->fds, CMSG_DATA(c), (size_t)rq->nfds * sizeof(int));
		}
	}
	if ((size_t)n < sizeof rq->h &&
	    read_full(conn, (char *)&rq->h + n, sizeof rq->h - (size_t)n) < 0)
		return -1;
	if (rq->h.magic != LP_MAGIC)
		return -1;
	if (rq->h.type == LP_PING)
		return 0;
	if (rq->h.type != LP_EXEC || rq->nfds != 3 || rq->h.len > LP_MAX_PAYLOAD)
		return -1;
	rq->payload = malloc((size_t)rq->h.len + 1);
	if (rq->payload == NULL || read_full(conn, rq->payload, rq->h.len) < 0)
		return -1;
	return parse_payload(rq->payload, rq->h.len, &rq->workdir, &rq->argv, &rq->env);
}

/* A pipe or a socket: what a reader can stop reading (see BG_LOG). */
static int is_pipe(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

static int is_socket(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

static int same_file(int a, int b)
{
	struct stat x, y;

	return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* Gives the command a pipe of the shepherd's for each of its stdout and stderr that is a pipe
 * or socket (one for both when they are the same, so their order is kept). Returns -1 with
 * errno when a pipe cannot be made. */
static int interpose(int fds[3], struct stream st[2], int *nst)
{
	for (int s = 1; s <= 2; s++) {
		int p[2];

		if (!is_pipe(fds[s]))
			continue;
		if (s == 2 && *nst == 1 && st[0].to >= 0 && same_file(st[0].to, fds[2])) {
			close(fds[2]);
			fds[2] = fds[1];
			continue;
		}
		if (pipe2(p, O_CLOEXEC) < 0)
			return -1;
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		if (fcntl(p[1], F_SETPIPE_SZ, RELAY_PIPE_SZ) < 0) {
			/* above the host's pipe-max-size: the default size only costs more steps */
		}
		st[*nst].buf = malloc(RELAY_BUF);
		if (st[*nst].buf == NULL) {
			close(p[0]);
			close(p[1]);
			return -1;
		}
		st[*nst].from = p[0];
		st[*nst].to = fds[s];
		st[*nst].sock = is_socket(fds[s]);
		st[*nst].blocked = st[*nst].gone = 0;
		st[*nst].len = st[*nst].off = 0;
		(*nst)++;
		fds[s] = p[1];
	}
	return 0;
}

/* One step of a stream whose descriptor poll found ready; returns how many bytes it took
 * from the command's pipe. Nothing here blocks, and the caller's descriptor keeps its flags
 * (it is the caller's open file): a pipe is fed by splice with SPLICE_F_NONBLOCK, which
 * moves what fits without copying; a socket by send with MSG_DONTWAIT from a buffer. */
static size_t stream_step(struct stream *t)
{
	ssize_t n;

	if (t->gone || (t->sock && t->len == 0)) {
		n = read(t->from, t->buf, RELAY_BUF);
		if (n > 0 && !t->gone) {
			t->len = (size_t)n;
			t->off = 0;
		} else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			close(t->from);
			t->from = -1;
		}
		return n > 0 ? (size_t)n : 0;
	}
	if (t->sock) {
		n = send(t->to, t->buf + t->off, t->len - t->off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0 && (t->off += (size_t)n) == t->len)
			t->len = 0;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			t->len = 0, t->gone = 1;	/* the caller stopped reading */
		return 0;
	}
	n = splice(t->from, NULL, t->to, NULL, RELAY_BUF, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
	t->blocked = n < 0 && errno == EAGAIN;
	if (n == 0) {
		close(t->from);
		t->from = -1;
	} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
		t->gone = 1;	/* the caller stopped reading: what is left is dropped */
	}
	return n > 0 ? (size_t)n : 0;
}

/* What poll watches for a stream: the caller's side with output pending, else the pipe. */
static void stream_poll(const struct stream *t, struct pollfd *p)
{
	int out = !t->gone && (t->len || t->blocked);

	p->fd = out ? t->to : t->from;
	p->events = out ? POLLOUT : POLLIN;
	p->revents = 0;
}

/* After the command: delivers what it had written to the caller (what is in the pipes now,
 * not what a background process writes from here on), unless the caller gives up (conn
 * readable). Then closes the caller's descriptors, whose end the caller waits for. */
static void streams_finish(int conn, struct stream *st, int nst)
{
	for (int i = 0; i < nst; i++) {
		struct stream *t = &st[i];
		int pending = 0;

		if (t->from >= 0 && ioctl(t->from, FIONREAD, &pending) < 0)
			pending = 0;
		while ((t->len > 0 && !t->gone) || (pending > 0 && t->from >= 0)) {
			struct pollfd p[2] = {{.fd = conn, .events = POLLIN}};

			stream_poll(t, &p[1]);
			if (poll(p, 2, REQUEST_TIMEOUT_MS) <= 0 || p[0].revents)
				break;
			if (p[1].revents)
				pending -= (int)stream_step(t);
		}
		close(t->to);
		t->to = -1;
	}
}

/* Waits for the command's end or for the caller to give up (LP_KILL, a hang-up or garbage:
 * then nothing the command started may outlive it), copying its streams meanwhile. Sends the
 * result. */
static void watch(const struct service *sv, int conn, int sfd, pid_t child,
		  const struct local_mark *mark, int exec_errno, struct stream *st, int nst)
{
	int wstatus = 0, done = 0, killed = 0;

	while (!done) {
		struct pollfd p[4] = {{.fd = conn, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		struct signalfd_siginfo si;
		char b;
		int st_, i;

		for (i = 0; i < nst; i++)
			stream_poll(&st[i], &p[2 + i]);
		if (poll(p, (nfds_t)(2 + nst), -1) < 0)
			continue;
		if (p[0].revents) {
			if (read(conn, &b, 1) < 0) {
				/* a hang-up: the same */
			}
			kill_tree(sv, mark, child, &done, &wstatus);
			killed = 1;
			break;
		}
		for (i = 0; i < nst; i++)
			if (p[2 + i].revents)
				stream_step(&st[i]);
		if (!p[1].revents)
			continue;
		while (read(sfd, &si, sizeof si) == sizeof si)
			;
		if (waitpid(child, &st_, WNOHANG) == child) {
			done = 1;
			wstatus = st_;
		}
	}
	streams_finish(conn, st, nst);
	send_result(conn, wstatus, exec_errno, killed);
}

/* Appends to BG_LOG, opened at the first write without following a link, a regular file
 * with one name only; emptied first when the write would take it past BG_LOG_CAP. *log is
 * -1 before the first open, -2 once refused (the output is then dropped). */
static void log_write(int *log, const char *p, size_t n)
{
	struct stat st;

	if (*log == -1) {
		*log = open(BG_LOG, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			    0644);
		if (*log >= 0 && (fstat(*log, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)) {
			close(*log);
			*log = -2;
		}
	}
	if (*log < 0)
		return;
	if (fstat(*log, &st) == 0 && st.st_size + (off_t)n > BG_LOG_CAP && ftruncate(*log, 0) < 0)
		return;
	if (write(*log, p, n) < 0) {
		/* the sandbox's /tmp is full: this piece is dropped, the writer is not stopped */
	}
}

/* The shepherd after the result: reads what background processes still write to its pipes
 * into BG_LOG until the last of them closes them, confined as a command is. */
static void drain_background(const struct service *sv, struct stream *st, int nst)
{
	int log = -1, live = 0, i;

	for (i = 0; i < nst; i++)
		live += st[i].from >= 0;
	if (live == 0)
		return;
	if (local_bwrap_confine(&sv->filter) < 0)
		log = -2;
	while (live > 0) {
		struct pollfd p[2];

		for (i = 0; i < nst; i++)
			p[i] = (struct pollfd){.fd = st[i].from, .events = POLLIN};
		if (poll(p, (nfds_t)nst, -1) < 0)
			continue;
		for (i = 0; i < nst; i++) {
			ssize_t n;

			if (!p[i].revents)
				continue;
			n = read(st[i].from, st[i].buf, RELAY_BUF);
			if (n > 0) {
				log_write(&log, st[i].buf, (size_t)n);
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(st[i].from);
				st[i].from = -1;
				live--;
			}
		}
	}
	if (log >= 0)
		close(log);
}

static int spawn_main(void *arg)
{
	struct spawn *sp = arg;

	start_child(sp->sv, sp->rq->argv, sp->rq->env, sp->rq->workdir, sp->rq->fds, &sp->err);
	return 0;	/* not reached: start_child execs or exits */
}

/* The command's stack until it execs: start_child, putenv and execvp's path search. */
#define SPAWN_STACK (256 * 1024)

/* Starts the command as posix_spawn does: a clone sharing the shepherd's memory (no copy of
 * its page tables to make and throw away at exec), the shepherd suspended until the command
 * has exec'd or failed (CLONE_VFORK). Not shared: descriptors, directory, signal handlers,
 * credentials, seccomp state — each of those the command changes is its own, as after a
 * fork. The command's pid or -1; *exec_errno as start_child left it. */
static pid_t spawn(const struct service *sv, struct request *rq, int *exec_errno)
{
	static char stack[SPAWN_STACK] __attribute__((aligned(16)));
	struct spawn sp = {sv, rq, 0};
	pid_t child = clone(spawn_main, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &sp);

	*exec_errno = sp.err;
	return child;
}

/* A shepherd's preparation, done before its connection arrives when it is forked ahead
 * (see init_serve): SIGCHLD as a descriptor, the command's mark and pid namespace. */
static int shepherd_prepare(const struct service *sv, struct local_mark *mark)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	signal(SIGCHLD, SIG_DFL);
	if (local_bwrap_shepherd(sv->procfd, &sv->ns, mark) < 0)
		return -1;
	return signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
}

static int shepherd(const struct service *sv, int conn, int sfd, const struct local_mark *mark)
{
	struct request rq = {.fds = {-1, -1, -1}};
	struct stream *st = NULL;
	int exec_errno = 0, nst = 0, i;
	pid_t child;

	if (read_request(conn, &rq) < 0)
		return 1;
	if (rq.h.type == LP_PING) {
		send_result(conn, 0, 0, 0);
		return 0;
	}
	if (sfd < 0)
		return 1;
	if ((st = calloc(2, sizeof *st)) == NULL || interpose(rq.fds, st, &nst) < 0) {
		send_result(conn, 0, errno, 0);
		return 1;
	}
	child = spawn(sv, &rq, &exec_errno);
	if (child < 0) {
		send_result(conn, 0, errno, 0);	/* EAGAIN: at the sandbox's process limit */
		return 1;
	}
	close(rq.fds[0]);
	close(rq.fds[1]);
	if (rq.fds[2] != rq.fds[1])
		close(rq.fds[2]);
	watch(sv, conn, sfd, child, mark, exec_errno, st, nst);
	close(conn);
	drain_background(sv, st, nst);
	for (i = 0; i < nst; i++)
		if (st[i].from >= 0)
			close(st[i].from);
	for (i = 0; i < 2; i++)
		free(st[i].buf);
	free(st);
	return 0;
}

/* The signals whose disposition is not the default, once: what every command must get back.
 * Equivalent to resetting all of them in each command: a disposition only changes when this
 * program sets one, and after service start only the shepherd does (SIGCHLD, kept on the
 * list); the others it holds now (SIGCHLD and SIGPIPE ignored by init_serve, whatever
 * sbx-init inherited) are the ones found here. */
static void find_reset(struct service *sv)
{
	sv->nreset = 0;
	for (int i = 1; i < NSIG; i++) {
		struct sigaction sa;

		if (i == SIGCHLD || (sigaction(i, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL))
			sv->reset[sv->nreset++] = i;
	}
}

/* Sets the service up: non-dumpable, the commands' namespaces made and their filter built,
 * back in the directory bubblewrap started it in (the commands' default). */
static int service_start(struct service *sv)
{
	static char home[4096];

	if (local_bwrap_harden() < 0 || getcwd(home, sizeof home) == NULL)
		return -1;
	find_reset(sv);
	sv->home = home;
	sv->procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sv->procfd < 0 || local_bwrap_cmdns_start(sv->procfd, &sv->ns) < 0 ||
	    local_bwrap_filter_load(&sv->filter) < 0)
		return -1;
	return chdir(home);
}

/* accept4's failures that are about one connection or a passing shortage, not the socket. */
static int accept_transient(int err)
{
	return err == EINTR || err == ECONNABORTED || err == EMFILE || err == ENFILE ||
	       err == ENOBUFS || err == ENOMEM;
}

/* The shepherd forked ahead: prepared at once, it takes the next connection itself, tells the
 * service (one byte on took) and closes the listening socket before it reads a byte of the
 * request. Its work is the same as a shepherd forked after accept, in the same order for
 * the command; only the moment differs, which takes a fork, a namespace and a setns off each
 * command's path. */
static int ahead(const struct service *sv, int listen_fd, int took)
{
	struct local_mark mark;
	int sfd = shepherd_prepare(sv, &mark), conn;
	char one = 1;

	do
		conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	while (conn < 0 && (errno == EINTR || errno == ECONNABORTED));
	if (write(took, &one, 1) < 0) {
		/* the service is gone: this connection is still served */
	}
	close(took);
	close(listen_fd);
	if (conn < 0) {
		if (accept_transient(errno))
			usleep(10000);	/* the service forks the next one: not in a tight loop */
		return 1;
	}
	return shepherd(sv, conn, sfd, &mark);
}

/* Forks the shepherd ahead; a pidfd of it (readable when it ends) or -1 (no process slot
 * left under -pids: the service then forks one per connection, as below, and answers). */
static int fork_ahead(const struct service *sv, int listen_fd, int took[2])
{
	pid_t pid = fork();
	int fd;

	if (pid == 0) {
		close(took[0]);
		_exit(ahead(sv, listen_fd, took[1]));
	}
	if (pid < 0)
		return -1;
	if ((fd = pidfd_open(pid, 0)) < 0)
		kill(pid, SIGKILL);	/* cannot watch it: not kept (it has touched no connection) */
	return fd;
}

/* One shepherd forked ahead waits in accept (the common path: see ahead). Only when none could
 * be forked does the service accept, fork a shepherd for the connection or answer it. */
int init_serve(int listen_fd)
{
	struct service sv;
	int took[2], idle = -1;

	signal(SIGCHLD, SIG_IGN);	/* shepherds are reaped by the kernel */
	signal(SIGPIPE, SIG_IGN);
	if (service_start(&sv) < 0 || pipe2(took, O_CLOEXEC | O_NONBLOCK) < 0) {
		fprintf(stderr, "sbx-init: cannot make the commands' namespaces: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	for (;;) {
		struct pollfd p[3] = {{.fd = sv.ns.init_fd, .events = POLLIN},
				      {.fd = took[0], .events = POLLIN}, {.fd = -1, .events = POLLIN}};
		int conn;
		pid_t pid;

		if (idle < 0)
			idle = fork_ahead(&sv, listen_fd, took);
		/* With one waiting, its end or its connection is what to watch; else the socket. */
		p[2].fd = idle >= 0 ? idle : listen_fd;
		if (poll(p, 3, -1) < 0)
			continue;
		if (p[0].revents)
			return EXIT_FAIL;	/* the commands' init died: no command can run any more */
		if (p[1].revents) {
			char b[64];
			while (read(took[0], b, sizeof b) > 0)
				;
		}
		if (idle >= 0) {
			if (p[1].revents || p[2].revents) {
				close(idle);
				idle = -1;
			}
			continue;
		}
		if (!p[2].revents)
			continue;
		conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			if (accept_transient(errno)) {
				if (errno != EINTR && errno != ECONNABORTED)
					usleep(10000);
				continue;
			}
			return EXIT_FAIL;
		}
		pid = fork();
		if (pid == 0) {
			struct local_mark mark;
			int sfd;

			close(listen_fd);
			close(took[0]);
			close(took[1]);
			sfd = shepherd_prepare(&sv, &mark);
			_exit(shepherd(&sv, conn, sfd, &mark));
		}
		if (pid < 0)	/* EAGAIN: the sandbox's process limit is reached; say so */
			send_result(conn, 0, errno, 0);
		close(conn);
	}
}
