/* toolparts.c — tool results with inline data: checking what the sandbox sent, the text a
 * text-only channel shows, and MCP's content items. */
#include "toolparts.h"

#include <stdio.h>
#include <string.h>

#include "toolcap.h"
#include "xalloc.h"

static struct json_object *field(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *str_field(struct json_object *o, const char *key)
{
	struct json_object *v = field(o, key);

	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* type/subtype of RFC 6838 token characters, under a top-level type sent inline. */
static bool mime_ok(const char *m)
{
	static const char *const tops[] = {"image/", "audio/", "video/", "application/pdf"};
	const char *slash = strchr(m, '/');
	bool top = false;

	if (!slash || strlen(m) > TOOLPARTS_MIME_MAX || !slash[1])
		return false;
	for (size_t i = 0; i < sizeof tops / sizeof tops[0]; i++)
		top = top || strncmp(m, tops[i], strlen(tops[i])) == 0;
	if (!top || (strncmp(m, "application/", 12) == 0 && strcmp(m, "application/pdf") != 0))
		return false;
	for (const char *p = m; *p; p++)
		if (p != slash && !strchr("abcdefghijklmnopqrstuvwxyz0123456789!#$&^_.+-", *p))
			return false;
	return true;
}

static bool base64_ok(const char *s, size_t n)
{
	size_t pad = 0;

	if (n % 4 != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '=') {
			if (++pad > 2 || i < n - 2)
				return false;
		} else if (pad || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
				    (c >= '0' && c <= '9') || c == '+' || c == '/')) {
			return false;
		}
	}
	return true;
}

struct json_object *toolparts_check(struct json_object *parts, struct sbx_err *e)
{
	struct json_object *out;
	size_t n;

	if (!json_object_is_type(parts, json_type_array))
		return err_set(e, SBX_EIO, "\"parts\" is not an array"), NULL;
	out = json_object_new_array();
	n = json_object_array_length(parts);
	for (size_t i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(parts, i), *in = field(p, "inlineData");
		struct json_object *t = field(p, "text"), *c = json_object_new_object();
		const char *mime = str_field(in, "mimeType"), *data = str_field(in, "data");
		const char *name = str_field(in, "displayName");

		if (json_object_is_type(t, json_type_string) && !in) {
			json_object_object_add(c, "text", json_object_get(t));
		} else if (mime && data && mime_ok(mime) &&
			   base64_ok(data, (size_t)json_object_get_string_len(field(in, "data")))) {
			struct json_object *d = json_object_new_object();
			json_object_object_add(d, "mimeType", json_object_new_string(mime));
			json_object_object_add(d, "data", json_object_get(field(in, "data")));
			if (name)
				json_object_object_add(d, "displayName", json_object_new_string(name));
			json_object_object_add(c, "inlineData", d);
		} else {
			json_object_put(c);
			json_object_put(out);
			return err_set(e, SBX_EIO, "part %zu is neither text nor inline data of an "
				       "image, audio, video or PDF file", i), NULL;
		}
		json_object_array_add(out, c);
	}
	return out;
}

bool toolparts_has_media(struct json_object *parts)
{
	size_t n = json_object_is_type(parts, json_type_array) ? json_object_array_length(parts) : 0;

	for (size_t i = 0; i < n; i++)
		if (field(json_object_array_get_idx(parts, i), "inlineData"))
			return true;
	return false;
}

size_t toolparts_decoded_len(const char *b64, size_t n)
{
	size_t pad = 0;

	while (pad < 2 && n > pad && b64[n - 1 - pad] == '=')
		pad++;
	return n / 4 * 3 - (n >= 4 ? pad : 0);
}

char *toolparts_text(struct json_object *parts, size_t *len)
{
	size_t n = json_object_array_length(parts);
	struct buf b = {0};

	buf_append(&b, "", 0);
	for (size_t i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(parts, i), *in = field(p, "inlineData");
		if (i)
			buf_puts(&b, "\n");
		if (in) {
			struct json_object *d = field(in, "data");
			const char *name = str_field(in, "displayName");
			char size[32];
			toolcap_thousands(toolparts_decoded_len(json_object_get_string(d),
								(size_t)json_object_get_string_len(d)),
					  size, sizeof size);
			buf_printf(&b, "[%s file%s%s, %s bytes: sent as inline data]",
				   str_field(in, "mimeType"), name ? " " : "", name ? name : "", size);
		} else {
			struct json_object *t = field(p, "text");
			buf_append(&b, json_object_get_string(t), (size_t)json_object_get_string_len(t));
		}
	}
	*len = b.len;
	return buf_steal(&b);
}

/* file:// URI of an absolute path, bytes outside RFC 3986's unreserved set and "/"
 * percent-encoded. */
static char *file_uri(const char *path)
{
	struct buf b = {0};

	buf_puts(&b, path[0] == '/' ? "file://" : "file:///");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~/", *p))
			buf_append(&b, (const char *)p, 1);
		else
			buf_printf(&b, "%%%02X", *p);
	}
	return buf_steal(&b);
}

struct json_object *toolparts_mcp_content(struct json_object *parts)
{
	struct json_object *out = json_object_new_array();
	size_t n = json_object_array_length(parts);

	for (size_t i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(parts, i), *in = field(p, "inlineData");
		struct json_object *item = json_object_new_object();
		const char *mime = str_field(in, "mimeType");

		if (!in) {
			json_object_object_add(item, "type", json_object_new_string("text"));
			json_object_object_add(item, "text", json_object_get(field(p, "text")));
		} else if (strncmp(mime, "image/", 6) == 0 || strncmp(mime, "audio/", 6) == 0) {
			json_object_object_add(item, "type", json_object_new_string(
						       mime[0] == 'i' ? "image" : "audio"));
			json_object_object_add(item, "data", json_object_get(field(in, "data")));
			json_object_object_add(item, "mimeType", json_object_new_string(mime));
		} else {
			struct json_object *r = json_object_new_object();
			const char *name = str_field(in, "displayName");
			char *uri = file_uri(name ? name : "inline-data");
			json_object_object_add(r, "uri", json_object_new_string(uri));
			json_object_object_add(r, "mimeType", json_object_new_string(mime));
			json_object_object_add(r, "blob", json_object_get(field(in, "data")));
			json_object_object_add(item, "type", json_object_new_string("resource"));
			json_object_object_add(item, "resource", r);
			free(uri);
		}
		json_object_array_add(out, item);
	}
	return out;
}
