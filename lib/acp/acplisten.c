/* acplisten.c — the ACP server's listener and connections: the accept loop (TCP, optionally
 * TLS, or standard input and output), the per-source guard, the share of slots kept for
 * authenticated connections (a newcomer past a cap closes the oldest unauthenticated one), the
 * authentication deadline that closes idle connections, and the shutdown that drains them. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acp_int.h"
#include "timeutil.h"
#include "xalloc.h"

/* ---- connections ------------------------------------------------------------------------ */

struct conn_arg {
	struct acp_server *srv;
	struct acp_conn *c;
	int fd;				/* -1: standard input and output */
};

static void wake_loop(struct acp_server *srv)
{
	uint64_t one = 1;

	if (srv->wakefd >= 0 && write(srv->wakefd, &one, sizeof one) < 0) {
		/* the counter is already set */
	}
}

static void *conn_main(void *arg)
{
	struct conn_arg *ca = arg;
	struct acp_server *srv = ca->srv;
	struct acp_conn *c = ca->c;
	struct sbx_err e;

	acp_log(srv, "client connected remote=\"%s\"", c->remote);
	if (acp_conn_serve(c, &e) < 0)
		acp_log(srv, "connection error remote=\"%s\": %s", c->remote, e.msg);
	acp_log(srv, "client disconnected remote=\"%s\"", c->remote);
	pthread_mutex_lock(&srv->mu);
	if (c->guarded)
		acp_guard_disconnect(srv->guard, c->source);
	if (!c->evicted)
		srv->nlive--;
	if (c->slot >= 0)
		srv->conns[c->slot] = NULL;
	srv->nconns--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	free(c);
	if (ca->fd < 0) {
		uint64_t one = 1;
		if (write(srv->stdio_done, &one, sizeof one) < 0) {
			/* the counter is already set */
		}
	}
	free(ca);
	return NULL;
}

/* Closes the unauthenticated connection that has waited longest (of source, when not NULL),
 * preferring one that never even sent initialize, to make room for a new one. Caller holds
 * srv->mu. False when there is none. */
static bool evict_locked(struct acp_server *srv, const char *source, const char *why)
{
	struct acp_conn *old = NULL;
	int i;

	for (i = 0; i < ACP_CONN_SLOTS; i++) {
		struct acp_conn *c = srv->conns[i];
		if (c == NULL || c->p == NULL || c->admitted || c->evicted ||
		    (source && strcmp(c->source, source) != 0))
			continue;
		if (old == NULL || (old->initialized && !c->initialized) ||
		    (old->initialized == c->initialized && c->since < old->since))
			old = c;
	}
	if (old == NULL)
		return false;
	old->evicted = true;
	old->deadline = 0;
	srv->nlive--;
	if (old->guarded)
		acp_guard_disconnect(srv->guard, old->source);
	old->guarded = false;
	acp_log(srv, "closing connection remote=\"%s\": not authenticated, and %s (%s)", old->remote,
		why, old->source);
	peer_close(old->p);
	return true;
}

/* Admits a connection from source past the per-source guard, making room by closing the
 * oldest unauthenticated connection of the source when it holds its cap; false when refused. */
static bool admit_source(struct acp_server *srv, struct acp_conn *c)
{
	int64_t wait;
	bool log, room;
	int tries;

	for (tries = 0; tries < 2; tries++) {
		switch (acp_guard_connect(srv->guard, c->source, time_mono_ns(), &wait, &log)) {
		case ACP_GUARD_OK:
			c->guarded = true;
			return true;
		case ACP_GUARD_BLOCKED:
			if (log)
				acp_log(srv, "refusing connections from %s for %llds: too many "
					"failed authentications", c->source,
					(long long)(wait / 1000000000 + 1));
			return false;
		case ACP_GUARD_TOO_MANY:
			pthread_mutex_lock(&srv->mu);
			room = tries == 0 && evict_locked(srv, c->source, "its source holds its cap");
			pthread_mutex_unlock(&srv->mu);
			if (!room) {
				if (log)
					acp_log(srv, "refusing connection remote=\"%s\": %d connections "
						"open from %s", c->remote, srv->cfg.conns_per_source,
						c->source);
				return false;
			}
			break;
		}
	}
	return false;
}

/* Counts c in and gives it a slot, making room among unauthenticated connections when they
 * hold their share (or every slot); false when every slot is an authenticated one. */
static bool admit_total_locked(struct acp_server *srv, struct acp_conn *c)
{
	int i, unauth = 0;

	for (i = 0; i < ACP_CONN_SLOTS; i++)
		if (srv->conns[i] && !srv->conns[i]->admitted && !srv->conns[i]->evicted)
			unauth++;
	if (unauth >= ACP_UNAUTH_MAX || srv->nlive >= ACP_CONN_MAX)
		evict_locked(srv, NULL, "unauthenticated connections hold their share");
	if (srv->nlive >= ACP_CONN_MAX || srv->nconns >= ACP_CONN_SLOTS) {
		acp_log(srv, "refusing connection from %s: %d connections open", c->remote,
			srv->nlive);
		return false;
	}
	for (i = 0; i < ACP_CONN_SLOTS && c->slot < 0; i++)
		if (srv->conns[i] == NULL)
			srv->conns[c->slot = i] = c;
	srv->nlive++;
	srv->nconns++;
	return true;
}

/* The connection of fd (-1: standard input and output), its peer made and TLS started. */
static struct acp_conn *make_conn(struct acp_server *srv, int fd, SSL_CTX *tls)
{
	struct acp_conn *c;
	struct peer *p;
	SSL *ssl = NULL;
	char remote[NET_ADDR_MAX];

	if (fd < 0) {
		/* Standard input and output are duplicated: the peer closes its descriptors, and
		 * the program still owns (and flushes) its stdout at exit. */
		p = peer_new(fcntl(0, F_DUPFD_CLOEXEC, 3), fcntl(1, F_DUPFD_CLOEXEC, 3), NULL);
		return acp_conn_new(srv, p, "stdio");
	}
	if (tls) {
		ssl = SSL_new(tls);
		SSL_set_fd(ssl, fd);
		SSL_set_accept_state(ssl);
	}
	net_peer_addr(fd, remote, sizeof remote);
	c = acp_conn_new(srv, peer_new(fd, fd, ssl), remote);
	net_peer_source(fd, c->source, sizeof c->source);
	c->since = time_mono_ns();
	/* A network client that does not authenticate (or, without authentication, initialize)
	 * within the deadline is closed: idle connections must not hold slots forever. */
	if (srv->cfg.auth_timeout_ns > 0)
		c->deadline = c->since + srv->cfg.auth_timeout_ns;
	return c;
}

static void start_conn(struct acp_server *srv, int fd, SSL_CTX *tls)
{
	struct conn_arg *ca = xcalloc(1, sizeof *ca);
	struct acp_conn *c = make_conn(srv, fd, tls);
	pthread_attr_t at;
	pthread_t t;
	bool ok;

	ca->srv = srv;
	ca->fd = fd;
	ca->c = c;
	if (fd >= 0 && !admit_source(srv, c))
		goto refuse;
	pthread_mutex_lock(&srv->mu);
	ok = admit_total_locked(srv, c);
	if (!ok && c->guarded)
		acp_guard_disconnect(srv->guard, c->source);
	pthread_mutex_unlock(&srv->mu);
	if (!ok)
		goto refuse;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, ACP_THREAD_STACK);
	if (pthread_create(&t, &at, conn_main, ca) != 0) {
		pthread_attr_destroy(&at);
		acp_log(srv, "cannot start a thread for %s", c->remote);
		pthread_mutex_lock(&srv->mu);
		if (c->guarded)
			acp_guard_disconnect(srv->guard, c->source);
		srv->conns[c->slot] = NULL;
		srv->nlive--;
		srv->nconns--;
		pthread_mutex_unlock(&srv->mu);
		goto refuse;
	}
	pthread_attr_destroy(&at);
	wake_loop(srv);
	return;
refuse:
	peer_free(c->p);	/* closes fd */
	free(c);
	free(ca);
}

/* Closes connections past their deadline; returns the poll timeout (ms) until the next one. */
static int expire_conns(struct acp_server *srv)
{
	int64_t now = time_mono_ns(), next = -1;
	int i;

	pthread_mutex_lock(&srv->mu);
	for (i = 0; i < ACP_CONN_SLOTS; i++) {
		struct acp_conn *c = srv->conns[i];
		if (c == NULL || c->deadline == 0)
			continue;
		if (c->deadline <= now) {
			c->deadline = 0;
			acp_log(srv, "closing connection remote=\"%s\": not %s within %llds", c->remote,
				srv->cfg.auth ? "authenticated" : "initialized",
				(long long)(srv->cfg.auth_timeout_ns / 1000000000));
			if (c->p)
				peer_close(c->p);
		} else if (next < 0 || c->deadline - now < next) {
			next = c->deadline - now;
		}
	}
	pthread_mutex_unlock(&srv->mu);
	return next < 0 ? -1 : (int)(next / 1000000 + 1);
}

/* Descriptors a full server holds: a socket and an eventfd per connection slot, and room for
 * the children and files of running turns. */
#define ACP_FDS_NEEDED (ACP_CONN_SLOTS * 2 + 1024)

/* Raises the soft descriptor limit toward the hard one (as Go's runtime does for upstream's
 * server): at the usual soft 1024, a flood of connections would run accept out of descriptors
 * and so shut out the real client before any cap is reached. */
static void raise_fd_limit(struct acp_server *srv)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= ACP_FDS_NEEDED)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > ACP_FDS_NEEDED ? ACP_FDS_NEEDED
										      : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < ACP_FDS_NEEDED)
		acp_log(srv, "warning: %llu descriptors allowed, fewer than the %d a full server "
			"holds (ulimit -n)", (unsigned long long)rl.rlim_cur, ACP_FDS_NEEDED);
}

int acp_server_run(struct acp_server *srv, int lfd, SSL_CTX *tls, int stop_fd, int64_t drain_ns,
		   struct sbx_err *e)
{
	int i, rc = 0;

	if (lfd >= 0)
		raise_fd_limit(srv);
	srv->stdio_done = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	srv->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->stdio_done < 0 || srv->wakefd < 0) {
		rc = err_sys(e, errno, "eventfd");
		goto out;
	}
	if (lfd < 0)
		start_conn(srv, -1, NULL);
	for (;;) {
		struct pollfd fds[4] = {{.fd = stop_fd, .events = POLLIN},
					{.fd = srv->stdio_done, .events = POLLIN},
					{.fd = srv->wakefd, .events = POLLIN},
					{.fd = lfd, .events = POLLIN}};
		uint64_t v;
		int fd, timeout = expire_conns(srv);

		if (poll(fds, lfd >= 0 ? 4 : 3, timeout) < 0 && errno != EINTR) {
			rc = err_sys(e, errno, "poll");
			break;
		}
		if ((fds[0].revents | fds[1].revents) & POLLIN)
			break;
		if ((fds[2].revents & POLLIN) && read(srv->wakefd, &v, sizeof v) < 0) {
			/* spurious */
		}
		if (lfd >= 0 && (fds[3].revents & POLLIN)) {
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				start_conn(srv, fd, tls);
			else if (errno == EMFILE || errno == ENFILE)
				poll(NULL, 0, 100);	/* out of descriptors: do not spin */
		}
	}
	acp_log(srv, "shutting down");
	acp_server_drain(srv, drain_ns);
	pthread_mutex_lock(&srv->mu);
	for (i = 0; i < ACP_CONN_SLOTS; i++)
		if (srv->conns[i] && srv->conns[i]->p)
			peer_close(srv->conns[i]->p);
	while (srv->nconns > 0)
		pthread_cond_wait(&srv->cv, &srv->mu);
	pthread_mutex_unlock(&srv->mu);
out:
	if (srv->stdio_done >= 0)
		close(srv->stdio_done);
	if (srv->wakefd >= 0)
		close(srv->wakefd);
	srv->stdio_done = srv->wakefd = -1;
	return rc;
}
