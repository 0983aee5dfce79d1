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

/* How long create waits for a new sandbox's exec service to answer. bwrap starts in
 * milliseconds; this only bounds a broken host. */
#define READY_TIMEOUT_MS 10000
/* How long delete waits for the supervisor to tear the sandbox down before killing it. */
#define DELETE_TIMEOUT_MS 10000
/* spec.json is ours and small; anything bigger is not ours. */
#define SPEC_MAX 65536
/* How long a pause waits for the kernel to freeze every process of a sandbox (a process in
 * the middle of a system call is frozen when it returns: well under this). */
#define PAUSE_WAIT_MS 5000
/* After the exec service hangs up, how long a dying sandbox may take to be renamed away by its
 * supervisor (a kill and a rename: well under this). */
#define GONE_SETTLE_MS 500

static int paths_for(struct sbx_backend *b, const char *name, struct sbx_paths *p,
		     struct sbx_err *e)
{
	char *root = paths_state_root(e);

	if (root == NULL)
		return -1;
	p->nsdir = xasprintf("%s/%s", root, b->namespace);
	p->dir = xasprintf("%s/%s", p->nsdir, name);
	p->nslock = xasprintf("%s/.%s.lock", p->nsdir, name);
	free(root);
	return 0;
}

static void paths_free(struct sbx_paths *p)
{
	free(p->nsdir);
	free(p->dir);
	free(p->nslock);
}

/* Takes the per-name lock; returns its fd or -1. */
static int lock_name(struct sbx_paths *p, struct sbx_err *e)
{
	int fd;

	if (paths_mkdirs(p->nsdir, 0700, e) < 0)
		return -1;
	fd = open(p->nslock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_sys(e, errno, "cannot open %s", p->nslock);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			close(fd);
			return err_sys(e, errno, "cannot lock %s", p->nslock);
		}
	}
	return fd;
}

/* 1 when a supervisor holds dir/lock, 0 when not (no dir, or stale). The probe holds the lock
 * for a moment when nobody does: a supervisor starting then waits it out (supervise.c). */
static int is_alive(const char *dir)
{
	char path[PATH_MAX];
	int fd, alive;

	snprintf(path, sizeof path, "%s/lock", dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	alive = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}

static int dir_exists(const char *dir)
{
	struct stat st;

	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads dir's spec.json into out (zeroed first). A live sandbox whose spec cannot be read
 * is broken (see broken_msg). */
static int read_spec(const char *dir, struct sbx_info *out, struct sbx_err *e)
{
	const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	char path[PATH_MAX], *s;
	struct json_object *o, *v;
	const char *why;
	size_t len;

	memset(out, 0, sizeof *out);
	snprintf(path, sizeof path, "%s/spec.json", dir);
	s = fs_read_small(path, SPEC_MAX, &len);
	if (s == NULL)
		return err_sys(e, errno, "cannot read %s", path);
	o = gojson_parse(s, len, &why);
	free(s);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return err_set(e, SBX_EIO, "corrupt %s: %s", path, why ? why : "not an object");
	}
#define STR(key, field) \
	if (json_object_object_get_ex(o, key, &v)) \
		snprintf(out->field, sizeof out->field, "%s", json_object_get_string(v));
	STR("name", name)
	STR("namespace", namespace)
	STR("image", image)
	STR("homedir", homedir)
	STR("shutdown_policy", shutdown_policy)
#undef STR
	if (json_object_object_get_ex(o, "shutdown_time", &v))
		time_parse_rfc3339(json_object_get_string(v), &out->shutdown_ns);
	if (json_object_object_get_ex(o, "created", &v))
		time_parse_rfc3339(json_object_get_string(v), &out->created_ns);
	if (json_object_object_get_ex(o, "network", &v))
		out->network = json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "allow_hosts", &v))
		snprintf(out->allow_hosts, sizeof out->allow_hosts, "%s", json_object_get_string(v));
	if (json_object_object_get_ex(o, "limits", &v))
		sbx_limits_from_json(v, &out->limits);
	if (json_object_object_get_ex(o, "idle", &v))
		out->idle = strcmp(json_object_get_string(v), "pause") == 0 ? SBX_IDLE_PAUSE
									: SBX_IDLE_DELETE;
	if (json_object_object_get_ex(o, "paused_ttl", &v) &&
	    duration_parse(json_object_get_string(v), &out->paused_ttl) < 0)
		out->paused_ttl = 0;
	if (json_object_object_get_ex(o, "readonly_root", &v))
		out->readonly_root = json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "root_size", &v))
		out->root_size = json_object_get_int64(v);
	out->backend = "local";
	json_object_put(o);
	/* What every use of the handle needs: a spec of this sandbox, with its home. */
	if (strcmp(out->name, base) != 0 || out->homedir[0] == '\0')
		return err_set(e, SBX_EIO, "corrupt %s: it is not the spec of sandbox %s", path, base);
	return 0;
}

/* Writes dir/idle, which the supervisor reads at the shutdown time: with -idle pause, the
 * paused ttl and the sandbox's ttl (the lifetime a resume after the shutdown time gives it
 * again), in ns; without, no such file. */
static int write_idle(const char *dir, const struct sbx_info *in, int64_t ttl_ns)
{
	char path[PATH_MAX], text[64];

	snprintf(path, sizeof path, "%s/idle", dir);
	if (in->idle != SBX_IDLE_PAUSE)
		return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
	snprintf(text, sizeof text, "%" PRId64 " %" PRId64 "\n", in->paused_ttl, ttl_ns);
	return fs_write_atomic(path, text, strlen(text), 0600);
}

/* Writes spec.json, deadline (the shutdown time) and idle (see write_idle). */
static int write_spec(const char *dir, const struct sbx_info *in, int64_t ttl_ns,
		      struct sbx_err *e)
{
	struct json_object *o = json_object_new_object();
	char path[PATH_MAX], t1[TIME_BUFSZ], t2[TIME_BUFSZ], dl[32], d[DURATION_BUFSZ];
	char *text;
	int rc = 0;

	json_object_object_add(o, "name", json_object_new_string(in->name));
	json_object_object_add(o, "namespace", json_object_new_string(in->namespace));
	json_object_object_add(o, "backend", json_object_new_string("local"));
	json_object_object_add(o, "image", json_object_new_string(in->image));
	json_object_object_add(o, "homedir", json_object_new_string(in->homedir));
	json_object_object_add(o, "network", json_object_new_boolean(in->network));
	json_object_object_add(o, "allow_hosts", json_object_new_string(in->allow_hosts));
	json_object_object_add(o, "limits", sbx_limits_json(&in->limits));
	json_object_object_add(o, "created",
			       json_object_new_string(time_rfc3339(in->created_ns, t1, sizeof t1)));
	json_object_object_add(o, "shutdown_time",
			       json_object_new_string(time_rfc3339(in->shutdown_ns, t2, sizeof t2)));
	json_object_object_add(o, "shutdown_policy", json_object_new_string("Delete"));
	json_object_object_add(o, "idle", json_object_new_string(
		in->idle == SBX_IDLE_PAUSE ? "pause" : "delete"));
	json_object_object_add(o, "paused_ttl", json_object_new_string(
		duration_format(in->paused_ttl, d, sizeof d)));
	json_object_object_add(o, "readonly_root", json_object_new_boolean(in->readonly_root));
	json_object_object_add(o, "root_size", json_object_new_int64(in->root_size));
	text = gojson_encode(o);
	json_object_put(o);
	snprintf(path, sizeof path, "%s/spec.json", dir);
	if (fs_write_atomic(path, text, strlen(text), 0600) < 0)
		rc = err_sys(e, errno, "cannot write %s", path);
	free(text);
	/* The supervisor reads this one: the deadline in ns, plain decimal. */
	snprintf(path, sizeof path, "%s/deadline", dir);
	snprintf(dl, sizeof dl, "%" PRId64 "\n", in->shutdown_ns);
	if (rc == 0 && fs_write_atomic(path, dl, strlen(dl), 0600) < 0)
		rc = err_sys(e, errno, "cannot write %s", path);
	if (rc == 0 && write_idle(dir, in, ttl_ns) < 0)
		rc = err_sys(e, errno, "cannot write %s/idle", dir);
	return rc;
}

/* Reads what bubblewrap said when a sandbox failed to start. */
static void startup_failure(const struct sbx_paths *p, struct sbx_err *e)
{
	char path[PATH_MAX], *log;
	size_t len;

	if (localnet_failure(p->dir, e))
		return;
	snprintf(path, sizeof path, "%s/bwrap.log", p->dir);
	log = fs_read_small(path, 4096, &len);
	while (log && len > 0 && (log[len - 1] == '\n' || log[len - 1] == ' '))
		log[--len] = '\0';
	if (log && *log)
		err_set(e, SBX_EIO, "bubblewrap failed: %s", log);
	else
		err_set(e, SBX_EIO, "the sandbox did not become ready within %d s",
			READY_TIMEOUT_MS / 1000);
	free(log);
}

/* The handle of a sandbox about to be made. */
static void new_info(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_info *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "%s", spec->name);
	snprintf(out->namespace, sizeof out->namespace, "%s", b->namespace);
	snprintf(out->image, sizeof out->image, "%s", spec->image[0] ? spec->image : "host");
	snprintf(out->homedir, sizeof out->homedir, "%s", spec->homedir);
	snprintf(out->shutdown_policy, sizeof out->shutdown_policy, "Delete");
	out->network = spec->network;
	snprintf(out->allow_hosts, sizeof out->allow_hosts, "%s", spec->allow_hosts);
	out->created_ns = time_now_ns();
	out->shutdown_ns = out->created_ns + spec->ttl_ns;
	out->idle = spec->idle;
	out->paused_ttl = spec->paused_ttl;
	out->readonly_root = spec->readonly_root;
	out->backend = "local";
}

/* Makes dir, dir/home (owned by the sandbox's host identity) and dir/lock. */
static int make_dirs(const struct sbx_paths *p, const char *home, const struct local_ids *ids,
		     struct sbx_err *e)
{
	char *lockp = xasprintf("%s/lock", p->dir);
	int fd, rc = -1;

	if (mkdir(p->dir, 0700) < 0) {
		err_sys(e, errno, "cannot create %s", p->dir);
		goto out;
	}
	if (mkdir(home, 0755) < 0 || (ids->drop && chown(home, ids->uid, ids->gid) < 0)) {
		err_sys(e, errno, "cannot create %s", home);
		goto out;
	}
	fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		err_sys(e, errno, "cannot create %s", lockp);
		goto out;
	}
	close(fd);
	rc = 0;
out:
	free(lockp);
	return rc;
}

/* Removes a sandbox directory nobody holds any more, and what its limits hold outside it. */
static int remove_dead(const char *dir)
{
	reslimit_release(dir);
	return fs_remove_tree(dir);
}

/* Puts the spec's limits in force (lib/reslimit) for the sandbox being made in p->dir. */
static int limits_in_force(struct sbx_backend *b, const struct sbx_spec *spec,
			   const struct sbx_paths *p, const struct local_ids *ids,
			   struct sbx_limits *in_force, struct sbx_err *e)
{
	unsigned char rnd[4];
	char leaf[128], why[256], *root, *cache;
	struct reslimit_ctx c = {.dir = p->dir, .leaf = leaf};
	int rc;

	if (!spec->limits.enforced)
		return 0;
	c.uid = ids->uid;
	c.gid = ids->gid;
	c.can_cap = true;
	c.disk_kind = ids->drop ? HOMEDISK_LOOP : HOMEDISK_FUSE;
	/* A user's home is capped by fuse2fs where it can be; where not, the default cap is
	 * dropped quietly (the handle shows disk 0; README says so), one asked for is not. */
	if (!ids->drop && spec->limits.disk > 0 && homedisk_fuse_usable(why, sizeof why) < 0) {
		if (spec->limits.disk_asked)
			return err_set(e, SBX_EUNAVAIL,
				       "cannot cap the home at -disk as a user: a user's cap is a "
				       "fuse2fs mount, and %s; or leave -disk and SANDBOX_DISK out "
				       "(the home then has no cap)", why);
		c.can_cap = false;
	}
	/* A random part: two state directories (two users, two test runs) may hold sandboxes
	 * of the same namespace and name under one parent cgroup. */
	if (getentropy(rnd, sizeof rnd) < 0)
		return err_sys(e, errno, "getentropy");
	snprintf(leaf, sizeof leaf, "sbx-%s-%s-%02x%02x%02x%02x", b->namespace, spec->name, rnd[0],
		 rnd[1], rnd[2], rnd[3]);
	if ((root = paths_state_root(e)) == NULL)
		return -1;
	cache = xasprintf("%s/.homedisk", root);
	c.cache_dir = cache;
	rc = reslimit_setup(&c, &spec->limits, in_force, e);
	free(cache);
	free(root);
	return rc;
}

static int create_new(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_paths *p,
		      struct sbx_info *out, struct sbx_err *e)
{
	char *home = xasprintf("%s/home", p->dir);
	struct oci_image *img = NULL;
	struct local_ids ids = LOCAL_IDS_INIT;
	struct local_start st = {.spec = spec, .paths = p, .home = home, .lsock = -1, .ids = &ids};
	int lsock = -1, rc = -1;

	if (oci_is_ref(spec->image) && (img = local_bwrap_open_image(spec, e)) == NULL)
		goto out;
	if (local_bwrap_ids(&ids, e) < 0 || make_dirs(p, home, &ids, e) < 0)
		goto out;
	new_info(b, spec, out);
	/* A writable root needs the sandbox's own range of ids (lib/local/rootlayer.h). */
	out->root_size = spec->readonly_root || ids.count <= 1 ? 0 : spec->root_size;
	if (limits_in_force(b, spec, p, &ids, &out->limits, e) < 0)
		goto out;
	if (write_spec(p->dir, out, spec->ttl_ns, e) < 0)
		goto out;
	if ((lsock = local_exec_listen(p->dir, e)) < 0)
		goto out;
	st.img = img;
	st.lsock = lsock;
	st.root_size = out->root_size;
	if (local_bwrap_start(&st, e) < 0)
		goto out;
	close(lsock);
	lsock = -1;
	if (local_exec_ping(p->dir, READY_TIMEOUT_MS) < 0) {
		startup_failure(p, e);
		/* A supervisor that gave up (its network helper failed) exits at once: let it,
		 * so that its directory goes below too. */
		for (int i = 0; i < 200 && is_alive(p->dir); i++)
			usleep(10000);
		goto out;
	}
	out->ready = true;
	rc = 0;
out:
	if (lsock >= 0)
		close(lsock);
	if (ids.lock >= 0)
		close(ids.lock);	/* the supervisor has its own copy */
	oci_image_free(img);
	if (rc < 0 && dir_exists(p->dir) && !is_alive(p->dir))
		remove_dead(p->dir);
	free(home);
	return rc;
}

static int supervisor_pid(const char *dir)
{
	char path[PATH_MAX], *s;
	int pid;

	snprintf(path, sizeof path, "%s/supervisor.pid", dir);
	s = fs_read_small(path, 64, NULL);
	if (s == NULL)
		return -1;
	pid = atoi(s);
	free(s);
	return pid > 1 ? pid : -1;
}

/* homedisk_look on dir's home, its supervisor the holder; *home (when asked for, and found
 * mounted) is the path to reach it by, newly allocated. */
static int look_home(const char *dir, char **home, struct sbx_err *e)
{
	char path[PATH_MAX];
	int m = homedisk_look(dir, supervisor_pid(dir), path, sizeof path, e);

	if (m == HOMEDISK_MOUNTED && home)
		*home = xstrdup(path);
	return m;
}

/* A .trash.NAME.PID directory is a sandbox its supervisor is removing (holding its lock) or
 * one whose removal was cut short (a killed supervisor, a reboot): nobody holds its lock, and
 * it is removed here. With name, only that sandbox's, waiting for a removal under way. */
static void sweep_trash(const char *nsdir, const char *name)
{
	char prefix[NAME_MAX_LEN + 16];
	DIR *d = opendir(nsdir);
	struct dirent *de;

	if (d == NULL)
		return;
	if (name)
		snprintf(prefix, sizeof prefix, ".trash.%s.", name);
	else
		snprintf(prefix, sizeof prefix, ".trash.");
	while ((de = readdir(d)) != NULL) {
		char *dir, *lock;
		int fd;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		dir = xasprintf("%s/%s", nsdir, de->d_name);
		lock = xasprintf("%s/lock", dir);
		/* No lock file: the removal took it last, so at most an empty directory is left. */
		fd = open(lock, O_RDWR | O_CLOEXEC);
		if (fd < 0 || flock(fd, name ? LOCK_EX : LOCK_EX | LOCK_NB) == 0)
			remove_dead(dir);	/* its limits too */
		if (fd >= 0)
			close(fd);
		free(lock);
		free(dir);
	}
	closedir(d);
}

/* Stops a live sandbox's supervisor (SIGTERM, SIGKILL after DELETE_TIMEOUT_MS) and waits
 * until it is gone. */
static void stop_supervisor(const char *dir)
{
	int pid = supervisor_pid(dir), waited;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (waited = 0; waited < DELETE_TIMEOUT_MS && is_alive(dir); waited += 5)
		usleep(5000);
	if (is_alive(dir)) {
		kill(pid, SIGKILL);
		for (waited = 0; waited < 1000 && is_alive(dir); waited += 5)
			usleep(5000);
	}
}

/* Under the name lock: is there a live sandbox? Cleans a stale directory: one whose
 * supervisor is gone (crash, reboot), and one whose capped home lost its filesystem (a
 * user's fuse2fs ended), which no command can use again — stopped first. The caller then
 * finds no sandbox and makes a new one (agent-loop restores its last snapshot into it). */
static int check_live(struct sbx_paths *p)
{
	struct sbx_err ign;

	if (!dir_exists(p->dir))
		return 0;
	if (is_alive(p->dir)) {
		/* Only a home known lost goes: one this process cannot tell about stays. */
		if (look_home(p->dir, NULL, &ign) != HOMEDISK_LOST)
			return 1;
		stop_supervisor(p->dir);
	}
	remove_dead(p->dir);
	return 0;
}

/* A sandbox is reused only under the limits asked for (a disk cap no larger). */
static int limits_match(const struct sbx_info *have, const struct sbx_spec *want,
			struct sbx_err *e)
{
	const struct sbx_limits *h = &have->limits, *w = &want->limits;
	char a[32], b[32];

	if (h->enforced != w->enforced)
		return err_set(e, SBX_EEXIST, "sandbox %s exists %s limits", have->name,
			       h->enforced ? "with" : "without");
	if (!h->enforced)
		return 0;
	if (h->memory != w->memory)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with memory limit %s, not %s",
			       have->name, reslimit_size_text(h->memory, a, sizeof a),
			       reslimit_size_text(w->memory, b, sizeof b));
	if (h->pids != w->pids || h->cpus_milli != w->cpus_milli)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with pids %" PRId64 " and cpus %g, "
			       "not %" PRId64 " and %g", have->name, h->pids,
			       (double)h->cpus_milli / 1000, w->pids, (double)w->cpus_milli / 1000);
	/* The cap in force may be below the one asked (the host disk had less free): fine. */
	if (h->disk > w->disk)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with disk %s, not %s", have->name,
			       reslimit_size_text(h->disk, a, sizeof a),
			       reslimit_size_text(w->disk, b, sizeof b));
	return 0;
}

static int spec_matches(const struct sbx_info *have, const struct sbx_spec *want,
			struct sbx_err *e)
{
	const char *img = want->image[0] ? want->image : "host";

	if (strcmp(have->homedir, want->homedir) != 0)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with homedir %s, not %s",
			       have->name, have->homedir, want->homedir);
	if (strcmp(have->image, img) != 0)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with image %s, not %s", have->name,
			       have->image, img);
	if (have->network != want->network)
		return err_set(e, SBX_EEXIST, "sandbox %s exists %s network access", have->name,
			       have->network ? "with" : "without");
	if (strcmp(have->allow_hosts, want->allow_hosts) != 0)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with -allow-host \"%s\", not \"%s\"",
			       have->name, have->allow_hosts, want->allow_hosts);
	if (have->readonly_root != want->readonly_root ||
	    (have->root_size > 0 && have->root_size != want->root_size))
		return err_set(e, SBX_EEXIST, "sandbox %s exists with another root (-readonly-root, "
			       "-root-size)", have->name);
	return limits_match(have, want, e);
}

/* e (read_spec's failure on live sandbox name) with what to do about it. */
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

	if (read_spec(p->dir, out, e) < 0)
		return broken_msg(name, e);
	out->shutdown_ns = time_now_ns() + ttl_ns;
	if (spec) {
		out->idle = spec->idle;
		out->paused_ttl = spec->paused_ttl;
	}
	if (write_spec(p->dir, out, ttl_ns, e) < 0)
		return -1;
	if ((pid = supervisor_pid(p->dir)) > 0)
		kill(pid, SIGHUP);	/* re-read the deadline now */
	out->ready = true;
	return 0;
}

/* Under the name lock: stops sandbox name and removes it, its home too. */
static int remove_locked(struct sbx_paths *p, const char *name, struct sbx_err *e)
{
	if (check_live(p))
		stop_supervisor(p->dir);
	/* Gone from the namespace at once; done when its home is gone too. */
	sweep_trash(p->nsdir, name);
	if (remove_dead(p->dir) < 0)
		return err_sys(e, errno, "cannot remove %s", p->dir);
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
	if (read_spec(p->dir, &info, e) < 0)
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

	if (!idle_paused(p->dir) || (lk = lock_name(p, &ign)) < 0)
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
	if ((lk = lock_name(p, e)) < 0)
		return -1;
	rc = check_live(p) ? resume_locked(p, name, e) : not_found(name, e);
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
	if (paths_for(b, spec->name, &p, e) < 0)
		return -1;
	if ((lk = lock_name(&p, e)) < 0)
		goto out;
	sweep_trash(p.nsdir, NULL);
	live = check_live(&p);
	if (live && read_spec(p.dir, out, e) < 0) {
		/* Broken: no handle to reuse or to match the spec against. It goes, and a new one
		 * takes its place (agent-loop restores its last snapshot into it). */
		char why[sizeof out->broken];
		snprintf(why, sizeof why, "%.*s", (int)sizeof why - 1, e->msg);
		err_clear(e);
		if (remove_locked(&p, spec->name, e) < 0 || create_new(b, spec, &p, out, e) < 0)
			goto out;
		snprintf(out->broken, sizeof out->broken, "%s", why);
		rc = 0;
	} else if (live) {
		if (spec_matches(out, spec, e) < 0 || wake(&p, spec->name, true, e) < 0)
			goto out;
		if (local_exec_ping(p.dir, READY_TIMEOUT_MS) < 0) {
			err_set(e, SBX_EIO, "sandbox %s exists but does not answer", spec->name);
			goto out;
		}
		rc = set_deadline(&p, spec->name, spec->ttl_ns, spec, out, e);
		out->reused = true;
	} else {
		rc = create_new(b, spec, &p, out, e);
	}
out:
	if (lk >= 0)
		close(lk);
	paths_free(&p);
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

	if (paths_for(b, name, &p, e) < 0)
		return -1;
	if ((lk = lock_name(&p, e)) < 0)
		goto out;
	if (!check_live(&p))
		rc = not_found(name, e);
	else
		rc = fn(&p, name, arg, out, e);
out:
	if (lk >= 0)
		close(lk);
	paths_free(&p);
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

	if (paths_for(b, name, &p, e) < 0)
		return -1;
	if ((lk = lock_name(&p, e)) < 0)
		goto out;
	rc = remove_locked(&p, name, e);
out:
	if (lk >= 0)
		close(lk);
	paths_free(&p);
	return rc;
}

static int l_get(struct sbx_backend *b, const char *name, struct sbx_info *out,
		 struct sbx_err *e)
{
	struct sbx_paths p;
	int rc = -1;

	if (paths_for(b, name, &p, e) < 0)
		return -1;
	if (!dir_exists(p.dir) || !is_alive(p.dir))
		rc = not_found(name, e);
	else if (read_spec(p.dir, out, e) == 0) {
		out->ready = true;
		fill_state(p.dir, out);
		rc = 0;
	}
	paths_free(&p);
	return rc;
}

static int pause_live(struct sbx_paths *p, const char *name, int64_t paused, struct sbx_info *out,
		      struct sbx_err *e)
{
	if ((paused ? set_paused(p->dir, name, true, e) : resume_locked(p, name, e)) < 0 ||
	    read_spec(p->dir, out, e) < 0)
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
	sweep_trash(nsdir, NULL);
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
				if (paths_for(b, ents[i]->d_name, &p, &ign) == 0) {
					if ((lk = lock_name(&p, &ign)) >= 0) {
						check_live(&p);
						close(lk);
					}
					paths_free(&p);
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

	if (paths_for(b, name, &p, e) < 0)
		return NULL;
	if (!dir_exists(p.dir) || !is_alive(p.dir))
		not_found(name, e);
	else if ((m = look_home(p.dir, &home, e)) == HOMEDISK_LOST)
		err_prefix(e, "the home of sandbox %s is lost", name);
	else if (m < 0)
		err_prefix(e, "cannot look at the home of sandbox %s", name);
	paths_free(&p);
	return home;
}

static int l_charge(struct sbx_backend *b, const char *name)
{
	struct sbx_paths p;
	int rc;

	if (paths_for(b, name, &p, NULL) < 0) {
		errno = ENOENT;
		return -1;
	}
	rc = reslimit_join(p.dir);
	paths_free(&p);
	return rc;
}

/* The exec service hung up before the result: the command may have run, in part, so this is
 * SBX_EGONE, never SBX_ENOTFOUND (which promises nothing ran and invites a retry). The
 * supervisor renames a dying sandbox away right after killing it: a moment's wait names the
 * cause right. */
static int lost_connection(const char *dir, const char *name, struct sbx_err *e)
{
	for (int waited = 0; waited < GONE_SETTLE_MS && is_alive(dir); waited += 5)
		usleep(5000);
	if (is_alive(dir))
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
	if (read_spec(p->dir, &info, &ign) == 0)
		r->memory_limit = info.limits.memory;
}

/* e says why the home of live sandbox name is lost: the sandbox is removed (check_live,
 * under its lock) and e becomes "not found", which a caller such as agent-loop answers by
 * making a new one. */
static void drop_lost(struct sbx_paths *p, const char *name, struct sbx_err *e)
{
	char why[sizeof e->msg];
	struct sbx_err ign;
	int lk;

	snprintf(why, sizeof why, "%s", e->msg);
	if ((lk = lock_name(p, &ign)) >= 0) {
		check_live(p);
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

	if (paths_for(b, name, &p, e) < 0)
		return -1;
	if (!dir_exists(p.dir) || !is_alive(p.dir)) {
		not_found(name, e);
		goto out;
	}
	/* One that cannot be told about runs: its commands see the home in any case. */
	if (look_home(p.dir, NULL, e) == HOMEDISK_LOST) {
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
	if (rc < 0 && why == LOCAL_EXEC_NOCONN && !is_alive(p.dir))
		not_found(name, e);
	else if (rc < 0 && why == LOCAL_EXEC_LOST)
		lost_connection(p.dir, name, e);
out:
	paths_free(&p);
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
