/* acpcmd.c — the slash commands acp-server answers itself (ACP available_commands_update;
 * an invoked command arrives as the text of a prompt, "/mode never-ask"). They change or show
 * what the session already has — its mode, its model, its sandbox — and never reach the
 * model, so they are not part of the conversation a session/load replays. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "acp_int.h"
#include "jsonfield.h"
#include "llm.h"
#include "xalloc.h"

struct acp_command {
	const char *name, *description, *hint;	/* hint NULL: takes no input */
	/* Whether the server offers it (NULL: always). */
	bool (*offered)(const struct acp_server *srv);
	void (*run)(struct acp_session *s, const char *arg, struct buf *out);
};

/* Whether -models offers a model besides the default. */
static bool models_offered(const struct acp_server *srv)
{
	const char *dflt = llm_pick_model(srv->cfg.model, NULL);
	char *const *m;

	for (m = srv->cfg.models; m && *m; m++)
		if (strcmp(*m, dflt) != 0)
			return true;
	return false;
}

/* Sets config to arg (when given), then says what it is now. */
static void set_and_say(struct acp_session *s, const char *config, const char *arg,
			struct buf *out)
{
	struct acp_server *srv = s->srv;
	struct sbx_err e;
	const char *why;
	bool changed = false;

	if (*arg == '\0')
		return;
	if ((why = acp_set_option(srv, s, config, arg, true, &changed, &e)) != NULL) {
		buf_printf(out, "%s %s: %s\n", config, arg, why);
		return;
	}
	if (strcmp(config, "mode") == 0 && !changed)
		return;
	if (changed)
		acp_send_mode(s, s->out);
	acp_send_options(srv, s, s->out);
}

static void cmd_mode(struct acp_session *s, const char *arg, struct buf *out)
{
	int i;

	set_and_say(s, "mode", arg, out);
	buf_printf(out, "Mode: %s (%s).\n", acp_modes[s->mode].id, acp_modes[s->mode].description);
	if (*arg == '\0') {
		buf_puts(out, "Modes:");
		for (i = 0; i < ACP_MODE_COUNT; i++)
			buf_printf(out, " %s", acp_modes[i].id);
		buf_puts(out, "\n");
	}
}

static void cmd_model(struct acp_session *s, const char *arg, struct buf *out)
{
	const char *dflt = llm_pick_model(s->srv->cfg.model, NULL);
	char *const *m;

	set_and_say(s, "model", arg, out);
	buf_printf(out, "Model: %s.\n", s->model);
	if (*arg == '\0') {
		buf_printf(out, "Models: %s", dflt);
		for (m = s->srv->cfg.models; m && *m; m++)
			if (strcmp(*m, dflt) != 0)
				buf_printf(out, " %s", *m);
		buf_puts(out, "\n");
	}
}

static void cmd_sandbox(struct acp_session *s, const char *arg, struct buf *out)
{
	const char *backend = agent_session_backend(s->as), *ns = agent_session_namespace(s->as);
	bool made;

	(void)arg;
	pthread_mutex_lock(&s->srv->mu);
	made = s->tool_ran;
	pthread_mutex_unlock(&s->srv->mu);
	buf_printf(out, "Sandbox: %s, %s backend", agent_session_name(s->as), backend);
	if (strcmp(backend, "kubernetes") == 0 && ns)
		buf_printf(out, " (namespace %s)", ns);
	buf_printf(out, "; %s.\n", made ? "made by a tool call of this server (an idle one expires "
		   "and comes back from its snapshot at the next call)" : "not made yet: the first "
		   "approved tool call makes it");
	buf_printf(out, "Tools run in %s there", agent_session_workdir(s->as) ?: "its home");
	if (s->cwd)
		buf_printf(out, "; paths shown to you are under %s", s->cwd);
	buf_puts(out, ".\n");
}

static const struct acp_command commands[] = {
	{"mode", "Show or set when tool calls are asked for (ask, auto-read, never-ask)",
	 "ask | auto-read | never-ask", NULL, cmd_mode},
	{"model", "Show or set the model of this session (those acp-server -models offers)",
	 "model name", models_offered, cmd_model},
	{"sandbox", "Show this session's sandbox: its name, backend, and where tools run", NULL,
	 NULL, cmd_sandbox},
};

static bool offered(const struct acp_server *srv, const struct acp_command *c)
{
	return c->offered == NULL || c->offered(srv);
}

void acp_send_commands(struct acp_server *srv, struct acp_session *s, struct peer *p)
{
	struct json_object *u = json_object_new_object(), *list = json_object_new_array();
	size_t i;

	for (i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		struct json_object *c;
		if (!offered(srv, &commands[i]))
			continue;
		c = json_object_new_object();
		json_object_object_add(c, "name", json_object_new_string(commands[i].name));
		json_object_object_add(c, "description",
				       json_object_new_string(commands[i].description));
		if (commands[i].hint) {
			struct json_object *in = json_object_new_object();
			json_object_object_add(in, "hint", json_object_new_string(commands[i].hint));
			json_object_object_add(c, "input", in);
		}
		json_object_array_add(list, c);
	}
	json_object_object_add(u, "sessionUpdate", json_object_new_string("available_commands_update"));
	json_object_object_add(u, "availableCommands", list);
	acp_send_update(p, s->id, u);
}

bool acp_command_run(struct acp_session *s, struct json_object *params, struct buf *out)
{
	struct json_object *prompt = NULL;
	const char *text, *end, *type;
	char *arg;
	size_t i, n, len;

	if (!json_object_object_get_ex(params, "prompt", &prompt) ||
	    !json_object_is_type(prompt, json_type_array) || json_object_array_length(prompt) != 1)
		return false;
	type = jsonfield_str(json_object_array_get_idx(prompt, 0), "type");
	text = jsonfield_str(json_object_array_get_idx(prompt, 0), "text");
	if (type == NULL || strcmp(type, "text") != 0 || text == NULL)
		return false;
	while (isspace((unsigned char)*text))
		text++;
	if (*text++ != '/')
		return false;
	for (end = text; *end && !isspace((unsigned char)*end); end++)
		;
	len = (size_t)(end - text);
	n = sizeof commands / sizeof commands[0];
	for (i = 0; i < n; i++)
		if (strlen(commands[i].name) == len && strncmp(commands[i].name, text, len) == 0 &&
		    offered(s->srv, &commands[i]))
			break;
	if (i == n)
		return false;
	while (isspace((unsigned char)*end))
		end++;
	arg = xstrdup(end);
	for (len = strlen(arg); len > 0 && isspace((unsigned char)arg[len - 1]); len--)
		arg[len - 1] = '\0';
	if (commands[i].hint == NULL && *arg)
		buf_printf(out, "/%s takes no input.\n", commands[i].name);
	else
		commands[i].run(s, arg, out);
	free(arg);
	return true;
}
