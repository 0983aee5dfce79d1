/* local_backend.c — sandboxes as Linux namespaces made with bubblewrap on this host: their
 * state on the host and the backend operations (lib/local/local.h names the other two parts).
 *
 * State: $XDG_STATE_HOME/sbx/<namespace>/<name>/ holds spec.json (the handle, shaped like the
 * Kubernetes resource), deadline (shutdown time, ns), lock (flocked by the supervisor while
 * the sandbox lives: an unlocked directory is stale, e.g. after a reboot; a locked one whose
 * spec.json cannot be read is broken: listed as such, replaced by the next create), idle (with
 * -idle pause: what the supervisor does at the deadline instead of removing it), sock (the
 * exec service) and home/ (the sandbox home, the only persistent writable place). Operations
 * on one name are serialized by <namespace>/.<name>.lock. A supervisor (sbx-init supervise)
 * runs bubblewrap and removes everything when the deadline passes; inside, sbx-init serve
 * runs commands for sbx_exec over the socket, with the caller's own file descriptors. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "duration.h"
#include "fsutil.h"
#include "gojson.h"
#include "local.h"
#include "localnet.h"
#include "paths.h"
#include "reslimit.h"
#include "timeutil.h"
#include "xalloc.h"

/* How long a pause waits for the kernel to freeze every process of a sandbox (a process in
 * the middle of a system call is frozen when it returns: well under this). */
#define PAUSE_WAIT_MS 5000
/* After the exec service hangs up, how long a dying sandbox may take to be renamed away by its
 * supervisor (a kill and a rename: well under this). */
#define GONE_SETTLE_MS 500

/* e (local_read_spec's failure on live sandbox name) with what to do about it. */
static int broken_msg(const char *name, struct sbx_err *e)
{
	char why[sizeof e->msg];

	snprintf(why, sizeof why, "%s", e->msg);
	return err_set(e, SBX_EIO, "sandbox %s is broken (%s): sbx-create %s replaces it, "
		       "sbx-delete %s removes it", name, why, name, name);
}

/* Moves the shutdown time to now + ttl_ns; a reusing create (spec) sets the idle policy too. */
static int set_deadline(struct sbx_paths *p, const char *name, int64_t ttl_ns,
			const struct sbx_spec *spec, struct sbx_info *out, struct sbx_err *e)
{
	int pid;

	if (local_read_spec(p->dir, out, e) < 0)
		return broken_msg(name, e);
	out->shutdown_ns = time_now_ns() + ttl_ns;
	if (spec) {
		out->idle = spec->idle;
		out->paused_ttl = spec->paused_ttl;
	}
	if (local_write_spec(p->dir, out, ttl_ns, e) < 0)
		return -1;
	if ((pid = local_supervisor_pid(p->dir)) > 0)
		kill(pid, SIGHUP);	/* re-read the deadline now */
	out->ready = true;
	return 0;
}

static int not_found(const char *name, struct sbx_err *e)
{
	return err_set(e, SBX_ENOTFOUND, "sandbox %s not found", name);
}

/* Freezes or thaws live sandbox name in dir (lib/reslimit). One without a cgroup or without
 * a freezer cannot be paused, and is running: resuming it is success. */
static int set_paused(const char *dir, const char *name, bool paused, struct sbx_err *e)
{
	if (reslimit_freeze(dir, paused, PAUSE_WAIT_MS) == 0)
		return 0;
	if (!paused && (errno == ENOENT || errno == ENOTSUP))
		return 0;
	if (errno == ENOENT)
		return err_set(e, SBX_EUNAVAIL, "sandbox %s has no cgroup to freeze (it was made "
			       "with -limits none)", name);
	if (errno == ENOTSUP)
		return err_set(e, SBX_EUNAVAIL, "sandbox %s has no freezer (its cgroup v1 set has "
			       "no freezer hierarchy)", name);
	if (errno == ETIMEDOUT)
		return err_set(e, SBX_EIO, "sandbox %s did not freeze within %d s; it runs on",
			       name, PAUSE_WAIT_MS / 1000);
	return err_sys(e, errno, "cannot %s sandbox %s", paused ? "freeze" : "thaw", name);
}

/* Under the name lock: thaws sandbox name; one that -idle pause paused at its shutdown time
 * lives on for its ttl again from now (dir/idle), so its supervisor does not pause it at once
 * once more. */
static int resume_locked(struct sbx_paths *p, const char *name, struct sbx_err *e)
{
	char path[PATH_MAX], *s;
	long long pttl = 0, ttl = 0;
	struct sbx_info info;

	if (set_paused(p->dir, name, false, e) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/idle", p->dir);
	if ((s = fs_read_small(path, 64, NULL)) == NULL)
		return 0;
	if (sscanf(s, "%lld %lld", &pttl, &ttl) != 2 || ttl <= 0)
		ttl = SBX_DEFAULT_TTL_NS;
	free(s);
	if (local_read_spec(p->dir, &info, e) < 0)
		return broken_msg(name, e);
	return info.shutdown_ns > time_now_ns() ? 0 : set_deadline(p, name, ttl, NULL, &info, e);
}

/* 1 when the sandbox in dir is paused at its shutdown time by -idle pause (frozen, with an
 * idle file, its deadline passed), 0 when not. */
static int idle_paused(const char *dir)
{
	char path[PATH_MAX], *s;
	long long dl;
	int n;

	if (reslimit_frozen(dir) <= 0)
		return 0;
	snprintf(path, sizeof path, "%s/idle", dir);
	if (access(path, F_OK) < 0)
		return 0;
	snprintf(path, sizeof path, "%s/deadline", dir);
	if ((s = fs_read_small(path, 64, NULL)) == NULL)
		return 0;
	n = sscanf(s, "%lld", &dl);
	free(s);
	return n == 1 && dl <= time_now_ns();
}

/* local_exec_watch's callback: a caller waiting on a command is not idle, so a pause at the
 * shutdown time meanwhile is undone (a pause by sbx-pause stays: its time is given back). */
static void undo_idle_pause(void *arg)
{
	struct sbx_paths *p = arg;
	struct sbx_err ign;
	int lk;

	if (!idle_paused(p->dir) || (lk = local_lock_name(p, &ign)) < 0)
		return;
	if (idle_paused(p->dir))
		resume_locked(p, strrchr(p->dir, '/') + 1, &ign);
	close(lk);
}

/* Auto-resume: a paused sandbox is thawed before anything is asked of it. Takes the name
 * lock for it unless the caller holds it (locked): the supervisor pauses under that lock. */
static int wake(struct sbx_paths *p, const char *name, bool locked, struct sbx_err *e)
{
	int lk, rc;

	if (reslimit_frozen(p->dir) <= 0)
		return 0;
	if (locked)
		return resume_locked(p, name, e);
	if ((lk = local_lock_name(p, e)) < 0)
		return -1;
	rc = local_check_live(p) ? resume_locked(p, name, e) : not_found(name, e);
	close(lk);
	return rc;
}

static void fill_state(const char *dir, struct sbx_info *out)
{
	snprintf(out->state, sizeof out->state, "%s", reslimit_frozen(dir) > 0 ? "paused" : "running");
}

static int l_create(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_info *out,
		    struct sbx_err *e)
{
	struct sbx_paths p;
	int lk, rc = -1, live;

	if (local_bwrap_check_image(spec->image, e) < 0)
		return -1;
	if (local_paths(b, spec->name, &p, e) < 0)
		return -1;
	if ((lk = local_lock_name(&p, e)) < 0)
		goto out;
	local_sweep_trash(p.nsdir, NULL);
	live = local_check_live(&p);
	if (live && local_read_spec(p.dir, out, e) < 0) {
		/* Broken: no handle to reuse or to match the spec against. It goes, and a new one
		 * takes its place (agent-loop restores its last snapshot into it). */
		char why[sizeof out->broken];
		snprintf(why, sizeof why, "%.*s", (int)sizeof why - 1, e->msg);
		err_clear(e);
		if (local_remove_locked(&p, spec->name, e) < 0 || local_create_new(b, spec, &p, out, e) < 0)
			goto out;
		snprintf(out->broken, sizeof out->broken, "%s", why);
		rc = 0;
	} else if (live) {
		if (local_spec_matches(out, spec, e) < 0 || wake(&p, spec->name, true, e) < 0)
			goto out;
		if (local_exec_ping(p.dir, READY_TIMEOUT_MS) < 0) {
			err_set(e, SBX_EIO, "sandbox %s exists but does not answer", spec->name);
			goto out;
		}
		rc = set_deadline(&p, spec->name, spec->ttl_ns, spec, out, e);
		out->reused = true;
	} else if ((rc = local_pool_take(b, spec, &p, out, e)) == 0) {
		rc = local_create_new(b, spec, &p, out, e);	/* no pooled one: a cold start */
	} else if (rc > 0) {
		rc = 0;
	}
out:
	if (lk >= 0)
		close(lk);
	local_paths_free(&p);
	return rc;
}

/* What touch and pause do to a live sandbox, under its name's lock. */
typedef int (*live_fn)(struct sbx_paths *p, const char *name, int64_t arg, struct sbx_info *out,
		       struct sbx_err *e);

/* Runs fn on live sandbox name under its name's lock; SBX_ENOTFOUND when there is none. */
static int on_live(struct sbx_backend *b, const char *name, live_fn fn, int64_t arg,
		   struct sbx_info *out, struct sbx_err *e)
{
	struct sbx_paths p;
	int lk, rc = -1;

	if (local_paths(b, name, &p, e) < 0)
		return -1;
	if ((lk = local_lock_name(&p, e)) < 0)
		goto out;
	if (!local_check_live(&p))
		rc = not_found(name, e);
	else
		rc = fn(&p, name, arg, out, e);
out:
	if (lk >= 0)
		close(lk);
	local_paths_free(&p);
	return rc;
}

static int touch_live(struct sbx_paths *p, const char *name, int64_t ttl_ns, struct sbx_info *out,
		      struct sbx_err *e)
{
	return wake(p, name, true, e) < 0 ? -1 : set_deadline(p, name, ttl_ns, NULL, out, e);
}

static int l_touch(struct sbx_backend *b, const char *name, int64_t ttl_ns, struct sbx_info *out,
		   struct sbx_err *e)
{
	return on_live(b, name, touch_live, ttl_ns, out, e);
}

static int l_remove(struct sbx_backend *b, const char *name, struct sbx_err *e)
{
	struct sbx_paths p;
	int lk, rc = -1;

	if (local_paths(b, name, &p, e) < 0)
		return -1;
	if ((lk = local_lock_name(&p, e)) < 0)
		goto out;
	rc = local_remove_locked(&p, name, e);
out:
	if (lk >= 0)
		close(lk);
	local_paths_free(&p);
	return rc;
}

static int l_get(struct sbx_backend *b, const char *name, struct sbx_info *out,
		 struct sbx_err *e)
{
	struct sbx_paths p;
	int rc = -1;

	if (local_paths(b, name, &p, e) < 0)
		return -1;
	if (!local_dir_exists(p.dir) || !local_alive(p.dir))
		rc = not_found(name, e);
	else if (local_read_spec(p.dir, out, e) == 0) {
		out->ready = true;
		fill_state(p.dir, out);
		rc = 0;
	}
	local_paths_free(&p);
	return rc;
}

static int pause_live(struct sbx_paths *p, const char *name, int64_t paused, struct sbx_info *out,
		      struct sbx_err *e)
{
	if ((paused ? set_paused(p->dir, name, true, e) : resume_locked(p, name, e)) < 0 ||
	    local_read_spec(p->dir, out, e) < 0)
		return -1;
	out->ready = true;
	fill_state(p->dir, out);
	return 0;
}

static int l_pause(struct sbx_backend *b, const char *name, bool paused, struct sbx_info *out,
		   struct sbx_err *e)
{
	return on_live(b, name, pause_live, paused, out, e);
}

static int l_list(struct sbx_backend *b, int (*fn)(const struct sbx_info *, void *), void *arg,
		  struct sbx_err *e)
{
	char *root = paths_state_root(e), *nsdir;
	struct dirent **ents = NULL;
	int n, i, rc = 0;

	if (root == NULL)
		return -1;
	nsdir = xasprintf("%s/%s", root, b->namespace);
	free(root);
	local_sweep_trash(nsdir, NULL);
	n = scandir(nsdir, &ents, NULL, alphasort);
	if (n < 0) {
		rc = errno == ENOENT ? 0 : err_sys(e, errno, "cannot read %s", nsdir);
		free(nsdir);
		return rc;
	}
	for (i = 0; i < n; i++) {
		struct sbx_info info;
		struct sbx_err ign;

		if (rc == 0 && name_check(ents[i]->d_name, &ign) == 0) {
			memset(&info, 0, sizeof info);
			if (l_get(b, ents[i]->d_name, &info, &ign) == 0) {
				if (fn(&info, arg) != 0)
					rc = 1;
			} else if (ign.code != SBX_ENOTFOUND) {
				/* live, its spec unreadable: shown, so that someone can act */
				memset(&info, 0, sizeof info);
				snprintf(info.name, sizeof info.name, "%.*s",
					 (int)sizeof info.name - 1, ents[i]->d_name);
				snprintf(info.namespace, sizeof info.namespace, "%s", b->namespace);
				info.backend = "local";
				snprintf(info.broken, sizeof info.broken, "%.*s",
					 (int)sizeof info.broken - 1, ign.msg);
				if (fn(&info, arg) != 0)
					rc = 1;
			} else {
				/* stale: clean it under its lock */
				struct sbx_paths p;
				int lk;
				if (local_paths(b, ents[i]->d_name, &p, &ign) == 0) {
					if ((lk = local_lock_name(&p, &ign)) >= 0) {
						local_check_live(&p);
						close(lk);
					}
					local_paths_free(&p);
				}
			}
		}
		free(ents[i]);
	}
	free(ents);
	free(nsdir);
	return rc > 0 ? 0 : rc;
}

static char *l_home_path(struct sbx_backend *b, const char *name, struct sbx_err *e)
{
	struct sbx_paths p;
	char *home = NULL;
	int m;

	if (local_paths(b, name, &p, e) < 0)
		return NULL;
	if (!local_dir_exists(p.dir) || !local_alive(p.dir))
		not_found(name, e);
	else if ((m = local_look_home(p.dir, &home, e)) == HOMEDISK_LOST)
		err_prefix(e, "the home of sandbox %s is lost", name);
	else if (m < 0)
		err_prefix(e, "cannot look at the home of sandbox %s", name);
	local_paths_free(&p);
	return home;
}

static int l_charge(struct sbx_backend *b, const char *name)
{
	struct sbx_paths p;
	int rc;

	if (local_paths(b, name, &p, NULL) < 0) {
		errno = ENOENT;
		return -1;
	}
	rc = reslimit_join(p.dir);
	local_paths_free(&p);
	return rc;
}

/* The exec service hung up before the result: the command may have run, in part, so this is
 * SBX_EGONE, never SBX_ENOTFOUND (which promises nothing ran and invites a retry). The
 * supervisor renames a dying sandbox away right after killing it: a moment's wait names the
 * cause right. */
static int lost_connection(const char *dir, const char *name, struct sbx_err *e)
{
	for (int waited = 0; waited < GONE_SETTLE_MS && local_alive(dir); waited += 5)
		usleep(5000);
	if (local_alive(dir))
		return err_set(e, SBX_EGONE, "lost the connection to sandbox %s during the command", name);
	return err_set(e, SBX_EGONE, "sandbox %s went away during the command", name);
}

/* A command that ended by SIGKILL (or with 137, its shell's word for it) while the memory
 * limit killed a process in the sandbox was killed by the limit. Another command running at
 * the same moment and killed by someone else would be blamed too: rare, and said in README. */
static void oom_check(const struct sbx_paths *p, long long before, struct sbx_exec_result *r)
{
	struct sbx_info info;
	struct sbx_err ign;

	if (before < 0 || r->exit_code != 128 + SIGKILL || r->timed_out || r->canceled ||
	    reslimit_oom_kills(p->dir) <= before)
		return;
	r->oom_killed = true;
	memset(&info, 0, sizeof info);
	if (local_read_spec(p->dir, &info, &ign) == 0)
		r->memory_limit = info.limits.memory;
}

/* e says why the home of live sandbox name is lost: the sandbox is removed (local_check_live,
 * under its lock) and e becomes "not found", which a caller such as agent-loop answers by
 * making a new one. */
static void drop_lost(struct sbx_paths *p, const char *name, struct sbx_err *e)
{
	char why[sizeof e->msg];
	struct sbx_err ign;
	int lk;

	snprintf(why, sizeof why, "%s", e->msg);
	if ((lk = local_lock_name(p, &ign)) >= 0) {
		local_check_live(p);
		close(lk);
	}
	err_set(e, SBX_ENOTFOUND, "sandbox %s not found: it was removed, as its home was lost (%s)",
		name, why);
}

static int l_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
		  struct sbx_exec_result *r, struct sbx_err *e)
{
	struct sbx_paths p;
	enum local_exec_fail why;
	int rc = -1;
	long long oom_before;

	if (local_paths(b, name, &p, e) < 0)
		return -1;
	if (!local_dir_exists(p.dir) || !local_alive(p.dir)) {
		not_found(name, e);
		goto out;
	}
	/* One that cannot be told about runs: its commands see the home in any case. */
	if (local_look_home(p.dir, NULL, e) == HOMEDISK_LOST) {
		drop_lost(&p, name, e);
		goto out;
	}
	if (wake(&p, name, false, e) < 0)
		goto out;
	oom_before = reslimit_oom_kills(p.dir);
	rc = local_exec_run(p.dir, name, x, &(struct local_exec_watch){undo_idle_pause, &p}, r,
			    &why, e);
	if (rc == 0)
		oom_check(&p, oom_before, r);
	/* Whether the sandbox is still there tells a failure's cause. */
	if (rc < 0 && why == LOCAL_EXEC_NOCONN && !local_alive(p.dir))
		not_found(name, e);
	else if (rc < 0 && why == LOCAL_EXEC_LOST)
		lost_connection(p.dir, name, e);
out:
	local_paths_free(&p);
	return rc;
}

const struct backend_ops local_backend_ops = {
	.name = "local",
	.passes_fds = true,
	.create = l_create,
	.exec = l_exec,
	.touch = l_touch,
	.remove = l_remove,
	.get = l_get,
	.list = l_list,
	.pause = l_pause,
	.home_path = l_home_path,
	.charge = l_charge,
};
