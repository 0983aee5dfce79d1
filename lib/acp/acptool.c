/* acptool.c — tool calls as ACP shows them: one table row per tool (title, argument naming the
 * path it touches, whether it edits), the client ⇄ sandbox path mapping, exit-code status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acptool.h"
#include "gojson.h"
#include "jsonfield.h"
#include "porttool.h"
#include "toolmsg.h"
#include "toolset.h"
#include "xalloc.h"

enum edit_kind { NO_EDIT, EDIT_WRITE, EDIT_REPLACE };

/* One tool as the client sees it. title: the verb before its primary argument (a command or
 * pattern, shown in backquotes, or a path); path_arg: the argument naming the file or
 * directory it touches (NULL: none); line_arg: a 1-based start line (NULL: none). */
struct tool_view {
	const char *name, *title, *primary, *path_arg, *line_arg;
	bool quote;			/* primary shown as `code` */
	enum edit_kind edit;
	const char *content_arg;	/* the new text of a write */
};

static const struct tool_view views[] = {
	{"glob", "Find files matching", "pattern", "dir_path", NULL, true, NO_EDIT, NULL},
	{"grep_search", "Search for", "pattern", "dir_path", NULL, true, NO_EDIT, NULL},
	{"list_directory", "List", "dir_path", "dir_path", NULL, false, NO_EDIT, NULL},
	{"ls", "List", "path", "path", NULL, false, NO_EDIT, NULL},
	{"read", "Read", "path", "path", NULL, false, NO_EDIT, NULL},
	{"read_file", "Read", "file_path", "file_path", "start_line", false, NO_EDIT, NULL},
	{"read_many_files", "Read", "include", NULL, NULL, false, NO_EDIT, NULL},
	{"replace", "Edit", "file_path", "file_path", NULL, false, EDIT_REPLACE, NULL},
	{"run_command", "Run", "command", NULL, NULL, true, NO_EDIT, NULL},
	{"run_shell_command", "Run", "command", "dir_path", NULL, true, NO_EDIT, NULL},
	{"write", "Write", "path", "path", NULL, false, EDIT_WRITE, "content"},
	{"write_file", "Write", "file_path", "file_path", NULL, false, EDIT_WRITE, "content"},
};

static const struct tool_view *view_of(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof views / sizeof views[0]; i++)
		if (strcmp(views[i].name, name) == 0)
			return &views[i];
	return NULL;
}

/* ---- paths ---- */

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

char *acptool_workdir(const char *homedir, const char *client_cwd)
{
	const char *base;
	size_t n;

	if (client_cwd == NULL || client_cwd[0] != '/')
		return xstrdup(homedir);
	if (under(client_cwd, homedir))
		return xstrdup(client_cwd);
	n = strlen(client_cwd);
	while (n > 1 && client_cwd[n - 1] == '/')
		n--;
	base = client_cwd + n;
	while (base > client_cwd && base[-1] != '/')
		base--;
	/* "/" (or a cwd ending in "." or ".."): the home itself. */
	if (base == client_cwd + n || (client_cwd + n - base == 1 && base[0] == '.') ||
	    (client_cwd + n - base == 2 && base[0] == '.' && base[1] == '.'))
		return xstrdup(homedir);
	return xasprintf("%s/%.*s", homedir, (int)(client_cwd + n - base), base);
}

char *acptool_client_path(const struct acp_pathmap *pm, const char *path)
{
	char *abs, *out;
	size_t n;

	if (pm == NULL || pm->sandbox == NULL || pm->client == NULL)
		return xstrdup(path);
	abs = path[0] == '/' ? xstrdup(path) : strcmp(path, ".") == 0 ? xstrdup(pm->sandbox)
	      : xasprintf("%s/%s", pm->sandbox, path);
	if (!under(abs, pm->sandbox))
		return abs;
	n = strlen(pm->sandbox);
	if (strcmp(pm->sandbox, "/") == 0)
		n = 0;
	out = abs[n] == '\0' ? xstrdup(pm->client)
	      : xasprintf("%s%s", strcmp(pm->client, "/") == 0 ? "" : pm->client, abs + n);
	free(abs);
	return out;
}

/* ---- describing a call ---- */

/* `text`, first line only, cut at ACPTOOL_TITLE_QUOTE_MAX bytes (on a UTF-8 boundary). */
static void quote(struct buf *b, const char *text)
{
	size_t n = strcspn(text, "\n"), cut = n;
	bool more = text[n] != '\0';

	if (cut > ACPTOOL_TITLE_QUOTE_MAX) {
		cut = ACPTOOL_TITLE_QUOTE_MAX;
		while (cut > 0 && ((unsigned char)text[cut] & 0xc0) == 0x80)
			cut--;
		more = true;
	}
	buf_printf(b, "`%.*s%s`", (int)cut, text, more ? "…" : "");
}

static char *title_of(const struct tool_view *v, const char *name, struct json_object *args)
{
	struct buf arg = {0}, t = {0};
	struct json_object *inc;
	const char *p;

	if (v == NULL && strncmp(name, "mcp__", 5) == 0 && (p = strstr(name + 5, "__")) != NULL)
		return xasprintf("%s (MCP %.*s)", p + 2, (int)(p - name - 5), name + 5);
	/* acp-server's plan tool (lib/acp/acpplan.c) */
	if (v == NULL && strcmp(name, "write_todos") == 0 &&
	    json_object_object_get_ex(args, "todos", &inc) && json_object_is_type(inc, json_type_array))
		return json_object_array_length(inc) == 0 ? xstrdup("Clear the plan")
		       : xasprintf("Plan %zu step%s", json_object_array_length(inc),
				   json_object_array_length(inc) == 1 ? "" : "s");
	if (v == NULL)
		return xstrdup(name);
	if (strcmp(v->primary, "include") == 0 && json_object_object_get_ex(args, "include", &inc) &&
	    json_object_is_type(inc, json_type_array)) {
		size_t i, n = json_object_array_length(inc);
		for (i = 0; i < n && i < 3; i++)
			buf_printf(&arg, "%s%s", i ? ", " : "",
				   json_object_get_string(json_object_array_get_idx(inc, i)));
		if (n > 3)
			buf_printf(&arg, " and %zu more", n - 3);
	} else if ((p = jsonfield_str(args, v->primary)) != NULL && *p) {
		if (v->quote)
			quote(&arg, p);
		else
			buf_puts(&arg, p);
	} else {
		buf_puts(&arg, v->quote ? "``" : ".");
	}
	buf_printf(&t, "%s %s", v->title, arg.data ? arg.data : "");
	if (v->quote && v->path_arg && (p = jsonfield_str(args, v->path_arg)) != NULL && *p)
		buf_printf(&t, " in %s", p);
	buf_free(&arg);
	return buf_steal(&t);
}

static struct json_object *location(const struct tool_view *v, struct json_object *args,
				    const struct acp_pathmap *pm)
{
	struct json_object *arr, *loc, *ln;
	const char *p = v && v->path_arg ? jsonfield_str(args, v->path_arg) : NULL;
	char *cp;

	if (v == NULL || v->path_arg == NULL)
		return NULL;
	if ((p == NULL || *p == '\0') && v->quote)
		return NULL;	/* a command or search without a directory: nothing to point at */
	if (p == NULL || *p == '\0')
		p = ".";
	cp = acptool_client_path(pm, p);
	loc = json_object_new_object();
	json_object_object_add(loc, "path", json_object_new_string(cp));
	free(cp);
	if (v->line_arg && json_object_object_get_ex(args, v->line_arg, &ln) &&
	    json_object_is_type(ln, json_type_int) && json_object_get_int64(ln) >= 1)
		json_object_object_add(loc, "line", json_object_new_int64(json_object_get_int64(ln)));
	arr = json_object_new_array();
	json_object_array_add(arr, loc);
	return arr;
}

static struct json_object *parse_args(const char *arguments)
{
	const char *why;

	return arguments ? gojson_parse(arguments, strlen(arguments), &why) : NULL;
}

void acptool_describe(struct json_object *o, const char *name, const char *arguments,
		      const struct acp_pathmap *pm)
{
	const struct tool_view *v = view_of(name);
	struct json_object *args = parse_args(arguments), *locs;
	struct json_object *obj = json_object_is_type(args, json_type_object) ? args : NULL;
	char *title = title_of(v, name, obj);

	json_object_object_add(o, "title", json_object_new_string(title));
	json_object_object_add(o, "kind", json_object_new_string(
		strcmp(name, "write_todos") == 0 ? "think" : toolset_tool_kind(name)));
	if ((locs = location(v, obj, pm)) != NULL)
		json_object_object_add(o, "locations", locs);
	/* rawInput only when the arguments are JSON, as upstream. */
	if (args)
		json_object_object_add(o, "rawInput", args);
	free(title);
}

/* The exit code a command's result reports (basic: "exit_code: N" last; geminicli:
 * "Exit Code: N"), or 0 when it names none. */
static long exit_code_of(const char *content)
{
	const char *keys[] = {"\nexit_code: ", "\nExit Code: "}, *p, *last = NULL;
	size_t i;

	for (i = 0; i < 2; i++)
		for (p = strstr(content, keys[i]); p; p = strstr(p + 1, keys[i]))
			last = p + strlen(keys[i]);
	return last ? strtol(last, NULL, 10) : 0;
}

bool acptool_failed_text(const char *name, const char *content)
{
	/* the tools' own failure texts: basic's report heads, the geminicli toolbox's error */
	static const char *const heads[] = {"Failed to read \"", "Failed to list \"",
					    "failed to write file \"", "Error: tool \""};

	if (toolmsg_is_harness(name, content))
		return true;
	for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
		if (strncmp(content, heads[i], strlen(heads[i])) == 0)
			return true;
	return strcmp(toolset_tool_kind(name), "execute") == 0 &&
	       (exit_code_of(content) != 0 || strstr(content, "\nSignal: ") != NULL);
}

static struct json_object *content_item(const char *text)
{
	struct json_object *tc = json_object_new_object(), *blk = json_object_new_object();

	json_object_object_add(blk, "type", json_object_new_string("text"));
	json_object_object_add(blk, "text", json_object_new_string(text));
	json_object_object_add(tc, "type", json_object_new_string("content"));
	json_object_object_add(tc, "content", blk);
	return tc;
}

/* The diff of an edit: a write's whole new text (its old one is not read), a replace's
 * old_string → new_string. NULL when the arguments do not say. */
static struct json_object *diff_of(const struct tool_view *v, struct json_object *args,
				   const struct acp_pathmap *pm)
{
	const char *p = jsonfield_str(args, v->path_arg), *newt, *oldt = NULL;
	struct json_object *d;
	char *cp;

	if (p == NULL || *p == '\0')
		return NULL;
	if (v->edit == EDIT_WRITE) {
		newt = jsonfield_str(args, v->content_arg);
	} else {
		oldt = jsonfield_str(args, "old_string");
		newt = jsonfield_str(args, "new_string");
		if (oldt == NULL)
			return NULL;
	}
	if (newt == NULL)
		return NULL;
	cp = acptool_client_path(pm, p);
	d = json_object_new_object();
	json_object_object_add(d, "type", json_object_new_string("diff"));
	json_object_object_add(d, "path", json_object_new_string(cp));
	if (oldt)
		json_object_object_add(d, "oldText", json_object_new_string(oldt));
	json_object_object_add(d, "newText", json_object_new_string(newt));
	free(cp);
	return d;
}

/* basic run_command's report "stdout:\n…\nstderr:\n…\nexit_code: N" as an object, else NULL. */
static struct json_object *command_output(const char *content)
{
	const char *err = strstr(content, "\nstderr:\n"), *code = strstr(content, "\nexit_code: ");
	struct json_object *o;

	if (strncmp(content, "stdout:\n", 8) != 0 || err == NULL || code == NULL || code < err)
		return NULL;
	while (strstr(code + 1, "\nexit_code: "))
		code = strstr(code + 1, "\nexit_code: ");
	o = json_object_new_object();
	json_object_object_add(o, "stdout", json_object_new_string_len(content + 8, (int)(err - content - 8)));
	json_object_object_add(o, "stderr", json_object_new_string_len(err + 9, (int)(code - err - 9)));
	json_object_object_add(o, "exit_code", json_object_new_int((int)strtol(code + 12, NULL, 10)));
	return o;
}

void acptool_result(struct json_object *o, const char *name, const char *arguments,
		    const char *content, bool failed, const struct acp_pathmap *pm)
{
	const struct tool_view *v = view_of(name);
	const char *status = failed ? "failed" : "completed";
	struct json_object *args = parse_args(arguments), *list = json_object_new_array(), *raw, *d;
	struct json_object *obj = json_object_is_type(args, json_type_object) ? args : NULL;

	json_object_object_add(o, "status", json_object_new_string(status));
	if (v && v->edit != NO_EDIT && obj && strcmp(status, "completed") == 0 &&
	    (d = diff_of(v, obj, pm)) != NULL)
		json_object_array_add(list, d);
	if ((d = porttool_link(name, content, failed)) != NULL)	/* open_port's URL */
		json_object_array_add(list, d);
	json_object_array_add(list, content_item(content ? content : ""));
	json_object_object_add(o, "content", list);
	if (content && strcmp(name, "run_command") == 0 && (raw = command_output(content)) != NULL) {
		json_object_object_add(o, "rawOutput", raw);
	} else {
		raw = json_object_new_object();
		json_object_object_add(raw, "content", json_object_new_string(content ? content : ""));
		json_object_object_add(o, "rawOutput", raw);
	}
	json_object_put(args);
}
