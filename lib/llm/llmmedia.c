/* llmmedia.c — a tool's files (images, PDF, audio) kept with its tool message in the history
 * and sent after the tool messages as the content parts an OpenAI-compatible vendor takes. */
#include "llmmedia.h"

#include <stdbool.h>
#include <string.h>

#include "toolcap.h"
#include "toolparts.h"
#include "vendor.h"
#include "xalloc.h"

/* Vendors whose chat completions API documents input_audio (WAV, MP3) and file (PDF) parts
 * in a user message; every vendor here takes image_url but DeepSeek, whose API has no
 * image input. */
static const char *const audio_vendors[] = {"openai", "azure", "gemini", "openrouter", NULL};
static const char *const pdf_vendors[] = {"openai", "azure", "openrouter", NULL};
static const char *const no_image_vendors[] = {"deepseek", NULL};
/* Model families whose OpenAI-compatible endpoints take image_url parts (and, at vendors that
 * document file parts, PDF): a model outside them would refuse the request, every later one
 * of the session too, as the history sends the file again. */
static const char *const vision_models[] = {"gemini", "gpt-4o", "gpt-4.1", "gpt-5", "o3", "o4",
					    "claude", "llava", "qwen2.5-vl", "pixtral", NULL};

bool llmmedia_model_images(const char *model)
{
	for (size_t i = 0; model && vision_models[i]; i++)
		if (strncmp(model, vision_models[i], strlen(vision_models[i])) == 0)
			return true;
	return false;
}

/* Models that take input_audio: Gemini's, and OpenAI's audio models. */
static bool model_audio(const char *model)
{
	return model && (strncmp(model, "gemini", 6) == 0 || strstr(model, "audio") != NULL);
}

/* The image types every vision endpoint of the OpenAI shape takes. */
static const char *const image_types[] = {"image/png", "image/jpeg", "image/gif", "image/webp", NULL};

static bool listed(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ?
	       json_object_get_string(v) : "";
}

void llmmedia_attach(struct json_object *msg, struct json_object *parts, size_t history_len)
{
	struct json_object *list = json_object_new_array(), *content;
	struct buf notes = {0};
	size_t n = parts ? json_object_array_length(parts) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *in = NULL, *d = NULL, *e;
		size_t size;
		char num[32], cap[32];

		if (!json_object_object_get_ex(json_object_array_get_idx(parts, i), "inlineData", &in))
			continue;
		json_object_object_get_ex(in, "data", &d);
		size = toolparts_decoded_len(json_object_get_string(d), (size_t)json_object_get_string_len(d));
		if (size > LLMMEDIA_PART_MAX) {
			toolcap_thousands(size, num, sizeof num);
			toolcap_thousands(LLMMEDIA_PART_MAX, cap, sizeof cap);
			buf_printf(&notes, "\n[%s: %s bytes, over the %s-byte limit of a file sent to "
				   "the model: not sent]", str_of(in, "displayName"), num, cap);
			continue;
		}
		history_len += (size_t)json_object_get_string_len(d);
		if (history_len > LLMMEDIA_HISTORY_MAX) {
			buf_printf(&notes, "\n[%s: not sent, the session already holds %zu MiB of "
				   "files]", str_of(in, "displayName"), LLMMEDIA_HISTORY_MAX >> 20);
			continue;
		}
		e = json_object_new_object();
		json_object_object_add(e, "mime_type", json_object_new_string(str_of(in, "mimeType")));
		json_object_object_add(e, "data", json_object_get(d));
		json_object_object_add(e, "name", json_object_new_string(str_of(in, "displayName")));
		json_object_array_add(list, e);
	}
	if (notes.len && json_object_object_get_ex(msg, "content", &content) &&
	    json_object_is_type(content, json_type_string)) {
		struct buf b = {0};
		buf_append(&b, json_object_get_string(content), (size_t)json_object_get_string_len(content));
		buf_append(&b, notes.data, notes.len);
		json_object_object_add(msg, "content", json_object_new_string_len(b.data, (int)b.len));
		buf_free(&b);
	}
	buf_free(&notes);
	if (json_object_array_length(list) > 0)
		json_object_object_add(msg, "inline_data", list);
	else
		json_object_put(list);
}

static struct json_object *text_part(const char *text)
{
	struct json_object *p = json_object_new_object();

	json_object_object_add(p, "type", json_object_new_string("text"));
	json_object_object_add(p, "text", json_object_new_string(text));
	return p;
}

/* The content part for one file, or a text part saying why it was not sent. */
static struct json_object *file_part(struct json_object *f, const char *vendor, const char *model,
				     bool in_budget)
{
	const char *mime = str_of(f, "mime_type"), *name = str_of(f, "name"), *data = str_of(f, "data");
	struct json_object *p = json_object_new_object(), *inner = json_object_new_object();
	char *url = xasprintf("data:%s;base64,%s", mime, data), *why;

	if (!in_budget) {
		why = xasprintf("%s (%s): not sent again, newer files fill this request's %zu MiB "
				"for files", name, mime, LLMMEDIA_REQUEST_MAX >> 20);
	} else if (listed(image_types, mime) && !listed(no_image_vendors, vendor) &&
		   llmmedia_model_images(model)) {
		json_object_object_add(inner, "url", json_object_new_string(url));
		json_object_object_add(p, "type", json_object_new_string("image_url"));
		json_object_object_add(p, "image_url", inner);
		free(url);
		return p;
	} else if ((!strcmp(mime, "audio/wav") || !strcmp(mime, "audio/mpeg")) &&
		   listed(audio_vendors, vendor) && model_audio(model)) {
		json_object_object_add(inner, "data", json_object_new_string(data));
		json_object_object_add(inner, "format", json_object_new_string(mime[6] == 'w' ? "wav" : "mp3"));
		json_object_object_add(p, "type", json_object_new_string("input_audio"));
		json_object_object_add(p, "input_audio", inner);
		free(url);
		return p;
	} else if (!strcmp(mime, "application/pdf") && listed(pdf_vendors, vendor) &&
		   llmmedia_model_images(model)) {
		const char *base = strrchr(name, '/');
		json_object_object_add(inner, "filename", json_object_new_string(base ? base + 1 : name));
		json_object_object_add(inner, "file_data", json_object_new_string(url));
		json_object_object_add(p, "type", json_object_new_string("file"));
		json_object_object_add(p, "file", inner);
		free(url);
		return p;
	} else {
		why = xasprintf("%s (%s): not sent, the model %s at this endpoint (%s) is not known to "
				"take it", name, mime, model ? model : "(default)", vendor);
	}
	json_object_put(p);
	json_object_put(inner);
	free(url);
	p = text_part(why);
	free(why);
	return p;
}

/* How many of the files, counted from the newest, fit LLMMEDIA_REQUEST_MAX. */
static size_t files_in_budget(struct json_object *messages)
{
	size_t n = json_object_array_length(messages), used = 0, count = 0;

	for (size_t i = n; i-- > 0;) {
		struct json_object *list = NULL;
		if (!json_object_object_get_ex(json_object_array_get_idx(messages, i), "inline_data", &list) ||
		    !json_object_is_type(list, json_type_array))
			continue;
		for (size_t j = json_object_array_length(list); j-- > 0;) {
			size_t len = strlen(str_of(json_object_array_get_idx(list, j), "data"));
			if (used + len > LLMMEDIA_REQUEST_MAX)
				return count;
			used += len;
			count++;
		}
	}
	return count;
}

struct json_object *llmmedia_messages(struct json_object *messages, const struct vendor *v,
				      const char *model)
{
	const char *vendor = v ? vendor_name(v) : "generic";
	struct json_object *out = json_object_new_array(), *user = NULL;
	size_t n = json_object_array_length(messages), total = 0, fit = files_in_budget(messages), seen = 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *list = NULL, *m = json_object_array_get_idx(messages, i);
		if (json_object_is_type(m, json_type_object) &&
		    json_object_object_get_ex(m, "inline_data", &list) &&
		    json_object_is_type(list, json_type_array))
			total += json_object_array_length(list);
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(messages, i), *list = NULL, *c;
		bool tool = json_object_is_type(m, json_type_object) && !strcmp(str_of(m, "role"), "tool");

		if (user && !tool) {	/* the run of tool messages ended */
			json_object_array_add(out, user);
			user = NULL;
		}
		if (!tool || !json_object_object_get_ex(m, "inline_data", &list)) {
			json_object_array_add(out, json_object_get(m));
			continue;
		}
		c = json_object_new_object();
		json_object_object_foreach(m, key, val)
			if (strcmp(key, "inline_data") != 0)
				json_object_object_add(c, key, json_object_get(val));
		json_object_array_add(out, c);
		for (size_t j = 0; json_object_is_type(list, json_type_array) &&
				   j < json_object_array_length(list); j++, seen++) {
			struct json_object *f = json_object_array_get_idx(list, j), *content;
			char *head;
			if (!json_object_is_type(f, json_type_object))
				continue;
			if (!user) {
				user = json_object_new_object();
				json_object_object_add(user, "role", json_object_new_string("user"));
				json_object_object_add(user, "content", json_object_new_array());
			}
			json_object_object_get_ex(user, "content", &content);
			head = xasprintf("File from tool call %s: %s", str_of(m, "tool_call_id"), str_of(f, "name"));
			json_object_array_add(content, text_part(head));
			free(head);
			json_object_array_add(content, file_part(f, vendor, model, seen + fit >= total));
		}
	}
	if (user)
		json_object_array_add(out, user);
	return out;
}
