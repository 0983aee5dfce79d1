/* mcpmethods.c — sbx-mcp's MCP methods: initialize (version negotiation), ping, tools/list,
 * tools/call (on a worker thread, one at a time per session, progress while it runs, the
 * result as MCP content), notifications/cancelled; the table that dispatches them. */
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
#include "toolmsg.h"
#include "toolparts.h"
#include "xalloc.h"

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

/* The result of a finished call: isError when the registry or the tool reported a failure
 * (toolset_call's one flag: a command that exited non-zero, a file that could not be read;
 * a tool's failure is its result, never a protocol error). */
static struct json_object *call_result(struct mcp_session *ss, struct agent_tool_result *r)
{
	struct json_object *structured = r->structured, *res;

	r->structured = NULL;
	res = mcp_call_result(mcp_session_version(ss), r->content, r->failed, structured);
	if (r->parts)	/* files as image, audio and resource items, in the tool's order */
		json_object_object_add(res, "content", toolparts_mcp_content(r->parts));
	return res;
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
			char *text = toolmsg_error(c->name, "%s", e.msg);
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
	       (mcp_snapshot_delay(srv) == 0 || now - ss->dirty_since_ns >= MCP_SNAPSHOT_MAX_AGE_NS);
	pthread_mutex_unlock(&srv->mu);
	/* A cancelled request gets no answer (MCP: the receiver SHOULD NOT respond). */
	if (result && !cancelled)
		mcp_reply(&c->sink, c->id, result);
	else
		json_object_put(result);
	if (c->sink.done)
		c->sink.done(c->sink.arg);
	/* The shutdown time moves on every call, once the answer is out. */
	if (!skip)
		agent_session_touch(ss->as, -1);
	agent_tool_result_free(&r);
	if (snap)
		mcp_snapshot_locked(ss);
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
		mcp_reply_error(r->sink, r->id, JSONRPC_INVALID_PARAMS, "%s", e.msg);
		return false;
	}
	if (toolset_tool(srv->ts, name) == NULL) {
		mcp_reply_error(r->sink, r->id, JSONRPC_INVALID_PARAMS, "Unknown tool: %.200s (toolset %s)",
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
		mcp_reply_error(r->sink, r->id, JSONRPC_INTERNAL_ERROR, "pipe: %s", strerror(errno));
		call_free(c);
		return false;
	}
	pthread_mutex_lock(&srv->mu);
	if (ss->closing || ss->ncalls >= MCP_CALLS_PER_SESSION_MAX) {
		bool closing = ss->closing;
		pthread_mutex_unlock(&srv->mu);
		mcp_reply_error(r->sink, r->id, JSONRPC_INTERNAL_ERROR, closing ? "the session is closing"
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
	if (mcp_start_thread(call_main, c) < 0) {
		ss->calls = c->next;
		ss->ncalls--;
		ss->workers--;
		pthread_mutex_unlock(&srv->mu);
		mcp_reply_error(r->sink, r->id, JSONRPC_INTERNAL_ERROR, "cannot start a thread");
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
		mcp_reply_error(r->sink, r->id, JSONRPC_INVALID_PARAMS,
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
		mcp_reply_error(r->sink, r->id, JSONRPC_INVALID_REQUEST, "invalid request: already initialized");
		return false;
	}
	mcp_srv_log(srv, "session=%s initialized protocol=%s client asked %.64s", r->ss->name, v->name,
		json_object_get_string(pv));
	mcp_reply(r->sink, r->id, mcp_initialize_result(v, &info, srv->instructions));
	return false;
}

static bool m_ping(const struct req *r)
{
	mcp_reply(r->sink, r->id, json_object_new_object());
	return false;
}

static bool m_tools_list(const struct req *r)
{
	struct json_object *cur;

	/* One page: no cursor we handed out exists. */
	if (json_object_object_get_ex(r->params, "cursor", &cur) && cur != NULL) {
		mcp_reply_error(r->sink, r->id, JSONRPC_INVALID_PARAMS, "invalid params: unknown cursor");
		return false;
	}
	mcp_reply(r->sink, r->id, mcp_tools_list(r->ss->srv->ts, mcp_session_version(r->ss)));
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
			mcp_srv_log(srv, "session=%s cancelling %s", r->ss->name, c->name);
			mcp_cancel_call_locked(c);
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
	{.name = MCP_INITIALIZE, .fn = m_initialize, .before_init = true},
	{.name = MCP_PING, .fn = m_ping, .before_init = true},
	{.name = MCP_TOOLS_LIST, .fn = m_tools_list},
	{.name = MCP_TOOLS_CALL, .fn = m_tools_call},
	{.name = MCP_INITIALIZED, .fn = n_ignore, .notification = true, .before_init = true},
	{.name = MCP_CANCELLED, .fn = n_cancelled, .notification = true, .before_init = true},
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
			mcp_reply_error(sink, m->id, JSONRPC_METHOD_NOT_FOUND, "method not found: %.200s",
				    m->method);
		goto out;
	}
	if (!mt->before_init && mcp_session_version(ss) == NULL) {
		if (is_req)
			mcp_reply_error(sink, m->id, JSONRPC_INVALID_REQUEST,
				    "invalid request: call initialize first");
		goto out;
	}
	if (m->params != NULL && !json_object_is_type(m->params, json_type_object)) {
		if (is_req)
			mcp_reply_error(sink, m->id, JSONRPC_INVALID_PARAMS, "invalid params: want an object");
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
