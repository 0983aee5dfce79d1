/* relay.c — the caller's descriptors kept out of the sandbox (see relay.h): pipes of ours
 * passed, and one thread copying between them and the caller's descriptors. */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <signal.h>
#include <unistd.h>

#include "xalloc.h"

/* One read or write: a pipe's default capacity, so a full pipe moves in one step. */
#define RELAY_CHUNK 65536

struct out_stream {
	int from;		/* our pipe's read end, nonblocking; -1 once at EOF */
	int to;			/* the caller's descriptor, or -1 when take is used / it failed */
	int stream;		/* 1 or 2, for take */
};

struct pump {
	int in_src;		/* the caller's stdin; -1: not (or no longer) relayed */
	int in_dst;		/* our pipe's write end into the command, nonblocking */
	char *inbuf;
	size_t in_len, in_off;
	struct out_stream out[2];
	int nout;
	relay_take_fn take;
	void *arg;
	int stop;		/* eventfd: the command has ended */
};

static int is_null(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

static int background_tty(int fd)
{
	pid_t fg = isatty(fd) ? tcgetpgrp(fd) : 0;

	return fg > 0 && fg != getpgrp();
}

static int same_file(int a, int b)
{
	struct stat sa, sb;

	return a == b || (fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
			  sa.st_ino == sb.st_ino);
}

/* Hands bytes on; a caller's descriptor that fails is dropped (the command keeps running and
 * its output is read and discarded, so it never blocks on a full pipe). */
static void deliver(struct pump *p, struct out_stream *o, const char *buf, size_t n)
{
	if (p->take) {
		p->take(p->arg, o->stream, buf, n);
		return;
	}
	while (n > 0 && o->to >= 0) {
		ssize_t w = write(o->to, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			o->to = -1;
			return;
		}
		buf += w;
		n -= (size_t)w;
	}
}

/* Reads what o has: one chunk, or (until_empty) all that is buffered now. */
static void pump_out(struct pump *p, struct out_stream *o, int until_empty)
{
	char buf[RELAY_CHUNK];

	while (o->from >= 0) {
		ssize_t n = read(o->from, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			close(o->from);
			o->from = -1;
		}
		if (n <= 0)
			return;
		deliver(p, o, buf, (size_t)n);
		if (!until_empty)
			return;
	}
}

static void end_input(struct pump *p)
{
	if (p->in_dst >= 0)
		close(p->in_dst);
	p->in_dst = p->in_src = -1;
	p->in_len = p->in_off = 0;
}

/* Moves the caller's stdin into the command's: read when our buffer is empty, write what it
 * holds as the pipe takes it. EOF reaches the command as EOF; a command that closed its
 * stdin ends the relaying. */
static void pump_in(struct pump *p, short src_ev, short dst_ev)
{
	if (src_ev && p->in_len == 0) {
		ssize_t n = read(p->in_src, p->inbuf, RELAY_CHUNK);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		if (n <= 0) {
			end_input(p);
			return;
		}
		p->in_len = (size_t)n;
		p->in_off = 0;
	}
	if ((dst_ev || src_ev) && p->in_len > p->in_off) {
		ssize_t w = write(p->in_dst, p->inbuf + p->in_off, p->in_len - p->in_off);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		if (w < 0) {
			end_input(p);
			return;
		}
		p->in_off += (size_t)w;
		if (p->in_off == p->in_len)
			p->in_len = p->in_off = 0;
	}
}

static void *pump_main(void *arg)
{
	struct pump *p = arg;
	sigset_t all;

	/* Signals are for the main thread; a write to a closed pipe is EPIPE here. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);

	for (;;) {
		struct pollfd f[4];
		int n = 0, i_src = -1, i_dst = -1, i_out[2] = {-1, -1}, i;

		if (p->in_src >= 0 && p->in_len == 0)
			f[i_src = n++] = (struct pollfd){.fd = p->in_src, .events = POLLIN};
		if (p->in_dst >= 0 && p->in_len > 0)
			f[i_dst = n++] = (struct pollfd){.fd = p->in_dst, .events = POLLOUT};
		for (i = 0; i < p->nout; i++)
			if (p->out[i].from >= 0)
				f[i_out[i] = n++] = (struct pollfd){.fd = p->out[i].from, .events = POLLIN};
		f[n] = (struct pollfd){.fd = p->stop, .events = POLLIN};
		if (poll(f, (nfds_t)n + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (f[n].revents) {
			/* The command is over: deliver what is buffered, then stop. */
			for (i = 0; i < p->nout; i++)
				pump_out(p, &p->out[i], 1);
			break;
		}
		if ((i_src >= 0 && f[i_src].revents) || (i_dst >= 0 && f[i_dst].revents))
			pump_in(p, i_src >= 0 ? f[i_src].revents : 0, i_dst >= 0 ? f[i_dst].revents : 0);
		for (i = 0; i < p->nout; i++)
			if (i_out[i] >= 0 && f[i_out[i]].revents)
				pump_out(p, &p->out[i], 0);
	}
	return NULL;
}

/* The descriptors handed to the backend and the ones kept to pump, all -1 to start. */
struct plumbing {
	int pass[3];		/* what the command gets */
	int close_after[4];	/* our copies of what it gets, closed once it has run */
	int nclose;
	int null;
};

static int open_null(struct plumbing *pl, struct sbx_err *e)
{
	if (pl->null < 0 && (pl->null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		return err_sys(e, errno, "/dev/null");
	return pl->null;
}

/* A pipe whose read end (side 0) or write end (side 1) the command gets; returns ours. */
static int make_pipe(struct plumbing *pl, int side, int *theirs, struct sbx_err *e)
{
	int fd[2];

	if (pipe2(fd, O_CLOEXEC) < 0)
		return err_sys(e, errno, "cannot create pipes");
	*theirs = fd[side];
	pl->close_after[pl->nclose++] = fd[side];
	fcntl(fd[!side], F_SETFL, O_NONBLOCK);
	return fd[!side];
}

/* Decides, stream by stream, what the command gets; fills p with what must be pumped.
 * Returns the number of pipes made (0: nothing to copy), or -1. */
static int plumb(const struct sbx_exec *x, const struct relay_opts *o, struct plumbing *pl,
		 struct pump *p, struct sbx_err *e)
{
	int merge = o->merge || (!o->take && !o->out_own && !is_null(x->out_fd) &&
				 same_file(x->out_fd, x->err_fd));
	int pipes = 0, s;

	/* A terminal this process is not in the foreground of (started with &) is not read: the
	 * read would stop it (SIGTTIN) whether or not the command wants input. */
	if (x->in_fd < 0 || o->in_own || is_null(x->in_fd) || background_tty(x->in_fd)) {
		pl->pass[0] = x->in_fd >= 0 && !o->in_own ? open_null(pl, e) : x->in_fd;
	} else {
		if ((p->in_dst = make_pipe(pl, 0, &pl->pass[0], e)) < 0)
			return -1;
		p->in_src = x->in_fd;
		pipes++;
	}
	for (s = 1; s <= 2; s++) {
		int to = s == 1 ? x->out_fd : x->err_fd;
		if (o->out_own && !o->take) {
			pl->pass[s] = to;
			continue;
		}
		if (s == 2 && merge) {
			pl->pass[2] = pl->pass[1];
			continue;
		}
		if (!o->take && is_null(to)) {
			if ((pl->pass[s] = open_null(pl, e)) < 0)
				return -1;
			continue;
		}
		p->out[p->nout] = (struct out_stream){-1, o->take ? -1 : to, s};
		if ((p->out[p->nout].from = make_pipe(pl, 1, &pl->pass[s], e)) < 0)
			return -1;
		p->nout++;
		pipes++;
	}
	return pipes;
}

/* Runs the command with the plumbing's descriptors while the pump copies. */
static int run_pumped(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
		      struct plumbing *pl, struct pump *p, struct sbx_exec_result *r,
		      struct sbx_err *e)
{
	struct sbx_exec y = *x;
	pthread_t th;
	uint64_t one = 1;
	int rc, i;

	p->inbuf = xmalloc(RELAY_CHUNK);
	if ((p->stop = eventfd(0, EFD_CLOEXEC)) < 0 || pthread_create(&th, NULL, pump_main, p) != 0) {
		free(p->inbuf);
		return err_set(e, SBX_EIO, "cannot start copying the command's streams");
	}
	y.in_fd = pl->pass[0];
	y.out_fd = pl->pass[1];
	y.err_fd = pl->pass[2];
	rc = sbx_exec(b, name, &y, r, e);
	/* Our copies of its ends first, so the pump sees EOF when nothing else holds them. */
	for (i = 0; i < pl->nclose; i++)
		close(pl->close_after[i]);
	pl->nclose = 0;
	if (write(p->stop, &one, sizeof one) < 0) {
		/* cannot happen with an eventfd below its limit */
	}
	pthread_join(th, NULL);
	free(p->inbuf);
	return rc;
}

int relay_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
	       const struct relay_opts *opts, struct sbx_exec_result *r, struct sbx_err *e)
{
	static const struct relay_opts none;
	const struct relay_opts *o = opts ? opts : &none;
	struct plumbing pl = {{-1, -1, -1}, {-1, -1, -1, -1}, 0, -1};
	struct pump p = {.in_src = -1, .in_dst = -1, .take = o->take, .arg = o->arg, .stop = -1};
	struct sbx_exec y = *x;
	int pipes, rc = -1, i;

	if (!b->ops->passes_fds && !o->take)
		return sbx_exec(b, name, x, r, e);
	if ((pipes = plumb(x, o, &pl, &p, e)) < 0)
		goto out;
	if (pipes == 0) {
		y.in_fd = pl.pass[0];
		y.out_fd = pl.pass[1];
		y.err_fd = pl.pass[2];
		rc = sbx_exec(b, name, &y, r, e);
	} else {
		rc = run_pumped(b, name, x, &pl, &p, r, e);
	}
out:
	for (i = 0; i < pl.nclose; i++)
		close(pl.close_after[i]);
	if (p.in_dst >= 0)
		close(p.in_dst);
	for (i = 0; i < p.nout; i++)
		if (p.out[i].from >= 0)
			close(p.out[i].from);
	if (p.stop >= 0)
		close(p.stop);
	if (pl.null >= 0)
		close(pl.null);
	return rc;
}
