/* toolcall.h — one model tool call as a document, {"id","type":"function","function":{"name",
 * "arguments"}} (sbx-tool's input), parsed strictly, and the tool message that answers it.
 * Ownership: a parsed call's strings point into its doc or args_text, both freed with
 * toolcall_free. */
#ifndef SBX_TOOLCALL_H
#define SBX_TOOLCALL_H

#include <stddef.h>

#include <json-c/json.h>

#include "err.h"

/* A tool call is small; its arguments carry at most a file to write. */
#define TOOLCALL_MAX (64u << 20)

struct toolcall {
	const char *id;			/* "" when the call has none */
	const char *name;		/* the function's name */
	const char *args;		/* its arguments as JSON text ("" when absent) */
	char *args_text;		/* args, when the call gave an object */
	struct json_object *doc;
};

/* Parses len bytes of text into tc; a malformed call (not JSON, not the shape above, an unknown
 * field, arguments neither text nor an object) is SBX_EINVAL, "invalid tool call: …". */
int toolcall_parse(const char *text, size_t len, struct toolcall *tc, struct sbx_err *e);
void toolcall_free(struct toolcall *tc);
/* The tool message {"role":"tool","content","tool_call_id"} (content may hold NUL bytes), with
 * "parts" when given (taken over). New reference. */
struct json_object *toolcall_message(const char *id, const char *content, size_t len,
				     struct json_object *parts);

#endif
