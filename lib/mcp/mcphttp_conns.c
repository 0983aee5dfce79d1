/* mcphttp_conns.c — who may hold sbx-mcp's HTTP connections: a total cap, a share of it for
 * connections that never sent an authorized request, a cap per source (all of loopback is one
 * source per local user, lib/util/net.h), a deadline for the first authorized request, and a
 * server-wide bucket of wrong tokens. A newcomer past a cap closes the oldest connection that
 * has not authorized, so trickling or silent connections can never keep the real client out. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "acpauth.h"
#include "mcphttp.h"
#include "mcphttp_int.h"
#include "net.h"
#include "timeutil.h"
#include "xalloc.h"

struct hconn {
	bool used, authorized, closed;	/* closed: shut down by us, no longer counted */
	int fd;
	int64_t since;			/* monotonic ns it was accepted */
	char source[NET_ADDR_MAX];
};

struct mcphttp_conns {
	pthread_mutex_t mu;
	struct hconn v[MCPHTTP_CONN_SLOTS];
	struct acp_guard *fails;	/* the wrong-token bucket (no caps of its own) */
	int64_t logged;			/* when a refusal was last logged */
	logfn log;
	void *log_arg;
};

struct mcphttp_conns *mcphttp_conns_new(logfn log, void *log_arg)
{
	struct mcphttp_conns *g = xcalloc(1, sizeof *g);

	pthread_mutex_init(&g->mu, NULL);
	g->fails = acp_guard_new(0, 0);
	acp_guard_set_rate(g->fails, MCPHTTP_AUTH_FAILS_PER_S);
	g->log = log;
	g->log_arg = log_arg;
	return g;
}

void mcphttp_conns_free(struct mcphttp_conns *g)
{
	if (g == NULL)
		return;
	acp_guard_free(g->fails);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

/* Shuts x down: libmicrohttpd's thread for it sees the end and closes it (the descriptor stays
 * valid until then, so this never hits a reused one). Caller holds g->mu. */
static void shut_locked(struct mcphttp_conns *g, struct hconn *x, const char *why)
{
	x->closed = true;
	shutdown(x->fd, SHUT_RDWR);
	logfn_printf(g->log, g->log_arg, "closing a connection from %s: %s", x->source, why);
}

/* The unauthorized connection accepted longest ago (of source, when not NULL). */
static struct hconn *oldest_locked(struct mcphttp_conns *g, const char *source)
{
	struct hconn *old = NULL;
	int i;

	for (i = 0; i < MCPHTTP_CONN_SLOTS; i++) {
		struct hconn *x = &g->v[i];
		if (x->used && !x->closed && !x->authorized &&
		    (source == NULL || strcmp(x->source, source) == 0) &&
		    (old == NULL || x->since < old->since))
			old = x;
	}
	return old;
}

/* Counts x in past the caps, closing the oldest unauthorized connection to make room; false
 * when every slot it would need is held by authorized connections. Caller holds g->mu. */
static bool admit_locked(struct mcphttp_conns *g, struct hconn *x)
{
	int i, live = 0, unauth = 0, here = 0;
	struct hconn *old;

	for (i = 0; i < MCPHTTP_CONN_SLOTS; i++) {
		struct hconn *y = &g->v[i];
		if (y == x || !y->used || y->closed)
			continue;
		live++;
		unauth += !y->authorized;
		here += strcmp(y->source, x->source) == 0;
	}
	if (here >= MCPHTTP_CONNS_PER_SOURCE) {
		if ((old = oldest_locked(g, x->source)) == NULL)
			return false;
		shut_locked(g, old, "not authorized, and its source holds its cap");
		live--;
		unauth--;
	}
	if (unauth >= MCPHTTP_UNAUTH_MAX || live >= MCPHTTP_CONN_MAX) {
		if ((old = oldest_locked(g, NULL)) == NULL)
			return false;
		shut_locked(g, old, "not authorized, and such connections hold their share");
	}
	return true;
}

void mcphttp_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct mcphttp_conns *g = cls;
	const union MHD_ConnectionInfo *ci;
	struct hconn *x = *socket_context;
	int i;

	pthread_mutex_lock(&g->mu);
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (x)
			memset(x, 0, sizeof *x);
		*socket_context = NULL;
		goto out;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	for (i = 0; i < MCPHTTP_CONN_SLOTS && x == NULL; i++)
		if (!g->v[i].used)
			x = &g->v[i];
	if (ci == NULL || x == NULL) {
		/* No slot: libmicrohttpd's own limit is MCPHTTP_CONN_SLOTS, so this is rare. */
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
		goto out;
	}
	x->used = true;
	x->fd = ci->connect_fd;
	x->since = time_mono_ns();
	net_peer_source(x->fd, x->source, sizeof x->source);
	*socket_context = x;
	if (!admit_locked(g, x))
		shut_locked(g, x, "every connection is an authorized one");
out:
	pthread_mutex_unlock(&g->mu);
}

static struct hconn *of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

bool mcphttp_conns_may_try(struct mcphttp_conns *g, struct MHD_Connection *c, int64_t *wait_ns)
{
	struct hconn *x = of(c);
	char source[NET_ADDR_MAX];
	int64_t now = time_mono_ns();
	bool log;

	*wait_ns = 0;
	if (x == NULL)
		return true;
	pthread_mutex_lock(&g->mu);
	snprintf(source, sizeof source, "%s", x->source);
	pthread_mutex_unlock(&g->mu);
	if (acp_guard_may_try(g->fails, source, now, wait_ns))
		return true;
	pthread_mutex_lock(&g->mu);
	/* One line a second at most, however fast the refusals come. */
	if ((log = g->logged == 0 || now - g->logged >= 1000000000))
		g->logged = now;
	pthread_mutex_unlock(&g->mu);
	if (log)
		logfn_printf(g->log, g->log_arg, "refusing a token from %s unchecked: more than %d "
			     "wrong tokens a second on this server", source, MCPHTTP_AUTH_FAILS_PER_S);
	return false;
}

void mcphttp_conns_verdict(struct mcphttp_conns *g, struct MHD_Connection *c, bool authorized)
{
	struct hconn *x = of(c);
	char source[NET_ADDR_MAX] = "";
	int n;

	if (x == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	if (authorized)
		x->authorized = true;
	else
		snprintf(source, sizeof source, "%s", x->source);
	pthread_mutex_unlock(&g->mu);
	if (!authorized)
		acp_guard_fail(g->fails, source, time_mono_ns(), &n);
}

int mcphttp_conns_expire(struct mcphttp_conns *g)
{
	int64_t now = time_mono_ns(), next = -1;
	int i;

	pthread_mutex_lock(&g->mu);
	for (i = 0; i < MCPHTTP_CONN_SLOTS; i++) {
		struct hconn *x = &g->v[i];
		int64_t left;
		if (!x->used || x->closed || x->authorized)
			continue;
		left = x->since + MCPHTTP_AUTH_NS - now;
		if (left <= 0)
			shut_locked(g, x, "no authorized request in time");
		else if (next < 0 || left < next)
			next = left;
	}
	pthread_mutex_unlock(&g->mu);
	return next < 0 ? -1 : (int)(next / 1000000 + 1);
}
