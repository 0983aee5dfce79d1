/* mcpserver.c — MCP sessions over agent sessions: the server and its sessions, the timer that
 * sends progress and takes quiet-time snapshots, the replies the methods send. Above it: the
 * method table and tools/call (mcpmethods.c), then the transports (mcpstdio.c, mcphttp.c). */
#include "mcpserver.h"
#include "mcpserver_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "gojson.h"
#include "logfn.h"
#include "name.h"
#include "peer.h"
#include "timeutil.h"
#include "toolset.h"
#include "xalloc.h"

void mcp_srv_log(struct mcp_server *srv, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	logfn_vprintf(srv->cfg.log, srv->cfg.log_arg, fmt, ap);
	va_end(ap);
}

void mcp_reply(const struct mcp_sink *k, struct json_object *id, struct json_object *result)
{
	k->send(k->arg, jsonrpc_result_line(id, result));
	json_object_put(result);
}


void mcp_reply_error(const struct mcp_sink *k, struct json_object *id, int code,
			const char *fmt, ...)
{
	char msg[SBX_ERR_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	k->send(k->arg, jsonrpc_error_line(id, code, msg, NULL));
}

int mcp_start_thread(void *(*fn)(void *), void *arg)
{
	pthread_attr_t at;
	pthread_t t;
	int rc;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, MCP_THREAD_STACK);
	rc = pthread_create(&t, &at, fn, arg);
	pthread_attr_destroy(&at);
	return rc == 0 ? 0 : -1;
}


/* ---- snapshots ---------------------------------------------------------------------------- */

void mcp_snapshot_locked(struct mcp_session *ss)
{
	struct mcp_server *srv = ss->srv;
	int rc = agent_session_snapshot(ss->as, -1);
	bool dirty = agent_session_dirty(ss->as);

	pthread_mutex_lock(&srv->mu);
	ss->dirty = dirty;
	if (!dirty)
		ss->dirty_since_ns = 0;
	ss->snapshot_failed = rc < 0;
	pthread_mutex_unlock(&srv->mu);
}

static void *snapshot_main(void *arg)
{
	struct mcp_session *ss = arg;
	struct mcp_server *srv = ss->srv;

	pthread_mutex_lock(&ss->run_mu);
	mcp_snapshot_locked(ss);
	pthread_mutex_unlock(&ss->run_mu);
	pthread_mutex_lock(&srv->mu);
	ss->snapshotting = false;
	ss->workers--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/* ---- the timer: progress and quiet-time snapshots ------------------------------------------ */

int64_t mcp_snapshot_delay(const struct mcp_server *srv)
{
	return srv->cfg.snapshot_delay_ns < 0 ? MCP_DEFAULT_SNAPSHOT_DELAY_NS : srv->cfg.snapshot_delay_ns;
}

/* Caller holds srv->mu. */
static void tick_session(struct mcp_session *ss, int64_t now)
{
	struct mcp_server *srv = ss->srv;
	int64_t delay = mcp_snapshot_delay(srv);

	for (struct mcp_call *c = ss->calls; c; c = c->next) {
		int64_t since = c->last_progress_ns ? c->last_progress_ns : c->started_ns;
		struct json_object *p;
		char msg[200];

		if (c->token == NULL || c->cancelled || now - since < MCP_PROGRESS_INTERVAL_NS)
			continue;
		c->last_progress_ns = now;
		snprintf(msg, sizeof msg, "%s %s (%llds)", c->phase, c->name,
			 (long long)((now - c->started_ns) / 1000000000));
		p = mcp_progress_params(c->token, ++c->progress, msg);
		c->sink.send(c->sink.arg, jsonrpc_notification_line(MCP_PROGRESS, p));
		json_object_put(p);
	}
	if (ss->dirty && delay > 0 && ss->ncalls == 0 && !ss->snapshotting && !ss->closing &&
	    !ss->snapshot_failed && now - ss->last_used_ns >= delay) {
		ss->snapshotting = true;
		ss->workers++;
		if (mcp_start_thread(snapshot_main, ss) < 0) {
			ss->snapshotting = false;
			ss->workers--;
		}
	}
}

static void *timer_main(void *arg)
{
	struct mcp_server *srv = arg;

	pthread_mutex_lock(&srv->mu);
	while (!srv->stop) {
		struct timespec until;
		int64_t now = time_mono_ns();

		for (struct mcp_session *ss = srv->sessions; ss; ss = ss->next)
			tick_session(ss, now);
		/* A quarter of the interval: progress is at most that late. */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += MCP_PROGRESS_INTERVAL_NS / 4;
		until.tv_sec += until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&srv->cv, &srv->mu, &until);
	}
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/* ---- server and sessions ------------------------------------------------------------------- */

struct mcp_server *mcp_server_new(const struct mcp_server_config *cfg, struct sbx_err *e)
{
	struct mcp_server *srv;
	const struct toolset *ts = toolset_find(cfg->toolset, e);
	char *prompt;

	if (ts == NULL || (prompt = ts->system_prompt(e)) == NULL)
		return NULL;
	srv = xcalloc(1, sizeof *srv);
	srv->cfg = *cfg;
	srv->ts = ts;
	srv->instructions = prompt;
	pthread_mutex_init(&srv->mu, NULL);
	pthread_cond_init(&srv->cv, NULL);
	if (pthread_create(&srv->timer, NULL, timer_main, srv) != 0) {
		err_set(e, SBX_EIO, "cannot start the timer thread");
		pthread_cond_destroy(&srv->cv);
		pthread_mutex_destroy(&srv->mu);
		free(srv->instructions);
		free(srv);
		return NULL;
	}
	return srv;
}

void mcp_server_free(struct mcp_server *srv)
{
	if (srv == NULL)
		return;
	pthread_mutex_lock(&srv->mu);
	srv->stop = true;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	pthread_join(srv->timer, NULL);
	pthread_cond_destroy(&srv->cv);
	pthread_mutex_destroy(&srv->mu);
	free(srv->instructions);
	free(srv);
}

static void agent_log(void *arg, enum agent_log_level level, const char *msg)
{
	struct mcp_session *ss = arg;

	mcp_srv_log(ss->srv, "%ssession=%s %s", level == AGENT_LOG_WARN ? "warning: " : "", ss->name, msg);
}

static void agent_trace(void *arg, const char *label, const char *json)
{
	struct mcp_session *ss = arg;

	ss->srv->cfg.trace(ss->srv->cfg.log_arg, label, json);
}

struct mcp_session *mcp_session_open(struct mcp_server *srv, const char *name, struct sbx_err *e)
{
	struct mcp_session *ss = xcalloc(1, sizeof *ss);
	struct agent_config ac = {
		.backend = srv->cfg.backend, .namespace = srv->cfg.namespace,
		.image = srv->cfg.image, .homedir = srv->cfg.homedir, .toolset = srv->ts->name,
		.tool_timeout_ns = srv->cfg.tool_timeout_ns, .ttl_ns = srv->cfg.ttl_ns,
		.create_args = srv->cfg.create_args, .bindir = srv->cfg.bindir,
		.tools_only = true, .in_process = true, .log = agent_log, .log_arg = ss,
	};

	if (name) {
		snprintf(ss->name, sizeof ss->name, "%s", name);
	} else {
		unsigned char rnd[8];
		/* getrandom, not OpenSSL: this runs on short-lived connection threads, where
		 * OpenSSL would keep a random generator per thread. */
		if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
			free(ss);
			err_set(e, SBX_EIO, "failed to generate a session name");
			return NULL;
		}
		memcpy(ss->name, "mcp", 3);
		for (int i = 0; i < 8; i++)
			snprintf(ss->name + 3 + 2 * i, 3, "%02x", rnd[i]);
	}
	ac.session = ss->name;
	if (srv->cfg.trace)
		ac.trace = agent_trace;
	ss->srv = srv;
	if ((ss->as = agent_session_open(&ac, e)) == NULL) {
		free(ss);
		return NULL;
	}
	pthread_mutex_init(&ss->run_mu, NULL);
	ss->last_used_ns = time_mono_ns();
	pthread_mutex_lock(&srv->mu);
	ss->next = srv->sessions;
	srv->sessions = ss;
	pthread_mutex_unlock(&srv->mu);
	return ss;
}

const char *mcp_session_name(const struct mcp_session *ss)
{
	return ss->name;
}

const struct mcp_version *mcp_session_version(struct mcp_session *ss)
{
	const struct mcp_version *v;

	pthread_mutex_lock(&ss->srv->mu);
	v = ss->version;
	pthread_mutex_unlock(&ss->srv->mu);
	return v;
}

int64_t mcp_session_last_used(struct mcp_session *ss)
{
	int64_t t;

	pthread_mutex_lock(&ss->srv->mu);
	t = ss->last_used_ns;
	pthread_mutex_unlock(&ss->srv->mu);
	return t;
}

bool mcp_session_busy(struct mcp_session *ss)
{
	bool b;

	pthread_mutex_lock(&ss->srv->mu);
	b = ss->workers > 0;
	pthread_mutex_unlock(&ss->srv->mu);
	return b;
}

/* Caller holds srv->mu. */
void mcp_cancel_call_locked(struct mcp_call *c)
{
	if (!c->cancelled) {
		c->cancelled = true;
		if (write(c->cancel_pipe[1], "x", 1) < 0) {
			/* already readable */
		}
	}
}

void mcp_session_cancel(struct mcp_session *ss)
{
	pthread_mutex_lock(&ss->srv->mu);
	ss->closing = true;
	for (struct mcp_call *c = ss->calls; c; c = c->next)
		mcp_cancel_call_locked(c);
	pthread_mutex_unlock(&ss->srv->mu);
}

void mcp_session_quiesce(struct mcp_session *ss)
{
	struct mcp_server *srv = ss->srv;

	mcp_session_cancel(ss);
	pthread_mutex_lock(&srv->mu);
	while (ss->workers > 0)
		pthread_cond_wait(&srv->cv, &srv->mu);
	pthread_mutex_unlock(&srv->mu);
}

int mcp_session_close(struct mcp_session *ss, bool delete_sandbox, struct sbx_err *e)
{
	struct mcp_server *srv = ss->srv;
	int rc = 0;

	mcp_session_quiesce(ss);
	pthread_mutex_lock(&srv->mu);
	for (struct mcp_session **p = &srv->sessions; *p; p = &(*p)->next)
		if (*p == ss) {
			*p = ss->next;
			break;
		}
	pthread_mutex_unlock(&srv->mu);
	agent_session_snapshot(ss->as, -1);
	if (delete_sandbox)
		rc = agent_session_delete_sandbox(ss->as, e);
	agent_session_free(ss->as);
	pthread_mutex_destroy(&ss->run_mu);
	free(ss);
	return rc;
}
