/* mcp.c — MCP revisions, initialize, tools ⇄ declarations, tools/call params and results. */
#include "mcp.h"

#include <string.h>

#include "gojson.h"
#include "jsonfield.h"
#include "xalloc.h"

/* Newest first: mcp_negotiate falls back to the first. */
static const struct mcp_version versions[] = {
	{MCP_VERSION_LATEST, true, true},
	{MCP_VERSION_PREVIOUS, true, true},
	{MCP_VERSION_OLDEST, false, false},
};

const struct mcp_version *mcp_version_find(const char *name)
{
	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
		if (strcmp(versions[i].name, name) == 0)
			return &versions[i];
	return NULL;
}

const struct mcp_version *mcp_negotiate(const char *requested)
{
	const struct mcp_version *v = mcp_version_find(requested);

	return v ? v : &versions[0];
}

const char *mcp_versions_text(void)
{
	return MCP_VERSION_LATEST ", " MCP_VERSION_PREVIOUS ", " MCP_VERSION_OLDEST;
}

static struct json_object *impl_json(const struct mcp_impl *im, bool titles)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(im->name));
	if (titles && im->title)
		json_object_object_add(o, "title", json_object_new_string(im->title));
	json_object_object_add(o, "version", json_object_new_string(im->version));
	return o;
}

struct json_object *mcp_initialize_result(const struct mcp_version *v, const struct mcp_impl *info,
					  const char *instructions)
{
	struct json_object *r = json_object_new_object(), *caps = json_object_new_object();
	struct json_object *tools = json_object_new_object();

	json_object_object_add(r, "protocolVersion", json_object_new_string(v->name));
	json_object_object_add(tools, "listChanged", json_object_new_boolean(0));
	json_object_object_add(caps, "tools", tools);
	json_object_object_add(r, "capabilities", caps);
	json_object_object_add(r, "serverInfo", impl_json(info, v->titles));
	if (instructions && *instructions)
		json_object_object_add(r, "instructions", json_object_new_string(instructions));
	return r;
}

struct json_object *mcp_initialize_params(const struct mcp_impl *client)
{
	struct json_object *p = json_object_new_object();

	json_object_object_add(p, "protocolVersion", json_object_new_string(MCP_VERSION_LATEST));
	json_object_object_add(p, "capabilities", json_object_new_object());
	json_object_object_add(p, "clientInfo", impl_json(client, true));
	return p;
}

const struct mcp_version *mcp_initialize_check(struct json_object *result, struct sbx_err *e)
{
	const char *pv = jsonfield_str(result, "protocolVersion");
	const struct mcp_version *v;

	if (!json_object_is_type(result, json_type_object) || pv == NULL) {
		err_set(e, SBX_EINVAL, "invalid initialize result: no protocolVersion");
		return NULL;
	}
	if ((v = mcp_version_find(pv)) == NULL) {
		err_set(e, SBX_EINVAL, "the server speaks MCP %.64s; this side speaks %s", pv,
			mcp_versions_text());
		return NULL;
	}
	return v;
}

/* Annotations from what the tool does: read and search tools change nothing; edits are
 * destructive but idempotent (writing the same content twice is one write); commands are
 * neither. Every tool stays inside the sandbox, so none is open-world. */
static struct json_object *annotations(const char *name)
{
	const char *kind = toolset_tool_kind(name);
	bool ro = strcmp(kind, "read") == 0 || strcmp(kind, "search") == 0;
	bool edit = strcmp(kind, "edit") == 0;
	struct json_object *a = json_object_new_object();

	json_object_object_add(a, "readOnlyHint", json_object_new_boolean(ro));
	if (!ro) {
		json_object_object_add(a, "destructiveHint", json_object_new_boolean(1));
		json_object_object_add(a, "idempotentHint", json_object_new_boolean(edit));
	}
	json_object_object_add(a, "openWorldHint", json_object_new_boolean(0));
	return a;
}

struct json_object *mcp_tool(const struct tool *t, const struct mcp_version *v)
{
	struct json_object *o = json_object_new_object(), *schema;
	const char *out = toolset_output_schema(t->name);

	json_object_object_add(o, "name", json_object_new_string(t->name));
	json_object_object_add(o, "description", json_object_new_string(t->description));
	schema = json_tokener_parse(t->parameters);
	json_object_object_add(o, "inputSchema", schema ? schema : json_object_new_object());
	if (v->structured && out)
		json_object_object_add(o, "outputSchema", json_tokener_parse(out));
	json_object_object_add(o, "annotations", annotations(t->name));
	return o;
}

struct json_object *mcp_tools_list(const struct toolset *ts, const struct mcp_version *v)
{
	struct json_object *r = json_object_new_object(), *arr = json_object_new_array();

	for (size_t i = 0; i < ts->ntools; i++)
		json_object_array_add(arr, mcp_tool(&ts->tools[i], v));
	json_object_object_add(r, "tools", arr);
	return r;
}

static bool tool_name_ok(const char *n)
{
	size_t len = n ? strlen(n) : 0;

	return len > 0 && len <= MCP_TOOL_NAME_MAX &&
	       strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == len;
}

struct json_object *mcp_tool_declaration(struct json_object *tool, struct sbx_err *e)
{
	const char *name = jsonfield_str(tool, "name"), *desc = jsonfield_str(tool, "description");
	struct json_object *schema = NULL, *d, *f;

	if (!tool_name_ok(name)) {
		err_set(e, SBX_EINVAL, "invalid MCP tool: name must be 1-%d of [A-Za-z0-9_.-]",
			MCP_TOOL_NAME_MAX);
		return NULL;
	}
	if (!json_object_object_get_ex(tool, "inputSchema", &schema) ||
	    !json_object_is_type(schema, json_type_object)) {
		err_set(e, SBX_EINVAL, "invalid MCP tool %s: inputSchema must be an object", name);
		return NULL;
	}
	d = json_object_new_object();
	f = json_object_new_object();
	json_object_object_add(d, "type", json_object_new_string("function"));
	json_object_object_add(f, "name", json_object_new_string(name));
	json_object_object_add(f, "description", json_object_new_string(desc ? desc : ""));
	json_object_object_add(f, "parameters", json_object_get(schema));
	json_object_object_add(d, "function", f);
	return d;
}

int mcp_call_params(struct json_object *params, const char **name, char **arguments,
		    struct json_object **progress_token, struct sbx_err *e)
{
	struct json_object *args = NULL, *meta, *tok;

	*name = jsonfield_str(params, "name");
	*arguments = NULL;
	*progress_token = NULL;
	if (*name == NULL)
		return err_set(e, SBX_EINVAL, "invalid params: name (a string) is required");
	if (json_object_object_get_ex(params, "arguments", &args) && args != NULL &&
	    !json_object_is_type(args, json_type_object))
		return err_set(e, SBX_EINVAL, "invalid params: arguments must be an object");
	if (json_object_object_get_ex(params, "_meta", &meta) &&
	    json_object_is_type(meta, json_type_object) &&
	    json_object_object_get_ex(meta, "progressToken", &tok)) {
		if (!mcp_id_ok(tok))
			return err_set(e, SBX_EINVAL,
				       "invalid params: _meta.progressToken must be a string or an integer");
		*progress_token = tok;
	}
	*arguments = args ? gojson_encode(args) : xstrdup("{}");
	return 0;
}

struct json_object *mcp_call_result(const struct mcp_version *v, const char *text, bool is_error,
				    struct json_object *structured)
{
	struct json_object *r = json_object_new_object(), *content = json_object_new_array();
	struct json_object *blk = json_object_new_object();

	json_object_object_add(blk, "type", json_object_new_string("text"));
	json_object_object_add(blk, "text", json_object_new_string(text));
	json_object_array_add(content, blk);
	json_object_object_add(r, "content", content);
	if (structured && v->structured)
		json_object_object_add(r, "structuredContent", structured);
	else
		json_object_put(structured);
	json_object_object_add(r, "isError", json_object_new_boolean(is_error));
	return r;
}

char *mcp_call_result_text(struct json_object *result, bool *is_error, struct sbx_err *e)
{
	struct json_object *content, *v;
	struct buf b = {0};
	size_t n;

	*is_error = json_object_object_get_ex(result, "isError", &v) && json_object_get_boolean(v);
	if (!json_object_object_get_ex(result, "content", &content) ||
	    !json_object_is_type(content, json_type_array)) {
		err_set(e, SBX_EINVAL, "invalid tools/call result: no content array");
		return NULL;
	}
	n = json_object_array_length(content);
	for (size_t i = 0; i < n; i++) {
		struct json_object *blk = json_object_array_get_idx(content, i);
		const char *type = jsonfield_str(blk, "type"), *text = jsonfield_str(blk, "text");

		if (i > 0)
			buf_puts(&b, "\n");
		if (type && strcmp(type, "text") == 0 && text)
			buf_puts(&b, text);
		else
			buf_printf(&b, "[%.32s content]", type ? type : "unknown");
	}
	if (b.data == NULL)
		buf_puts(&b, "");
	return buf_steal(&b);
}

struct json_object *mcp_progress_params(struct json_object *token, int64_t progress,
					const char *message)
{
	struct json_object *p = json_object_new_object();

	json_object_object_add(p, "progressToken", json_object_get(token));
	json_object_object_add(p, "progress", json_object_new_int64(progress));
	if (message)
		json_object_object_add(p, "message", json_object_new_string(message));
	return p;
}

bool mcp_id_ok(struct json_object *id)
{
	return json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int);
}

bool mcp_id_equal(struct json_object *a, struct json_object *b)
{
	if (!mcp_id_ok(a) || !mcp_id_ok(b) || json_object_get_type(a) != json_object_get_type(b))
		return false;
	if (json_object_is_type(a, json_type_int))
		return json_object_get_int64(a) == json_object_get_int64(b);
	return strcmp(json_object_get_string(a), json_object_get_string(b)) == 0;
}
