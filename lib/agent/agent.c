/* agent.c — one agent turn composed from the sbx programs (see agent.h for the picture). */
#include "agent.h"

#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "backup.h"
#include "child.h"
#include "duration.h"
#include "eliza.h"
#include "exitcode.h"
#include "gojson.h"
#include "history.h"
#include "jsonfield.h"
#include "llm.h"
#include "name.h"
#include "timeutil.h"
#include "toolset.h"
#include "toolmsg.h"
#include "xalloc.h"

/* sbx-tool's statuses: 0 the tool ran, 1 the registry reported an error (message printed),
 * 101 the sandbox was not there (nothing ran: safe to recreate it and call again), 102 it went
 * away while the tool ran (message printed; the call may have run in part, never repeated). */
/* client-go's text when neither in-cluster nor kubeconfig configuration exists. */
#define KUBE_NO_CONFIG "invalid configuration: no configuration has been provided, try setting " \
	"KUBERNETES_MASTER environment variable"

struct agent_session {
	char *name, *backend, *ns, *image, *homedir, *model, *bindir;
	char **create_args;		/* NULL-terminated copy of agent_config.create_args */
	char *backup_budget;		/* NULL, or -backup-budget's SIZE */
	const struct toolset *ts;
	int64_t tool_timeout_ns, ttl_ns;
	int max_rounds;
	struct history *h;
	struct json_object *tools;	/* the toolset's declarations */
	bool is_new;
	char *workdir;			/* tools' working directory; NULL: the backend's */
	struct agent_extra_tools extra;	/* beyond the toolset's (run NULL: none) */
	bool workdir_made;		/* made in the live sandbox */
	bool want_usage;
	bool active;			/* a sandbox this session made is believed alive */
	bool created;			/* this session made (or adopted) one: delete on close */
	bool tools_only, in_process;
	bool dirty;			/* a call that may have changed the home ran since a snapshot */
	struct sbx_backend *b;		/* in_process: opened on the first call */
	int64_t touched_ns;		/* monotonic time of the last touch or create */
	int lock_fd;			/* tools_only: the session's lock (history_lock), or -1 */
	void (*log)(void *, enum agent_log_level, const char *);
	void (*trace)(void *, const char *, const char *);
	void *log_arg;
};

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

static void logf_(struct agent_session *s, enum agent_log_level lv, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void logf_(struct agent_session *s, enum agent_log_level lv, const char *fmt, ...)
{
	va_list ap;
	char *m;

	if (s->log == NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	if (m) {
		s->log(s->log_arg, lv, m);
		free(m);
	}
}

static void trace(struct agent_session *s, const char *label, const char *json)
{
	if (s->trace)
		s->trace(s->log_arg, label, json);
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
		logf_(s, AGENT_LOG_WARN, "%s", history_warning(s->h));
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
	s->model = xstrdup(cfg->tools_only ? "" : llm_pick_model(cfg->model, NULL));
	if (!s->tools_only && strcmp(s->model, ELIZA_MODEL) != 0 && llm_env_key() == NULL) {
		err_set(e, SBX_EINVAL, "GEMINI_API_KEY or OPENAI_API_KEY environment variable is required");
		goto fail;
	}
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
	if (tsname == NULL || *tsname == '\0')
		tsname = getenv("TOOLSET");
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

/* ---- children ---- */

/* A child's argv is a strvec (lib/util/xalloc.h): it grows and owns its words. */
static void arg(struct strvec *a, const char *s)
{
	strvec_push(a, s);
}

static void arg_own(struct strvec *a, char *s)
{
	strvec_push(a, s);
	free(s);
}

static void argv_free(struct strvec *a)
{
	strvec_clear(a);
}

/* argv[0] plus the backend selection every sandbox tool takes. */
static void argv_sbx(struct agent_session *s, struct strvec *a, const char *prog)
{
	memset(a, 0, sizeof *a);
	arg(a, prog);
	arg(a, "-backend");
	arg(a, s->backend);
	arg(a, "-namespace");
	arg(a, s->ns);
}

static void arg_duration(struct strvec *a, const char *flag, int64_t ns)
{
	char d[DURATION_BUFSZ];

	arg(a, flag);
	arg_own(a, xstrdup(duration_format(ns, d, sizeof d)));
}

/* -v: the command line, quoted for a POSIX shell, so the step can be rerun by hand. */
static void trace_argv(struct agent_session *s, struct strvec *a)
{
	struct buf b = {0};

	if (s->trace == NULL)
		return;
	for (size_t i = 0; i < a->n; i++) {
		const char *w = a->v[i];
		if (i > 0)
			buf_puts(&b, " ");
		if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				 "-_./:=,+@%") == strlen(w)) {
			buf_puts(&b, w);
			continue;
		}
		buf_puts(&b, "'");
		for (; *w; w++)
			buf_puts(&b, *w == '\'' ? "'\\''" : (char[]){*w, 0});
		buf_puts(&b, "'");
	}
	s->trace(s->log_arg, "$", b.data);
	buf_free(&b);
}

/* Runs argv (argv[0] = program name) found next to us, else on PATH. */
static int run(struct agent_session *s, struct strvec *a, const char *in, size_t in_len,
	       int cancel_fd, int (*on_line)(void *, char *, size_t), void *larg,
	       struct child_result *res, struct sbx_err *e)
{
	char *path;

	trace_argv(s, a);
	path = child_find(s->bindir, a->v[0]);
	struct child_req rq = {.path = path ? path : a->v[0], .argv = a->v, .in = in,
			       .in_len = in_len, .cancel_fd = cancel_fd, .on_line = on_line,
			       .arg = larg};
	int rc = child_run(&rq, res, e);

	free(path);
	return rc;
}

/* The message of a failed child: its stderr's last line, else its status. */
static char *failure(const struct child_result *res, const char *prog)
{
	char *m = child_err_message(res, prog);

	if (*m == '\0') {
		free(m);
		m = xasprintf("%s exited with status %d", prog, res->status);
	}
	return m;
}

static bool fired(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return fd >= 0 && poll(&p, 1, 0) == 1;
}

/* Runs a sandbox tool that prints one JSON document; *doc gets it (NULL if unparsable).
 * Returns the child's status, -1 with e when it could not run, -2 when cancelled. */
static int run_doc(struct agent_session *s, struct strvec *a, int cancel_fd,
		   struct json_object **doc, char **msg, struct sbx_err *e)
{
	struct child_result res;
	const char *why;
	char label[64];
	int st;

	*doc = NULL;
	*msg = NULL;
	if (run(s, a, NULL, 0, cancel_fd, NULL, NULL, &res, e) < 0)
		return -1;
	if (res.canceled) {
		child_result_free(&res);
		err_set(e, SBX_ECANCELED, "context canceled");
		return -2;
	}
	snprintf(label, sizeof label, "%s >", a->v[0]);
	if (res.out_len > 0)
		trace(s, label, res.out);
	*doc = gojson_parse(res.out, res.out_len, &why);
	if (res.status != 0)
		*msg = failure(&res, a->v[0]);
	st = res.status;
	child_result_free(&res);
	return st;
}

/* ---- the sandbox lifecycle ---- */

/* Whether the session's sandbox still owes a restore: made new and never restored (see
 * BACKUP_OWED), or a restore that began and never finished (BACKUP_RESTORING). */
static bool owes_restore(const char *name)
{
	char *b = backup_restoring(name);

	free(b);
	return b != NULL || backup_owed(name);
}

/* Restores the session's backups into its sandbox. A failure that leaves the restore owed (a
 * full disk, an I/O error, a cancel) is an error: no command may run on a home that is
 * missing the user's files. Backups that are all refused for what they hold settle it, and
 * the session goes on fresh (upstream's way). 0, or -1 with e. */
static int restore(struct agent_session *s, int cancel_fd, struct sbx_err *e)
{
	struct json_object *doc, *v;
	struct strvec a;
	char *msg;
	int st, rc = 0;

	logf_(s, AGENT_LOG_INFO, "restoring filesystem to sandbox...");
	argv_sbx(s, &a, "sbx-restore");	/* the sandbox's home is s->homedir already */
	arg(&a, "-optional");		/* no backup yet: a fresh start, as upstream */
	arg(&a, s->name);
	st = run_doc(s, &a, cancel_fd, &doc, &msg, e);
	if (st != 0 && (st == -2 || owes_restore(s->name))) {
		if (st != -2)
			err_set(e, SBX_EIO, "failed to restore filesystem, and no command runs on a "
				"home missing the session's files (the next call tries again): %s",
				st < 0 ? e->msg : msg);
		rc = -1;
	} else if (st != 0) {
		logf_(s, AGENT_LOG_WARN, "failed to restore filesystem; starting with a fresh sandbox "
		      "instead: %s", st < 0 ? e->msg : msg);
	} else if (json_object_object_get_ex(doc, "restored", &v) && json_object_is_type(v, json_type_string)) {
		logf_(s, AGENT_LOG_INFO, "restoring filesystem from latest backup backup=\"%s\"",
		      json_object_get_string(v));
	} else {
		logf_(s, AGENT_LOG_INFO, "no backup to restore; starting with a fresh sandbox");
	}
	json_object_put(doc);
	free(msg);
	argv_free(&a);
	return rc;
}

/* True (and said) when the session's sandbox owes a restore (see owes_restore): its home is
 * empty or partial, so it is restored before anything else runs in it. */
static bool restore_unfinished(struct agent_session *s)
{
	char *b = backup_restoring(s->name);

	if (b != NULL)
		logf_(s, AGENT_LOG_WARN, "the last restore into sandbox %s (from %s) did not finish; "
		      "restoring again", s->name, b);
	else if (backup_owed(s->name))
		logf_(s, AGENT_LOG_WARN, "sandbox %s was made and never restored from the session's "
		      "backups; restoring now", s->name);
	else
		return false;
	free(b);
	return true;
}

static int create(struct agent_session *s, int cancel_fd, struct sbx_err *e)
{
	struct json_object *doc, *v;
	struct strvec a;
	char *msg;
	int st, rc = -1;
	bool reused;

	logf_(s, AGENT_LOG_INFO, "launching sandbox for tool execution...");
	argv_sbx(s, &a, "sbx-create");
	if (s->image) {
		arg(&a, "-image");
		arg(&a, s->image);
	}
	arg(&a, "-homedir");
	arg(&a, s->homedir);
	if (s->ttl_ns > 0)
		arg_duration(&a, "-ttl", s->ttl_ns);
	for (char **w = s->create_args; *w; w++)
		arg(&a, *w);
	arg(&a, s->name);
	s->created = true;	/* even a cancelled or failed create may leave something to delete */
	st = run_doc(s, &a, cancel_fd, &doc, &msg, e);
	if (st == -2 || st == -1) {
		if (st == -1)
			err_prefix(e, "failed to create sandbox");
		goto out;
	}
	if (st != 0) {
		err_set(e, SBX_EIO, "failed to create sandbox: %s", msg);
		goto out;
	}
	s->active = true;
	s->touched_ns = time_mono_ns();
	reused = json_object_object_get_ex(doc, "reused", &v) && json_object_get_boolean(v);
	if (reused && !restore_unfinished(s))
		logf_(s, AGENT_LOG_INFO, "reusing the ready sandbox %s (not restoring over it)", s->name);
	else if (restore(s, cancel_fd, e) < 0)
		goto out;	/* still owed: the next call restores before it runs */
	rc = 0;
out:
	json_object_put(doc);
	free(msg);
	argv_free(&a);
	return rc;
}

/* Backend plugins are loaded and initialised once per process; two sessions opening their
 * first backend on two threads must not race there. */
static pthread_mutex_t backend_open_mu = PTHREAD_MUTEX_INITIALIZER;

/* in_process: the session's backend, opened on first use. */
static struct sbx_backend *backend_of(struct agent_session *s, struct sbx_err *e)
{
	if (s->b == NULL) {
		pthread_mutex_lock(&backend_open_mu);
		s->b = backend_open(s->backend, s->ns, e);
		pthread_mutex_unlock(&backend_open_mu);
	}
	return s->b;
}

static int64_t agent_ttl(const struct agent_session *s)
{
	return s->ttl_ns > 0 ? s->ttl_ns : SBX_DEFAULT_TTL_NS;
}

/* sbx-touch's work in this process; the same statuses as the program. */
static int touch_direct(struct agent_session *s, struct sbx_err *e)
{
	struct sbx_backend *b = backend_of(s, e);
	struct sbx_info info;

	if (b == NULL)
		return EXIT_FAIL;
	if (sbx_touch(b, s->name, agent_ttl(s), &info, e) == 0)
		return 0;
	return exitcode_of_err(e->code);
}

/* Moves the shutdown time. 0 ok, 1 the sandbox is gone, -1 error (e). */
static int touch(struct agent_session *s, int cancel_fd, struct sbx_err *e)
{
	struct json_object *doc = NULL;
	struct strvec a;
	char *msg = NULL;
	int st, rc;

	argv_sbx(s, &a, "sbx-touch");
	if (s->ttl_ns > 0)
		arg_duration(&a, "-ttl", s->ttl_ns);
	arg(&a, s->name);
	if (s->in_process) {
		trace_argv(s, &a);
		st = touch_direct(s, e);
		if (st != 0)
			msg = xstrdup(e->msg);
	} else {
		st = run_doc(s, &a, cancel_fd, &doc, &msg, e);
	}
	if (st == 0) {
		rc = 0;
		s->touched_ns = time_mono_ns();
	}
	else if (st == EXIT_NOTFOUND)
		rc = 1;
	else if (st < 0)
		rc = -1;
	else
		rc = err_set(e, SBX_EIO, "%s", msg);
	json_object_put(doc);
	free(msg);
	argv_free(&a);
	return rc;
}

/* mkdir -p the tools' working directory (after a restore, which may replace the home). */
static int make_workdir(struct agent_session *s, int cancel_fd, struct sbx_err *e)
{
	struct json_object *doc;
	struct strvec a;
	char *msg;
	int st;

	if (s->workdir == NULL || s->workdir_made)
		return 0;
	argv_sbx(s, &a, "sbx-exec");
	arg(&a, s->name);
	arg(&a, "--");
	arg(&a, "mkdir");
	arg(&a, "-p");
	arg(&a, "--");
	arg(&a, s->workdir);
	st = run_doc(s, &a, cancel_fd, &doc, &msg, e);
	if (st == 0)
		s->workdir_made = true;
	else if (st > 0)
		err_set(e, SBX_EIO, "failed to create the working directory %s: %s", s->workdir, msg);
	else if (e->code != SBX_ECANCELED)
		err_prefix(e, "failed to create the working directory %s", s->workdir);
	json_object_put(doc);
	free(msg);
	argv_free(&a);
	return st == 0 ? 0 : -1;
}

/* A live sandbox whose restore is unfinished is restored again, then its working directory
 * made again (the restore may have replaced the home). 0, or -1 with e. */
static int settle_live(struct agent_session *s, int cancel_fd, struct sbx_err *e)
{
	if (restore_unfinished(s)) {
		s->workdir_made = false;
		if (restore(s, cancel_fd, e) < 0)
			return -1;
	}
	return make_workdir(s, cancel_fd, e);
}

/* Upstream's ensureSandbox: reuse (touched) or create + restore; then the working directory. */
static int ensure_sandbox(struct agent_session *s, int cancel_fd, struct sbx_err *e)
{
	/* A tools-only session touches after its answer (agent_session_touch); before the call
	 * only when less than half the lifetime is left, so a call never starts that close to
	 * the deadline. A sandbox that vanished meanwhile is found by the call itself. */
	if (s->active && s->tools_only && time_mono_ns() - s->touched_ns < agent_ttl(s) / 2)
		return settle_live(s, cancel_fd, e);
	if (s->active) {
		int t = touch(s, cancel_fd, e);
		if (t == 0)
			return settle_live(s, cancel_fd, e);
		if (t < 0) {
			if (e->code != SBX_ECANCELED)
				err_prefix(e, "extending sandbox TTL");
			return -1;
		}
		logf_(s, AGENT_LOG_INFO, "Active sandbox was deleted or expired, will recreate it");
		s->active = false;
	}
	s->workdir_made = false;
	if (create(s, cancel_fd, e) < 0)
		return -1;
	return make_workdir(s, cancel_fd, e);
}

static int snapshot(struct agent_session *s, int cancel_fd)
{
	struct json_object *doc, *v;
	struct strvec a;
	struct sbx_err e;
	char *msg;
	int st;

	argv_sbx(s, &a, "sbx-snapshot");	/* the sandbox's home is s->homedir already */
	if (s->backup_budget) {
		arg(&a, "-backup-budget");
		arg(&a, s->backup_budget);
	}
	arg(&a, s->name);
	st = run_doc(s, &a, cancel_fd, &doc, &msg, &e);
	if (st != 0) {
		logf_(s, AGENT_LOG_WARN, "failed to snapshot filesystem: %s", st < 0 ? e.msg : msg);
	} else {
		if (json_object_object_get_ex(doc, "pruned", &v) && json_object_is_type(v, json_type_array))
			for (size_t i = 0; i < json_object_array_length(v); i++)
				logf_(s, AGENT_LOG_INFO, "pruned old backup backup=\"%s\"",
				      json_object_get_string(json_object_array_get_idx(v, i)));
		if (json_object_object_get_ex(doc, "path", &v))
			logf_(s, AGENT_LOG_INFO, "saved filesystem state to new backup backup=\"%s\"",
			      json_object_get_string(v));
		s->dirty = false;
	}
	json_object_put(doc);
	free(msg);
	argv_free(&a);
	return st == 0 ? 0 : -1;
}

int agent_session_snapshot(struct agent_session *s, int cancel_fd)
{
	if (!s->dirty || !s->active)
		return 0;
	return snapshot(s, cancel_fd);
}

int agent_session_delete_sandbox(struct agent_session *s, struct sbx_err *e)
{
	struct json_object *doc;
	struct strvec a;
	char *msg;
	int st, rc = 0;

	if (!s->created)
		return 0;
	argv_sbx(s, &a, "sbx-delete");
	arg(&a, s->name);
	st = run_doc(s, &a, -1, &doc, &msg, e);
	if (st > 0)
		rc = err_set(e, SBX_EIO, "failed to delete sandbox %s: %s", s->name, msg);
	else if (st < 0)
		rc = err_prefix(e, "failed to delete sandbox %s", s->name);
	else
		s->created = s->active = false;
	json_object_put(doc);
	free(msg);
	argv_free(&a);
	return rc;
}

/* ---- one turn ---- */

struct llm_read {
	struct agent_session *s;
	const struct agent_callbacks *cb;
	struct json_object *final;	/* its "message" */
	struct json_object *last;	/* the whole {"message":…,"finish_reason":…} line */
};

static int on_llm_line(void *arg, char *line, size_t len)
{
	struct llm_read *r = arg;
	struct json_object *ev, *v;
	const char *why;

	if (len == 0)
		return 0;
	trace(r->s, "llm-chat >", line);
	if ((ev = gojson_parse(line, len, &why)) == NULL)
		return 0;
	if (json_object_object_get_ex(ev, "delta", &v) && json_object_is_type(v, json_type_string)) {
		if (r->cb && r->cb->on_delta && json_object_get_string_len(v) > 0)
			r->cb->on_delta(r->cb->arg, json_object_get_string(v),
					(size_t)json_object_get_string_len(v));
	} else if (json_object_object_get_ex(ev, "reasoning_delta", &v) &&
		   json_object_is_type(v, json_type_string)) {
		if (r->cb && r->cb->on_thought && json_object_get_string_len(v) > 0)
			r->cb->on_thought(r->cb->arg, json_object_get_string(v),
					  (size_t)json_object_get_string_len(v));
	} else if (json_object_object_get_ex(ev, "retry", &v) &&
		   json_object_is_type(v, json_type_object)) {
		const char *err = jsonfield_str(v, "error");
		struct json_object *k = NULL, *m = NULL, *w = NULL;
		json_object_object_get_ex(v, "attempt", &k);
		json_object_object_get_ex(v, "attempts", &m);
		json_object_object_get_ex(v, "wait_ms", &w);
		if (r->cb && r->cb->on_llm_retry)
			r->cb->on_llm_retry(r->cb->arg, err ? err : "", json_object_get_int64(w) * 1000000,
					    json_object_get_int(k), json_object_get_int(m));
	} else if (json_object_object_get_ex(ev, "message", &v) &&
		   json_object_is_type(v, json_type_object)) {
		json_object_put(r->final);
		r->final = json_object_get(v);
		json_object_put(r->last);
		r->last = json_object_get(ev);
	}
	json_object_put(ev);
	return 0;
}

/* One chat completion through llm-chat -stream. New reference, or NULL with e. */
static struct json_object *call_llm(struct agent_session *s, const struct agent_callbacks *cb,
				    int cancel_fd, struct sbx_err *e)
{
	struct json_object *req = json_object_new_object();
	struct llm_read r = {.s = s, .cb = cb};
	struct child_result res;
	struct strvec a = {0};
	char *body, *msg;

	json_object_object_add(req, "model", json_object_new_string(s->model));
	/* Every stored field goes to llm-chat, whose vendor policy (lib/llm/vendor.c) sends each vendor
	 * what it requires back (DeepSeek's reasoning_content in a tool-call turn) and nothing
	 * it refuses. */
	json_object_object_add(req, "messages", json_object_get(history_messages(s->h)));
	if (s->extra.decls && json_object_array_length(s->extra.decls) > 0) {
		struct json_object *all = json_object_new_array();
		size_t i;
		for (i = 0; i < json_object_array_length(s->tools); i++)
			json_object_array_add(all, json_object_get(json_object_array_get_idx(s->tools, i)));
		for (i = 0; i < json_object_array_length(s->extra.decls); i++)
			json_object_array_add(all, json_object_get(json_object_array_get_idx(s->extra.decls, i)));
		json_object_object_add(req, "tools", all);
	} else if (json_object_array_length(s->tools) > 0) {
		json_object_object_add(req, "tools", json_object_get(s->tools));
	}
	if (s->want_usage) {
		struct json_object *so = json_object_new_object();
		json_object_object_add(so, "include_usage", json_object_new_boolean(1));
		json_object_object_add(req, "stream_options", so);
	}
	body = gojson_encode(req);
	json_object_put(req);
	trace(s, "llm-chat <", body);
	arg(&a, "llm-chat");
	arg(&a, "-stream");
	if (run(s, &a, body, strlen(body), cancel_fd, on_llm_line, &r, &res, e) < 0) {
		argv_free(&a);
		free(body);
		return NULL;
	}
	argv_free(&a);
	free(body);
	if (res.canceled) {
		err_set(e, SBX_ECANCELED, "context canceled");
	} else if (res.status != 0) {
		msg = failure(&res, "llm-chat");
		err_set(e, SBX_EIO, "%s", msg);
		free(msg);
	} else if (r.final == NULL) {
		err_set(e, SBX_EIO, "llm-chat printed no message");
	}
	child_result_free(&res);
	if (e->code != SBX_OK) {
		json_object_put(r.final);
		json_object_put(r.last);
		return NULL;
	}
	if (cb && cb->on_llm_done) {
		struct json_object *f = NULL, *u = NULL;
		json_object_object_get_ex(r.last, "finish_reason", &f);
		json_object_object_get_ex(r.last, "usage", &u);
		cb->on_llm_done(cb->arg, json_object_is_type(f, json_type_string) ?
				json_object_get_string(f) : "",
				json_object_is_type(u, json_type_object) ? u : NULL);
	}
	json_object_put(r.last);
	return r.final;
}

static void call_of(struct json_object *raw, struct agent_tool_call *c)
{
	struct json_object *fn = NULL;

	json_object_object_get_ex(raw, "function", &fn);
	c->id = jsonfield_str_or(raw, "id", "");
	c->name = jsonfield_str_or(fn, "name", "");
	c->arguments = jsonfield_str_or(fn, "arguments", "");
	c->raw = raw;
}

/* content[0..len) may hold NUL bytes (a tool's binary output): kept, as \u0000. */
static struct json_object *tool_message(const char *id, const char *content, size_t len)
{
	struct json_object *m = json_object_new_object();

	json_object_object_add(m, "role", json_object_new_string("tool"));
	json_object_object_add(m, "content", json_object_new_string_len(content, (int)len));
	json_object_object_add(m, "tool_call_id", json_object_new_string(id));
	return m;
}

/* sbx-tool's input for a call: the fields it defines only (a model's vendor fields stay in the
 * history), arguments as the model sent them (JSON text, or an object). Newly allocated. */
static char *call_doc(const struct agent_tool_call *c)
{
	struct json_object *d = json_object_new_object(), *f = json_object_new_object(), *fn, *v;
	char *text;

	json_object_object_add(d, "id", json_object_new_string(c->id));
	json_object_object_add(d, "type", json_object_new_string("function"));
	json_object_object_add(f, "name", json_object_new_string(c->name));
	if (json_object_object_get_ex(c->raw, "function", &fn) &&
	    json_object_object_get_ex(fn, "arguments", &v) && v != NULL)
		json_object_object_add(f, "arguments", json_object_get(v));
	json_object_object_add(d, "function", f);
	text = gojson_encode(d);
	json_object_put(d);
	return text;
}

/* sbx-tool's work in this process: the same content, failure flag and errors. */
static char *run_tool_direct(struct agent_session *s, const struct agent_tool_call *c,
			     int cancel_fd, size_t *len, bool *failed,
			     struct json_object **structured, struct sbx_err *e)
{
	struct sbx_backend *b = backend_of(s, e);
	struct tool_ctx ctx = {.b = b, .sandbox = s->name, .homedir = s->homedir,
			       .timeout_ns = s->tool_timeout_ns, .cancel_fd = cancel_fd,
			       .structured = structured, .call_id = c->id};
	char *out;
	int f = 1;

	*failed = true;
	if (b == NULL) {
		out = toolmsg_run_failed(c->name, e->msg);
		*len = strlen(out);
		return out;
	}
	if ((out = toolset_call(s->ts, &ctx, c->name, c->arguments, len, &f, e)) == NULL) {
		if (e->code != SBX_ECANCELED && e->code != SBX_ENOTFOUND) {
			out = toolmsg_run_failed(c->name, e->msg);
			*len = strlen(out);
		}
		return out;
	}
	*failed = f != 0;
	if (f == TOOL_SANDBOX_GONE) {
		logf_(s, AGENT_LOG_INFO, "sandbox %s went away while the tool ran; the call is "
		      "not repeated, the next one recreates it", s->name);
		s->active = false;
	}
	if (s->trace) {
		struct json_object *m = tool_message(c->id, out, *len);
		char *t = gojson_encode(m);
		trace(s, "sbx-tool >", t);
		free(t);
		json_object_put(m);
	}
	return out;
}

/* Runs one approved call through sbx-tool (or its work in this process). Returns the tool
 * message's content (newly allocated) with *failed, or NULL with e (cancelled, or the sandbox
 * was not there before the call started: SBX_ENOTFOUND, the one case that may be retried). A
 * sandbox that went away while the call ran is an answer (the call may have run in part) and
 * makes it inactive. structured: NULL, or where an in-process call puts the tool's structured
 * result. */
static char *run_tool(struct agent_session *s, const struct agent_tool_call *c, int cancel_fd,
		      size_t *len, bool *failed, struct json_object **structured, struct sbx_err *e)
{
	struct child_result res;
	struct json_object *doc = NULL;
	struct strvec a;
	const char *why;
	char *in = call_doc(c), *out = NULL, *msg;
	bool sized = false;

	trace(s, "sbx-tool <", in);
	argv_sbx(s, &a, "sbx-tool");
	arg(&a, "-toolset");
	arg(&a, s->ts->name);
	arg_duration(&a, "-tool-timeout", s->tool_timeout_ns);
	arg(&a, "-homedir");
	arg(&a, s->homedir);
	if (s->workdir) {
		arg(&a, "-workdir");
		arg(&a, s->workdir);
	}
	arg(&a, s->name);
	*failed = true;
	if (s->in_process) {
		trace_argv(s, &a);
		out = run_tool_direct(s, c, cancel_fd, len, failed, structured, e);
		sized = true;
		goto done;
	}
	if (run(s, &a, in, strlen(in), cancel_fd, NULL, NULL, &res, e) < 0) {
		out = toolmsg_run_failed(c->name, e->msg);
		err_clear(e);
		goto done;
	}
	if (res.out_len)
		trace(s, "sbx-tool >", res.out);
	if (res.canceled) {
		err_set(e, SBX_ECANCELED, "context canceled");
	} else if (res.status == EXIT_NOTFOUND) {
		err_set(e, SBX_ENOTFOUND, "sandbox %s not found", s->name);
	} else if ((res.status == 0 || res.status == EXIT_TOOL_FAILED || res.status == EXIT_GONE) &&
		   (doc = gojson_parse(res.out, res.out_len, &why)) != NULL &&
		   json_object_is_type(doc, json_type_object)) {
		struct json_object *v = NULL;
		size_t n = 0;
		if (json_object_object_get_ex(doc, "content", &v) && json_object_is_type(v, json_type_string))
			n = (size_t)json_object_get_string_len(v);
		out = xmalloc(n + 1);
		memcpy(out, n ? json_object_get_string(v) : "", n);
		out[n] = '\0';
		*len = n;
		sized = true;
		*failed = res.status != 0;
		if (res.status == EXIT_GONE) {
			logf_(s, AGENT_LOG_INFO, "sandbox %s went away while the tool ran; the call is "
			      "not repeated, the next one recreates it", s->name);
			s->active = false;
		}
	} else {
		msg = failure(&res, "sbx-tool");
		out = toolmsg_run_failed(c->name, msg);
		free(msg);
	}
	child_result_free(&res);
done:
	if (out && !sized)
		*len = strlen(out);
	json_object_put(doc);
	argv_free(&a);
	free(in);
	return out;
}

/* Stores a tool message for every call from index `from` on, as one append: the cancellation
 * text when text is NULL, else `Error calling tool "<name>": <text>` (the turn's error).
 * started: call `from` was announced with on_tool_start, so it gets its on_tool_end. */
static void close_calls(struct agent_session *s, struct json_object *calls, size_t from,
			const struct agent_callbacks *cb, bool started, const char *text)
{
	size_t n = json_object_array_length(calls), k = 0, i;
	struct json_object **msgs = xcalloc(n + 1, sizeof *msgs);
	struct sbx_err e;

	for (i = from; i < n; i++) {
		struct agent_tool_call c;
		char *content;
		call_of(json_object_array_get_idx(calls, i), &c);
		content = text ? toolmsg_error(c.name, "%s", text) : toolmsg_cancelled(c.name);
		if (i == from && started && cb && cb->on_tool_end)
			cb->on_tool_end(cb->arg, &c, true, content);
		msgs[k++] = tool_message(c.id, content, strlen(content));
		free(content);
	}
	if (k > 0 && history_append(s->h, msgs, k, &e) < 0)
		logf_(s, AGENT_LOG_WARN, "adding tool messages: %s", e.msg);
	for (i = 0; i < k; i++)
		json_object_put(msgs[i]);
	free(msgs);
}

static int append1(struct agent_session *s, struct json_object *m, struct sbx_err *e)
{
	return history_append(s->h, &m, 1, e);
}

/* Whether name is one of the session's extra tools. */
static bool is_extra(const struct agent_session *s, const char *name)
{
	size_t i, n = s->extra.run && s->extra.decls ? json_object_array_length(s->extra.decls) : 0;

	for (i = 0; i < n; i++) {
		struct json_object *fn = NULL;
		json_object_object_get_ex(json_object_array_get_idx(s->extra.decls, i), "function", &fn);
		if (strcmp(jsonfield_str_or(fn, "name", ""), name) == 0)
			return true;
	}
	return false;
}

/* Whether name is an extra tool answered without the sandbox. */
static bool is_local(const struct agent_session *s, const char *name)
{
	return s->extra.local && is_extra(s, name) && s->extra.local(s->extra.arg, name);
}

void agent_session_set_extra_tools(struct agent_session *s, const struct agent_extra_tools *x)
{
	if (x)
		s->extra = *x;
	else
		memset(&s->extra, 0, sizeof s->extra);
}

int agent_session_ensure_sandbox(struct agent_session *s, int cancel_fd, struct sbx_err *e)
{
	return ensure_sandbox(s, cancel_fd, e);
}

const char *agent_session_namespace(const struct agent_session *s)
{
	return s->ns;
}

/* One approved call with the sandbox lifecycle: ensure the sandbox (touch, or create +
 * restore), run the call, once more after remaking a sandbox that vanished in between, then
 * touch it again. *started tells whether on_tool_start was called. Returns the content (newly
 * allocated) with *failed, or NULL with e: SBX_ECANCELED, or the sandbox could not be made. */
static char *call_in_sandbox(struct agent_session *s, const struct agent_tool_call *c,
			     const struct agent_callbacks *cb, int cancel_fd, bool *started,
			     size_t *len, bool *failed, struct json_object **structured,
			     struct sbx_err *e)
{
	char *content = NULL;
	bool local = is_local(s, c->name);

	for (int tries = 0; tries < 2 && content == NULL; tries++) {
		if (!local && ensure_sandbox(s, cancel_fd, e) < 0)
			return NULL;
		if (!*started && cb && cb->on_tool_start)
			cb->on_tool_start(cb->arg, c);
		*started = true;
		if (is_extra(s, c->name)) {
			content = s->extra.run(s->extra.arg, c, cancel_fd, failed, e);
			if (content == NULL)
				return NULL;	/* only a cancellation */
			*len = strlen(content);	/* an MCP server's text */
			break;
		}
		content = run_tool(s, c, cancel_fd, len, failed, structured, e);
		if (content == NULL && e->code == SBX_ECANCELED)
			return NULL;
		if (content == NULL) {	/* not there before the call started */
			logf_(s, AGENT_LOG_INFO, "Active sandbox was deleted or expired, will recreate it");
			s->active = false;
		}
	}
	if (content == NULL) {
		content = toolmsg_run_failed(c->name, e->msg);
		*len = strlen(content);
	}
	if (cb && cb->on_tool_end)
		cb->on_tool_end(cb->arg, c, *failed, content);
	/* Upstream touches again after every call; a tools-only session's caller does it once
	 * the answer is out (agent_session_touch), so the client does not wait for it. */
	if (!s->tools_only && !local)
		agent_session_touch(s, cancel_fd);
	return content;
}

/* Runs the calls of one assistant message. 0 done, or an agent_status with e. */
static int run_calls(struct agent_session *s, struct json_object *calls,
		     const struct agent_callbacks *cb, int cancel_fd, bool *executed,
		     struct sbx_err *e)
{
	size_t n = json_object_array_length(calls), i;

	for (i = 0; i < n; i++) {
		struct agent_tool_call c;
		struct json_object *m;
		bool failed = true, started = false;
		char *content = NULL;
		size_t len = 0;		/* content may hold NUL bytes */
		int ok = 1;

		call_of(json_object_array_get_idx(calls, i), &c);
		if (fired(cancel_fd))
			goto cancelled;
		if (cb && cb->approve) {
			ok = cb->approve(cb->arg, &c, e);
			if (ok < 0 && e->code == SBX_ECANCELED)
				goto cancelled;
			if (ok < 0) {
				err_prefix(e, "requesting tool call approval");
				close_calls(s, calls, i, cb, false, e->msg);
				return AGENT_ERROR;
			}
		}
		if (ok == 0) {
			content = toolmsg_denied(c.name);
			len = strlen(content);
		} else {
			content = call_in_sandbox(s, &c, cb, cancel_fd, &started, &len, &failed, NULL, e);
			*executed = *executed || (started && !is_local(s, c.name));
			if (content == NULL && e->code == SBX_ECANCELED)
				goto cancelled;
			if (content == NULL) {
				close_calls(s, calls, i, cb, started, e->msg);
				return AGENT_ERROR;
			}
		}
		m = tool_message(c.id, content, len);
		free(content);
		if (append1(s, m, e) < 0) {
			json_object_put(m);
			err_prefix(e, "adding tool message");
			return AGENT_ERROR;
		}
		json_object_put(m);
		continue;
cancelled:
		close_calls(s, calls, i, cb, started, NULL);
		err_set(e, SBX_ECANCELED, "the turn was cancelled");
		return AGENT_CANCELED;
	}
	return 0;
}

int agent_tool_run(struct agent_session *s, const struct agent_tool_call *call,
		   const struct agent_callbacks *cb, int cancel_fd, struct agent_tool_result *out,
		   struct sbx_err *e)
{
	struct agent_tool_call c = *call;
	struct json_object *raw = NULL, *fn;
	const char *kind;
	bool started = false;

	memset(out, 0, sizeof *out);
	err_clear(e);
	if (c.raw == NULL) {	/* the tool_calls[] entry sbx-tool would read */
		raw = json_object_new_object();
		fn = json_object_new_object();
		json_object_object_add(raw, "id", json_object_new_string(c.id ? c.id : ""));
		json_object_object_add(raw, "type", json_object_new_string("function"));
		json_object_object_add(fn, "name", json_object_new_string(c.name));
		json_object_object_add(fn, "arguments", json_object_new_string(c.arguments ? c.arguments : ""));
		json_object_object_add(raw, "function", fn);
		c.raw = raw;
	}
	if (c.id == NULL)
		c.id = "";
	out->content = call_in_sandbox(s, &c, cb, cancel_fd, &started, &out->content_len,
				       &out->failed, s->in_process ? &out->structured : NULL, e);
	kind = toolset_tool_kind(c.name);
	if (started && strcmp(kind, "read") != 0 && strcmp(kind, "search") != 0)
		s->dirty = true;
	json_object_put(raw);
	if (out->content == NULL) {
		json_object_put(out->structured);
		out->structured = NULL;
		return -1;
	}
	return 0;
}

void agent_tool_result_free(struct agent_tool_result *r)
{
	free(r->content);
	json_object_put(r->structured);
	memset(r, 0, sizeof *r);
}

void agent_session_touch(struct agent_session *s, int cancel_fd)
{
	/* Tools-only: a Sandbox's shutdownTime is kept to the second, so a second touch within
	 * the same second moves nothing (a tenth of a shorter lifetime). agent-loop touches
	 * after every call, as upstream. */
	int64_t coalesce = agent_ttl(s) / 10 < INT64_C(1000000000) ? agent_ttl(s) / 10
			   : INT64_C(1000000000);
	struct sbx_err te;

	if (!s->active || (s->tools_only && time_mono_ns() - s->touched_ns < coalesce))
		return;
	if (touch(s, cancel_fd, &te) < 0 && te.code != SBX_ECANCELED)
		logf_(s, AGENT_LOG_WARN, "failed to extend sandbox lifetime: %s", te.msg);
}

bool agent_session_dirty(const struct agent_session *s)
{
	return s->dirty;
}

enum agent_status agent_turn(struct agent_session *s, const char *user_text,
			     const struct agent_callbacks *cb, int cancel_fd, char **reply,
			     struct sbx_err *e)
{
	struct json_object *content = json_object_new_string(user_text);
	enum agent_status st = agent_turn_content(s, content, cb, cancel_fd, reply, e);

	json_object_put(content);
	return st;
}

int agent_session_set_model(struct agent_session *s, const char *model, struct sbx_err *e)
{
	if (strcmp(model, ELIZA_MODEL) != 0 && llm_env_key() == NULL)
		return err_set(e, SBX_EINVAL, "GEMINI_API_KEY or OPENAI_API_KEY environment variable "
			       "is required for model \"%s\"", model);
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

enum agent_status agent_turn_content(struct agent_session *s, struct json_object *content,
				     const struct agent_callbacks *cb, int cancel_fd, char **reply,
				     struct sbx_err *e)
{
	struct json_object *user = json_object_new_object(), *msg, *stored, *calls;
	bool executed = false;
	int rounds = 0, st;

	*reply = NULL;
	err_clear(e);
	if (s->tools_only)
		return err_set(e, SBX_EINVAL, "session %s runs tool calls only (no LLM)", s->name);
	json_object_object_add(user, "role", json_object_new_string("user"));
	json_object_object_add(user, "content", json_object_get(content));
	st = append1(s, user, e);
	json_object_put(user);
	if (st < 0) {
		err_prefix(e, "adding user message");
		return AGENT_ERROR;
	}
	for (;;) {
		err_clear(e);
		if ((msg = call_llm(s, cb, cancel_fd, e)) == NULL) {
			if (e->code == SBX_ECANCELED)
				return AGENT_CANCELED;
			err_prefix(e, "failed to call LLM");
			return AGENT_ERROR;
		}
		if (!json_object_object_get_ex(msg, "role", NULL))
			json_object_object_add(msg, "role", json_object_new_string("assistant"));
		st = append1(s, msg, e);
		json_object_put(msg);
		if (st < 0) {
			err_prefix(e, "adding assistant message");
			return AGENT_ERROR;
		}
		stored = json_object_array_get_idx(history_messages(s->h),
						   json_object_array_length(history_messages(s->h)) - 1);
		if (!json_object_object_get_ex(stored, "tool_calls", &calls) ||
		    !json_object_is_type(calls, json_type_array) || json_object_array_length(calls) == 0) {
			if (cb && cb->on_assistant)
				cb->on_assistant(cb->arg, stored, true);
			if (executed && s->active)
				snapshot(s, cancel_fd);
			*reply = xstrdup(jsonfield_str_or(stored, "content", ""));
			return AGENT_DONE;
		}
		if (cb && cb->on_assistant)
			cb->on_assistant(cb->arg, stored, false);
		if ((st = run_calls(s, calls, cb, cancel_fd, &executed, e)) != 0)
			return (enum agent_status)st;
		if (++rounds >= s->max_rounds) {
			if (executed && s->active)
				snapshot(s, cancel_fd);
			err_set(e, SBX_EIO, "stopped after %d tool rounds in one turn (-max-tool-rounds %d); "
				"send another message to let the agent continue", rounds, s->max_rounds);
			return AGENT_LIMIT;
		}
	}
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
