/* agent_tools.c — tool dispatch: a model's call to the toolset (through the session's tool
 * step), to an extra tool of the caller's (ACP's plan, MCP servers), or denied; the sandbox
 * ensured around it; agent_tool_run for callers that bring their own calls (sbx-mcp, ACP). */
#include "agent_int.h"

#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "gojson.h"
#include "history.h"
#include "jsonfield.h"
#include "toolmsg.h"

void agent_call_of(struct json_object *raw, struct agent_tool_call *c)
{
	struct json_object *fn = NULL;

	json_object_object_get_ex(raw, "function", &fn);
	c->id = jsonfield_str_or(raw, "id", "");
	c->name = jsonfield_str_or(fn, "name", "");
	c->arguments = jsonfield_str_or(fn, "arguments", "");
	c->raw = raw;
}

/* sbx-tool's input for a call: the fields it defines only (a model's vendor fields stay in the
 * history), arguments as the model sent them (JSON text, or an object). Newly allocated. */
static char *call_doc(const struct agent_tool_call *c)
{
	struct json_object *d = json_object_new_object(), *f = json_object_new_object(), *fn, *v;
	char *text;

	json_object_object_add(d, "id", json_object_new_string(c->id));
	json_object_object_add(d, "type", json_object_new_string("function"));
	json_object_object_add(f, "name", json_object_new_string(c->name));
	if (json_object_object_get_ex(c->raw, "function", &fn) &&
	    json_object_object_get_ex(fn, "arguments", &v) && v != NULL)
		json_object_object_add(f, "arguments", json_object_get(v));
	json_object_object_add(d, "function", f);
	text = gojson_encode(d);
	json_object_put(d);
	return text;
}

/* Runs one approved call through the session's tool step (sbx-tool, or its work in this
 * process). Returns the tool message's content (newly allocated) with *failed, or NULL with e
 * (cancelled, or the sandbox was not there before the call started: SBX_ENOTFOUND, the one case
 * that may be retried). A sandbox that went away while the call ran is an answer (the call may
 * have run in part) and makes it inactive. structured: NULL, or where an in-process call puts
 * the tool's structured result. */
static char *run_tool(struct agent_session *s, const struct agent_tool_call *c, int cancel_fd,
		      size_t *len, bool *failed, struct json_object **structured, struct sbx_err *e)
{
	struct strvec a;
	char *in = call_doc(c), *out;
	int st;

	agent_trace(s, "sbx-tool <", in);
	agent_argv_sbx(s, &a, "sbx-tool");
	agent_arg(&a, "-toolset");
	agent_arg(&a, s->ts->name);
	agent_arg_duration(&a, "-tool-timeout", s->tool_timeout_ns);
	agent_arg(&a, "-homedir");
	agent_arg(&a, s->homedir);
	if (s->workdir) {
		agent_arg(&a, "-workdir");
		agent_arg(&a, s->workdir);
	}
	agent_arg(&a, s->name);
	out = s->steps->tool(s, c, &a, in, cancel_fd, len, &st, structured, e);
	*failed = out == NULL || st != 0;
	if (out && st == EXIT_GONE) {
		agent_logf(s, AGENT_LOG_INFO, "sandbox %s went away while the tool ran; the call is "
			   "not repeated, the next one recreates it", s->name);
		s->active = false;
	}
	agent_argv_free(&a);
	free(in);
	return out;
}

void agent_close_calls(struct agent_session *s, struct json_object *calls, size_t from,
			const struct agent_callbacks *cb, bool started, const char *text)
{
	size_t n = json_object_array_length(calls), k = 0, i;
	struct json_object **msgs = xcalloc(n + 1, sizeof *msgs);
	struct sbx_err e;

	for (i = from; i < n; i++) {
		struct agent_tool_call c;
		char *content;
		agent_call_of(json_object_array_get_idx(calls, i), &c);
		content = text ? toolmsg_error(c.name, "%s", text) : toolmsg_cancelled(c.name);
		if (i == from && started && cb && cb->on_tool_end)
			cb->on_tool_end(cb->arg, &c, true, content);
		msgs[k++] = agent_tool_message(c.id, content, strlen(content));
		free(content);
	}
	if (k > 0 && history_append(s->h, msgs, k, &e) < 0)
		agent_logf(s, AGENT_LOG_WARN, "adding tool messages: %s", e.msg);
	for (i = 0; i < k; i++)
		json_object_put(msgs[i]);
	free(msgs);
}

/* Whether name is one of the session's extra tools. */
static bool is_extra(const struct agent_session *s, const char *name)
{
	size_t i, n = s->extra.run && s->extra.decls ? json_object_array_length(s->extra.decls) : 0;

	for (i = 0; i < n; i++) {
		struct json_object *fn = NULL;
		json_object_object_get_ex(json_object_array_get_idx(s->extra.decls, i), "function", &fn);
		if (strcmp(jsonfield_str_or(fn, "name", ""), name) == 0)
			return true;
	}
	return false;
}

bool agent_is_local(const struct agent_session *s, const char *name)
{
	return s->extra.local && is_extra(s, name) && s->extra.local(s->extra.arg, name);
}

void agent_session_set_extra_tools(struct agent_session *s, const struct agent_extra_tools *x)
{
	if (x)
		s->extra = *x;
	else
		memset(&s->extra, 0, sizeof s->extra);
}

char *agent_call_in_sandbox(struct agent_session *s, const struct agent_tool_call *c,
			     const struct agent_callbacks *cb, int cancel_fd, bool *started,
			     size_t *len, bool *failed, struct json_object **structured,
			     struct sbx_err *e)
{
	char *content = NULL;
	bool local = agent_is_local(s, c->name);

	json_object_put(s->parts);
	s->parts = NULL;
	for (int tries = 0; tries < 2 && content == NULL; tries++) {
		if (!local && agent_session_ensure_sandbox(s, cancel_fd, e) < 0)
			return NULL;
		if (!*started && cb && cb->on_tool_start)
			cb->on_tool_start(cb->arg, c);
		*started = true;
		if (is_extra(s, c->name)) {
			content = s->extra.run(s->extra.arg, c, cancel_fd, failed, e);
			if (content == NULL)
				return NULL;	/* only a cancellation */
			*len = strlen(content);	/* an MCP server's text */
			break;
		}
		content = run_tool(s, c, cancel_fd, len, failed, structured, e);
		if (content == NULL && e->code == SBX_ECANCELED)
			return NULL;
		if (content == NULL) {	/* not there before the call started */
			agent_logf(s, AGENT_LOG_INFO, "Active sandbox was deleted or expired, will recreate it");
			s->active = false;
		}
	}
	if (content == NULL) {
		content = toolmsg_run_failed(c->name, e->msg);
		*len = strlen(content);
	}
	if (cb && cb->on_tool_end)
		cb->on_tool_end(cb->arg, c, *failed, content);
	/* Upstream touches again after every call; a tools-only session's caller does it once
	 * the answer is out (agent_session_touch), so the client does not wait for it. */
	if (!s->tools_only && !local)
		agent_session_touch(s, cancel_fd);
	return content;
}

int agent_tool_run(struct agent_session *s, const struct agent_tool_call *call,
		   const struct agent_callbacks *cb, int cancel_fd, struct agent_tool_result *out,
		   struct sbx_err *e)
{
	struct agent_tool_call c = *call;
	struct json_object *raw = NULL, *fn;
	const char *kind;
	bool started = false;

	memset(out, 0, sizeof *out);
	err_clear(e);
	if (c.raw == NULL) {	/* the tool_calls[] entry sbx-tool would read */
		raw = json_object_new_object();
		fn = json_object_new_object();
		json_object_object_add(raw, "id", json_object_new_string(c.id ? c.id : ""));
		json_object_object_add(raw, "type", json_object_new_string("function"));
		json_object_object_add(fn, "name", json_object_new_string(c.name));
		json_object_object_add(fn, "arguments", json_object_new_string(c.arguments ? c.arguments : ""));
		json_object_object_add(raw, "function", fn);
		c.raw = raw;
	}
	if (c.id == NULL)
		c.id = "";
	out->content = agent_call_in_sandbox(s, &c, cb, cancel_fd, &started, &out->content_len,
				       &out->failed, s->in_process ? &out->structured : NULL, e);
	out->parts = s->parts;
	s->parts = NULL;
	kind = toolset_tool_kind(c.name);
	if (started && strcmp(kind, "read") != 0 && strcmp(kind, "search") != 0)
		s->dirty = true;
	json_object_put(raw);
	if (out->content == NULL) {
		json_object_put(out->structured);
		json_object_put(out->parts);
		out->structured = out->parts = NULL;
		return -1;
	}
	return 0;
}

void agent_tool_result_free(struct agent_tool_result *r)
{
	free(r->content);
	json_object_put(r->structured);
	json_object_put(r->parts);
	memset(r, 0, sizeof *r);
}
