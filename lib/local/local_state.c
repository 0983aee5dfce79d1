/* local_state.c — one local sandbox's state on the host (a part of the local backend, named in
 * lib/local/local.h): its directory's paths and name lock, its spec.json, deadline and idle
 * files, its making (local_create_new, through the door in local_bwrap.c), its liveness (the
 * supervisor's lock), its removal. local_backend.c builds the backend's operations on these,
 * local_pool.c warm pools; the layout is described at the top of local_backend.c. */
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
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "duration.h"
#include "fsutil.h"
#include "gojson.h"
#include "idmap.h"
#include "local.h"
#include "localnet.h"
#include "paths.h"
#include "reslimit.h"
#include "timeutil.h"
#include "xalloc.h"

/* How long delete waits for the supervisor to tear the sandbox down before killing it. */
#define DELETE_TIMEOUT_MS 10000
/* spec.json is ours and small; anything bigger is not ours. */
#define SPEC_MAX 65536

int local_paths(struct sbx_backend *b, const char *name, struct sbx_paths *p,
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

void local_paths_free(struct sbx_paths *p)
{
	free(p->nsdir);
	free(p->dir);
	free(p->nslock);
}

/* Takes the per-name lock; returns its fd or -1. */
bool local_lock_current(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

int local_lock_name(struct sbx_paths *p, struct sbx_err *e)
{
	int fd;

	if (paths_mkdirs(p->nsdir, 0700, e) < 0)
		return -1;
	for (;;) {
		fd = open(p->nslock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return err_sys(e, errno, "cannot open %s", p->nslock);
		while (flock(fd, LOCK_EX) < 0) {
			if (errno != EINTR) {
				close(fd);
				return err_sys(e, errno, "cannot lock %s", p->nslock);
			}
		}
		/* A pool's sweep unlinks a slot's lock file it found unused: one locked after
		 * that is no lock at all, so it is taken again from the name. */
		if (local_lock_current(fd, p->nslock))
			return fd;
		close(fd);
	}
}

/* 1 when a supervisor holds dir/lock, 0 when not (no dir, or stale). The probe holds the lock
 * for a moment when nobody does: a supervisor starting then waits it out (supervise.c). */
int local_alive(const char *dir)
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

int local_dir_exists(const char *dir)
{
	struct stat st;

	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads dir's spec.json into out (zeroed first). A live sandbox whose spec cannot be read
 * is broken (see broken_msg). */
int local_read_spec(const char *dir, struct sbx_info *out, struct sbx_err *e)
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
	if (json_object_object_get_ex(o, "secrets", &v))
		snprintf(out->secrets, sizeof out->secrets, "%s", json_object_get_string(v));
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
	return fs_write_replace(path, text, strlen(text), 0600);
}

/* Writes spec.json, deadline (the shutdown time) and idle (see write_idle), each replaced
 * atomically but not fsynced: a live sandbox's state never outlives a reboot (its supervisor
 * is gone then, and the directory is stale), so durability would buy nothing and cost every
 * create, take and touch a few disk flushes. */
int local_write_spec(const char *dir, const struct sbx_info *in, int64_t ttl_ns,
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
	if (in->secrets[0])
		json_object_object_add(o, "secrets", json_object_new_string(in->secrets));
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
	if (fs_write_replace(path, text, strlen(text), 0600) < 0)
		rc = err_sys(e, errno, "cannot write %s", path);
	free(text);
	/* The supervisor reads this one: the deadline in ns, plain decimal. */
	snprintf(path, sizeof path, "%s/deadline", dir);
	snprintf(dl, sizeof dl, "%" PRId64 "\n", in->shutdown_ns);
	if (rc == 0 && fs_write_replace(path, dl, strlen(dl), 0600) < 0)
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
	snprintf(out->secrets, sizeof out->secrets, "%s", spec->secrets);
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

/* Records the subordinate ids a user's sandbox maps (lib/local/idmap.h, IDMAP_USER_FILE), for
 * what works on its home from the host (snapshot, restore, clearing). */
static int record_subids(const struct sbx_paths *p, const struct local_ids *ids, struct sbx_err *e)
{
	char *path, text[96];
	int rc;

	if (ids->sub_uid == 0)
		return 0;
	path = xasprintf("%s/%s", p->dir, IDMAP_USER_FILE);
	snprintf(text, sizeof text, "%lu %lu %lu\n", ids->sub_uid, ids->sub_gid, ids->count);
	rc = fs_write_replace(path, text, strlen(text), 0600);	/* dies with the machine too */
	if (rc < 0)
		err_sys(e, errno, "cannot write %s", path);
	free(path);
	return rc;
}

/* Removes the home of a user's sandbox that maps subordinate ids (its supervisor died before
 * it could): what belongs to them, the user cannot remove; a child does, as the root of a
 * user namespace mapping them (lib/local/idmap.h), with rights over those ids only. */
static void remove_subid_files(const char *dir)
{
	char *home = xasprintf("%s/home", dir);
	struct idmap_req r;
	pid_t p;

	if (geteuid() != 0 && idmap_user_of_home(home, &r) == 0 && (p = fork()) >= 0) {
		if (p == 0) {
			int inner, ns = idmap_userns(&r, &inner);
			_exit(ns < 0 || idmap_enter(ns) < 0 || fs_remove_tree(home) < 0);
		}
		while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
			;
	}
	free(home);
}

/* Removes a sandbox directory nobody holds any more, and what its limits hold outside it. */
int local_remove_dead(const char *dir)
{
	reslimit_release(dir);
	remove_subid_files(dir);
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

int local_create_new(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_paths *p,
		      struct sbx_info *out, struct sbx_err *e)
{
	char *home = xasprintf("%s/home", p->dir), *root = NULL;
	struct oci_image *img = NULL;
	struct local_ids ids = LOCAL_IDS_INIT;
	struct local_start st = {.spec = spec, .paths = p, .home = home, .lsock = -1, .ids = &ids};
	int lsock = -1, rc = -1;

	if (oci_is_ref(spec->image) && (img = local_bwrap_open_image(spec, e)) == NULL)
		goto out;
	if ((root = paths_state_root(e)) == NULL || local_bwrap_ids(&ids, root, e) < 0 ||
	    make_dirs(p, home, &ids, e) < 0 || record_subids(p, &ids, e) < 0)
		goto out;
	new_info(b, spec, out);
	snprintf(out->notice, sizeof out->notice, "%s", ids.notice);
	/* A writable root needs a root's sandbox, with its own range of ids (the supervisor
	 * mounts it as host root: lib/local/rootlayer.h); a user's keeps the read-only root. */
	out->root_size = spec->readonly_root || !ids.drop || ids.count <= 1 ? 0 : spec->root_size;
	if (limits_in_force(b, spec, p, &ids, &out->limits, e) < 0)
		goto out;
	if (local_write_spec(p->dir, out, spec->ttl_ns, e) < 0)
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
		for (int i = 0; i < 200 && local_alive(p->dir); i++)
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
	if (rc < 0 && local_dir_exists(p->dir) && !local_alive(p->dir))
		local_remove_dead(p->dir);
	free(home);
	free(root);
	return rc;
}

int local_supervisor_pid(const char *dir)
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
int local_look_home(const char *dir, char **home, struct sbx_err *e)
{
	char path[PATH_MAX];
	int m = homedisk_look(dir, local_supervisor_pid(dir), path, sizeof path, e);

	if (m == HOMEDISK_MOUNTED && home)
		*home = xstrdup(path);
	return m;
}

/* A .trash.NAME.PID directory is a sandbox its supervisor is removing (holding its lock) or
 * one whose removal was cut short (a killed supervisor, a reboot): nobody holds its lock, and
 * it is removed here. With name, only that sandbox's, waiting for a removal under way. */
void local_sweep_trash(const char *nsdir, const char *name)
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
			local_remove_dead(dir);	/* its limits too */
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
	int pid = local_supervisor_pid(dir), waited;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (waited = 0; waited < DELETE_TIMEOUT_MS && local_alive(dir); waited += 5)
		usleep(5000);
	if (local_alive(dir)) {
		kill(pid, SIGKILL);
		for (waited = 0; waited < 1000 && local_alive(dir); waited += 5)
			usleep(5000);
	}
}

/* Under the name lock: is there a live sandbox? Cleans a stale directory: one whose
 * supervisor is gone (crash, reboot), and one whose capped home lost its filesystem (a
 * user's fuse2fs ended), which no command can use again — stopped first. The caller then
 * finds no sandbox and makes a new one (agent-loop restores its last snapshot into it). */
int local_check_live(struct sbx_paths *p)
{
	struct sbx_err ign;

	if (!local_dir_exists(p->dir))
		return 0;
	if (local_alive(p->dir)) {
		/* Only a home known lost goes: one this process cannot tell about stays. */
		if (local_look_home(p->dir, NULL, &ign) != HOMEDISK_LOST)
			return 1;
		stop_supervisor(p->dir);
	}
	local_remove_dead(p->dir);
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

int local_spec_matches(const struct sbx_info *have, const struct sbx_spec *want,
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
	/* The values live in its proxy since it was made: other declarations need a new one. */
	if (strcmp(have->secrets, want->secrets) != 0)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with other -secret declarations "
			       "than these: sbx-delete %s, then create it again", have->name,
			       have->name);
	return limits_match(have, want, e);
}

/* Under the name lock: stops sandbox name and removes it, its home too. */
int local_remove_locked(struct sbx_paths *p, const char *name, struct sbx_err *e)
{
	if (local_check_live(p))
		stop_supervisor(p->dir);
	/* Gone from the namespace at once; done when its home is gone too. */
	local_sweep_trash(p->nsdir, name);
	if (local_remove_dead(p->dir) < 0)
		return err_sys(e, errno, "cannot remove %s", p->dir);
	return 0;
}
