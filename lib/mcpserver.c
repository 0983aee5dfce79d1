/* mcpserver.c — MCP sessions over agent sessions, the method table, calls, progress, snapshots. */
#include "mcpserver.h"

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
#include "name.h"
#include "peer.h"
#include "timeutil.h"
#include "toolset.h"
#include "xalloc.h"

struct mcp_call {
	struct mcp_call *next;
	struct mcp_session *ss;
	struct json_object *id, *token;	/* token: NULL when no progress was asked for */
	char *name, *arguments;
	int cancel_pipe[2];		/* written to cancel */
	/* Guarded by srv->mu: */
	bool cancelled;
	const char *phase;		/* what the progress messages say */
	int64_t started_ns, last_progress_ns, progress;
	struct mcp_sink sink;
};

struct mcp_session {
	struct mcp_session *next;
	struct mcp_server *srv;
	char name[NAME_MAX_LEN + 1];
	struct agent_session *as;
	pthread_mutex_t run_mu;		/* held while as runs a call or a snapshot */
	/* Guarded by srv->mu: */
	const struct mcp_version *version;
	struct mcp_call *calls;		/* running or waiting for run_mu */
	int ncalls, workers;		/* workers: threads holding the session */
	bool snapshotting, snapshot_failed, closing, dirty;
	int64_t last_used_ns, dirty_since_ns;
};

struct mcp_server {
	struct mcp_server_config cfg;
	const struct toolset *ts;
	char *instructions;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* workers ended; the timer's sleep */
	struct mcp_session *sessions;
	pthread_t timer;
	bool stop;
};

static void srv_log(struct mcp_server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void srv_log(struct mcp_server *srv, const char *fmt, ...)
{
	char msg[SBX_ERR_MAX + 256];
	va_list ap;

	if (srv->cfg.log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	srv->cfg.log(srv->cfg.log_arg, msg);
}

static void reply(const struct mcp_sink *k, struct json_object *id, struct json_object *result)
{
	k->send(k->arg, jsonrpc_result_line(id, result));
	json_object_put(result);
}

static void reply_error(const struct mcp_sink *k, struct json_object *id, int code,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void reply_error(const struct mcp_sink *k, struct json_object *id, int code,
			const char *fmt, ...)
{
	char msg[SBX_ERR_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	k->send(k->arg, jsonrpc_error_line(id, code, msg, NULL));
}

/* A detached thread with a small stack. 0 or -1. */
static int start_thread(void *(*fn)(void *), void *arg)
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

/* Runs under ss->run_mu: the snapshot, then the session's state. */
static void snapshot_locked(struct mcp_session *ss)
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
	snapshot_locked(ss);
	pthread_mutex_unlock(&ss->run_mu);
	pthread_mutex_lock(&srv->mu);
	ss->snapshotting = false;
	ss->workers--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/* ---- the timer: progress and quiet-time snapshots ------------------------------------------ */

static int64_t snapshot_delay(const struct mcp_server *srv)
{
	return srv->cfg.snapshot_delay_ns < 0 ? MCP_DEFAULT_SNAPSHOT_DELAY_NS : srv->cfg.snapshot_delay_ns;
}

/* Caller holds srv->mu. */
static void tick_session(struct mcp_session *ss, int64_t now)
{
	struct mcp_server *srv = ss->srv;
	int64_t delay = snapshot_delay(srv);

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
		if (start_thread(snapshot_main, ss) < 0) {
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

	srv_log(ss->srv, "%ssession=%s %s", level == AGENT_LOG_WARN ? "warning: " : "", ss->name, msg);
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
static void cancel_call_locked(struct mcp_call *c)
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
		cancel_call_locked(c);
	pthread_mutex_unlock(&ss->srv->mu);
}

/* Cancels every call and waits until no worker holds the session. */
static void quiesce(struct mcp_session *ss)
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

	quiesce(ss);
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

/* ---- tools/call ------------------------------------------------------------------------------ */

static void call_free(struct mcp_call *c)
{
	json_object_put(c->id);
	json_object_put(c->token);
	free(c->name);
	free(c->arguments);
	if (c->cancel_pipe[0] >= 0)
		close(c->cancel_pipe[0]);
	if (c->cancel_pipe[1] >= 0)
		close(c->cancel_pipe[1]);
	free(c);
}

static void on_tool_start(void *arg, const struct agent_tool_call *call)
{
	struct mcp_call *c = arg;

	(void)call;
	pthread_mutex_lock(&c->ss->srv->mu);
	c->phase = "running";
	pthread_mutex_unlock(&c->ss->srv->mu);
}

/* The result of a finished call: isError when the registry reported a failure or the command
 * exited non-zero (a command's failure is the tool's result, never a protocol error). */
static struct json_object *call_result(struct mcp_session *ss, struct agent_tool_result *r)
{
	struct json_object *code;
	bool is_error = r->failed;

	if (r->structured && json_object_object_get_ex(r->structured, "exit_code", &code) &&
	    json_object_get_int(code) != 0)
		is_error = true;
	code = r->structured;
	r->structured = NULL;
	return mcp_call_result(mcp_session_version(ss), r->content, is_error, code);
}

static void *call_main(void *arg)
{
	struct mcp_call *c = arg;
	struct mcp_session *ss = c->ss;
	struct mcp_server *srv = ss->srv;
	struct agent_tool_call tc = {.id = "", .name = c->name, .arguments = c->arguments};
	struct agent_callbacks cb = {.arg = c, .on_tool_start = on_tool_start};
	struct agent_tool_result r = {0};
	struct json_object *result = NULL;
	struct sbx_err e;
	bool skip, cancelled, dirty, snap;
	int rc = -1;
	int64_t now;

	pthread_mutex_lock(&ss->run_mu);
	pthread_mutex_lock(&srv->mu);
	skip = c->cancelled;
	c->phase = "starting the sandbox for";
	pthread_mutex_unlock(&srv->mu);
	if (!skip) {
		rc = agent_tool_run(ss->as, &tc, &cb, c->cancel_pipe[0], &r, &e);
		if (rc == 0) {
			result = call_result(ss, &r);
		} else if (e.code != SBX_ECANCELED) {
			/* The sandbox could not be made: the call failed, the session goes on. */
			char *text = xasprintf("Error calling tool \"%s\": %s", c->name, e.msg);
			result = mcp_call_result(mcp_session_version(ss), text, true, NULL);
			free(text);
		}
	}
	dirty = agent_session_dirty(ss->as);
	now = time_mono_ns();
	pthread_mutex_lock(&srv->mu);
	for (struct mcp_call **p = &ss->calls; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	ss->ncalls--;
	cancelled = c->cancelled;
	ss->last_used_ns = now;
	ss->snapshot_failed = false;
	ss->dirty = dirty;
	if (dirty && ss->dirty_since_ns == 0)
		ss->dirty_since_ns = now;
	snap = dirty && !ss->closing &&
	       (snapshot_delay(srv) == 0 || now - ss->dirty_since_ns >= MCP_SNAPSHOT_MAX_AGE_NS);
	pthread_mutex_unlock(&srv->mu);
	/* A cancelled request gets no answer (MCP: the receiver SHOULD NOT respond). */
	if (result && !cancelled)
		reply(&c->sink, c->id, result);
	else
		json_object_put(result);
	if (c->sink.done)
		c->sink.done(c->sink.arg);
	/* The shutdown time moves on every call, once the answer is out. */
	if (!skip)
		agent_session_touch(ss->as, -1);
	agent_tool_result_free(&r);
	if (snap)
		snapshot_locked(ss);
	pthread_mutex_unlock(&ss->run_mu);
	pthread_mutex_lock(&srv->mu);
	ss->workers--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	call_free(c);
	return NULL;
}

struct req {
	struct mcp_session *ss;
	struct json_object *id, *params;
	const struct mcp_sink *sink;
};

/* Returns true when the request's answer is left to a worker (which calls sink->done). */
static bool m_tools_call(const struct req *r)
{
	struct mcp_session *ss = r->ss;
	struct mcp_server *srv = ss->srv;
	struct json_object *token;
	const char *name;
	char *args;
	struct mcp_call *c;
	struct sbx_err e;

	if (mcp_call_params(r->params, &name, &args, &token, &e) < 0) {
		reply_error(r->sink, r->id, JSONRPC_INVALID_PARAMS, "%s", e.msg);
		return false;
	}
	if (toolset_tool(srv->ts, name) == NULL) {
		reply_error(r->sink, r->id, JSONRPC_INVALID_PARAMS, "Unknown tool: %.200s (toolset %s)",
			    name, srv->ts->name);
		free(args);
		return false;
	}
	c = xcalloc(1, sizeof *c);
	c->ss = ss;
	c->id = json_object_get(r->id);
	c->token = token ? json_object_get(token) : NULL;
	c->name = xstrdup(name);
	c->arguments = args;
	c->sink = *r->sink;
	c->phase = "waiting for an earlier call before";
	c->started_ns = time_mono_ns();
	c->cancel_pipe[0] = c->cancel_pipe[1] = -1;
	if (pipe2(c->cancel_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		reply_error(r->sink, r->id, JSONRPC_INTERNAL_ERROR, "pipe: %s", strerror(errno));
		call_free(c);
		return false;
	}
	pthread_mutex_lock(&srv->mu);
	if (ss->closing || ss->ncalls >= MCP_CALLS_PER_SESSION_MAX) {
		bool closing = ss->closing;
		pthread_mutex_unlock(&srv->mu);
		reply_error(r->sink, r->id, JSONRPC_INTERNAL_ERROR, closing ? "the session is closing"
			    : "too many tool calls in progress in this session (limit %d)",
			    MCP_CALLS_PER_SESSION_MAX);
		call_free(c);
		return false;
	}
	c->next = ss->calls;
	ss->calls = c;
	ss->ncalls++;
	ss->workers++;
	ss->last_used_ns = c->started_ns;
	if (start_thread(call_main, c) < 0) {
		ss->calls = c->next;
		ss->ncalls--;
		ss->workers--;
		pthread_mutex_unlock(&srv->mu);
		reply_error(r->sink, r->id, JSONRPC_INTERNAL_ERROR, "cannot start a thread");
		call_free(c);
		return false;
	}
	pthread_mutex_unlock(&srv->mu);
	return true;
}

static bool m_initialize(const struct req *r)
{
	struct mcp_server *srv = r->ss->srv;
	struct mcp_impl info = {MCP_SERVER_NAME, MCP_SERVER_TITLE, MCP_SERVER_VERSION};
	struct json_object *pv = NULL;
	const struct mcp_version *v;

	if (!json_object_object_get_ex(r->params, "protocolVersion", &pv) ||
	    !json_object_is_type(pv, json_type_string)) {
		reply_error(r->sink, r->id, JSONRPC_INVALID_PARAMS,
			    "invalid params: protocolVersion (a string) is required");
		return false;
	}
	pthread_mutex_lock(&srv->mu);
	v = r->ss->version;
	if (v == NULL)
		v = r->ss->version = mcp_negotiate(json_object_get_string(pv));
	else
		v = NULL;
	pthread_mutex_unlock(&srv->mu);
	if (v == NULL) {
		reply_error(r->sink, r->id, JSONRPC_INVALID_REQUEST, "invalid request: already initialized");
		return false;
	}
	srv_log(srv, "session=%s initialized protocol=%s client asked %.64s", r->ss->name, v->name,
		json_object_get_string(pv));
	reply(r->sink, r->id, mcp_initialize_result(v, &info, srv->instructions));
	return false;
}

static bool m_ping(const struct req *r)
{
	reply(r->sink, r->id, json_object_new_object());
	return false;
}

static bool m_tools_list(const struct req *r)
{
	struct json_object *cur;

	/* One page: no cursor we handed out exists. */
	if (json_object_object_get_ex(r->params, "cursor", &cur) && cur != NULL) {
		reply_error(r->sink, r->id, JSONRPC_INVALID_PARAMS, "invalid params: unknown cursor");
		return false;
	}
	reply(r->sink, r->id, mcp_tools_list(r->ss->srv->ts, mcp_session_version(r->ss)));
	return false;
}

static bool n_cancelled(const struct req *r)
{
	struct mcp_server *srv = r->ss->srv;
	struct json_object *id;

	if (!json_object_object_get_ex(r->params, "requestId", &id))
		return false;
	pthread_mutex_lock(&srv->mu);
	for (struct mcp_call *c = r->ss->calls; c; c = c->next)
		if (mcp_id_equal(c->id, id)) {
			srv_log(srv, "session=%s cancelling %s", r->ss->name, c->name);
			cancel_call_locked(c);
		}
	pthread_mutex_unlock(&srv->mu);
	return false;
}

static bool n_ignore(const struct req *r)
{
	(void)r;
	return false;
}

static const struct method {
	const char *name;
	bool (*fn)(const struct req *);
	bool notification;
	bool before_init;	/* allowed before initialize */
} methods[] = {
	{MCP_INITIALIZE, m_initialize, false, true},
	{MCP_PING, m_ping, false, true},
	{MCP_TOOLS_LIST, m_tools_list, false, false},
	{MCP_TOOLS_CALL, m_tools_call, false, false},
	{MCP_INITIALIZED, n_ignore, true, true},
	{MCP_CANCELLED, n_cancelled, true, true},
};

void mcp_session_handle(struct mcp_session *ss, struct jsonrpc_msg *m, const struct mcp_sink *sink)
{
	const struct method *mt = NULL;
	bool is_req = m->kind == JSONRPC_REQUEST, later = false;
	struct req r = {.ss = ss, .id = m->id, .sink = sink};

	pthread_mutex_lock(&ss->srv->mu);
	ss->last_used_ns = time_mono_ns();
	pthread_mutex_unlock(&ss->srv->mu);
	if (m->kind == JSONRPC_RESPONSE)	/* we never ask the client anything */
		goto out;
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (strcmp(methods[i].name, m->method) == 0)
			mt = &methods[i];
	if (mt == NULL || mt->notification == is_req) {
		/* Unknown notifications are ignored (JSON-RPC: no answer to a notification). */
		if (is_req)
			reply_error(sink, m->id, JSONRPC_METHOD_NOT_FOUND, "method not found: %.200s",
				    m->method);
		goto out;
	}
	if (!mt->before_init && mcp_session_version(ss) == NULL) {
		if (is_req)
			reply_error(sink, m->id, JSONRPC_INVALID_REQUEST,
				    "invalid request: call initialize first");
		goto out;
	}
	if (m->params != NULL && !json_object_is_type(m->params, json_type_object)) {
		if (is_req)
			reply_error(sink, m->id, JSONRPC_INVALID_PARAMS, "invalid params: want an object");
		goto out;
	}
	r.params = m->params ? m->params : json_object_new_object();
	later = mt->fn(&r);
	if (m->params == NULL)
		json_object_put(r.params);
out:
	if (!later && sink->done)
		sink->done(sink->arg);
	jsonrpc_msg_free(m);
}

/* ---- a byte stream (stdio) ------------------------------------------------------------------ */

struct stream {
	struct mcp_session *ss;
	struct peer *p;
	int done_fd;			/* eventfd: peer_run returned */
	int rc;
	struct sbx_err e;
};

static void stream_send(void *arg, char *line)
{
	peer_send(arg, line);
}

static void stream_done(void *arg)
{
	peer_hold(arg, -1);
}

/* Every message holds the peer open until its answer is queued (see peer_hold). */
static void on_line(struct peer *p, struct jsonrpc_msg *m, void *arg)
{
	struct stream *st = arg;
	struct mcp_sink sink = {.send = stream_send, .done = stream_done, .arg = p};

	peer_hold(p, 1);
	mcp_session_handle(st->ss, m, &sink);
}

static void *stream_main(void *arg)
{
	struct stream *st = arg;
	uint64_t one = 1;

	st->rc = peer_run(st->p, on_line, st, &st->e);
	if (write(st->done_fd, &one, sizeof one) < 0) {
		/* the counter is already set */
	}
	return NULL;
}

int mcp_serve_stream(struct mcp_session *ss, int in_fd, int out_fd, int stop_fd, struct sbx_err *e)
{
	struct stream st = {.ss = ss};
	pthread_t t;

	if ((st.done_fd = eventfd(0, EFD_CLOEXEC)) < 0) {
		close(in_fd);
		close(out_fd);
		return err_sys(e, errno, "eventfd");
	}
	st.p = peer_new(in_fd, out_fd, NULL);
	if (pthread_create(&t, NULL, stream_main, &st) != 0) {
		peer_free(st.p);
		close(st.done_fd);
		return err_set(e, SBX_EIO, "cannot start a thread");
	}
	for (;;) {
		struct pollfd fds[2] = {{.fd = st.done_fd, .events = POLLIN},
					{.fd = stop_fd, .events = POLLIN}};
		if (poll(fds, stop_fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			break;
		if (fds[0].revents)
			break;
		if (stop_fd >= 0 && fds[1].revents) {
			peer_close(st.p);
			break;
		}
	}
	pthread_join(t, NULL);
	/* Workers may still answer through the peer: stop them before it goes. */
	quiesce(ss);
	pthread_mutex_lock(&ss->srv->mu);
	ss->closing = false;
	pthread_mutex_unlock(&ss->srv->mu);
	peer_free(st.p);
	close(st.done_fd);
	if (st.rc < 0) {
		*e = st.e;
		return -1;
	}
	return 0;
}
