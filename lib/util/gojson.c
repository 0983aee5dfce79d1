/* gojson.c — Go-compatible JSON encoding on top of json-c objects. */
#include "gojson.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Decodes one UTF-8 sequence at s (n bytes left). Returns its length, or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len, i;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	} else if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

void gojson_append_string(struct buf *b, const char *str, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, start = 0;

	buf_append(b, "\"", 1);
	while (i < n) {
		unsigned char c = s[i];
		char esc[8];
		size_t l;
		uint32_t cp;

		if (c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c < 0x80) {
			i++;
			continue;
		}
		if (c < 0x80) {
			buf_append(b, s + start, i - start);
			switch (c) {
			case '"': buf_append(b, "\\\"", 2); break;
			case '\\': buf_append(b, "\\\\", 2); break;
			case '\n': buf_append(b, "\\n", 2); break;
			case '\r': buf_append(b, "\\r", 2); break;
			case '\t': buf_append(b, "\\t", 2); break;
			default:
				memcpy(esc, "\\u00", 4);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				buf_append(b, esc, 6);
			}
			start = ++i;
			continue;
		}
		l = utf8_len(s + i, n - i, &cp);
		if (l == 0) {
			buf_append(b, s + start, i - start);
			buf_append(b, "\\ufffd", 6);
			start = ++i;
			continue;
		}
		if (cp == 0x2028 || cp == 0x2029) {
			buf_append(b, s + start, i - start);
			buf_append(b, cp == 0x2028 ? "\\u2028" : "\\u2029", 6);
			start = i + l;
		}
		i += l;
	}
	buf_append(b, s + start, n - start);
	buf_append(b, "\"", 1);
}

void gojson_append(struct buf *b, struct json_object *obj)
{
	size_t i, n;
	int first = 1;

	switch (json_object_get_type(obj)) {
	case json_type_null:
		buf_puts(b, "null");
		break;
	case json_type_boolean:
		buf_puts(b, json_object_get_boolean(obj) ? "true" : "false");
		break;
	case json_type_int:
	case json_type_double:
		buf_puts(b, json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
		break;
	case json_type_string:
		gojson_append_string(b, json_object_get_string(obj),
				     (size_t)json_object_get_string_len(obj));
		break;
	case json_type_array:
		buf_append(b, "[", 1);
		n = json_object_array_length(obj);
		for (i = 0; i < n; i++) {
			if (i)
				buf_append(b, ",", 1);
			gojson_append(b, json_object_array_get_idx(obj, i));
		}
		buf_append(b, "]", 1);
		break;
	case json_type_object:
		buf_append(b, "{", 1);
		json_object_object_foreach(obj, key, val) {
			if (!first)
				buf_append(b, ",", 1);
			first = 0;
			gojson_append_string(b, key, strlen(key));
			buf_append(b, ":", 1);
			gojson_append(b, val);
		}
		buf_append(b, "}", 1);
		break;
	}
}

char *gojson_encode(struct json_object *obj)
{
	struct buf b = {0};

	gojson_append(&b, obj);
	return buf_steal(&b);
}

/* json-c accepts NaN and Infinity, which JSON (and Go) do not; depth is bounded by the
 * tokener, so recursion here is too. */
static int nonfinite(struct json_object *o)
{
	size_t i, n;

	switch (json_object_get_type(o)) {
	case json_type_double:
		return !isfinite(json_object_get_double(o));
	case json_type_array:
		n = json_object_array_length(o);
		for (i = 0; i < n; i++)
			if (nonfinite(json_object_array_get_idx(o, i)))
				return 1;
		return 0;
	case json_type_object: {
		json_object_object_foreach(o, k, v) {
			(void)k;
			if (nonfinite(v))
				return 1;
		}
		return 0;
	}
	default:
		return 0;
	}
}

struct json_object *gojson_parse(const char *s, size_t n, const char **why)
{
	struct json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error jerr;
	size_t used, i;

	*why = NULL;
	if (n > INT32_MAX) {
		*why = "document too large";
		return NULL;
	}
	tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	if (tok == NULL) {
		*why = "out of memory";
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, s, (int)n);
	jerr = json_tokener_get_error(tok);
	used = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue && obj == NULL) {
		/* A bare number at the end of input needs a terminator to complete. */
		obj = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		used = n;
	}
	if (jerr == json_tokener_continue) {
		*why = "unexpected end of JSON input";
	} else if (jerr != json_tokener_success) {
		*why = json_tokener_error_desc(jerr);
	} else {
		for (i = used; i < n; i++) {
			if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') {
				*why = "invalid character after top-level value";
				break;
			}
		}
	}
	json_tokener_free(tok);
	if (*why == NULL && nonfinite(obj))
		*why = "NaN and Infinity are not JSON numbers";
	if (*why) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

const char *gojson_unknown_field(struct json_object *o, const char *const *known)
{
	json_object_object_foreach(o, key, val) {
		size_t i;
		(void)val;
		for (i = 0; known[i] && strcmp(known[i], key) != 0; i++)
			;
		if (known[i] == NULL)
			return key;
	}
	return NULL;
}
