/* acpturn.c — session/prompt: the prompt's content blocks made into the user message, a turn of
 * the agent (lib/agent.h) mapped onto session/update notifications (text, thoughts, usage,
 * tool calls as lib/acptool.h shows them), every tool call put to the client through
 * session/request_permission as the session's mode says; and the replay of a stored
 * conversation in the same shapes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_int.h"
#include "gojson.h"
#include "timeutil.h"
#include "toolset.h"
#include "xalloc.h"

const struct acp_mode_info acp_modes[ACP_MODE_COUNT] = {
	{"ask", "Ask", "Ask before every tool call"},
	{"auto-read", "Ask for changes",
	 "Ask before edits and commands; tools that only read or search run without asking"},
	{"never-ask", "Never ask", "Run every tool call without asking"},
};

bool acp_model_images(const struct acp_server *srv, const char *model)
{
	/* Families whose OpenAI-compatible endpoints take image_url parts. */
	static const char *const vision[] = {"gemini", "gpt-4o", "gpt-4.1", "gpt-5", "o3", "o4",
					     "claude", "llava", "qwen2.5-vl", "pixtral"};
	size_t i;

	if (srv->cfg.images >= 0)
		return srv->cfg.images == 1;
	for (i = 0; model && i < sizeof vision / sizeof vision[0]; i++)
		if (strncmp(model, vision[i], strlen(vision[i])) == 0)
			return true;
	return false;
}

static long long context_window(const struct acp_server *srv, const char *model)
{
	if (srv->cfg.context_window > 0)
		return srv->cfg.context_window;
	return model && strncmp(model, "gemini", 6) == 0 ? 1048576 : 128000;
}

/* ---- the prompt's content ---------------------------------------------------------------- */

/* The path of a file: URI (no host, or localhost), percent-decoded; NULL otherwise. */
static char *file_uri_path(const char *uri)
{
	const char *p;
	struct buf b = {0};

	if (strncmp(uri, "file://", 7) != 0)
		return NULL;
	p = uri + 7;
	if (strncmp(p, "localhost/", 10) == 0)
		p += 9;
	if (*p != '/')
		return NULL;
	for (; *p; p++) {
		int hi, lo;
		if (*p == '%' && (hi = p[1]) && (lo = p[2]) && strchr("0123456789abcdefABCDEF", hi) &&
		    strchr("0123456789abcdefABCDEF", lo)) {
			char hex[3] = {(char)hi, (char)lo, 0};
			char c = (char)strtol(hex, NULL, 16);
			if (c == '\0') {
				buf_free(&b);
				return NULL;
			}
			buf_append(&b, &c, 1);
			p += 2;
		} else if (*p == '?' || *p == '#') {
			break;
		} else {
			buf_append(&b, p, 1);
		}
	}
	return buf_steal(&b);
}

/* fs/read_text_file on the client. 0 with *text, or -1 with e. */
static int read_client_file(struct acp_session *s, const char *path, char **text,
			    struct sbx_err *e)
{
	struct json_object *params = json_object_new_object(), *res = NULL, *err = NULL, *v;
	int rc = -1;

	*text = NULL;
	json_object_object_add(params, "sessionId", json_object_new_string(s->id));
	json_object_object_add(params, "path", json_object_new_string(path));
	if (peer_call(s->out, "fs/read_text_file", params, &s->cancel, &res, &err, e) < 0)
		goto out;
	if (err) {
		err_set(e, SBX_EIO, "%s", acp_param_str(err, "message") ?: "the client refused");
	} else if (json_object_object_get_ex(res, "content", &v) &&
		   json_object_is_type(v, json_type_string)) {
		*text = xstrdup(json_object_get_string(v));
		rc = 0;
	} else {
		err_set(e, SBX_EIO, "no content in the client's answer");
	}
out:
	json_object_put(params);
	json_object_put(res);
	json_object_put(err);
	return rc;
}

/* A resource's text as context for the model, cut at ACP_RESOURCE_MAX. */
static void resource_text(struct buf *b, const char *uri, const char *name, const char *text)
{
	size_t n = strlen(text), cut = n < ACP_RESOURCE_MAX ? n : ACP_RESOURCE_MAX;

	while (cut < n && cut > 0 && ((unsigned char)text[cut] & 0xc0) == 0x80)
		cut--;
	buf_puts(b, "<resource uri=\"");
	buf_puts(b, uri);
	if (name) {
		buf_puts(b, "\" name=\"");
		buf_puts(b, name);
	}
	buf_puts(b, "\">\n");
	buf_append(b, text, cut);
	if (cut < n)
		buf_printf(b, "\n[… %zu more bytes not shown]", n - cut);
	buf_puts(b, cut == n && n > 0 && text[n - 1] == '\n' ? "</resource>" : "\n</resource>");
}

/* A resource_link: read through the client when it is a file it serves, else a reference. */
static void link_text(struct acp_session *s, struct acp_conn *c, struct json_object *blk,
		      struct buf *b)
{
	const char *uri = acp_param_str(blk, "uri") ?: "", *name = acp_param_str(blk, "name");
	const char *desc = acp_param_str(blk, "description");
	char *path = c->fs_read ? file_uri_path(uri) : NULL, *text = NULL;
	struct sbx_err e;

	if (path && read_client_file(s, path, &text, &e) == 0) {
		resource_text(b, uri, name, text);
	} else {
		buf_printf(b, "[Resource: %s <%s>%s%s", name ? name : uri, uri, desc ? ": " : "",
			   desc ? desc : "");
		if (path)
			buf_printf(b, " (could not be read: %s)", e.msg);
		buf_puts(b, "]");
	}
	free(path);
	free(text);
}

/* An embedded resource: text as context; a blob only named. */
static void embedded_text(struct json_object *blk, struct buf *b)
{
	struct json_object *res = NULL;
	const char *uri, *text, *mime;

	json_object_object_get_ex(blk, "resource", &res);
	uri = acp_param_str(res, "uri") ?: "";
	mime = acp_param_str(res, "mimeType");
	if ((text = acp_param_str(res, "text")) != NULL)
		resource_text(b, uri, NULL, text);
	else
		buf_printf(b, "[Binary resource <%s>%s%s, not shown]", uri, mime ? " of type " : "",
			   mime ? mime : "");
}

static bool base64_ok(const char *s)
{
	return *s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
		     strlen(s);
}

static void add_text_part(struct json_object *parts, struct buf *cur)
{
	struct json_object *p;

	if (cur->len == 0)
		return;
	p = json_object_new_object();
	json_object_object_add(p, "type", json_object_new_string("text"));
	json_object_object_add(p, "text", json_object_new_string_len(cur->data, (int)cur->len));
	json_object_array_add(parts, p);
	cur->len = 0;
	cur->data[0] = '\0';
}

/* The user message's content for the prompt's blocks: text blocks as paragraphs, resources as
 * context, images as OpenAI image parts (an array of parts then, else one string). NULL with
 * *code and why when the prompt cannot be taken. *title gets the first text's first line. */
static struct json_object *prompt_content(struct acp_session *s, struct acp_conn *c,
					  struct json_object *params, char **title, int *code,
					  char *why, size_t whysz)
{
	struct json_object *prompt, *parts = json_object_new_array(), *out = NULL;
	struct buf cur = {0};
	bool images = false;
	size_t i, n;

	*title = NULL;
	*code = JSONRPC_INVALID_PARAMS;
	if (!json_object_object_get_ex(params, "prompt", &prompt) ||
	    !json_object_is_type(prompt, json_type_array)) {
		snprintf(why, whysz, "invalid params: prompt must be an array of content blocks");
		goto out;
	}
	n = json_object_array_length(prompt);
	for (i = 0; i < n; i++) {
		struct json_object *blk = json_object_array_get_idx(prompt, i);
		const char *type = acp_param_str(blk, "type"), *t;
		if (type == NULL) {
			snprintf(why, whysz, "invalid params: prompt[%zu] has no type", i);
			goto out;
		}
		if (strcmp(type, "image") == 0) {
			const char *data = acp_param_str(blk, "data"), *mime = acp_param_str(blk, "mimeType");
			struct json_object *part, *url;
			char *u;
			if (!acp_model_images(c->srv, s->model)) {
				snprintf(why, whysz, "the model %s does not take images (acp-server "
					 "-images yes if it does)", s->model);
				goto out;
			}
			if (data == NULL || mime == NULL || strncmp(mime, "image/", 6) != 0 ||
			    !base64_ok(data)) {
				snprintf(why, whysz, "invalid params: prompt[%zu]: an image needs base64 "
					 "data and an image/ mimeType", i);
				goto out;
			}
			add_text_part(parts, &cur);
			u = xasprintf("data:%s;base64,%s", mime, data);
			url = json_object_new_object();
			json_object_object_add(url, "url", json_object_new_string(u));
			free(u);
			part = json_object_new_object();
			json_object_object_add(part, "type", json_object_new_string("image_url"));
			json_object_object_add(part, "image_url", url);
			json_object_array_add(parts, part);
			images = true;
			continue;
		}
		if (cur.len > 0)
			buf_puts(&cur, "\n\n");
		if (strcmp(type, "text") == 0 && (t = acp_param_str(blk, "text")) != NULL) {
			if (*title == NULL && *t)
				*title = xstrndup(t, strcspn(t, "\n"));
			buf_puts(&cur, t);
		} else if (strcmp(type, "resource_link") == 0 && acp_param_str(blk, "uri")) {
			link_text(s, c, blk, &cur);
		} else if (strcmp(type, "resource") == 0) {
			embedded_text(blk, &cur);
		} else if (strcmp(type, "audio") == 0) {
			snprintf(why, whysz, "audio prompts are not accepted");
			goto out;
		} else {
			snprintf(why, whysz, "invalid params: prompt[%zu]: unsupported %s block", i, type);
			goto out;
		}
		if (s->cancel) {
			snprintf(why, whysz, "cancelled");
			goto out;
		}
	}
	/* Only a separator so far means nothing was said. */
	while (cur.len > 0 && (cur.data[cur.len - 1] == '\n'))
		cur.data[--cur.len] = '\0';
	add_text_part(parts, &cur);
	if (json_object_array_length(parts) == 0) {
		snprintf(why, whysz, "prompt contains no content");
		goto out;
	}
	out = images ? json_object_get(parts)
		     : json_object_get(json_object_object_get(json_object_array_get_idx(parts, 0),
							       "text"));
out:
	if (out == NULL) {
		free(*title);
		*title = NULL;
	}
	buf_free(&cur);
	json_object_put(parts);
	return out;
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

/* The agent's id of the call at position k of the assistant message at history index msg:
 * unique in the session, and the same when the conversation is replayed. */
static char *call_id(size_t msg, size_t k)
{
	return xasprintf("call_%zu_%zu", msg, k);
}

static char *id_of(struct acp_session *s, const struct agent_tool_call *call)
{
	size_t k, n = s->cur_calls ? json_object_array_length(s->cur_calls) : 0;

	for (k = 0; k < n; k++)
		if (json_object_array_get_idx(s->cur_calls, k) == call->raw)
			return call_id(s->cur_msg, k);
	return call_id(s->cur_msg, n);
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

void m_session_prompt(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *id = acp_param_str(r->params, "sessionId");
	struct acp_session *s;
	struct json_object *res = NULL, *content = NULL, *f;
	struct agent_callbacks cb = {0};
	enum agent_status st;
	struct sbx_err e;
	char *answer = NULL, *title = NULL, msg[512];
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
			res = json_object_new_object();
			json_object_object_add(res, "stopReason", json_object_new_string("end_turn"));
			acp_reply(c->p, r->id, res);
			goto out;
		}
	}
	/* MCP servers start in the sandbox at the first prompt; what failed is said first. */
	{
		struct buf report = {0};
		int mrc = acp_mcp_start(s, &report);
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
		if (mrc < 0) {
			acp_release(srv, s);
			res = json_object_new_object();
			json_object_object_add(res, "stopReason", json_object_new_string("cancelled"));
			acp_reply(c->p, r->id, res);
			goto out;
		}
	}
	acp_extra_tools_update(s);
	/* Resources are read through the client once the session is ours (a cancel stops it). */
	if ((content = prompt_content(s, c, r->params, &title, &code, msg, sizeof msg)) == NULL) {
		bool cancelled = s->cancel;
		acp_release(srv, s);
		if (cancelled) {
			res = json_object_new_object();
			json_object_object_add(res, "stopReason", json_object_new_string("cancelled"));
			acp_reply(c->p, r->id, res);
		} else {
			acp_reply_error(c->p, r->id, code, "%s", msg);
		}
		goto out;
	}
	if (title)
		name_session(srv, s, title);
	s->streamed = s->thought_streamed = false;
	s->finish[0] = '\0';
	s->cur_calls = NULL;
	cb.arg = s;
	cb.on_delta = cb_delta;
	cb.on_thought = cb_thought;
	cb.on_assistant = cb_assistant;
	cb.on_llm_done = cb_llm_done;
	cb.approve = cb_approve;
	cb.on_tool_start = cb_tool_start;
	cb.on_tool_end = cb_tool_end;
	st = agent_turn_content(s->as, content, &cb, s->cancel_pipe[0], &answer, &e);
	/* A turn that stopped between approval and the end of a tool (sandbox creation failed,
	 * cancellation) still closes the call it announced. */
	end_call(s, "failed", st == AGENT_ERROR && !s->cancel ? e.msg : NULL);
	if (st != AGENT_ERROR || s->cancel) {
		/* A cancelled prompt is never answered with an error (ACP §8). */
		if (st == AGENT_LIMIT && !s->cancel)
			acp_send_chunk(s->out, s->id, "agent_message_chunk", e.msg, strlen(e.msg));
		res = json_object_new_object();
		json_object_object_add(res, "stopReason", json_object_new_string(stop_reason(st, s)));
	}
	s->cur_calls = NULL;
	f = json_object_new_object();
	acp_session_record(srv, s, f);
	json_object_put(f);
	/* Every update of the turn is queued before the answer, and the session is free again
	 * before the client can read it and send the next prompt. */
	acp_release(srv, s);
	if (res)
		acp_reply(c->p, r->id, res);
	else
		acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
	free(answer);
out:
	json_object_put(content);
	free(title);
	acp_session_done(srv, s);
}

/* ---- replay ------------------------------------------------------------------------------- */

static bool send_replay(struct acp_session *s, struct peer *p, struct json_object *u)
{
	/* A long history goes out at the client's pace, not into an ever longer queue. */
	if (!peer_wait_room(p, PEER_OUTQ_MAX / 4) || s->cancel) {
		json_object_put(u);
		return false;
	}
	acp_send_update(p, s->id, u);
	return true;
}

static bool replay_chunk(struct acp_session *s, struct peer *p, const char *kind,
			 struct json_object *block)
{
	struct json_object *u = json_object_new_object();

	json_object_object_add(u, "sessionUpdate", json_object_new_string(kind));
	json_object_object_add(u, "content", block);
	return send_replay(s, p, u);
}

/* A user message's content: its text, and its image parts as image blocks. */
static bool replay_user(struct acp_session *s, struct peer *p, struct json_object *content)
{
	size_t i, n;

	if (json_object_is_type(content, json_type_string))
		return json_object_get_string_len(content) == 0 ||
		       replay_chunk(s, p, "user_message_chunk",
				    acp_text_block(json_object_get_string(content),
						   (size_t)json_object_get_string_len(content)));
	if (!json_object_is_type(content, json_type_array))
		return true;
	n = json_object_array_length(content);
	for (i = 0; i < n; i++) {
		struct json_object *part = json_object_array_get_idx(content, i), *iu, *blk;
		const char *type = acp_param_str(part, "type"), *t, *url, *comma;
		if (type && strcmp(type, "text") == 0 && (t = acp_param_str(part, "text")) != NULL) {
			if (!replay_chunk(s, p, "user_message_chunk", acp_text_block(t, strlen(t))))
				return false;
		} else if (type && strcmp(type, "image_url") == 0 &&
			   json_object_object_get_ex(part, "image_url", &iu) &&
			   (url = acp_param_str(iu, "url")) != NULL && strncmp(url, "data:", 5) == 0 &&
			   (comma = strstr(url, ";base64,")) != NULL) {
			blk = json_object_new_object();
			json_object_object_add(blk, "type", json_object_new_string("image"));
			json_object_object_add(blk, "data", json_object_new_string(comma + 8));
			json_object_object_add(blk, "mimeType",
					       json_object_new_string_len(url + 5, (int)(comma - url - 5)));
			if (!replay_chunk(s, p, "user_message_chunk", blk))
				return false;
		}
	}
	return true;
}

/* The stored result of the call with model id cid: the tool message after the assistant
 * message at index i, before the next assistant message. */
static const char *result_of(struct json_object *hist, size_t i, const char *cid)
{
	size_t j, n = json_object_array_length(hist);

	for (j = i + 1; j < n; j++) {
		struct json_object *m = json_object_array_get_idx(hist, j);
		const char *role = acp_param_str(m, "role");
		if (role && strcmp(role, "assistant") == 0)
			break;
		if (role && strcmp(role, "tool") == 0 && acp_param_str(m, "tool_call_id") &&
		    strcmp(acp_param_str(m, "tool_call_id"), cid) == 0)
			return acp_param_str(m, "content") ?: "";
	}
	return NULL;
}

/* Whether a stored result is one of the harness's failures: a registry error, a denial, a
 * cancellation. */
static bool harness_failed(const char *name, const char *content)
{
	char *denied = xasprintf(AGENT_DENIED_FMT, name), *cancelled = xasprintf(AGENT_CANCELLED_FMT, name);
	bool f = strncmp(content, "Error calling tool \"", 20) == 0 || strcmp(content, denied) == 0 ||
		 strcmp(content, cancelled) == 0;

	free(denied);
	free(cancelled);
	return f;
}

static bool replay_calls(struct acp_session *s, struct peer *p, struct json_object *hist,
			 size_t i, struct json_object *calls)
{
	struct acp_pathmap pm = acp_session_paths(s);
	size_t k, n = json_object_array_length(calls);

	for (k = 0; k < n; k++) {
		struct json_object *call = json_object_array_get_idx(calls, k), *fn = NULL, *u;
		const char *name, *args, *content;
		char *id = call_id(i, k);

		json_object_object_get_ex(call, "function", &fn);
		name = acp_param_str(fn, "name") ?: "";
		args = acp_param_str(fn, "arguments");
		content = result_of(hist, i, acp_param_str(call, "id") ?: "");
		u = json_object_new_object();
		json_object_object_add(u, "sessionUpdate", json_object_new_string("tool_call"));
		json_object_object_add(u, "toolCallId", json_object_new_string(id));
		free(id);
		acptool_describe(u, name, args, &pm);
		if (content)
			acptool_result(u, name, args, content, harness_failed(name, content), &pm);
		else
			json_object_object_add(u, "status", json_object_new_string("failed"));
		if (!send_replay(s, p, u))
			return false;
		/* The plan it sent, again. */
		if (content && !harness_failed(name, content) && acp_plan_offered(s->srv, name) &&
		    (u = acp_plan_update(args)) != NULL && !send_replay(s, p, u))
			return false;
	}
	return true;
}

bool acp_replay_message(struct acp_session *s, struct peer *p, struct json_object *hist, size_t i)
{
	struct json_object *m = json_object_array_get_idx(hist, i), *v;
	const char *role = acp_param_str(m, "role");

	if (role == NULL)
		return true;
	if (strcmp(role, "user") == 0)
		return !json_object_object_get_ex(m, "content", &v) || replay_user(s, p, v);
	if (strcmp(role, "assistant") != 0)
		return true;	/* system and tool messages: tool results go with their calls */
	if (json_object_object_get_ex(m, "reasoning_content", &v) &&
	    json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0 &&
	    !replay_chunk(s, p, "agent_thought_chunk",
			  acp_text_block(json_object_get_string(v), (size_t)json_object_get_string_len(v))))
		return false;
	if (json_object_object_get_ex(m, "content", &v) && json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > 0 &&
	    !replay_chunk(s, p, "agent_message_chunk",
			  acp_text_block(json_object_get_string(v), (size_t)json_object_get_string_len(v))))
		return false;
	if (json_object_object_get_ex(m, "tool_calls", &v) && json_object_is_type(v, json_type_array))
		return replay_calls(s, p, hist, i, v);
	return true;
}
