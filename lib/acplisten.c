/* acplisten.c — the ACP server's listener and connections: the accept loop (TCP, optionally
 * TLS, or standard input and output), the per-source guard, the authentication deadline that
 * closes idle connections, and the shutdown that drains them. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acp_int.h"
#include "timeutil.h"
#include "xalloc.h"

/* ---- connections ------------------------------------------------------------------------ */

struct conn_arg {
	struct acp_server *srv;
	int fd;				/* -1: standard input and output */
	SSL_CTX *tls;
	bool guarded;
	char remote[NET_ADDR_MAX], source[NET_ADDR_MAX];
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
	struct acp_conn *c;
	struct peer *p;
	struct sbx_err e;
	SSL *ssl = NULL;
	int slot = -1, i;

	if (ca->tls) {
		ssl = SSL_new(ca->tls);
		SSL_set_fd(ssl, ca->fd);
		SSL_set_accept_state(ssl);
	}
	/* Standard input and output are duplicated: the peer closes its descriptors, and the
	 * program still owns (and flushes) its stdout at exit. */
	p = ca->fd < 0 ? peer_new(fcntl(0, F_DUPFD_CLOEXEC, 3), fcntl(1, F_DUPFD_CLOEXEC, 3), NULL)
		       : peer_new(ca->fd, ca->fd, ssl);
	c = acp_conn_new(srv, p, ca->remote);
	snprintf(c->source, sizeof c->source, "%s", ca->source);
	c->guarded = ca->guarded;
	pthread_mutex_lock(&srv->mu);
	/* A network client that does not authenticate (or, without authentication, initialize)
	 * within the deadline is closed: idle connections must not hold slots forever. */
	if (ca->fd >= 0 && srv->cfg.auth_timeout_ns > 0)
		c->deadline = time_mono_ns() + srv->cfg.auth_timeout_ns;
	for (i = 0; i < ACP_CONN_MAX && slot < 0; i++)
		if (srv->conns[i] == NULL)
			srv->conns[slot = i] = c;
	pthread_mutex_unlock(&srv->mu);
	wake_loop(srv);
	acp_log(srv, "client connected remote=\"%s\"", ca->remote);
	if (acp_conn_serve(c, &e) < 0)
		acp_log(srv, "connection error remote=\"%s\": %s", ca->remote, e.msg);
	acp_log(srv, "client disconnected remote=\"%s\"", ca->remote);
	if (ca->guarded)
		acp_guard_disconnect(srv->guard, ca->source);
	pthread_mutex_lock(&srv->mu);
	if (slot >= 0)
		srv->conns[slot] = NULL;
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

/* Admits a connection past the per-source guard; false when it was refused (fd closed). */
static bool admit(struct acp_server *srv, struct conn_arg *ca)
{
	int64_t wait;
	bool log;

	switch (acp_guard_connect(srv->guard, ca->source, time_mono_ns(), &wait, &log)) {
	case ACP_GUARD_OK:
		ca->guarded = true;
		return true;
	case ACP_GUARD_TOO_MANY:
		if (log)
			acp_log(srv, "refusing connection remote=\"%s\": %d connections open from %s",
				ca->remote, srv->cfg.conns_per_source, ca->source);
		break;
	case ACP_GUARD_BLOCKED:
		if (log)
			acp_log(srv, "refusing connections from %s for %llds: too many failed "
				"authentications", ca->source, (long long)(wait / 1000000000 + 1));
		break;
	}
	close(ca->fd);
	return false;
}

static void start_conn(struct acp_server *srv, int fd, SSL_CTX *tls)
{
	struct conn_arg *ca = xcalloc(1, sizeof *ca);
	pthread_attr_t at;
	pthread_t t;

	ca->srv = srv;
	ca->fd = fd;
	ca->tls = tls;
	if (fd < 0) {
		snprintf(ca->remote, sizeof ca->remote, "stdio");
	} else {
		net_peer_addr(fd, ca->remote, sizeof ca->remote);
		net_peer_source(fd, ca->source, sizeof ca->source);
		if (!admit(srv, ca)) {
			free(ca);
			return;
		}
	}
	pthread_mutex_lock(&srv->mu);
	if (srv->nconns >= ACP_CONN_MAX) {
		pthread_mutex_unlock(&srv->mu);
		acp_log(srv, "refusing connection from %s: %d connections open", ca->remote,
			ACP_CONN_MAX);
		goto refuse;
	}
	srv->nconns++;
	pthread_mutex_unlock(&srv->mu);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, ACP_THREAD_STACK);
	if (pthread_create(&t, &at, conn_main, ca) != 0) {
		pthread_attr_destroy(&at);
		acp_log(srv, "cannot start a thread for %s", ca->remote);
		pthread_mutex_lock(&srv->mu);
		srv->nconns--;
		pthread_mutex_unlock(&srv->mu);
		goto refuse;
	}
	pthread_attr_destroy(&at);
	return;
refuse:
	if (ca->guarded)
		acp_guard_disconnect(srv->guard, ca->source);
	if (fd >= 0)
		close(fd);
	free(ca);
}

/* Closes connections past their deadline; returns the poll timeout (ms) until the next one. */
static int expire_conns(struct acp_server *srv)
{
	int64_t now = time_mono_ns(), next = -1;
	int i;

	pthread_mutex_lock(&srv->mu);
	for (i = 0; i < ACP_CONN_MAX; i++) {
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

int acp_server_run(struct acp_server *srv, int lfd, SSL_CTX *tls, int stop_fd, int64_t drain_ns,
		   struct sbx_err *e)
{
	int i, rc = 0;

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
	for (i = 0; i < ACP_CONN_MAX; i++)
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
