/* acpview.c — session updates rendered as text: one function per kind of update, chosen by a
 * table. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acpview.h"
#include "termtext.h"
#include "xalloc.h"

enum stream { NONE, MESSAGE, THOUGHT, USER };

struct acpview {
	void (*emit)(void *, const char *);
	void *arg;
	struct json_object *titles;	/* toolCallId → title */
	enum stream in;			/* what the last text belonged to */
	bool at_bol;			/* the last text ended a line */
};

/* Every piece of text reaches the terminal through here, its controls made visible
 * (termtext.h): most of it is the agent's, the model's or a tool's. */
static void put(struct acpview *v, const char *s)
{
	size_t n = strlen(s);
	char *shown;

	if (n == 0)
		return;
	shown = termtext_str(s, TERMTEXT_TEXT);
	v->emit(v->arg, shown);
	free(shown);
	v->at_bol = s[n - 1] == '\n';
}

#define putf acpview_printf

void acpview_printf(struct acpview *v, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s) {
		put(v, s);
		free(s);
	}
}

/* Ends a streamed run of text, so what follows starts on a line of its own. */
static void end_stream(struct acpview *v)
{
	if (!v->at_bol)
		put(v, "\n");
	v->in = NONE;
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *x;

	if (o && json_object_object_get_ex(o, key, &x) && json_object_is_type(x, json_type_string))
		return json_object_get_string(x);
	return NULL;
}

struct acpview *acpview_new(void (*emit)(void *arg, const char *text), void *arg)
{
	struct acpview *v = xcalloc(1, sizeof *v);

	v->emit = emit;
	v->arg = arg;
	v->titles = json_object_new_object();
	v->at_bol = true;
	return v;
}

void acpview_free(struct acpview *v)
{
	if (v == NULL)
		return;
	json_object_put(v->titles);
	free(v);
}

void acpview_line(struct acpview *v, const char *text)
{
	end_stream(v);
	putf(v, "%s\n", text);
}

/* Text, indented, at most max lines; the rest counted. prefix goes before every line. */
static void lines(struct acpview *v, const char *text, const char *prefix, int max)
{
	const char *p = text;
	int shown = 0, rest = 0;

	while (*p) {
		size_t n = strcspn(p, "\n");
		if (shown < max) {
			putf(v, "%s%.*s\n", prefix, (int)n, p);
			shown++;
		} else {
			rest++;
		}
		p += n + (p[n] == '\n');
	}
	if (rest)
		putf(v, "    … %d more line%s\n", rest, rest == 1 ? "" : "s");
}

static void chunk(struct acpview *v, struct json_object *u, enum stream kind)
{
	struct json_object *c = NULL;
	const char *text;

	json_object_object_get_ex(u, "content", &c);
	if ((text = str(c, "text")) == NULL) {
		const char *type = str(c, "type");
		if (type && strcmp(type, "text") != 0) {
			end_stream(v);
			putf(v, "[%s%s%s]\n", type, str(c, "mimeType") ? " " : "", str(c, "mimeType") ?: "");
		}
		return;
	}
	if (v->in != kind) {
		end_stream(v);
		if (kind == THOUGHT)
			put(v, "[thinking] ");
		else if (kind == USER)
			put(v, "> ");
	}
	v->in = kind;
	put(v, text);
}

static void msg_chunk(struct acpview *v, struct json_object *u)
{
	chunk(v, u, MESSAGE);
}

static void thought_chunk(struct acpview *v, struct json_object *u)
{
	chunk(v, u, THOUGHT);
}

static void user_chunk(struct acpview *v, struct json_object *u)
{
	chunk(v, u, USER);
}

/* A tool call's content: output text collapsed, diffs as - and + lines. */
static void tool_content(struct acpview *v, struct json_object *list)
{
	size_t i, n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;

	for (i = 0; i < n; i++) {
		struct json_object *item = json_object_array_get_idx(list, i), *c = NULL;
		const char *type = str(item, "type");
		if (type == NULL)
			continue;
		if (strcmp(type, "content") == 0) {
			json_object_object_get_ex(item, "content", &c);
			if (str(c, "text"))
				lines(v, str(c, "text"), "    │ ", ACPVIEW_OUTPUT_LINES);
			else if (str(c, "uri") && strcmp(str(c, "type") ?: "", "resource_link") == 0)
				putf(v, "    link %s\n", str(c, "uri"));	/* open_port's URL */
		} else if (strcmp(type, "diff") == 0) {
			putf(v, "    diff %s%s\n", str(item, "path") ?: "",
			     str(item, "oldText") ? "" : " (new)");
			if (str(item, "oldText"))
				lines(v, str(item, "oldText"), "    - ", ACPVIEW_DIFF_LINES);
			if (str(item, "newText"))
				lines(v, str(item, "newText"), "    + ", ACPVIEW_DIFF_LINES);
		} else if (strcmp(type, "terminal") == 0) {
			putf(v, "    [terminal %s]\n", str(item, "terminalId") ?: "");
		}
	}
}

static bool final_status(const char *st)
{
	return st && (strcmp(st, "completed") == 0 || strcmp(st, "failed") == 0);
}

static void tool_call(struct acpview *v, struct json_object *u)
{
	const char *st = str(u, "status"), *id = str(u, "toolCallId"), *title = str(u, "title");
	struct json_object *c;

	end_stream(v);
	if (id && title) {
		if (json_object_object_length(v->titles) >= ACPVIEW_TITLES_MAX) {
			json_object_put(v->titles);
			v->titles = json_object_new_object();
		}
		json_object_object_add(v->titles, id, json_object_new_string(title));
	}
	putf(v, "\n[tool: %s] %s (%s)\n", str(u, "kind") ?: "other", title ?: "", st ?: "pending");
	/* A replayed call comes whole, with its result. */
	if (final_status(st) && json_object_object_get_ex(u, "content", &c))
		tool_content(v, c);
}

static void tool_update(struct acpview *v, struct json_object *u)
{
	const char *st = str(u, "status"), *title = str(u, "title"), *id = str(u, "toolCallId");
	struct json_object *c;

	if (title == NULL && id)
		title = str(v->titles, id);
	end_stream(v);
	if (st)
		putf(v, "[tool] %s → %s\n", title ?: id ?: "", st);
	if (json_object_object_get_ex(u, "content", &c))
		tool_content(v, c);
}

static void plan(struct acpview *v, struct json_object *u)
{
	struct json_object *entries;
	size_t i, n;

	end_stream(v);
	if (!json_object_object_get_ex(u, "entries", &entries) ||
	    !json_object_is_type(entries, json_type_array))
		return;
	put(v, "[plan]\n");
	n = json_object_array_length(entries);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(entries, i);
		const char *st = str(e, "status") ?: "pending";
		putf(v, "  [%s] %s\n", strcmp(st, "completed") == 0 ? "x" : strcmp(st, "in_progress") == 0
		     ? "~" : " ", str(e, "content") ?: "");
	}
}

static void mode(struct acpview *v, struct json_object *u)
{
	end_stream(v);
	putf(v, "[mode: %s]\n", str(u, "currentModeId") ?: "");
}

static void usage(struct acpview *v, struct json_object *u)
{
	struct json_object *used = NULL, *size = NULL, *cost = NULL, *amount = NULL;

	json_object_object_get_ex(u, "used", &used);
	json_object_object_get_ex(u, "size", &size);
	end_stream(v);
	putf(v, "[usage: %lld of %lld tokens", (long long)json_object_get_int64(used),
	     (long long)json_object_get_int64(size));
	if (json_object_object_get_ex(u, "cost", &cost) && cost &&
	    json_object_object_get_ex(cost, "amount", &amount))
		putf(v, ", %.4f %s", json_object_get_double(amount), str(cost, "currency") ?: "");
	put(v, "]\n");
}

static void info(struct acpview *v, struct json_object *u)
{
	if (str(u, "title")) {
		end_stream(v);
		putf(v, "[title: %s]\n", str(u, "title"));
	}
}

static void commands(struct acpview *v, struct json_object *u)
{
	struct json_object *list;
	size_t i, n;

	if (!json_object_object_get_ex(u, "availableCommands", &list) ||
	    !json_object_is_type(list, json_type_array))
		return;
	end_stream(v);
	put(v, "[commands:");
	n = json_object_array_length(list);
	for (i = 0; i < n; i++)
		putf(v, " /%s", str(json_object_array_get_idx(list, i), "name") ?: "");
	put(v, "]\n");
}

static void options(struct acpview *v, struct json_object *u)
{
	struct json_object *list;
	size_t i, n;

	if (!json_object_object_get_ex(u, "configOptions", &list) ||
	    !json_object_is_type(list, json_type_array))
		return;
	end_stream(v);
	put(v, "[options:");
	n = json_object_array_length(list);
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(list, i), *cur = NULL;
		json_object_object_get_ex(o, "currentValue", &cur);
		putf(v, " %s=%s", str(o, "id") ?: "", cur ? json_object_get_string(cur) : "");
	}
	put(v, "]\n");
}

static void notice(struct acpview *v, struct json_object *u)
{
	end_stream(v);
	putf(v, "[%s: %s%s%s]\n", str(u, "severity") ?: "notice", str(u, "title") ?: "",
	     str(u, "description") ? " — " : "", str(u, "description") ?: "");
}

static const struct {
	const char *kind;
	void (*fn)(struct acpview *, struct json_object *);
} kinds[] = {
	{"agent_message_chunk", msg_chunk},
	{"agent_thought_chunk", thought_chunk},
	{"user_message_chunk", user_chunk},
	{"tool_call", tool_call},
	{"tool_call_update", tool_update},
	{"plan", plan},
	{"current_mode_update", mode},
	{"usage_update", usage},
	{"session_info_update", info},
	{"available_commands_update", commands},
	{"config_option_update", options},
	{"notice", notice},
};

void acpview_update(struct acpview *v, struct json_object *u)
{
	const char *kind = str(u, "sessionUpdate");
	size_t i;

	for (i = 0; kind && i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(kinds[i].kind, kind) == 0) {
			kinds[i].fn(v, u);
			return;
		}
}
