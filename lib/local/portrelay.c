/* portrelay.c — sbx-port's relay (part of portfwd, see portfwd.h): one poll loop over the
 * listener and every connection pair. Each direction moves through a pipe of its own with
 * splice(2): the kernel moves the bytes from one socket to the other, never through this
 * process. A pipe holds a bounded amount: a side that does not read makes the other side wait
 * (TCP's own back-pressure), never this process grow. An end of file from one side becomes
 * shutdown(SHUT_WR) on the other once its pipe is empty, so half-closed connections (a client
 * that sends, shuts down its writing side and waits for the answer) work. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "portfwd.h"
#include "xalloc.h"

/* The pipe asked for per direction of a connection: a loopback moves this much between two
 * wake-ups. The kernel grants it only within the user's pipe pages (fs.pipe-user-pages-soft);
 * past that a pipe keeps its default size, so the relay slows down but never grows. */
#define RELAY_PIPE (1024 * 1024)
/* Splices per direction per wake-up: one busy connection cannot starve the others. */
#define RELAY_ROUNDS 64
/* Connections at once; beyond, new ones wait in the listener's backlog. */
#define RELAY_MAX 512
/* Descriptors per connection: its two sockets and a pipe (two ends) per direction. */
#define CONN_FDS 6
/* Descriptors kept for everything but the connections (stdio, listener, helper, pidfd, …). */
#define RELAY_SPARE_FDS 32
/* Without a pidfd to watch, how often the sandbox's lock is looked at. */
#define ALIVE_CHECK_MS 1000

/* One direction: bytes spliced from `from` into pipe, then from pipe to the other side. */
struct half {
	int pipe[2];
	size_t len, cap;	/* bytes in the pipe, and what it holds */
	bool eof;		/* its source said end of file */
	bool shut;		/* its destination got shutdown(SHUT_WR) */
};

struct conn {
	int fd[2];		/* 0: the outside client, 1: the socket in the sandbox */
	struct half h[2];	/* h[i]: read from fd[i], written to fd[1 - i] */
	bool connecting;
};

struct relay {
	struct portfwd *pf;
	struct conn *c[RELAY_MAX];
	int n, cap;
	bool paused;		/* out of descriptors: no accept until a connection ends */
	portfwd_note_fn note;
	void *arg;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_free(struct conn *c)
{
	close(c->fd[0]);
	if (c->fd[1] >= 0)
		close(c->fd[1]);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 2; k++)
			if (c->h[i].pipe[k] >= 0)
				close(c->h[i].pipe[k]);
	free(c);
}

/* Tells the person that a client's connection inside failed (err: its errno). */
static void note_refused(struct relay *r, int err)
{
	char msg[512];

	if (r->note == NULL)
		return;
	snprintf(msg, sizeof msg, "cannot connect to port %d in sandbox %s: %s", r->pf->port,
		 r->pf->name, err == ECONNREFUSED ? "nothing listens there" : strerror(err));
	r->note(r->arg, msg);
}

/* A client for which the sandbox's port could not be had: a clean close (FIN, not a reset
 * for what it already sent and nobody will read). */
static void refuse(struct conn *c)
{
	char junk[4096];

	shutdown(c->fd[0], SHUT_WR);
	while (read(c->fd[0], junk, sizeof junk) > 0)
		;
}

/* Starts the connection to the sandbox's port for a new client; false when it failed at once
 * (the client then closed cleanly). */
static bool conn_start(struct relay *r, struct conn *c)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->pf->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sbx_err e;

	if ((c->fd[1] = portfwd_socket(r->pf, &e)) < 0) {
		if (r->note)
			r->note(r->arg, e.msg);
		refuse(c);
		return false;
	}
	if (connect(c->fd[1], (struct sockaddr *)&sa, sizeof sa) == 0)
		return true;
	if (errno == EINPROGRESS) {
		c->connecting = true;
		return true;
	}
	note_refused(r, errno);
	refuse(c);
	return false;
}

/* How many connections fit: CONN_FDS descriptors each, within RLIMIT_NOFILE, at most
 * RELAY_MAX. */
static int conn_cap(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= CONN_FDS * RELAY_MAX + RELAY_SPARE_FDS)
		return RELAY_MAX;
	return rl.rlim_cur > RELAY_SPARE_FDS + CONN_FDS
		       ? (int)(rl.rlim_cur - RELAY_SPARE_FDS) / CONN_FDS : 1;
}

/* The pipes of c's two directions; false when out of descriptors. */
static bool conn_pipes(struct conn *c)
{
	for (int i = 0; i < 2; i++) {
		struct half *h = &c->h[i];
		int sz;
		if (pipe2(h->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
			h->pipe[0] = h->pipe[1] = -1;
			return false;
		}
		fcntl(h->pipe[1], F_SETPIPE_SZ, RELAY_PIPE);	/* refused: the default stays */
		if ((sz = fcntl(h->pipe[1], F_GETPIPE_SZ)) <= 0)
			return false;
		h->cap = (size_t)sz;
	}
	return true;
}

static void accept_one(struct relay *r, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct conn *c;

	if (fd < 0) {
		/* the listener stays readable: polling it again would spin */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			r->paused = true;
		return;
	}
	c = xcalloc(1, sizeof *c);
	c->fd[0] = fd;
	c->fd[1] = -1;
	c->h[0].pipe[0] = c->h[0].pipe[1] = c->h[1].pipe[0] = c->h[1].pipe[1] = -1;
	if (!conn_pipes(c)) {
		/* out of descriptors: this client is closed, the next waits for one to end */
		r->paused = r->n > 0;
		conn_free(c);
		return;
	}
	if (!conn_start(r, c)) {
		conn_free(c);
		return;
	}
	r->c[r->n++] = c;
}

/* Moves what can move in direction i of c, in and out by turns until both would wait (or
 * RELAY_ROUNDS). false: the connection is over (an error). */
static bool pump(struct conn *c, int i)
{
	struct half *h = &c->h[i];
	int from = c->fd[i], to = c->fd[1 - i];
	bool can_in = true, can_out = true;
	ssize_t k;

	for (int round = 0; round < RELAY_ROUNDS && (can_in || can_out); round++) {
		bool moved = false;
		if (can_in && !h->eof && h->len < h->cap) {
			k = splice(from, NULL, h->pipe[1], NULL, h->cap - h->len,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (k > 0)
				h->len += (size_t)k, moved = true;
			else if (k == 0)
				h->eof = true;
			else if (errno == EAGAIN)
				can_in = false;
			else if (errno != EINTR)
				return false;
		}
		if (can_out && h->len > 0) {
			k = splice(h->pipe[0], NULL, to, NULL, h->len,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (k > 0)
				h->len -= (size_t)k, moved = true;
			else if (k < 0 && errno == EAGAIN)
				can_out = false;
			else if (k < 0 && errno != EINTR)
				return false;
		}
		if (!moved)
			break;
	}
	if (h->eof && h->len == 0 && !h->shut) {
		shutdown(to, SHUT_WR);
		h->shut = true;
	}
	return true;
}

/* The poll events fd[i] of c waits for. */
static short wants(const struct conn *c, int i)
{
	short ev = 0;

	if (c->connecting)
		return i == 1 ? POLLOUT : 0;
	if (!c->h[i].eof && c->h[i].len < c->h[i].cap)
		ev |= POLLIN;
	if (c->h[1 - i].len > 0)
		ev |= POLLOUT;
	return ev;
}

/* Handles c's events; false when it is over. */
static bool conn_step(struct relay *r, struct conn *c, const struct pollfd *p)
{
	if (c->connecting) {
		int err = 0;
		socklen_t len = sizeof err;
		if (!p[1].revents)
			return true;
		getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len);
		if (err != 0) {
			note_refused(r, err);
			refuse(c);
			return false;
		}
		c->connecting = false;
	}
	/* An error with nothing left to read or write would wake poll forever. */
	if ((p[0].revents | p[1].revents) & POLLERR)
		return false;
	if ((p[0].revents || p[1].revents) && (!pump(c, 0) || !pump(c, 1)))
		return false;
	return !(c->h[0].shut && c->h[1].shut);
}

int portfwd_serve(struct portfwd *pf, int lfd, int cancel_fd, portfwd_note_fn fn, void *arg,
		  struct sbx_err *e)
{
	static struct pollfd p[3 + 2 * RELAY_MAX];
	struct relay r = {.pf = pf, .note = fn, .arg = arg, .cap = conn_cap()};
	int rc = -1, i, j;
	int64_t checked = now_ms();

	for (;;) {
		int64_t now = now_ms();
		if (pf->sup_fd < 0 && now - checked >= ALIVE_CHECK_MS) {
			checked = now;
			if (!portfwd_alive(pf)) {
				rc = PORTFWD_GONE;
				break;
			}
		}
		p[0] = (struct pollfd){.fd = cancel_fd, .events = POLLIN};
		p[1] = (struct pollfd){.fd = pf->sup_fd, .events = POLLIN};
		p[2] = (struct pollfd){.fd = r.n < r.cap && !r.paused ? lfd : -1, .events = POLLIN};
		for (i = 0; i < r.n; i++)
			for (j = 0; j < 2; j++)
				p[3 + 2 * i + j] = (struct pollfd){
					.fd = r.c[i]->fd[j], .events = wants(r.c[i], j)};
		if (poll(p, (nfds_t)(3 + 2 * r.n), pf->sup_fd < 0 ? ALIVE_CHECK_MS : -1) < 0) {
			if (errno == EINTR)
				continue;
			err_sys(e, errno, "poll");
			break;
		}
		if (p[0].revents) {
			rc = PORTFWD_CANCELED;
			break;
		}
		if (p[1].revents) {
			rc = PORTFWD_GONE;
			break;
		}
		/* Backwards, so removing one (the last moves into its place) skips nothing. */
		for (i = r.n - 1; i >= 0; i--) {
			if (conn_step(&r, r.c[i], &p[3 + 2 * i]))
				continue;
			conn_free(r.c[i]);
			r.c[i] = r.c[--r.n];
			r.paused = false;
		}
		if (p[2].revents)
			accept_one(&r, lfd);
	}
	for (i = 0; i < r.n; i++)
		conn_free(r.c[i]);
	return rc;
}
