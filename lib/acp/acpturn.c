/* acpturn.c — session/prompt: a turn of the agent (lib/agent/agent.h) mapped onto session/update
 * notifications (text, thoughts, usage, tool calls as lib/acp/acptool.h shows them), every tool
 * call put to the client through session/request_permission as the session's mode says. The
 * prompt's content: acpprompt.c; the replay of a stored conversation: acpreplay.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_int.h"
#include "gojson.h"
#include "jsonfield.h"
#include "timeutil.h"
#include "toolset.h"
#include "toolmsg.h"
#include "xalloc.h"

static long long context_window(const struct acp_server *srv, const char *model)
{
	if (srv->cfg.context_window > 0)
		return srv->cfg.context_window;
	return model && strncmp(model, "gemini", 6) == 0 ? 1048576 : 128000;
}

/* ---- tool calls ------------------------------------------------------------------------- */

static struct json_object *content_list(const char *text)
{
	struct json_object *arr = json_object_new_array(), *tc = json_object_new_object();

	json_object_object_add(tc, "type", json_object_new_string("content"));
	json_object_object_add(tc, "content", acp_text_block(text, strlen(text)));
	json_object_array_add(arr, tc);
	return arr;
}

static void send_status(struct acp_session *s, const char *call_id, const char *status,
			const char *text)
{
	struct json_object *u = json_object_new_object();

	json_object_object_add(u, "sessionUpdate", json_object_new_string("tool_call_update"));
	json_object_object_add(u, "toolCallId", json_object_new_string(call_id));
	json_object_object_add(u, "status", json_object_new_string(status));
	if (text)
		json_object_object_add(u, "content", content_list(text));
	acp_send_update(s->out, s->id, u);
}

/* Ends the announced tool call (status failed or completed), once. */
static void end_call(struct acp_session *s, const char *status, const char *text)
{
	if (s->open_call == NULL)
		return;
	send_status(s, s->open_call, status, text);
	free(s->open_call);
	s->open_call = NULL;
}

char *acp_call_id(size_t msg, size_t k)
{
	return xasprintf("call_%zu_%zu", msg, k);
}

static char *id_of(struct acp_session *s, const struct agent_tool_call *call)
{
	size_t k, n = s->cur_calls ? json_object_array_length(s->cur_calls) : 0;

	for (k = 0; k < n; k++)
		if (json_object_array_get_idx(s->cur_calls, k) == call->raw)
			return acp_call_id(s->cur_msg, k);
	return acp_call_id(s->cur_msg, n);
}

/* The fields of tool_call (update: the discriminator) and of a permission's toolCall. */
static struct json_object *tool_fields(struct acp_session *s, const char *id,
				       const struct agent_tool_call *call, const char *update)
{
	struct json_object *o = json_object_new_object();
	struct acp_pathmap pm = acp_session_paths(s);

	if (update)
		json_object_object_add(o, "sessionUpdate", json_object_new_string(update));
	json_object_object_add(o, "toolCallId", json_object_new_string(id));
	acptool_describe(o, call->name, call->arguments, &pm);
	json_object_object_add(o, "status", json_object_new_string("pending"));
	return o;
}

static void cb_delta(void *arg, const char *text, size_t len)
{
	struct acp_session *s = arg;

	s->streamed = true;
	acp_send_chunk(s->out, s->id, "agent_message_chunk", text, len);
}

static void cb_thought(void *arg, const char *text, size_t len)
{
	struct acp_session *s = arg;

	s->thought_streamed = true;
	acp_send_chunk(s->out, s->id, "agent_thought_chunk", text, len);
}

static void cb_assistant(void *arg, struct json_object *msg, bool final)
{
	struct acp_session *s = arg;
	struct json_object *v;

	(void)final;
	/* A model that did not stream (fake-eliza) still gets its words to the client. */
	if (!s->thought_streamed && json_object_object_get_ex(msg, "reasoning_content", &v) &&
	    json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0)
		acp_send_chunk(s->out, s->id, "agent_thought_chunk", json_object_get_string(v),
			       (size_t)json_object_get_string_len(v));
	if (!s->streamed && json_object_object_get_ex(msg, "content", &v) &&
	    json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0)
		acp_send_chunk(s->out, s->id, "agent_message_chunk", json_object_get_string(v),
			       (size_t)json_object_get_string_len(v));
	s->streamed = s->thought_streamed = false;
	s->cur_msg = json_object_array_length(agent_session_history(s->as)) - 1;
	s->cur_calls = json_object_object_get_ex(msg, "tool_calls", &v) ? v : NULL;
}

static void cb_llm_done(void *arg, const char *finish, struct json_object *usage)
{
	struct acp_session *s = arg;
	struct json_object *v, *u;
	int64_t used = -1;

	snprintf(s->finish, sizeof s->finish, "%s", finish);
	if (usage == NULL)
		return;
	if (json_object_object_get_ex(usage, "total_tokens", &v) && json_object_is_type(v, json_type_int))
		used = json_object_get_int64(v);
	else if (json_object_object_get_ex(usage, "prompt_tokens", &v) &&
		 json_object_is_type(v, json_type_int))
		used = json_object_get_int64(v);
	if (used < 0)
		return;
	u = json_object_new_object();
	json_object_object_add(u, "sessionUpdate", json_object_new_string("usage_update"));
	json_object_object_add(u, "used", json_object_new_int64(used));
	json_object_object_add(u, "size",
			       json_object_new_int64(context_window(s->turn_conn->srv, s->model)));
	acp_send_update(s->out, s->id, u);
}

static int remembered(struct acp_session *s, const char *tool)
{
	size_t i;

	for (i = 0; i < s->nalways; i++)
		if (strcmp(s->always[i], tool) == 0)
			return s->always_allow[i] ? 1 : 0;
	return -1;
}

static void remember(struct acp_session *s, const char *tool, bool allow)
{
	size_t i;

	for (i = 0; i < s->nalways; i++)
		if (strcmp(s->always[i], tool) == 0) {
			s->always_allow[i] = allow;
			return;
		}
	if (s->nalways < ACP_ALWAYS_MAX) {
		s->always[s->nalways] = xstrdup(tool);
		s->always_allow[s->nalways++] = allow;
	}
}

static struct json_object *option(const char *id, const char *name, const char *kind)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "optionId", json_object_new_string(id));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "kind", json_object_new_string(kind));
	return o;
}

/* Asks the client; 1 allow, 0 deny, -1 error. */
static int ask(struct acp_session *s, const char *id, const struct agent_tool_call *call,
	       struct sbx_err *e)
{
	struct json_object *params = json_object_new_object(), *opts = json_object_new_array();
	struct json_object *result = NULL, *error = NULL, *outcome, *v;
	const char *kind, *opt;
	int rc = -1;

	json_object_object_add(params, "sessionId", json_object_new_string(s->id));
	json_object_object_add(params, "toolCall", tool_fields(s, id, call, NULL));
	json_object_array_add(opts, option("allow-once", "Allow", "allow_once"));
	json_object_array_add(opts, option("allow-always", "Always allow", "allow_always"));
	json_object_array_add(opts, option("reject-once", "Reject", "reject_once"));
	json_object_array_add(opts, option("reject-always", "Always reject", "reject_always"));
	json_object_object_add(params, "options", opts);
	if (peer_call(s->out, "session/request_permission", params, &s->cancel, &result, &error,
		      e) < 0)
		goto out;
	if (error) {
		err_set(e, SBX_EIO, "client error: %s", json_object_get_string(error));
		goto out;
	}
	if (!json_object_object_get_ex(result, "outcome", &outcome) ||
	    (kind = jsonfield_str(outcome, "outcome")) == NULL) {
		err_set(e, SBX_EIO, "invalid answer: want {\"outcome\":{\"outcome\":…}}");
		goto out;
	}
	if (strcmp(kind, "cancelled") == 0) {
		err_set(e, SBX_ECANCELED, "cancelled by the client");
		goto out;
	}
	opt = json_object_object_get_ex(outcome, "optionId", &v) ? json_object_get_string(v) : "";
	if (strcmp(kind, "selected") != 0) {
		rc = 0;
	} else if (strcmp(opt, "allow-once") == 0) {
		rc = 1;
	} else if (strcmp(opt, "allow-always") == 0) {
		remember(s, call->name, true);
		rc = 1;
	} else {
		if (strcmp(opt, "reject-always") == 0)
			remember(s, call->name, false);
		rc = 0;	/* anything else is a denial, as upstream */
	}
out:
	json_object_put(result);
	json_object_put(error);
	json_object_put(params);
	return rc;
}

/* Whether the session's mode lets this call run without asking. */
static bool mode_allows(const struct acp_session *s, const char *name)
{
	const char *kind = toolset_tool_kind(name);

	if (s->mode == ACP_MODE_NEVER_ASK || acp_plan_offered(s->srv, name))
		return true;	/* the plan tool only changes what the client shows */
	/* read and search tools never change the sandbox's files (toolset.h) */
	return s->mode == ACP_MODE_AUTO_READ && (strcmp(kind, "read") == 0 || strcmp(kind, "search") == 0);
}

static int cb_approve(void *arg, const struct agent_tool_call *call, struct sbx_err *e)
{
	struct acp_session *s = arg;
	char *id = id_of(s, call);
	int rc;

	acp_send_update(s->out, s->id, tool_fields(s, id, call, "tool_call"));
	end_call(s, "failed", NULL);
	s->open_call = id;
	if (s->cancel) {
		end_call(s, "failed", NULL);
		return err_set(e, SBX_ECANCELED, "cancelled");
	}
	rc = mode_allows(s, call->name) ? 1 : remembered(s, call->name);
	if (rc < 0)
		rc = ask(s, id, call, e);
	if (rc == 0) {
		char *text = toolmsg_denied(call->name);
		end_call(s, "failed", text);
		free(text);
	} else if (rc < 0) {
		end_call(s, "failed", NULL);
	}
	return rc;
}

static void cb_tool_start(void *arg, const struct agent_tool_call *call)
{
	struct acp_session *s = arg;
	struct acp_conn *c = s->turn_conn;

	(void)call;
	pthread_mutex_lock(&c->srv->mu);
	s->tool_ran = true;
	pthread_mutex_unlock(&c->srv->mu);
	if (s->open_call)
		send_status(s, s->open_call, "in_progress", NULL);
}

static void cb_tool_end(void *arg, const struct agent_tool_call *call, bool failed,
			const char *content)
{
	struct acp_session *s = arg;
	struct acp_pathmap pm = acp_session_paths(s);
	struct json_object *u;

	if (s->open_call == NULL)
		return;
	u = json_object_new_object();
	json_object_object_add(u, "sessionUpdate", json_object_new_string("tool_call_update"));
	json_object_object_add(u, "toolCallId", json_object_new_string(s->open_call));
	acptool_result(u, call->name, call->arguments, content, failed, &pm);
	acp_send_update(s->out, s->id, u);
	free(s->open_call);
	s->open_call = NULL;
}

/* ---- session/prompt ------------------------------------------------------------------ */

/* The first prompt names the session: session_info_update, and the record for session/list. */
static void name_session(struct acp_server *srv, struct acp_session *s, const char *title)
{
	struct json_object *u, *f;
	char ts[TIME_BUFSZ], *t;
	size_t n = strlen(title);

	if (s->titled || n == 0)
		return;
	if (n > ACP_TITLE_MAX) {
		n = ACP_TITLE_MAX;
		while (n > 0 && ((unsigned char)title[n] & 0xc0) == 0x80)
			n--;
	}
	t = xasprintf("%.*s%s", (int)n, title, n < strlen(title) ? "…" : "");
	s->titled = true;
	u = json_object_new_object();
	json_object_object_add(u, "sessionUpdate", json_object_new_string("session_info_update"));
	json_object_object_add(u, "title", json_object_new_string(t));
	json_object_object_add(u, "updatedAt",
			       json_object_new_string(time_rfc3339(time_now_ns(), ts, sizeof ts)));
	acp_send_update(s->out, s->id, u);
	f = json_object_new_object();
	json_object_object_add(f, "title", json_object_new_string(t));
	acp_session_record(srv, s, f);
	json_object_put(f);
	free(t);
}

static const char *stop_reason(enum agent_status st, const struct acp_session *s)
{
	if (st == AGENT_CANCELED || s->cancel)
		return "cancelled";
	if (st == AGENT_LIMIT)
		return "max_turn_requests";
	if (strcmp(s->finish, "length") == 0)
		return "max_tokens";
	if (strcmp(s->finish, "content_filter") == 0)
		return "refusal";
	return "end_turn";
}

/* Answers a prompt with stopReason reason. */
static void reply_stop(const struct req *r, const char *reason)
{
	struct json_object *res = json_object_new_object();

	json_object_object_add(res, "stopReason", json_object_new_string(reason));
	acp_reply(r->c->p, r->id, res);
}

/* MCP servers start in the sandbox at the first prompt; what failed is said first (as text,
 * and as a notice to clients that take them). -1 when cancelled. */
static int start_mcp(struct acp_session *s, struct acp_conn *c)
{
	struct buf report = {0};
	int rc = acp_mcp_start(s, &report);

	if (report.len > 0) {
		acp_send_chunk(s->out, s->id, "agent_message_chunk", report.data, report.len);
		if (c->notices) {
			struct json_object *u = json_object_new_object();
			json_object_object_add(u, "sessionUpdate", json_object_new_string("notice"));
			json_object_object_add(u, "severity", json_object_new_string("error"));
			json_object_object_add(u, "title", json_object_new_string("MCP servers"));
			json_object_object_add(u, "description", json_object_new_string(report.data));
			acp_send_update(s->out, s->id, u);
		}
	}
	buf_free(&report);
	return rc;
}

/* The turn of a claimed session over content, answered; the session released before the
 * answer goes out. */
static void run_turn(const struct req *r, struct acp_session *s, struct json_object *content)
{
	struct agent_callbacks cb = {.arg = s, .on_delta = cb_delta, .on_thought = cb_thought,
				     .on_assistant = cb_assistant, .on_llm_done = cb_llm_done,
				     .approve = cb_approve, .on_tool_start = cb_tool_start,
				     .on_tool_end = cb_tool_end};
	struct acp_server *srv = r->c->srv;
	struct json_object *f;
	enum agent_status st;
	struct sbx_err e;
	char *answer = NULL;
	const char *reason = NULL;

	s->streamed = s->thought_streamed = false;
	s->finish[0] = '\0';
	s->cur_calls = NULL;
	st = agent_turn_content(s->as, content, &cb, s->cancel_pipe[0], &answer, &e);
	/* A turn that stopped between approval and the end of a tool (sandbox creation failed,
	 * cancellation) still closes the call it announced. */
	end_call(s, "failed", st == AGENT_ERROR && !s->cancel ? e.msg : NULL);
	if (st != AGENT_ERROR || s->cancel) {
		/* A cancelled prompt is never answered with an error (ACP §8). */
		if (st == AGENT_LIMIT && !s->cancel)
			acp_send_chunk(s->out, s->id, "agent_message_chunk", e.msg, strlen(e.msg));
		reason = stop_reason(st, s);
	}
	s->cur_calls = NULL;
	f = json_object_new_object();
	acp_session_record(srv, s, f);
	json_object_put(f);
	/* Every update of the turn is queued before the answer, and the session is free again
	 * before the client can read it and send the next prompt. */
	acp_release(srv, s);
	if (reason)
		reply_stop(r, reason);
	else
		acp_reply_error(r->c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
	free(answer);
}

void m_session_prompt(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *id = jsonfield_str(r->params, "sessionId");
	struct json_object *content = NULL;
	struct acp_session *s;
	char *title = NULL, msg[512];
	int code, pipefd[2];

	if (id == NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "invalid params: sessionId is required");
		return;
	}
	if ((s = acp_session_of(r, id)) == NULL)
		return;
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
		acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "pipe: %s", strerror(errno));
		goto out;
	}
	if (!acp_claim(srv, s, c, pipefd, &code, msg, sizeof msg)) {
		acp_reply_error(c->p, r->id, code, "%s", msg);
		close(pipefd[0]);
		close(pipefd[1]);
		goto out;
	}
	/* A slash command is answered here: no model, no MCP servers, no history. */
	{
		struct buf said = {0};
		if (acp_command_run(s, r->params, &said)) {
			if (said.len > 0)
				acp_send_chunk(s->out, s->id, "agent_message_chunk", said.data, said.len);
			buf_free(&said);
			acp_release(srv, s);
			reply_stop(r, "end_turn");
			goto out;
		}
	}
	if (start_mcp(s, c) < 0) {
		acp_release(srv, s);
		reply_stop(r, "cancelled");
		goto out;
	}
	acp_extra_tools_update(s);
	/* Resources are read through the client once the session is ours (a cancel stops it). */
	if ((content = acp_prompt_content(s, c, r->params, &title, &code, msg, sizeof msg)) == NULL) {
		bool cancelled = s->cancel;
		acp_release(srv, s);
		if (cancelled)
			reply_stop(r, "cancelled");
		else
			acp_reply_error(c->p, r->id, code, "%s", msg);
		goto out;
	}
	if (title)
		name_session(srv, s, title);
	run_turn(r, s, content);
out:
	json_object_put(content);
	free(title);
	acp_session_done(srv, s);
}
