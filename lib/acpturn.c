/* acpturn.c — session/prompt: a turn of the agent (lib/agent.h) mapped onto session/update
 * notifications, with every tool call put to the client through session/request_permission. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_int.h"
#include "gojson.h"
#include "xalloc.h"

/* ---- a turn ---------------------------------------------------------------------------- */

static struct json_object *content_list(const char *text)
{
	struct json_object *arr = json_object_new_array(), *tc = json_object_new_object();

	json_object_object_add(tc, "type", json_object_new_string("content"));
	json_object_object_add(tc, "content", acp_text_block(text, strlen(text)));
	json_object_array_add(arr, tc);
	return arr;
}

/* The fields shared by tool_call and the permission request's toolCall; update is the
 * sessionUpdate discriminator, or NULL inside a permission request. */
static struct json_object *tool_fields(const struct agent_tool_call *call, const char *update,
				       const char *status)
{
	struct json_object *o = json_object_new_object(), *raw;
	const char *why;
	char *title = xasprintf("%s(%s)", call->name, call->arguments ? call->arguments : "");

	if (update)
		json_object_object_add(o, "sessionUpdate", json_object_new_string(update));
	json_object_object_add(o, "toolCallId", json_object_new_string(call->id));
	json_object_object_add(o, "title", json_object_new_string(title));
	json_object_object_add(o, "kind", json_object_new_string(acp_tool_kind(call->name)));
	json_object_object_add(o, "status", json_object_new_string(status));
	/* rawInput only when the arguments are JSON, as upstream. */
	raw = call->arguments ? gojson_parse(call->arguments, strlen(call->arguments), &why) : NULL;
	if (raw)
		json_object_object_add(o, "rawInput", raw);
	free(title);
	return o;
}

static void send_tool_update(struct acp_session *s, const char *call_id, const char *status,
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
	send_tool_update(s, s->open_call, status, text);
	free(s->open_call);
	s->open_call = NULL;
}

static void cb_delta(void *arg, const char *text, size_t len)
{
	struct acp_session *s = arg;

	if (len == 0)
		return;
	s->streamed = true;
	acp_send_chunk(s->out, s->id, "agent_message_chunk", text, len);
}

static void cb_assistant(void *arg, struct json_object *msg, bool final)
{
	struct acp_session *s = arg;
	struct json_object *v;

	(void)final;
	/* A model that did not stream (fake-eliza) still gets its text to the client. */
	if (!s->streamed && json_object_object_get_ex(msg, "content", &v) &&
	    json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0)
		acp_send_chunk(s->out, s->id, "agent_message_chunk", json_object_get_string(v),
			   (size_t)json_object_get_string_len(v));
	s->streamed = false;
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
static int ask(struct acp_session *s, const struct agent_tool_call *call, struct sbx_err *e)
{
	struct json_object *params = json_object_new_object(), *opts = json_object_new_array();
	struct json_object *result = NULL, *error = NULL, *outcome, *v;
	const char *kind, *opt;
	int rc = -1;

	json_object_object_add(params, "sessionId", json_object_new_string(s->id));
	json_object_object_add(params, "toolCall", tool_fields(call, NULL, "pending"));
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
	    (kind = acp_param_str(outcome, "outcome")) == NULL) {
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

static int cb_approve(void *arg, const struct agent_tool_call *call, struct sbx_err *e)
{
	struct acp_session *s = arg;
	struct json_object *u = tool_fields(call, "tool_call", "pending");
	int rc;

	acp_send_update(s->out, s->id, u);
	end_call(s, "failed", NULL);
	s->open_call = xstrdup(call->id);
	if (s->cancel) {
		end_call(s, "failed", NULL);
		return err_set(e, SBX_ECANCELED, "cancelled");
	}
	rc = remembered(s, call->name);
	if (rc < 0)
		rc = ask(s, call, e);
	if (rc == 0) {
		char *text = xasprintf(AGENT_DENIED_FMT, call->name);
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

	pthread_mutex_lock(&c->srv->mu);
	s->tool_ran = true;
	pthread_mutex_unlock(&c->srv->mu);
	send_tool_update(s, call->id, "in_progress", NULL);
}

static void cb_tool_end(void *arg, const struct agent_tool_call *call, bool failed,
			const char *content)
{
	struct acp_session *s = arg;

	(void)call;
	end_call(s, failed ? "failed" : "completed", content ? content : "");
}

/* The prompt's text: every text block concatenated, as upstream. */
static char *prompt_text(struct json_object *params, const char **why)
{
	struct json_object *prompt;
	struct buf b = {0};
	size_t i, n;

	*why = NULL;
	if (!json_object_object_get_ex(params, "prompt", &prompt) ||
	    !json_object_is_type(prompt, json_type_array)) {
		*why = "invalid params: prompt must be an array of content blocks";
		return NULL;
	}
	n = json_object_array_length(prompt);
	for (i = 0; i < n; i++) {
		struct json_object *blk = json_object_array_get_idx(prompt, i), *t;
		const char *type = acp_param_str(blk, "type");
		if (type && strcmp(type, "text") == 0 && json_object_object_get_ex(blk, "text", &t) &&
		    json_object_is_type(t, json_type_string))
			buf_append(&b, json_object_get_string(t), (size_t)json_object_get_string_len(t));
	}
	if (b.len == 0) {
		buf_free(&b);
		*why = "prompt contains no text content";
		return NULL;
	}
	return buf_steal(&b);
}

void m_session_prompt(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *id = acp_param_str(r->params, "sessionId"), *why;
	struct acp_session *s;
	struct json_object *res;
	struct agent_callbacks cb = {0};
	enum agent_status st;
	struct sbx_err e;
	char *text = NULL, *answer = NULL, msg[256];
	int code, pipefd[2];

	if (id == NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "invalid params: sessionId is required");
		return;
	}
	if ((s = acp_session_of(r, id)) == NULL)
		return;
	if ((text = prompt_text(r->params, &why)) == NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "%s", why);
		goto out;
	}
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
	s->streamed = false;
	cb.arg = s;
	cb.on_delta = cb_delta;
	cb.on_assistant = cb_assistant;
	cb.approve = cb_approve;
	cb.on_tool_start = cb_tool_start;
	cb.on_tool_end = cb_tool_end;
	st = agent_turn(s->as, text, &cb, s->cancel_pipe[0], &answer, &e);
	/* A turn that stopped between approval and the end of a tool (sandbox creation failed,
	 * cancellation) still closes the call it announced. */
	end_call(s, "failed", st == AGENT_ERROR && !s->cancel ? e.msg : NULL);
	res = json_object_new_object();
	if (st == AGENT_CANCELED || s->cancel) {
		/* A cancelled prompt is never answered with an error (ACP §8). */
		json_object_object_add(res, "stopReason", json_object_new_string("cancelled"));
	} else if (st == AGENT_DONE) {
		json_object_object_add(res, "stopReason", json_object_new_string("end_turn"));
	} else if (st == AGENT_LIMIT) {
		acp_send_chunk(s->out, s->id, "agent_message_chunk", e.msg, strlen(e.msg));
		json_object_object_add(res, "stopReason", json_object_new_string("max_turn_requests"));
	} else {
		json_object_put(res);
		res = NULL;
	}
	/* Every update of the turn is queued before the answer, and the session is free again
	 * before the client can read it and send the next prompt. */
	acp_release(srv, s);
	if (res)
		acp_reply(c->p, r->id, res);
	else
		acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
	free(answer);
out:
	free(text);
	acp_session_done(srv, s);
}

