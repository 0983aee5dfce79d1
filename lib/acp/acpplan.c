/* acpplan.c — the session's extra tools: the plan tool and its MCP servers' tools.
 * The plan tool is gemini-cli's write_todos (its name, parameters, checks and answer text,
 * gemini-cli 0.61.0), offered with -toolset geminicli. The server answers it itself: the
 * list goes to the client as an ACP `plan` update (always the whole list), nothing runs in
 * the sandbox, and it is never asked for, since all it changes is what the client shows. */
#include <stdlib.h>
#include <string.h>

#include "acp_int.h"
#include "gojson.h"
#include "jsonfield.h"
#include "toolmsg.h"
#include "xalloc.h"

static const char *const todo_statuses[] = {"pending", "in_progress", "completed", "cancelled",
					     "blocked"};

static const char plan_params[] =
	"{\"type\":\"object\",\"properties\":{\"todos\":{\"type\":\"array\","
	"\"description\":\"The whole list of todos: it replaces the previous one.\","
	"\"items\":{\"type\":\"object\",\"properties\":{"
	"\"description\":{\"type\":\"string\",\"description\":\"What the step does.\"},"
	"\"status\":{\"type\":\"string\",\"enum\":[\"pending\",\"in_progress\",\"completed\","
	"\"cancelled\",\"blocked\"],\"description\":\"Where the step stands.\"}},"
	"\"required\":[\"description\",\"status\"],\"additionalProperties\":false}}},"
	"\"required\":[\"todos\"],\"additionalProperties\":false}";

static const char plan_description[] =
	"Keeps the plan of a task of several steps as a list of todos that the user sees. Send "
	"the whole list each time (it replaces the one before), with each step's status: "
	"pending, in_progress (one at a time), completed, cancelled or blocked. Update it as "
	"steps start and finish; simple requests need no plan.";

bool acp_plan_offered(const struct acp_server *srv, const char *name)
{
	return srv->cfg.toolset && strcmp(srv->cfg.toolset, "geminicli") == 0 &&
	       (name == NULL || strcmp(name, ACP_PLAN_TOOL) == 0);
}

/* The todos of the arguments, checked as gemini-cli does; NULL with why. Borrowed from args. */
static struct json_object *todos_of(struct json_object *args, const char **why)
{
	struct json_object *todos = NULL;
	size_t i, j, n, running = 0;

	if (!json_object_is_type(args, json_type_object) ||
	    !json_object_object_get_ex(args, "todos", &todos) ||
	    !json_object_is_type(todos, json_type_array)) {
		*why = "`todos` parameter must be an array";
		return NULL;
	}
	n = json_object_array_length(todos);
	for (i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(todos, i);
		const char *d = jsonfield_str(t, "description"), *st = jsonfield_str(t, "status"), *p;
		if (!json_object_is_type(t, json_type_object)) {
			*why = "Each todo item must be an object";
			return NULL;
		}
		for (p = d; p && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'); p++)
			;
		if (p == NULL || *p == '\0') {
			*why = "Each todo must have a non-empty description string";
			return NULL;
		}
		for (j = 0; st && j < sizeof todo_statuses / sizeof todo_statuses[0]; j++)
			if (strcmp(st, todo_statuses[j]) == 0)
				break;
		if (st == NULL || j == sizeof todo_statuses / sizeof todo_statuses[0]) {
			*why = "Each todo must have a valid status (pending, in_progress, completed, "
			       "cancelled, blocked)";
			return NULL;
		}
		running += strcmp(st, "in_progress") == 0;
	}
	if (running > 1) {
		*why = "Invalid parameters: Only one task can be \"in_progress\" at a time.";
		return NULL;
	}
	return todos;
}

static struct json_object *parse(const char *arguments)
{
	const char *why;

	return arguments ? gojson_parse(arguments, strlen(arguments), &why) : NULL;
}

/* ACP plan entries have three statuses: a cancelled step is done with, a blocked one still
 * to do, each saying so in its text. */
static struct json_object *plan_of(struct json_object *todos)
{
	struct json_object *u = json_object_new_object(), *entries = json_object_new_array();
	size_t i, n = json_object_array_length(todos);

	for (i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(todos, i), *e = json_object_new_object();
		const char *d = jsonfield_str(t, "description"), *st = jsonfield_str(t, "status");
		bool cancelled = strcmp(st, "cancelled") == 0, blocked = strcmp(st, "blocked") == 0;
		char *text = xasprintf("%s%s", d, cancelled ? " (cancelled)" : blocked ? " (blocked)" : "");

		json_object_object_add(e, "content", json_object_new_string(text));
		json_object_object_add(e, "priority", json_object_new_string("medium"));
		json_object_object_add(e, "status", json_object_new_string(
			cancelled ? "completed" : blocked ? "pending" : st));
		json_object_array_add(entries, e);
		free(text);
	}
	json_object_object_add(u, "sessionUpdate", json_object_new_string("plan"));
	json_object_object_add(u, "entries", entries);
	return u;
}

struct json_object *acp_plan_update(const char *arguments)
{
	struct json_object *args = parse(arguments), *todos, *u = NULL;
	const char *why;

	if ((todos = todos_of(args, &why)) != NULL)
		u = plan_of(todos);
	json_object_put(args);
	return u;
}

/* The call: the plan update to the client, gemini-cli's answer to the model. */
static char *plan_run(struct acp_session *s, const struct agent_tool_call *call, bool *failed)
{
	struct json_object *args = parse(call->arguments), *todos;
	const char *why = NULL;
	struct buf b = {0};
	size_t i, n;

	*failed = true;
	if ((todos = todos_of(args, &why)) == NULL) {
		json_object_put(args);
		return toolmsg_error(call->name, "%s", why);
	}
	acp_send_update(s->out, s->id, plan_of(todos));
	n = json_object_array_length(todos);
	if (n == 0)
		buf_puts(&b, "Successfully cleared the todo list.");
	else
		buf_puts(&b, "Successfully updated the todo list. The current list is now:");
	for (i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(todos, i);
		buf_printf(&b, "\n%zu. [%s] %s", i + 1, jsonfield_str(t, "status"),
			   jsonfield_str(t, "description"));
	}
	json_object_put(args);
	*failed = false;
	return buf_steal(&b);
}

static char *extra_run(void *arg, const struct agent_tool_call *call, int cancel_fd, bool *failed,
		       struct sbx_err *e)
{
	struct acp_session *s = arg;

	if (acp_plan_offered(s->srv, call->name))
		return plan_run(s, call, failed);
	return acp_mcp_run(s, call, cancel_fd, failed, e);
}

static bool extra_local(void *arg, const char *name)
{
	struct acp_session *s = arg;

	return acp_plan_offered(s->srv, name);
}

void acp_extra_tools_update(struct acp_session *s)
{
	struct json_object *decls = json_object_new_array(), *mcp = acp_mcp_decls(s), *old;
	struct agent_extra_tools x = {0};
	size_t i, n = mcp ? json_object_array_length(mcp) : 0;

	if (acp_plan_offered(s->srv, NULL)) {
		struct json_object *d = json_object_new_object(), *fn = json_object_new_object();
		json_object_object_add(fn, "name", json_object_new_string(ACP_PLAN_TOOL));
		json_object_object_add(fn, "description", json_object_new_string(plan_description));
		json_object_object_add(fn, "parameters", json_tokener_parse(plan_params));
		json_object_object_add(d, "type", json_object_new_string("function"));
		json_object_object_add(d, "function", fn);
		json_object_array_add(decls, d);
	}
	for (i = 0; i < n; i++)
		json_object_array_add(decls, json_object_get(json_object_array_get_idx(mcp, i)));
	old = s->extra_decls;
	s->extra_decls = decls;
	x.decls = decls;
	x.run = extra_run;
	x.local = extra_local;
	x.arg = s;
	agent_session_set_extra_tools(s->as, json_object_array_length(decls) ? &x : NULL);
	json_object_put(old);
}
