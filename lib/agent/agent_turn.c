/* agent_turn.c — one turn: the user's message stored, the model called (llm-chat -stream, its
 * deltas to the callbacks), its tool calls run and answered, until it answers without calls or
 * the round limit; a snapshot when tools ran. */
#include "agent_int.h"

#include <stdlib.h>
#include <string.h>

#include "gojson.h"
#include "history.h"
#include "jsonfield.h"
#include "llmmedia.h"
#include "toolmsg.h"

struct llm_read {
	struct agent_session *s;
	const struct agent_callbacks *cb;
	struct json_object *final;	/* its "message" */
	struct json_object *last;	/* the whole {"message":…,"finish_reason":…} line */
};

static int on_llm_line(void *arg, char *line, size_t len)
{
	struct llm_read *r = arg;
	struct json_object *ev, *v;
	const char *why;

	if (len == 0)
		return 0;
	agent_trace(r->s, "llm-chat >", line);
	if ((ev = gojson_parse(line, len, &why)) == NULL)
		return 0;
	if (json_object_object_get_ex(ev, "delta", &v) && json_object_is_type(v, json_type_string)) {
		if (r->cb && r->cb->on_delta && json_object_get_string_len(v) > 0)
			r->cb->on_delta(r->cb->arg, json_object_get_string(v),
					(size_t)json_object_get_string_len(v));
	} else if (json_object_object_get_ex(ev, "reasoning_delta", &v) &&
		   json_object_is_type(v, json_type_string)) {
		if (r->cb && r->cb->on_thought && json_object_get_string_len(v) > 0)
			r->cb->on_thought(r->cb->arg, json_object_get_string(v),
					  (size_t)json_object_get_string_len(v));
	} else if (json_object_object_get_ex(ev, "retry", &v) &&
		   json_object_is_type(v, json_type_object)) {
		const char *err = jsonfield_str(v, "error");
		struct json_object *k = NULL, *m = NULL, *w = NULL;
		json_object_object_get_ex(v, "attempt", &k);
		json_object_object_get_ex(v, "attempts", &m);
		json_object_object_get_ex(v, "wait_ms", &w);
		if (r->cb && r->cb->on_llm_retry)
			r->cb->on_llm_retry(r->cb->arg, err ? err : "", json_object_get_int64(w) * 1000000,
					    json_object_get_int(k), json_object_get_int(m));
	} else if (json_object_object_get_ex(ev, "message", &v) &&
		   json_object_is_type(v, json_type_object)) {
		json_object_put(r->final);
		r->final = json_object_get(v);
		json_object_put(r->last);
		r->last = json_object_get(ev);
	}
	json_object_put(ev);
	return 0;
}

/* One chat completion through llm-chat -stream. New reference, or NULL with e. */
static struct json_object *call_llm(struct agent_session *s, const struct agent_callbacks *cb,
				    int cancel_fd, struct sbx_err *e)
{
	struct json_object *req = json_object_new_object();
	struct llm_read r = {.s = s, .cb = cb};
	struct child_result res;
	struct strvec a = {0};
	char *body, *msg;

	json_object_object_add(req, "model", json_object_new_string(s->model));
	/* Every stored field goes to llm-chat, whose vendor policy (lib/llm/vendor.c) sends each vendor
	 * what it requires back (DeepSeek's reasoning_content in a tool-call turn) and nothing
	 * it refuses. */
	json_object_object_add(req, "messages", json_object_get(history_messages(s->h)));
	if (s->extra.decls && json_object_array_length(s->extra.decls) > 0) {
		struct json_object *all = json_object_new_array();
		size_t i;
		for (i = 0; i < json_object_array_length(s->tools); i++)
			json_object_array_add(all, json_object_get(json_object_array_get_idx(s->tools, i)));
		for (i = 0; i < json_object_array_length(s->extra.decls); i++)
			json_object_array_add(all, json_object_get(json_object_array_get_idx(s->extra.decls, i)));
		json_object_object_add(req, "tools", all);
	} else if (json_object_array_length(s->tools) > 0) {
		json_object_object_add(req, "tools", json_object_get(s->tools));
	}
	if (s->want_usage) {
		struct json_object *so = json_object_new_object();
		json_object_object_add(so, "include_usage", json_object_new_boolean(1));
		json_object_object_add(req, "stream_options", so);
	}
	body = gojson_encode(req);
	json_object_put(req);
	agent_trace(s, "llm-chat <", body);
	agent_arg(&a, "llm-chat");
	agent_arg(&a, "-stream");
	if (agent_run(s, &a, body, strlen(body), cancel_fd, on_llm_line, &r, &res, e) < 0) {
		agent_argv_free(&a);
		free(body);
		return NULL;
	}
	agent_argv_free(&a);
	free(body);
	if (res.canceled) {
		err_set(e, SBX_ECANCELED, "context canceled");
	} else if (res.status != 0) {
		msg = agent_failure(&res, "llm-chat");
		err_set(e, SBX_EIO, "%s", msg);
		free(msg);
	} else if (r.final == NULL) {
		err_set(e, SBX_EIO, "llm-chat printed no message");
	}
	child_result_free(&res);
	if (e->code != SBX_OK) {
		json_object_put(r.final);
		json_object_put(r.last);
		return NULL;
	}
	if (cb && cb->on_llm_done) {
		struct json_object *f = NULL, *u = NULL;
		json_object_object_get_ex(r.last, "finish_reason", &f);
		json_object_object_get_ex(r.last, "usage", &u);
		cb->on_llm_done(cb->arg, json_object_is_type(f, json_type_string) ?
				json_object_get_string(f) : "",
				json_object_is_type(u, json_type_object) ? u : NULL);
	}
	json_object_put(r.last);
	return r.final;
}

static int append1(struct agent_session *s, struct json_object *m, struct sbx_err *e)
{
	return history_append(s->h, &m, 1, e);
}

/* Runs the calls of one assistant message. 0 done, or an agent_status with e. */
static int run_calls(struct agent_session *s, struct json_object *calls,
		     const struct agent_callbacks *cb, int cancel_fd, bool *executed,
		     struct sbx_err *e)
{
	size_t n = json_object_array_length(calls), i;

	for (i = 0; i < n; i++) {
		struct agent_tool_call c;
		struct json_object *m;
		bool failed = true, started = false;
		char *content = NULL;
		size_t len = 0;		/* content may hold NUL bytes */
		int ok = 1;

		agent_call_of(json_object_array_get_idx(calls, i), &c);
		if (agent_fired(cancel_fd))
			goto cancelled;
		if (cb && cb->approve) {
			ok = cb->approve(cb->arg, &c, e);
			if (ok < 0 && e->code == SBX_ECANCELED)
				goto cancelled;
			if (ok < 0) {
				err_prefix(e, "requesting tool call approval");
				agent_close_calls(s, calls, i, cb, false, e->msg);
				return AGENT_ERROR;
			}
		}
		if (ok == 0) {
			content = toolmsg_denied(c.name);
			len = strlen(content);
		} else {
			content = agent_call_in_sandbox(s, &c, cb, cancel_fd, &started, &len, &failed, NULL, e);
			*executed = *executed || (started && !agent_is_local(s, c.name));
			if (content == NULL && e->code == SBX_ECANCELED)
				goto cancelled;
			if (content == NULL) {
				agent_close_calls(s, calls, i, cb, started, e->msg);
				return AGENT_ERROR;
			}
		}
		m = agent_tool_message(c.id, content, len);
		free(content);
		/* files the tool gave the model to look at */
		llmmedia_attach(m, s->parts, history_size(s->h));
		if (append1(s, m, e) < 0) {
			json_object_put(m);
			err_prefix(e, "adding tool message");
			return AGENT_ERROR;
		}
		json_object_put(m);
		continue;
cancelled:
		agent_close_calls(s, calls, i, cb, started, NULL);
		err_set(e, SBX_ECANCELED, "the turn was cancelled");
		return AGENT_CANCELED;
	}
	return 0;
}

enum agent_status agent_turn(struct agent_session *s, const char *user_text,
			     const struct agent_callbacks *cb, int cancel_fd, char **reply,
			     struct sbx_err *e)
{
	struct json_object *content = json_object_new_string(user_text);
	enum agent_status st = agent_turn_content(s, content, cb, cancel_fd, reply, e);

	json_object_put(content);
	return st;
}

enum agent_status agent_turn_content(struct agent_session *s, struct json_object *content,
				     const struct agent_callbacks *cb, int cancel_fd, char **reply,
				     struct sbx_err *e)
{
	struct json_object *user = json_object_new_object(), *msg, *stored, *calls;
	bool executed = false;
	int rounds = 0, st;

	*reply = NULL;
	err_clear(e);
	if (s->tools_only)
		return err_set(e, SBX_EINVAL, "session %s runs tool calls only (no LLM)", s->name);
	json_object_object_add(user, "role", json_object_new_string("user"));
	json_object_object_add(user, "content", json_object_get(content));
	st = append1(s, user, e);
	json_object_put(user);
	if (st < 0) {
		err_prefix(e, "adding user message");
		return AGENT_ERROR;
	}
	for (;;) {
		err_clear(e);
		if ((msg = call_llm(s, cb, cancel_fd, e)) == NULL) {
			if (e->code == SBX_ECANCELED)
				return AGENT_CANCELED;
			err_prefix(e, "failed to call LLM");
			return AGENT_ERROR;
		}
		if (!json_object_object_get_ex(msg, "role", NULL))
			json_object_object_add(msg, "role", json_object_new_string("assistant"));
		st = append1(s, msg, e);
		json_object_put(msg);
		if (st < 0) {
			err_prefix(e, "adding assistant message");
			return AGENT_ERROR;
		}
		stored = json_object_array_get_idx(history_messages(s->h),
						   json_object_array_length(history_messages(s->h)) - 1);
		if (!json_object_object_get_ex(stored, "tool_calls", &calls) ||
		    !json_object_is_type(calls, json_type_array) || json_object_array_length(calls) == 0) {
			if (cb && cb->on_assistant)
				cb->on_assistant(cb->arg, stored, true);
			if (executed && s->active)
				agent_snapshot_now(s, cancel_fd);
			*reply = xstrdup(jsonfield_str_or(stored, "content", ""));
			return AGENT_DONE;
		}
		if (cb && cb->on_assistant)
			cb->on_assistant(cb->arg, stored, false);
		if ((st = run_calls(s, calls, cb, cancel_fd, &executed, e)) != 0)
			return (enum agent_status)st;
		if (++rounds >= s->max_rounds) {
			if (executed && s->active)
				agent_snapshot_now(s, cancel_fd);
			err_set(e, SBX_EIO, "stopped after %d tool rounds in one turn (-max-tool-rounds %d); "
				"send another message to let the agent continue", rounds, s->max_rounds);
			return AGENT_LIMIT;
		}
	}
}
