/* toolcall.c — a model tool call read strictly, and its tool message. */
#include "toolcall.h"

#include <stdlib.h>
#include <string.h>

#include "gojson.h"
#include "xalloc.h"

/* The fields of a tool call as OpenAI-compatible APIs send it (index when streamed; Gemini's
 * thought_signature and extra_content): any other is refused, never ignored. */
static const char *const call_fields[] = {"id", "type", "function", "index", "thought_signature",
					  "extra_content", NULL};
static const char *const function_fields[] = {"name", "arguments", "thought_signature", NULL};

/* -1 naming the first field of o not in known, 0 when there is none. */
static int refuse_unknown(struct json_object *o, const char *const *known, const char *where,
			  struct sbx_err *e)
{
	const char *bad = gojson_unknown_field(o, known);
	struct buf q = {0};

	if (bad == NULL)
		return 0;
	gojson_append_string(&q, bad, strlen(bad));
	err_set(e, SBX_EINVAL, "invalid tool call: unknown field %s%s", q.data, where);
	buf_free(&q);
	return -1;
}

int toolcall_parse(const char *text, size_t len, struct toolcall *tc, struct sbx_err *e)
{
	struct json_object *fn, *v;
	const char *why;

	memset(tc, 0, sizeof *tc);
	if ((tc->doc = gojson_parse(text, len, &why)) == NULL)
		return err_set(e, SBX_EINVAL, "invalid tool call: not valid JSON: %s", why);
	if (!json_object_is_type(tc->doc, json_type_object) ||
	    !json_object_object_get_ex(tc->doc, "function", &fn) ||
	    !json_object_is_type(fn, json_type_object) ||
	    !json_object_object_get_ex(fn, "name", &v) || !json_object_is_type(v, json_type_string))
		return err_set(e, SBX_EINVAL, "invalid tool call: want {\"id\",\"type\":\"function\","
			       "\"function\":{\"name\",\"arguments\"}}");
	tc->name = json_object_get_string(v);
	if (refuse_unknown(tc->doc, call_fields, "", e) < 0 ||
	    refuse_unknown(fn, function_fields, " in \"function\"", e) < 0)
		return -1;
	/* arguments: JSON text, as the API sends it, or the object itself, as many frameworks
	 * pass it on */
	if (!json_object_object_get_ex(fn, "arguments", &v) || v == NULL)
		tc->args = "";
	else if (json_object_is_type(v, json_type_string))
		tc->args = json_object_get_string(v);
	else if (json_object_is_type(v, json_type_object))
		tc->args = tc->args_text = gojson_encode(v);
	else
		return err_set(e, SBX_EINVAL, "invalid tool call: \"function.arguments\" must be a JSON "
			       "string or object");
	if (json_object_object_get_ex(tc->doc, "type", &v) &&
	    !(json_object_is_type(v, json_type_string) &&
	      strcmp(json_object_get_string(v), "function") == 0))
		return err_set(e, SBX_EINVAL, "invalid tool call: \"type\" must be \"function\"");
	tc->id = "";
	if (json_object_object_get_ex(tc->doc, "id", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return err_set(e, SBX_EINVAL, "invalid tool call: \"id\" must be a string");
		tc->id = json_object_get_string(v);
	}
	return 0;
}

void toolcall_free(struct toolcall *tc)
{
	free(tc->args_text);
	json_object_put(tc->doc);
	memset(tc, 0, sizeof *tc);
}

struct json_object *toolcall_message(const char *id, const char *content, size_t len,
				     struct json_object *parts)
{
	struct json_object *msg = json_object_new_object();

	json_object_object_add(msg, "role", json_object_new_string("tool"));
	/* NUL bytes in a result travel as \u0000 */
	json_object_object_add(msg, "content", json_object_new_string_len(content, (int)len));
	json_object_object_add(msg, "tool_call_id", json_object_new_string(id));
	if (parts)	/* inline data: the result as gemini-cli's Parts too */
		json_object_object_add(msg, "parts", parts);
	return msg;
}
