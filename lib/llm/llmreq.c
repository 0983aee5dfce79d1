/* llmreq.c — the documents of a chat completion: the request read (bounded, cancellable),
 * checked and encoded for a vendor, the model, key and base URL chosen from flags and the
 * environment, the endpoint; the message and finish reason of an answer. */
#include "llm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eliza.h"
#include "gojson.h"
#include "llmmedia.h"
#include "vendor.h"
#include "xalloc.h"

/* ---- the request document ---- */

/* Reads from the request pipe go in pieces of this size (a pipe holds 64 KiB). */
#define READ_CHUNK 65536

int llm_check_request(struct json_object *doc, struct sbx_err *e)
{
	struct json_object *v;
	size_t i, n;

	if (!json_object_is_type(doc, json_type_object))
		return err_set(e, SBX_EINVAL, "request must be a JSON object");
	if (json_object_object_get_ex(doc, "model", &v) && v != NULL &&
	    !json_object_is_type(v, json_type_string))
		return err_set(e, SBX_EINVAL, "request \"model\" must be a string");
	if (!json_object_object_get_ex(doc, "messages", &v) || v == NULL)
		return err_set(e, SBX_EINVAL, "request has no \"messages\"");
	if (!json_object_is_type(v, json_type_array))
		return err_set(e, SBX_EINVAL, "request \"messages\" must be an array");
	n = json_object_array_length(v);
	if (n == 0)
		return err_set(e, SBX_EINVAL, "request has no messages");
	for (i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(v, i), *role;

		if (!json_object_is_type(m, json_type_object))
			return err_set(e, SBX_EINVAL, "request messages[%zu] must be an object", i);
		if (!json_object_object_get_ex(m, "role", &role) ||
		    !json_object_is_type(role, json_type_string))
			return err_set(e, SBX_EINVAL, "request messages[%zu] has no \"role\" string", i);
	}
	if (json_object_object_get_ex(doc, "tools", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_array))
			return err_set(e, SBX_EINVAL, "request \"tools\" must be an array");
		n = json_object_array_length(v);
		for (i = 0; i < n; i++)
			if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_object))
				return err_set(e, SBX_EINVAL, "request tools[%zu] must be an object", i);
	}
	return 0;
}

struct json_object *llm_read_request(int fd, const volatile sig_atomic_t *cancel,
				     struct sbx_err *e)
{
	struct json_object *doc = NULL;
	struct buf b = {0};
	char chunk[READ_CHUNK];
	const char *why;

	for (;;) {
		ssize_t n;

		if (cancel && *cancel) {
			err_set(e, SBX_ECANCELED, "reading the request: canceled");
			goto out;
		}
		n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_sys(e, errno, "reading the request");
			e->code = SBX_EIO;
			goto out;
		}
		if (n == 0)
			break;
		if (b.len + (size_t)n > LLM_REQUEST_MAX) {
			err_set(e, SBX_EINVAL, "request larger than %zu bytes", LLM_REQUEST_MAX);
			goto out;
		}
		buf_append(&b, chunk, (size_t)n);
	}
	doc = gojson_parse(b.data ? b.data : "", b.len, &why);
	if (doc == NULL) {
		err_set(e, SBX_EINVAL, "request is not valid JSON: %s", why);
		goto out;
	}
	if (llm_check_request(doc, e) < 0) {
		json_object_put(doc);
		doc = NULL;
	}
out:
	buf_free(&b);
	return doc;
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

const char *llm_pick_model(const char *flag, struct json_object *doc)
{
	struct json_object *m;
	const char *v;

	if (flag && *flag)
		return flag;
	if (json_object_object_get_ex(doc, "model", &m) && json_object_is_type(m, json_type_string) &&
	    json_object_get_string_len(m) > 0)
		return json_object_get_string(m);
	if ((v = env_nonempty("OPENAI_MODEL")) || (v = env_nonempty("MODEL")))
		return v;
	return LLM_DEFAULT_MODEL;
}

const char *llm_env_key(void)
{
	const char *k = env_nonempty("GEMINI_API_KEY");

	return k ? k : env_nonempty("OPENAI_API_KEY");
}

int llm_key_check(const char *model, struct sbx_err *e)
{
	if (strcmp(model, ELIZA_MODEL) == 0 || llm_env_key() != NULL)
		return 0;
	return err_set(e, SBX_EINVAL, LLM_KEY_REQUIRED);
}

char *llm_base_url(const char *flag)
{
	const char *v = flag && *flag ? flag : env_nonempty("OPENAI_BASE_URL");
	size_t n;

	if (v == NULL)
		v = LLM_DEFAULT_BASE_URL;
	n = strlen(v);
	if (n > 0 && v[n - 1] == '/')
		n--;
	return xstrndup(v, n);
}

int llm_pick_vendor(const char *flag, const struct vendor **v, struct sbx_err *e)
{
	const char *name = flag && *flag ? flag : env_nonempty("LLM_VENDOR");

	*v = NULL;
	if (name == NULL)
		return 0;
	if ((*v = vendor_by_name(name)) != NULL)
		return 0;
	return err_set(e, SBX_EINVAL, "unknown vendor \"%.40s\" (known: %s)", name, vendor_names());
}

const char *llm_auth_header(const char *flag)
{
	return flag && *flag ? flag : getenv("LLM_AUTH_HEADER");
}

char *llm_request_body(struct json_object *doc, const char *model, bool stream,
		       const struct vendor *vendor)
{
	struct json_object *v, *msgs, *media;
	struct buf b = {0};

	buf_puts(&b, "{\"model\":");
	gojson_append_string(&b, model, strlen(model));
	buf_puts(&b, ",\"messages\":");
	json_object_object_get_ex(doc, "messages", &v);
	vendor = vendor ? vendor : vendor_by_name("generic");
	media = llmmedia_messages(v, vendor, model);	/* tools' files: a user message after the tools */
	msgs = vendor_messages(vendor, media);
	gojson_append(&b, msgs);
	json_object_put(msgs);
	json_object_put(media);
	if (json_object_object_get_ex(doc, "tools", &v) && json_object_is_type(v, json_type_array) &&
	    json_object_array_length(v) > 0) {
		buf_puts(&b, ",\"tools\":");
		gojson_append(&b, v);
	}
	json_object_object_foreach(doc, key, val) {
		/* stream_options only means something to a streamed request. */
		if (strcmp(key, "model") == 0 || strcmp(key, "messages") == 0 ||
		    strcmp(key, "tools") == 0 || strcmp(key, "stream") == 0 ||
		    (strcmp(key, "stream_options") == 0 && !stream))
			continue;
		buf_puts(&b, ",");
		gojson_append_string(&b, key, strlen(key));
		buf_puts(&b, ":");
		gojson_append(&b, val);
	}
	if (stream)
		buf_puts(&b, ",\"stream\":true");
	buf_puts(&b, "}");
	return buf_steal(&b);
}

char *llm_endpoint(const char *base)
{
	size_t path = strcspn(base, "?#"), q = path, qlen;

	qlen = base[q] == '?' ? strcspn(base + q, "#") : 0;	/* a fragment is never sent */
	if (path > 0 && base[path - 1] == '/')
		path--;
	return xasprintf("%.*s/chat/completions%.*s", (int)path, base, (int)qlen, base + q);
}

/* ---- answers ---- */

struct json_object *llm_response_message(struct json_object *resp, struct sbx_err *e)
{
	struct json_object *choices, *msg;

	if (!json_object_object_get_ex(resp, "choices", &choices) ||
	    !json_object_is_type(choices, json_type_array) || json_object_array_length(choices) == 0) {
		char *s = gojson_encode(resp);

		err_set(e, SBX_EIO, "llm: response has no choices: %s", s);
		free(s);
		return NULL;
	}
	if (!json_object_object_get_ex(json_object_array_get_idx(choices, 0), "message", &msg) ||
	    !json_object_is_type(msg, json_type_object)) {
		char *s = gojson_encode(resp);

		err_set(e, SBX_EIO, "llm: response choices[0] has no message: %s", s);
		free(s);
		return NULL;
	}
	return msg;
}

const char *llm_finish_reason(struct json_object *resp)
{
	struct json_object *choices, *f;

	if (json_object_object_get_ex(resp, "choices", &choices) &&
	    json_object_is_type(choices, json_type_array) && json_object_array_length(choices) > 0 &&
	    json_object_object_get_ex(json_object_array_get_idx(choices, 0), "finish_reason", &f) &&
	    json_object_is_type(f, json_type_string))
		return json_object_get_string(f);
	return "";
}
