/* agent_sandbox.c — the session's sandbox through its life, as upstream's ensureSandbox: made
 * (sbx-create) and restored (sbx-restore) once, touched to keep it, made again when it vanished,
 * its working directory made, snapshotted at turn ends, deleted at close. */
#include "agent_int.h"

#include <stdlib.h>
#include <string.h>

#include "backup.h"
#include "exitcode.h"
#include "timeutil.h"

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

	agent_logf(s, AGENT_LOG_INFO, "restoring filesystem to sandbox...");
	agent_argv_sbx(s, &a, "sbx-restore");	/* the sandbox's home is s->homedir already */
	agent_arg(&a, "-optional");		/* no backup yet: a fresh start, as upstream */
	agent_arg(&a, s->name);
	st = agent_run_doc(s, &a, cancel_fd, &doc, &msg, e);
	if (st != 0 && (st == -2 || owes_restore(s->name))) {
		if (st != -2)
			err_set(e, SBX_EIO, "failed to restore filesystem, and no command runs on a "
				"home missing the session's files (the next call tries again): %s",
				st < 0 ? e->msg : msg);
		rc = -1;
	} else if (st != 0) {
		agent_logf(s, AGENT_LOG_WARN, "failed to restore filesystem; starting with a fresh sandbox "
		      "instead: %s", st < 0 ? e->msg : msg);
	} else if (json_object_object_get_ex(doc, "restored", &v) && json_object_is_type(v, json_type_string)) {
		agent_logf(s, AGENT_LOG_INFO, "restoring filesystem from latest backup backup=\"%s\"",
		      json_object_get_string(v));
	} else {
		agent_logf(s, AGENT_LOG_INFO, "no backup to restore; starting with a fresh sandbox");
	}
	json_object_put(doc);
	free(msg);
	agent_argv_free(&a);
	return rc;
}

/* True (and said) when the session's sandbox owes a restore (see owes_restore): its home is
 * empty or partial, so it is restored before anything else runs in it. */
static bool restore_unfinished(struct agent_session *s)
{
	char *b = backup_restoring(s->name);

	if (b != NULL)
		agent_logf(s, AGENT_LOG_WARN, "the last restore into sandbox %s (from %s) did not finish; "
		      "restoring again", s->name, b);
	else if (backup_owed(s->name))
		agent_logf(s, AGENT_LOG_WARN, "sandbox %s was made and never restored from the session's "
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

	agent_logf(s, AGENT_LOG_INFO, "launching sandbox for tool execution...");
	agent_argv_sbx(s, &a, "sbx-create");
	if (s->image) {
		agent_arg(&a, "-image");
		agent_arg(&a, s->image);
	}
	agent_arg(&a, "-homedir");
	agent_arg(&a, s->homedir);
	if (s->ttl_ns > 0)
		agent_arg_duration(&a, "-ttl", s->ttl_ns);
	for (char **w = s->create_args; *w; w++)
		agent_arg(&a, *w);
	agent_arg(&a, s->name);
	s->created = true;	/* even a cancelled or failed create may leave something to delete */
	st = agent_run_doc(s, &a, cancel_fd, &doc, &msg, e);
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
		agent_logf(s, AGENT_LOG_INFO, "reusing the ready sandbox %s (not restoring over it)", s->name);
	else if (restore(s, cancel_fd, e) < 0)
		goto out;	/* still owed: the next call restores before it runs */
	rc = 0;
out:
	json_object_put(doc);
	free(msg);
	agent_argv_free(&a);
	return rc;
}

/* Moves the shutdown time. 0 ok, 1 the sandbox is gone, -1 error (e). */
static int touch(struct agent_session *s, int cancel_fd, struct sbx_err *e)
{
	struct strvec a;
	char *msg = NULL;
	int st, rc;

	agent_argv_sbx(s, &a, "sbx-touch");
	if (s->ttl_ns > 0)
		agent_arg_duration(&a, "-ttl", s->ttl_ns);
	agent_arg(&a, s->name);
	st = s->steps->touch(s, &a, cancel_fd, &msg, e);
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
	free(msg);
	agent_argv_free(&a);
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
	agent_argv_sbx(s, &a, "sbx-exec");
	agent_arg(&a, s->name);
	agent_arg(&a, "--");
	agent_arg(&a, "mkdir");
	agent_arg(&a, "-p");
	agent_arg(&a, "--");
	agent_arg(&a, s->workdir);
	st = agent_run_doc(s, &a, cancel_fd, &doc, &msg, e);
	if (st == 0)
		s->workdir_made = true;
	else if (st > 0)
		err_set(e, SBX_EIO, "failed to create the working directory %s: %s", s->workdir, msg);
	else if (e->code != SBX_ECANCELED)
		err_prefix(e, "failed to create the working directory %s", s->workdir);
	json_object_put(doc);
	free(msg);
	agent_argv_free(&a);
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
		agent_logf(s, AGENT_LOG_INFO, "Active sandbox was deleted or expired, will recreate it");
		s->active = false;
	}
	s->workdir_made = false;
	if (create(s, cancel_fd, e) < 0)
		return -1;
	return make_workdir(s, cancel_fd, e);
}

int agent_snapshot_now(struct agent_session *s, int cancel_fd)
{
	struct json_object *doc, *v;
	struct strvec a;
	struct sbx_err e;
	char *msg;
	int st;

	agent_argv_sbx(s, &a, "sbx-snapshot");	/* the sandbox's home is s->homedir already */
	if (s->backup_budget) {
		agent_arg(&a, "-backup-budget");
		agent_arg(&a, s->backup_budget);
	}
	agent_arg(&a, s->name);
	st = agent_run_doc(s, &a, cancel_fd, &doc, &msg, &e);
	if (st != 0) {
		agent_logf(s, AGENT_LOG_WARN, "failed to snapshot filesystem: %s", st < 0 ? e.msg : msg);
	} else {
		if (json_object_object_get_ex(doc, "pruned", &v) && json_object_is_type(v, json_type_array))
			for (size_t i = 0; i < json_object_array_length(v); i++)
				agent_logf(s, AGENT_LOG_INFO, "pruned old backup backup=\"%s\"",
				      json_object_get_string(json_object_array_get_idx(v, i)));
		if (json_object_object_get_ex(doc, "path", &v))
			agent_logf(s, AGENT_LOG_INFO, "saved filesystem state to new backup backup=\"%s\"",
			      json_object_get_string(v));
		s->dirty = false;
	}
	json_object_put(doc);
	free(msg);
	agent_argv_free(&a);
	return st == 0 ? 0 : -1;
}

int agent_session_snapshot(struct agent_session *s, int cancel_fd)
{
	if (!s->dirty || !s->active)
		return 0;
	return agent_snapshot_now(s, cancel_fd);
}

int agent_session_delete_sandbox(struct agent_session *s, struct sbx_err *e)
{
	struct json_object *doc;
	struct strvec a;
	char *msg;
	int st, rc = 0;

	if (!s->created)
		return 0;
	agent_argv_sbx(s, &a, "sbx-delete");
	agent_arg(&a, s->name);
	st = agent_run_doc(s, &a, -1, &doc, &msg, e);
	if (st > 0)
		rc = err_set(e, SBX_EIO, "failed to delete sandbox %s: %s", s->name, msg);
	else if (st < 0)
		rc = err_prefix(e, "failed to delete sandbox %s", s->name);
	else
		s->created = s->active = false;
	json_object_put(doc);
	free(msg);
	agent_argv_free(&a);
	return rc;
}

int agent_session_ensure_sandbox(struct agent_session *s, int cancel_fd, struct sbx_err *e)
{
	return ensure_sandbox(s, cancel_fd, e);
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
		agent_logf(s, AGENT_LOG_WARN, "failed to extend sandbox lifetime: %s", te.msg);
}
