/* eliza.c — upstream's fake LLM, rule for rule (reference §5.2). */
#include "eliza.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gojson.h"

/* What the fake says when there is nothing to reflect. */
#define ELIZA_DEFAULT_REPLY "How does that make you feel?"
/* The prefix that turns a user message into a shell tool call (case-sensitive). */
#define ELIZA_RUN_PREFIX "run:"

/* A message's "content" when it is a string (Go decodes content as *string), else NULL. */
static struct json_object *string_content(struct json_object *msg)
{
	struct json_object *c;

	if (!json_object_object_get_ex(msg, "content", &c) || !json_object_is_type(c, json_type_string))
		return NULL;
	return c;
}

static bool has_role(struct json_object *msg, const char *role)
{
	struct json_object *r;

	return json_object_object_get_ex(msg, "role", &r) &&
	       json_object_is_type(r, json_type_string) && strcmp(json_object_get_string(r), role) == 0;
}

/* Decodes the UTF-8 rune at s (n > 0 bytes); returns its length, 0 when invalid. */
static size_t rune_at(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len, i;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	len = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (len == 0 || n < len)
		return 0;
	*cp = s[0] & (0x7f >> len);
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = (*cp << 6) | (s[i] & 0x3f);
	}
	return len;
}

/* Go's unicode.IsSpace. */
static bool is_space(uint32_t c)
{
	switch (c) {
	case '\t': case '\n': case '\v': case '\f': case '\r': case ' ':
	case 0x85: case 0xa0: case 0x1680: case 0x2028: case 0x2029: case 0x202f: case 0x205f:
	case 0x3000:
		return true;
	default:
		return c >= 0x2000 && c <= 0x200a;
	}
}

/* Go's strings.TrimSpace on the n bytes at *s: moves *s and returns the new length. */
static size_t trim_space(const char **s, size_t n)
{
	const unsigned char *p = (const unsigned char *)*s;
	uint32_t cp;
	size_t l;

	while (n > 0 && (l = rune_at(p, n, &cp)) > 0 && is_space(cp)) {
		p += l;
		n -= l;
	}
	while (n > 0) {
		size_t k = n - 1;	/* find the start of the last rune */
		while (k > 0 && n - k < 4 && (p[k] & 0xc0) == 0x80)
			k--;
		l = rune_at(p + k, n - k, &cp);
		if (l != n - k || !is_space(cp))
			break;
		n = k;
	}
	*s = (const char *)p;
	return n;
}

static struct json_object *response(struct json_object *message, const char *finish)
{
	struct json_object *resp = json_object_new_object(), *choices = json_object_new_array();
	struct json_object *choice = json_object_new_object();

	json_object_object_add(choice, "index", json_object_new_int(0));
	json_object_object_add(choice, "message", message);
	json_object_object_add(choice, "finish_reason", json_object_new_string(finish));
	json_object_array_add(choices, choice);
	json_object_object_add(resp, "id", json_object_new_string("fake-eliza"));
	json_object_object_add(resp, "choices", choices);
	return resp;
}

static struct json_object *text_response(const char *text, size_t n)
{
	struct json_object *msg = json_object_new_object();

	json_object_object_add(msg, "role", json_object_new_string("assistant"));
	json_object_object_add(msg, "content", json_object_new_string_len(text, (int)n));
	return response(msg, "stop");
}

/* The shell tool the request offers: run_shell_command (gemini-cli's name) when its tools
 * declare it, else upstream's run_command. Both take {"command"}. */
static const char *shell_tool(struct json_object *tools)
{
	size_t n = json_object_is_type(tools, json_type_array) ? json_object_array_length(tools) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *fn, *name;
		if (json_object_object_get_ex(json_object_array_get_idx(tools, i), "function", &fn) &&
		    json_object_object_get_ex(fn, "name", &name) &&
		    json_object_is_type(name, json_type_string) &&
		    strcmp(json_object_get_string(name), "run_shell_command") == 0)
			return "run_shell_command";
	}
	return "run_command";
}

/* The shell tool's call for the command text at cmd: arguments are Go's json.Marshal of
 * {"command": cmd}, HTML-escaped as Go does it. */
static struct json_object *run_response(const char *tool, const char *cmd, size_t n)
{
	struct json_object *msg = json_object_new_object(), *calls = json_object_new_array();
	struct json_object *call = json_object_new_object(), *fn = json_object_new_object();
	struct buf args = {0};

	buf_puts(&args, "{\"command\":");
	gojson_append_string(&args, cmd, n);
	buf_puts(&args, "}");
	json_object_object_add(fn, "name", json_object_new_string(tool));
	json_object_object_add(fn, "arguments", json_object_new_string_len(args.data, (int)args.len));
	json_object_object_add(call, "id", json_object_new_string("eliza-run-1"));
	json_object_object_add(call, "type", json_object_new_string("function"));
	json_object_object_add(call, "function", fn);
	json_object_array_add(calls, call);
	json_object_object_add(msg, "role", json_object_new_string("assistant"));
	json_object_object_add(msg, "tool_calls", calls);
	buf_free(&args);
	return response(msg, "tool_calls");
}

struct json_object *eliza_reply(struct json_object *messages, struct json_object *tools)
{
	size_t n = json_object_is_type(messages, json_type_array) ?
		   json_object_array_length(messages) : 0;
	struct json_object *c, *resp;
	const char *user = "", *cmd;
	size_t ulen = 0, i, clen;
	struct buf text = {0};

	if (n > 0 && has_role(json_object_array_get_idx(messages, n - 1), "tool")) {
		c = string_content(json_object_array_get_idx(messages, n - 1));
		buf_puts(&text, "The tool told me:\n");
		if (c)
			buf_append(&text, json_object_get_string(c), (size_t)json_object_get_string_len(c));
		goto reply;
	}
	for (i = n; i-- > 0;) {
		struct json_object *m = json_object_array_get_idx(messages, i);

		if (has_role(m, "user") && (c = string_content(m)) != NULL) {
			user = json_object_get_string(c);
			ulen = (size_t)json_object_get_string_len(c);
			break;
		}
	}
	if (ulen >= strlen(ELIZA_RUN_PREFIX) &&
	    memcmp(user, ELIZA_RUN_PREFIX, strlen(ELIZA_RUN_PREFIX)) == 0) {
		cmd = user + strlen(ELIZA_RUN_PREFIX);
		clen = trim_space(&cmd, ulen - strlen(ELIZA_RUN_PREFIX));
		return run_response(shell_tool(tools), cmd, clen);
	}
	if (ulen > 0) {
		buf_puts(&text, "What do you think it means when you say '");
		buf_append(&text, user, ulen);
		buf_puts(&text, "'?");
	} else {
		buf_puts(&text, ELIZA_DEFAULT_REPLY);
	}
reply:
	resp = text_response(text.data, text.len);
	buf_free(&text);
	return resp;
}
