/* toolset.c — the tool registry rules shared by every toolset, and the `basic` toolset
 * (upstream pkg/tools): run_command, ls, read, write, run with sh/ls/cat in the sandbox. */
#include "toolset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "duration.h"
#include "gojson.h"
#include "porttool.h"
#include "toolcap.h"
#include "utf8.h"
#include "toolmsg.h"
#include "xalloc.h"

static const struct toolset *const toolsets[] = {&toolset_basic, &toolset_geminicli};

const char *toolset_pick(const char *given)
{
	return given ? given : getenv("TOOLSET");
}

const struct toolset *toolset_find(const char *name, struct sbx_err *e)
{
	size_t i;

	if (name == NULL || *name == '\0')
		name = "basic";
	if (strchr(name, '+'))	/* "basic+open_port": a toolset with more */
		return porttool_toolset(name, toolsets,
				       sizeof toolsets / sizeof toolsets[0], e);
	for (i = 0; i < sizeof toolsets / sizeof toolsets[0]; i++)
		if (strcmp(toolsets[i]->name, name) == 0)
			return toolsets[i];
	err_set(e, SBX_EINVAL, "unknown toolset \"%s\" (available: basic, geminicli)", name);
	return NULL;
}

const struct tool *toolset_tool(const struct toolset *ts, const char *name)
{
	for (size_t i = 0; i < ts->ntools; i++)
		if (strcmp(ts->tools[i].name, name) == 0)
			return &ts->tools[i];
	return NULL;
}

const char *toolset_tool_kind(const char *name)
{
	static const struct {
		const char *name, *kind;
	} kinds[] = {
		{"run_command", "execute"}, {"run_shell_command", "execute"},
		{"ls", "search"}, {"list_directory", "search"}, {"glob", "search"},
		{"grep_search", "search"},
		{"read", "read"}, {"read_file", "read"}, {"read_many_files", "read"},
		{"write", "edit"}, {"write_file", "edit"}, {"replace", "edit"},
	};

	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(kinds[i].name, name) == 0)
			return kinds[i].kind;
	return "other";
}

struct json_object *toolset_declarations(const struct toolset *ts)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	for (i = 0; i < ts->ntools; i++) {
		const struct tool *t = &ts->tools[i];
		struct json_object *o = json_object_new_object(), *f = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string("function"));
		json_object_object_add(f, "name", json_object_new_string(t->name));
		json_object_object_add(f, "description", json_object_new_string(t->description));
		json_object_object_add(f, "parameters", json_tokener_parse(t->parameters));
		json_object_object_add(o, "function", f);
		json_object_array_add(arr, o);
	}
	return arr;
}

static const char *json_kind(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null: return "null";
	case json_type_boolean: return "bool";
	case json_type_int:
	case json_type_double: return "number";
	case json_type_string: return "string";
	case json_type_array: return "array";
	default: return "object";
	}
}

/* Checks each present argument against the schema's declared type, as Go's decoder would
 * when filling the tool's parameter struct. Unknown keys are ignored; null is allowed. */
static int check_types(const struct tool *t, struct json_object *args, struct sbx_err *e)
{
	struct json_object *schema = json_tokener_parse(t->parameters), *props = NULL, *p, *ty;
	int rc = 0;

	if (schema == NULL || !json_object_object_get_ex(schema, "properties", &props)) {
		json_object_put(schema);
		return 0;
	}
	json_object_object_foreach(args, key, val) {
		const char *want, *have = json_kind(val);
		int ok;

		if (!json_object_object_get_ex(props, key, &p) ||
		    !json_object_object_get_ex(p, "type", &ty) || json_object_is_type(val, json_type_null))
			continue;
		want = json_object_get_string(ty);
		if (strcmp(want, "integer") == 0)
			ok = json_object_is_type(val, json_type_int);
		else if (strcmp(want, "number") == 0)
			ok = strcmp(have, "number") == 0;
		else if (strcmp(want, "boolean") == 0)
			ok = strcmp(have, "bool") == 0;
		else
			ok = strcmp(want, have) == 0;
		if (!ok) {
			const char *gotype = strcmp(want, "integer") == 0 ? "int"
					   : strcmp(want, "number") == 0 ? "float64"
					   : strcmp(want, "boolean") == 0 ? "bool"
					   : strcmp(want, "array") == 0 ? "[]string" : want;
			rc = err_set(e, SBX_EINVAL,
				     "json: cannot unmarshal %s into Go struct field .%s of type %s",
				     have, key, gotype);
			break;
		}
	}
	json_object_put(schema);
	return rc;
}

char *toolset_call(const struct toolset *ts, const struct tool_ctx *ctx, const char *name,
		   const char *arguments, size_t *len, int *failed, struct sbx_err *e)
{
	const struct tool *t = toolset_tool(ts, name);
	struct json_object *args = NULL;
	struct sbx_err te;
	const char *why;
	char *out = NULL, d[DURATION_BUFSZ];
	size_t n = 0;
	bool sized = false, tool_failed = false;

	*failed = TOOL_FAILED;
	*len = 0;
	if (t == NULL) {
		out = toolmsg_error(name, "tool \"%s\" not found", name);
		*len = strlen(out);
		return out;
	}
	args = gojson_parse(arguments ? arguments : "", arguments ? strlen(arguments) : 0, &why);
	if (args == NULL || !json_object_is_type(args, json_type_object)) {
		out = toolmsg_error(name, "failed to parse arguments: %s",
				args ? "json: cannot unmarshal non-object into Go value of type struct"
				     : (arguments && *arguments ? why : "unexpected end of JSON input"));
		goto done;
	}
	if (!ts->own_validation && check_types(t, args, &te) < 0) {
		out = toolmsg_error(name, "failed to parse arguments: %s", te.msg);
		goto done;
	}
	err_clear(&te);
	out = t->run(ctx, args, &n, &tool_failed, &te);
	if (out != NULL) {
		*failed = tool_failed ? TOOL_FAILED : TOOL_OK;
		sized = true;
	} else if (te.code == SBX_ECANCELED) {
		err_set(e, SBX_ECANCELED, "%s", te.msg);
	} else if (te.code == SBX_ETIMEDOUT) {
		out = toolmsg_error(name, "tool \"%s\" timed out after %s: %s", name,
				duration_format(ctx->timeout_ns, d, sizeof d), te.msg);
	} else if (te.code == SBX_ENOTFOUND) {
		/* The sandbox was not there, nothing ran: the caller recreates it and calls again. */
		err_set(e, SBX_ENOTFOUND, "%s", te.msg);
	} else {
		/* Gone while the tool ran (SBX_EGONE) is an answer like any failure, never a retry:
		 * the command may have done part of its work. */
		if (te.code == SBX_EGONE)
			*failed = TOOL_SANDBOX_GONE;
		out = toolmsg_run_failed(name, te.msg);
	}
done:
	if (out) {
		*len = sized ? n : strlen(out);
		/* the arguments quoted in a message may not be valid UTF-8 */
		if (!utf8_valid(out, *len)) {
			char *fixed = toolcap_utf8(out, *len, len);
			free(out);
			out = fixed;
		}
	}
	json_object_put(args);
	return out;
}

/* ---- basic toolset ---- */

static const char *arg_str(struct json_object *args, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(args, key, &v) || !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

/* Go's %q for the few places upstream quotes a path. */
static char *go_quote(const char *s)
{
	struct buf b = {0};
	const unsigned char *p = (const unsigned char *)s;

	buf_append(&b, "\"", 1);
	for (; *p; p++) {
		switch (*p) {
		case '"': buf_puts(&b, "\\\""); break;
		case '\\': buf_puts(&b, "\\\\"); break;
		case '\n': buf_puts(&b, "\\n"); break;
		case '\t': buf_puts(&b, "\\t"); break;
		case '\r': buf_puts(&b, "\\r"); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				buf_printf(&b, "\\x%02x", *p);
			else
				buf_append(&b, p, 1);
		}
	}
	buf_append(&b, "\"", 1);
	return buf_steal(&b);
}

/* What run_command, ls and read keep of each stream: the first and the last part (the
 * model sees at most TOOLCAP_MAX characters of the report; the file keeping the whole report
 * gets this much), 8 MiB in all as upstream's limited writer. */
#define BASIC_KEEP_HEAD (4u << 20)
#define BASIC_KEEP_TAIL (4u << 20)

/* Runs argv in the sandbox; NULL with e on a harness failure (timeout: SBX_ETIMEDOUT). */
static int run(const struct tool_ctx *ctx, char *const *argv, const char *in, size_t in_len,
	       struct capture *c, struct sbx_err *e)
{
	struct capture_req rq = {.argv = argv, .in = in, .in_len = in_len,
				 .max = BASIC_KEEP_TAIL, .keep_tail = true, .head = BASIC_KEEP_HEAD};

	return toolset_capture(ctx, &rq, c, e);
}

/* One stream as the model gets it: valid UTF-8, a note where the middle was not kept. */
static void put_stream(struct buf *b, const char *p, size_t n, size_t dropped)
{
	size_t cut = dropped ? BASIC_KEEP_HEAD : n, len;
	char *t;

	if (cut > n)
		cut = n;
	/* the kept head may end inside a character: the repair marks it, as it would any
	 * invalid byte */
	t = toolcap_utf8(p, cut, &len);
	buf_append(b, t, len);
	free(t);
	if (cut < n) {
		buf_printf(b, "\n... [%zu bytes not kept] ...\n", dropped);
		t = toolcap_utf8(p + cut, n - cut, &len);
		buf_append(b, t, len);
		free(t);
	}
}

/* Upstream's report, with each stream put_stream'd, plus the reason when the memory limit
 * killed the command, then capped for the model. */
static char *report(const struct tool_ctx *ctx, const char *tool, const char *head,
		    const struct capture *c, size_t *len)
{
	struct buf b = {0};
	char oom[256];

	toolset_oom_text(&c->res, oom, sizeof oom);
	buf_puts(&b, head);
	buf_puts(&b, "stdout:\n");
	put_stream(&b, c->out, c->out_len, c->out_dropped);
	buf_puts(&b, "\nstderr:\n");
	put_stream(&b, c->err, c->err_len, c->err_dropped);
	buf_printf(&b, "\nexit_code: %d%s%s", c->res.exit_code, oom[0] ? "\n" : "", oom);
	*len = b.len;
	return toolcap_apply(ctx, tool, buf_steal(&b), len);
}

/* One stream of run_command's structured result: the model-facing text of that stream alone
 * (valid UTF-8, cut as the text result is; the whole of it is in the text result's file). */
static struct json_object *structured_stream(const char *p, size_t n, size_t dropped)
{
	struct buf b = {0};
	struct json_object *s;
	size_t len;
	char *t;

	put_stream(&b, p, n, dropped);
	len = b.len;
	t = toolcap_cut(buf_steal(&b), &len, "the text result's file");
	s = json_object_new_string_len(t, (int)len);
	free(t);
	return s;
}

static char *run_command(const struct tool_ctx *ctx, struct json_object *args, size_t *len,
			 bool *failed, struct sbx_err *e)
{
	const char *cmd = arg_str(args, "command");
	char *argv[] = {"sh", "-c", (char *)cmd, NULL}, *out;
	struct capture c;

	if (*cmd == '\0') {
		err_set(e, SBX_EINVAL, "command is required");
		return NULL;
	}
	if (run(ctx, argv, NULL, 0, &c, e) < 0)
		return NULL;
	out = report(ctx, "run_command", "", &c, len);
	*failed = c.res.exit_code != 0;
	if (ctx->structured) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "stdout", structured_stream(c.out, c.out_len, c.out_dropped));
		json_object_object_add(o, "stderr", structured_stream(c.err, c.err_len, c.err_dropped));
		json_object_object_add(o, "exit_code", json_object_new_int(c.res.exit_code));
		*ctx->structured = o;
	}
	capture_free(&c);
	return out;
}

/* run_command's structured result (MCP structuredContent). */
static const char run_command_output[] =
	"{\"type\":\"object\",\"properties\":{\"stdout\":{\"type\":\"string\"},"
	"\"stderr\":{\"type\":\"string\"},\"exit_code\":{\"type\":\"integer\","
	"\"description\":\"0-255; 128+n when killed by signal n; 124 on timeout\"}},"
	"\"required\":[\"stdout\",\"stderr\",\"exit_code\"]}";

static char *ls_or_read(const struct tool_ctx *ctx, struct json_object *args, int is_read,
			size_t *len, bool *failed, struct sbx_err *e)
{
	const char *path = arg_str(args, "path");
	char *argv[] = {is_read ? "cat" : "ls", is_read ? "--" : "-p", is_read ? (char *)path : "--",
			is_read ? NULL : (char *)(*path ? path : "."), NULL};
	char *out, *q, *head;
	struct capture c;

	if (is_read && *path == '\0') {
		err_set(e, SBX_EINVAL, "path is required");
		return NULL;
	}
	if (run(ctx, argv, NULL, 0, &c, e) < 0)
		return NULL;
	if (c.res.exit_code == 0) {
		struct buf b = {0};
		put_stream(&b, c.out, c.out_len, c.out_dropped);
		*len = b.len;
		out = toolcap_apply(ctx, is_read ? "read" : "ls", buf_steal(&b), len);
	} else {
		q = go_quote(is_read ? path : (*path ? path : "."));
		head = xasprintf("Failed to %s %s:\n", is_read ? "read" : "list", q);
		out = report(ctx, is_read ? "read" : "ls", head, &c, len);
		*failed = true;
		free(q);
		free(head);
	}
	capture_free(&c);
	return out;
}

static char *ls_tool(const struct tool_ctx *ctx, struct json_object *args, size_t *len,
		     bool *failed, struct sbx_err *e)
{
	return ls_or_read(ctx, args, 0, len, failed, e);
}

static char *read_tool(const struct tool_ctx *ctx, struct json_object *args, size_t *len,
		       bool *failed, struct sbx_err *e)
{
	return ls_or_read(ctx, args, 1, len, failed, e);
}

/* Go's filepath.Dir: "foo" → ".", "/a/b" → "/a", "/a" → "/". */
static char *go_dir(const char *p)
{
	const char *slash = strrchr(p, '/');

	if (slash == NULL)
		return xstrdup(".");
	while (slash > p && slash[-1] == '/')
		slash--;
	if (slash == p)
		return xstrdup("/");
	return xstrndup(p, (size_t)(slash - p));
}

static char *write_tool(const struct tool_ctx *ctx, struct json_object *args, size_t *len,
			bool *failed, struct sbx_err *e)
{
	const char *path = arg_str(args, "path"), *content;
	struct json_object *v;
	char *dir, *q, *out, *head;
	struct capture c;
	size_t clen = 0;

	if (*path == '\0') {
		err_set(e, SBX_EINVAL, "path is required");
		return NULL;
	}
	content = json_object_object_get_ex(args, "content", &v) ? json_object_get_string(v) : "";
	if (content == NULL)
		content = "";
	else if (v)
		clen = (size_t)json_object_get_string_len(v);
	dir = go_dir(path);
	{
		char *argv[] = {"mkdir", "-p", "--", dir, NULL};
		if (run(ctx, argv, NULL, 0, &c, e) < 0) {
			free(dir);
			if (e->code == SBX_ETIMEDOUT || e->code == SBX_ECANCELED)
				return NULL;
			err_prefix(e, "failed to create directory");
			return NULL;
		}
		capture_free(&c);	/* its exit status is ignored, as upstream does */
	}
	free(dir);
	{
		char *argv[] = {"sh", "-c", "cat > \"$1\"", "--", (char *)path, NULL};
		if (run(ctx, argv, content, clen, &c, e) < 0)
			return NULL;
	}
	q = go_quote(path);
	if (c.res.exit_code == 0) {
		out = xasprintf("Wrote file %s", q);
		*len = strlen(out);
	} else {
		head = xasprintf("failed to write file %s:\n", q);
		out = report(ctx, "write", head, &c, len);
		*failed = true;
		free(head);
	}
	free(q);
	capture_free(&c);
	return out;
}

const char *toolset_output_schema(const char *name)
{
	return strcmp(name, "run_command") == 0 ? run_command_output : NULL;
}

static const struct tool basic_tools[] = {
	{"ls", "List files in a directory.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":"
	 "\"Directory to list (default: current directory)\"}}}",
	 ls_tool},
	{"read", "Read the contents of a file.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":"
	 "\"Path to the file to read (relative or absolute)\"}},\"required\":[\"path\"]}",
	 read_tool},
	{"run_command", "Executes a shell command inside a sandbox and returns the stdout and stderr.",
	 "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"description\":"
	 "\"The shell command to execute\"}},\"required\":[\"command\"]}",
	 run_command},
	{"write",
	 "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
	 "Automatically creates parent directories.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":"
	 "\"Path to the file to write (relative or absolute)\"},\"content\":{\"type\":\"string\","
	 "\"description\":\"Content to write to the file\"}},\"required\":[\"path\",\"content\"]}",
	 write_tool},
};

static char *basic_prompt(struct sbx_err *e)
{
	(void)e;
	/* Upstream's own words (pkg/toolsets/basic), so histories stay alike. */
	return xstrdup(
		"You are a helpful AI assistant with access to a sandboxed environment. You can use "
		"the available tools (like run_command to execute shell commands, ls to list files, "
		"read to read files, and write to write files) to answer user questions or perform "
		"tasks. Always explain what you are doing.");
}

const struct toolset toolset_basic = {
	.name = "basic",
	.default_image = NULL,
	.tools = basic_tools,
	.ntools = sizeof basic_tools / sizeof basic_tools[0],
	.system_prompt = basic_prompt,
};
