/* agent.c — an agent session: opened (its checks, history and system prompt, or the lock of a
 * tools-only one), what callers read and set on it, closed. Its parts, lowest first, in
 * agent_int.h: agent_run.c, agent_steps.c, agent_sandbox.c, agent_tools.c, agent_turn.c. */
#include "agent_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "child.h"
#include "history.h"
#include "llm.h"
#include "name.h"
#include "toolset.h"
#include "xalloc.h"

/* client-go's text when neither in-cluster nor kubeconfig configuration exists. */
#define KUBE_NO_CONFIG "invalid configuration: no configuration has been provided, try setting " \
	"KUBERNETES_MASTER environment variable"

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

/* A NULL-terminated copy of v (NULL: an empty one). */
static char **argv_dup(char *const *v)
{
	size_t n = 0;
	char **out;

	while (v && v[n])
		n++;
	out = xcalloc(n + 1, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

/* The session's history opened; a new one starts with the toolset's system prompt. */
static int open_history(struct agent_session *s, bool must_exist, struct sbx_err *e)
{
	struct json_object *m;
	char *prompt;
	int rc;

	if ((s->h = history_open(s->name, e)) == NULL)
		return -1;
	if (history_warning(s->h))
		agent_logf(s, AGENT_LOG_WARN, "%s", history_warning(s->h));
	s->is_new = json_object_array_length(history_messages(s->h)) == 0;
	if (s->is_new && must_exist)
		return err_set(e, SBX_ENOTFOUND, "session \"%s\" has no history", s->name);
	if (!s->is_new)
		return 0;
	if ((prompt = s->ts->system_prompt(e)) == NULL)
		return -1;
	if (*prompt == '\0') {
		free(prompt);
		return err_set(e, SBX_EINVAL, "SystemPrompt is not configured");
	}
	m = json_object_new_object();
	json_object_object_add(m, "role", json_object_new_string("system"));
	json_object_object_add(m, "content", json_object_new_string(prompt));
	free(prompt);
	if ((rc = history_append(s->h, &m, 1, e)) < 0)
		err_prefix(e, "adding system prompt");
	json_object_put(m);
	return rc;
}

struct agent_session *agent_session_open(const struct agent_config *cfg, struct sbx_err *e)
{
	struct agent_session *s;
	const char *home = cfg->homedir, *tsname = cfg->toolset, *why;

	if (home == NULL)
		home = backend_env_homedir();
	if (*home == '\0') {
		err_set(e, SBX_EINVAL, "homeDir must not be empty");
		return NULL;
	}
	if (cfg->session == NULL || *cfg->session == '\0') {
		err_set(e, SBX_EINVAL, "sessionName is required");
		return NULL;
	}
	if (name_check(cfg->session, e) < 0) {
		err_prefix(e, "invalid sessionName \"%s\"", cfg->session);
		return NULL;
	}
	s = xcalloc(1, sizeof *s);
	s->lock_fd = -1;
	s->log = cfg->log;
	s->trace = cfg->trace;
	s->log_arg = cfg->log_arg;
	s->name = xstrdup(cfg->session);
	s->homedir = xstrdup(home);
	s->tools_only = cfg->tools_only;
	s->in_process = cfg->in_process;
	s->steps = cfg->in_process ? &agent_steps_direct : &agent_steps_program;
	s->model = xstrdup(cfg->tools_only ? "" : llm_pick_model(cfg->model, NULL));
	if (!s->tools_only && llm_key_check(s->model, e) < 0)
		goto fail;
	s->backend = xstrdup(cfg->backend && *cfg->backend ? cfg->backend : backend_default(NULL));
	if (strcmp(s->backend, "local") != 0 && strcmp(s->backend, "kubernetes") != 0) {
		err_set(e, SBX_EINVAL, "unknown backend \"%s\" (available: local, kubernetes)", s->backend);
		goto fail;
	}
	if (strcmp(s->backend, "kubernetes") == 0 && !backend_kube_config(&why)) {
		err_set(e, SBX_EINVAL, "failed to get kubernetes configuration: %s", KUBE_NO_CONFIG);
		goto fail;
	}
	s->ns = xstrdup(cfg->namespace && *cfg->namespace ? cfg->namespace
			: backend_env_namespace());
	if (namespace_check(s->ns, e) < 0)
		goto fail;
	tsname = toolset_pick(tsname && *tsname ? tsname : NULL);
	if ((s->ts = toolset_find(tsname, e)) == NULL)
		goto fail;
	s->image = dup_or_null(cfg->image);
	if (s->image == NULL && strcmp(s->backend, "kubernetes") == 0)
		s->image = dup_or_null(s->ts->default_image);
	s->tool_timeout_ns = cfg->tool_timeout_ns > 0 ? cfg->tool_timeout_ns : 0;
	s->ttl_ns = cfg->ttl_ns > 0 ? cfg->ttl_ns : 0;
	s->max_rounds = cfg->max_tool_rounds > 0 ? cfg->max_tool_rounds
			: AGENT_DEFAULT_MAX_TOOL_ROUNDS;
	s->bindir = cfg->bindir ? xstrdup(cfg->bindir) : child_self_dir();
	s->workdir = dup_or_null(cfg->workdir);
	s->want_usage = cfg->want_usage;
	s->create_args = argv_dup(cfg->create_args);
	s->backup_budget = cfg->backup_budget ? xstrdup(cfg->backup_budget) : NULL;
	s->tools = toolset_declarations(s->ts);
	if (s->tools_only) {
		/* No history, but the session is still one process's at a time. */
		if ((s->lock_fd = history_lock(s->name, e)) < 0)
			goto fail;
		return s;
	}

	if (open_history(s, cfg->must_exist, e) < 0)
		goto fail;
	return s;
fail:
	agent_session_free(s);
	return NULL;
}

struct json_object *agent_session_history(struct agent_session *s)
{
	return s->h ? history_messages(s->h) : NULL;
}

bool agent_session_is_new(const struct agent_session *s)
{
	return s->is_new;
}

const char *agent_session_backend(const struct agent_session *s)
{
	return s->backend;
}

const char *agent_session_name(const struct agent_session *s)
{
	return s->name;
}

const char *agent_session_model(const struct agent_session *s)
{
	return s->model;
}

const char *agent_session_homedir(const struct agent_session *s)
{
	return s->homedir;
}

const char *agent_session_namespace(const struct agent_session *s)
{
	return s->ns;
}

bool agent_session_dirty(const struct agent_session *s)
{
	return s->dirty;
}

int agent_session_set_model(struct agent_session *s, const char *model, struct sbx_err *e)
{
	if (llm_key_check(model, e) < 0)
		return err_set(e, SBX_EINVAL, "%s for model \"%s\"", LLM_KEY_REQUIRED, model);
	free(s->model);
	s->model = xstrdup(model);
	return 0;
}

void agent_session_set_workdir(struct agent_session *s, const char *workdir)
{
	if ((workdir == NULL) != (s->workdir == NULL) || (workdir && strcmp(workdir, s->workdir))) {
		free(s->workdir);
		s->workdir = dup_or_null(workdir);
		s->workdir_made = false;
	}
}

const char *agent_session_workdir(const struct agent_session *s)
{
	return s->workdir;
}

void agent_session_free(struct agent_session *s)
{
	if (s == NULL)
		return;
	if (s->h)
		history_close(s->h);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	if (s->b)
		backend_close(s->b);
	json_object_put(s->tools);
	json_object_put(s->parts);
	free(s->name);
	free(s->backend);
	free(s->ns);
	free(s->image);
	free(s->homedir);
	free(s->model);
	free(s->bindir);
	free(s->workdir);
	for (char **w = s->create_args; w && *w; w++)
		free(*w);
	free(s->create_args);
	free(s->backup_budget);
	free(s);
}

int agent_session_close(struct agent_session *s, struct sbx_err *e)
{
	int rc = agent_session_delete_sandbox(s, e);

	agent_session_free(s);
	return rc;
}
