/* acpprompt.c — an ACP prompt's content blocks made into the user message the model reads:
 * text, images (when the model takes them), resource links read through the client's
 * fs/read_text_file, embedded resources; each resource cut at ACP_RESOURCE_MAX. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_int.h"
#include "gojson.h"
#include "jsonfield.h"
#include "llmmedia.h"
#include "timeutil.h"
#include "toolset.h"
#include "xalloc.h"

bool acp_model_images(const struct acp_server *srv, const char *model)
{
	if (srv->cfg.images >= 0)
		return srv->cfg.images == 1;
	return llmmedia_model_images(model);	/* the families tools' images go to as well */
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
		err_set(e, SBX_EIO, "%s", jsonfield_str(err, "message") ?: "the client refused");
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
	const char *uri = jsonfield_str(blk, "uri") ?: "", *name = jsonfield_str(blk, "name");
	const char *desc = jsonfield_str(blk, "description");
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
	uri = jsonfield_str(res, "uri") ?: "";
	mime = jsonfield_str(res, "mimeType");
	if ((text = jsonfield_str(res, "text")) != NULL)
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

/* Adds image block i (after the text so far, cur) as an OpenAI image_url part; -1 with why
 * when the model takes no images or the block is not one. */
static int add_image(struct acp_session *s, struct acp_conn *c, struct json_object *blk,
		     size_t i, struct json_object *parts, struct buf *cur, char *why, size_t whysz)
{
	const char *data = jsonfield_str(blk, "data"), *mime = jsonfield_str(blk, "mimeType");
	struct json_object *part, *url;
	char *u;

	if (!acp_model_images(c->srv, s->model)) {
		snprintf(why, whysz, "the model %s does not take images (acp-server -images yes if "
			 "it does)", s->model);
		return -1;
	}
	if (data == NULL || mime == NULL || strncmp(mime, "image/", 6) != 0 || !base64_ok(data)) {
		snprintf(why, whysz, "invalid params: prompt[%zu]: an image needs base64 data and an "
			 "image/ mimeType", i);
		return -1;
	}
	add_text_part(parts, cur);
	u = xasprintf("data:%s;base64,%s", mime, data);
	url = json_object_new_object();
	json_object_object_add(url, "url", json_object_new_string(u));
	free(u);
	part = json_object_new_object();
	json_object_object_add(part, "type", json_object_new_string("image_url"));
	json_object_object_add(part, "image_url", url);
	json_object_array_add(parts, part);
	return 0;
}

struct json_object *acp_prompt_content(struct acp_session *s, struct acp_conn *c,
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
		const char *type = jsonfield_str(blk, "type"), *t;
		if (type == NULL) {
			snprintf(why, whysz, "invalid params: prompt[%zu] has no type", i);
			goto out;
		}
		if (strcmp(type, "image") == 0) {
			if (add_image(s, c, blk, i, parts, &cur, why, whysz) < 0)
				goto out;
			images = true;
			continue;
		}
		if (cur.len > 0)
			buf_puts(&cur, "\n\n");
		if (strcmp(type, "text") == 0 && (t = jsonfield_str(blk, "text")) != NULL) {
			if (*title == NULL && *t)
				*title = xstrndup(t, strcspn(t, "\n"));
			buf_puts(&cur, t);
		} else if (strcmp(type, "resource_link") == 0 && jsonfield_str(blk, "uri")) {
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
