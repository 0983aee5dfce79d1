/* llmmsg.c — streamed deltas merged, content parts flattened, vendor error bodies read. */
#include "llmmsg.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "gojson.h"
#include "jsonfield.h"
#include "xalloc.h"

/* How many entries of a validation error list ({"detail":[…]}) the line names. */
#define DETAIL_ITEMS_MAX 3

/* ---- deltas ---- */

/* Keys whose streamed value arrives in pieces to be joined. Everything else is whole each
 * time it appears (ids, names, types, signatures, formats: appending a repeat corrupts it). */
static bool fragment_key(const char *k)
{
	static const char *const keys[] = {"content", "refusal", "reasoning_content", "reasoning",
					   "arguments", "text", "summary"};
	size_t i;

	for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strcmp(k, keys[i]) == 0)
			return true;
	return false;
}

static struct json_object *copy(struct json_object *v)
{
	struct json_object *out = NULL;

	if (v == NULL || json_object_deep_copy(v, &out, NULL) != 0)
		return NULL;
	return out;
}

static bool all_indexed(struct json_object *arr)
{
	size_t i, n = json_object_array_length(arr);

	for (i = 0; i < n; i++) {
		struct json_object *el = json_object_array_get_idx(arr, i), *ix;

		if (!json_object_is_type(el, json_type_object) ||
		    !json_object_object_get_ex(el, "index", &ix) || !json_object_is_type(ix, json_type_int))
			return false;
	}
	return true;
}

static struct json_object *find_index(struct json_object *arr, int64_t want)
{
	size_t j;

	for (j = 0; j < json_object_array_length(arr); j++) {
		struct json_object *a = json_object_array_get_idx(arr, j), *ix;

		if (json_object_object_get_ex(a, "index", &ix) && json_object_get_int64(ix) == want)
			return a;
	}
	return NULL;
}

static void merge_indexed(struct json_object *acc, struct json_object *delta)
{
	size_t i, n = json_object_array_length(delta);

	for (i = 0; i < n; i++) {
		struct json_object *el = json_object_array_get_idx(delta, i), *ix, *target;

		json_object_object_get_ex(el, "index", &ix);
		if ((target = find_index(acc, json_object_get_int64(ix))) != NULL)
			llmmsg_merge(target, el);
		else
			json_object_array_add(acc, copy(el));
	}
}

static bool empty_string(struct json_object *v)
{
	return json_object_is_type(v, json_type_string) && json_object_get_string_len(v) == 0;
}

static void append_string(struct json_object *a, struct json_object *v)
{
	struct buf s = {0};

	buf_append(&s, json_object_get_string(a), (size_t)json_object_get_string_len(a));
	buf_append(&s, json_object_get_string(v), (size_t)json_object_get_string_len(v));
	json_object_set_string_len(a, s.data ? s.data : "", (int)s.len);
	buf_free(&s);
}

void llmmsg_merge(struct json_object *acc, struct json_object *delta)
{
	if (!json_object_is_type(acc, json_type_object) || !json_object_is_type(delta, json_type_object))
		return;
	json_object_object_foreach(delta, key, val) {
		struct json_object *a = NULL;
		enum json_type at, vt = json_object_get_type(val);

		if (!json_object_object_get_ex(acc, key, &a) || a == NULL) {
			json_object_object_add(acc, key, copy(val));
			continue;
		}
		if (val == NULL || empty_string(val))
			continue;	/* nothing never replaces something */
		at = json_object_get_type(a);
		if (at == json_type_string && vt == json_type_string) {
			if (fragment_key(key))
				append_string(a, val);
			else if (json_object_get_string_len(a) == 0)
				json_object_object_add(acc, key, copy(val));
			/* else: the first non-empty value is the value */
		} else if (at == json_type_object && vt == json_type_object) {
			llmmsg_merge(a, val);
		} else if (at == json_type_array && vt == json_type_array) {
			if (all_indexed(val) && all_indexed(a)) {
				merge_indexed(a, val);
			} else {
				size_t i;

				for (i = 0; i < json_object_array_length(val); i++)
					json_object_array_add(a, copy(json_object_array_get_idx(val, i)));
			}
		} else {
			json_object_object_add(acc, key, copy(val));
		}
	}
}

/* ---- content parts ---- */

/* A "thinking" part's text: {"thinking":[{"type":"text","text":…},…]} or {"thinking":"…"}. */
static void thinking_text(struct json_object *part, struct buf *out)
{
	struct json_object *t;
	size_t i;

	if (!json_object_object_get_ex(part, "thinking", &t))
		return;
	if (json_object_is_type(t, json_type_string)) {
		buf_puts(out, json_object_get_string(t));
		return;
	}
	if (!json_object_is_type(t, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(t); i++) {
		struct json_object *c = json_object_array_get_idx(t, i);
		const char *type = jsonfield_str(c, "type"), *text = jsonfield_str(c, "text");

		if (text && (type == NULL || strcmp(type, "text") == 0))
			buf_puts(out, text);
	}
}

int llmmsg_flatten_content(struct json_object *msg)
{
	struct json_object *parts;
	struct buf text = {0}, think = {0};
	size_t i;

	if (!json_object_object_get_ex(msg, "content", &parts) ||
	    !json_object_is_type(parts, json_type_array))
		return 0;
	for (i = 0; i < json_object_array_length(parts); i++) {
		struct json_object *p = json_object_array_get_idx(parts, i);
		const char *type;

		if (json_object_is_type(p, json_type_string)) {
			buf_puts(&text, json_object_get_string(p));
			continue;
		}
		type = jsonfield_str(p, "type");
		if (type && strcmp(type, "thinking") == 0)
			thinking_text(p, &think);
		else if ((type == NULL || strcmp(type, "text") == 0) && jsonfield_str(p, "text"))
			buf_puts(&text, jsonfield_str(p, "text"));
	}
	json_object_object_add(msg, "content",
			       json_object_new_string_len(text.data ? text.data : "", (int)text.len));
	if (think.len > 0) {
		struct json_object *r;

		if (json_object_object_get_ex(msg, "reasoning_content", &r) &&
		    json_object_is_type(r, json_type_string)) {
			struct buf all = {0};

			buf_append(&all, json_object_get_string(r), (size_t)json_object_get_string_len(r));
			buf_append(&all, think.data, think.len);
			json_object_object_add(msg, "reasoning_content",
					       json_object_new_string_len(all.data, (int)all.len));
			buf_free(&all);
		} else {
			json_object_object_add(msg, "reasoning_content",
					       json_object_new_string_len(think.data, (int)think.len));
		}
	}
	buf_free(&text);
	buf_free(&think);
	return 1;
}

const char *llmmsg_reasoning(struct json_object *msg)
{
	const char *r = jsonfield_str(msg, "reasoning_content");

	if (r && *r)
		return r;
	r = jsonfield_str(msg, "reasoning");
	return r && *r ? r : NULL;
}

/* ---- error bodies ---- */

/* A validation list, pydantic/FastAPI style: [{"msg":…,"loc":[…]},…] as "msg (a.b.1)". */
static void detail_text(struct json_object *list, struct buf *out)
{
	size_t i, j, n;

	if (json_object_is_type(list, json_type_object) &&
	    !json_object_object_get_ex(list, "detail", &list))
		return;
	if (json_object_is_type(list, json_type_string)) {
		buf_puts(out, json_object_get_string(list));
		return;
	}
	if (!json_object_is_type(list, json_type_array))
		return;
	n = json_object_array_length(list);
	for (i = 0; i < n && i < DETAIL_ITEMS_MAX; i++) {
		struct json_object *it = json_object_array_get_idx(list, i), *loc;
		const char *m = jsonfield_str(it, "msg");

		if (m == NULL)
			m = jsonfield_str(it, "message");
		if (m == NULL)
			continue;
		if (out->len > 0)
			buf_puts(out, "; ");
		buf_puts(out, m);
		if (json_object_object_get_ex(it, "loc", &loc) && json_object_is_type(loc, json_type_array)) {
			buf_puts(out, " (");
			for (j = 0; j < json_object_array_length(loc); j++)
				buf_printf(out, "%s%s", j ? "." : "",
					   json_object_get_string(json_object_array_get_idx(loc, j)));
			buf_puts(out, ")");
		}
	}
	if (n > DETAIL_ITEMS_MAX)
		buf_printf(out, "; and %zu more", n - DETAIL_ITEMS_MAX);
}

/* The message of a parsed error document, with its code or status when it has one. */
static void doc_text(struct json_object *doc, struct buf *out)
{
	struct json_object *e = NULL, *m = NULL;
	const char *s, *code = NULL;

	if (json_object_is_type(doc, json_type_array) && json_object_array_length(doc) > 0)
		doc = json_object_array_get_idx(doc, 0);	/* Gemini: [{"error":{…}}] */
	if (!json_object_is_type(doc, json_type_object))
		return;
	if (json_object_object_get_ex(doc, "error", &e) && json_object_is_type(e, json_type_string)) {
		buf_puts(out, json_object_get_string(e));
		return;
	}
	if (json_object_is_type(e, json_type_object)) {
		doc = e;
		if ((code = jsonfield_str(e, "code")) == NULL || *code == '\0')
			code = jsonfield_str(e, "status");
	}
	if (json_object_object_get_ex(doc, "message", &m)) {
		if (json_object_is_type(m, json_type_string))
			buf_puts(out, json_object_get_string(m));
		else
			detail_text(m, out);	/* Mistral: "message":{"detail":[…]} */
	}
	if (out->len == 0 && json_object_object_get_ex(doc, "detail", &m))
		detail_text(m, out);
	if (out->len == 0 && json_object_object_get_ex(doc, "errors", &m) &&
	    json_object_is_type(m, json_type_array) && json_object_array_length(m) > 0 &&
	    (s = jsonfield_str(json_object_array_get_idx(m, 0), "message")) != NULL)
		buf_puts(out, s);	/* Cloudflare: {"errors":[{"code":…,"message":…}]} */
	if (out->len > 0 && code && *code && !strstr(out->data, code))
		buf_printf(out, " (%s)", code);
}

/* An HTML page's <title>, which is where proxies (Cloudflare's 52x pages) say what failed. */
static bool html_title(const char *s, size_t n, struct buf *out)
{
	const char *end = s + n, *p;

	for (p = s; p + 7 <= end; p++)
		if (strncasecmp(p, "<title>", 7) == 0)
			break;
	if (p + 7 > end)
		return false;
	for (p += 7, s = p; p + 8 <= end; p++)
		if (strncasecmp(p, "</title>", 8) == 0) {
			buf_append(out, s, (size_t)(p - s));
			return out->len > 0;
		}
	return false;
}

/* Copies s into a single line: controls and white-space runs become one space, trimmed, cut
 * at a character boundary with "…" when longer than the cap (the mark included). */
static char *one_line(const char *s, size_t n)
{
	struct buf b = {0};
	bool space = false;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || c == ' ') {
			space = b.len > 0;
			continue;
		}
		if (b.len + space + 1 > LLMMSG_ERROR_TEXT_MAX - (sizeof "…" - 1))
			break;	/* room is kept for the mark */
		if (space)
			buf_append(&b, " ", 1);
		space = false;
		buf_append(&b, s + i, 1);
	}
	while (i < n && ((unsigned char)s[i] <= ' ' || s[i] == 0x7f))
		i++;	/* only white space left: nothing was cut */
	if (i < n) {
		while (b.len > 0 && ((unsigned char)b.data[b.len - 1] & 0xc0) == 0x80)
			b.len--;	/* continuation bytes of a cut character */
		if (b.len > 0 && (unsigned char)b.data[b.len - 1] >= 0xc0)
			b.len--;
		buf_puts(&b, "…");
	}
	if (b.data == NULL)
		buf_puts(&b, "");
	return buf_steal(&b);
}

char *llmmsg_error_text(const char *body, size_t len)
{
	struct json_object *doc;
	struct buf b = {0};
	const char *why;
	char *line;

	doc = gojson_parse(body, len, &why);
	if (doc) {
		doc_text(doc, &b);
		json_object_put(doc);
	} else {
		html_title(body, len, &b);
	}
	line = b.len > 0 ? one_line(b.data, b.len) : one_line(body, len);
	buf_free(&b);
	return line;
}
