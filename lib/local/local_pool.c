/* local_pool.c — warm pools of local sandboxes: made ahead under pool names, taken by a
 * create of the same spec (a part of the local backend, lib/local/local.h).
 *
 * What "rename" means here. A sandbox's state lives in NSDIR/NAME/ and operations on NAME are
 * serialized by NSDIR/.NAME.lock; its supervisor holds NAME/lock while it lives. A pooled
 * sandbox is an ordinary sandbox, made by the same local_create_new (own uid range, cgroup,
 * seccomp filter, network namespace, capped home image: nothing of its containment differs),
 * whose name is a slot NSDIR/pool-KEY-ID that no sandbox name can be (a dash) and that is a
 * valid hostname (the one the sandbox keeps, see below), KEY naming the spec it was made with.
 * A take is, under the taker's name lock and the slot's (tried, never
 * waited for: a busy slot is someone else's take or its expiry), three steps:
 *   1. the slot's spec.json, deadline and idle files are rewritten for the new name, its
 *      creation time now and its shutdown time now + ttl (atomic files each);
 *   2. rename(2) of NSDIR/pool-KEY-ID to NSDIR/NAME: one atomic step, the commit;
 *   3. SIGHUP to its supervisor, which re-reads the deadline (it finds its directory through
 *      a descriptor of it, so a rename never loses it: cmd/sbx-init/supervise.c).
 * A crash between 1 and 2 leaves a slot whose spec.json names another sandbox: no take, list
 * or fill accepts it (local_read_spec checks the name against the directory's), and the next
 * fill or take removes it; NAME never existed. A crash after 2 leaves NAME whole (its spec is
 * its own, its supervisor re-reads the deadline at the latest at the old one). No step leaves
 * a half-renamed sandbox. The supervisor's lock, its socket, its home's mount and its cgroup
 * all follow the directory (a mount below a renamed directory moves with it; the cgroup is
 * found from the directory's cgroups file); what does not follow is the hostname inside, set
 * when bubblewrap started: a taken sandbox's hostname is its slot's name (README says so),
 * and so is the sandbox's name in its -allow-host proxy's log.
 * A pooled sandbox never ran a command: sbx-pool only makes them and counts them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "local.h"
#include "local_pool.h"
#include "paths.h"
#include "timeutil.h"
#include "xalloc.h"

/* A slot this close to its shutdown time is left to its supervisor, which may be removing it:
 * a take must finish well before (it takes milliseconds). */
#define TAKE_MARGIN_NS (INT64_C(2) * 1000000000)
/* The prefix of every slot's name. */
#define SLOT_PREFIX "pool-"

static void fnv(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		*h ^= c[i];
		*h *= UINT64_C(1099511628211);
	}
}

void local_pool_key(const struct sbx_spec *spec, char key[LOCAL_POOL_KEY_LEN + 1])
{
	const struct sbx_limits *l = &spec->limits;
	const char *img = spec->image[0] ? spec->image : "host";
	uint64_t h = UINT64_C(14695981039346656037);
	char text[200];

	/* Not a security boundary: a take checks the slot's own spec (local_spec_matches). */
	fnv(&h, img, strlen(img) + 1);
	fnv(&h, spec->homedir, strlen(spec->homedir) + 1);
	fnv(&h, spec->allow_hosts, strlen(spec->allow_hosts) + 1);
	snprintf(text, sizeof text, "%d %d %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %d %" PRId64,
		 spec->network, l->enforced, l->memory, l->pids, l->cpus_milli, l->disk,
		 spec->readonly_root, spec->root_size);
	fnv(&h, text, strlen(text));
	snprintf(key, LOCAL_POOL_KEY_LEN + 1, "%016" PRIx64, h);
}

/* Tries the name lock of p without waiting: its fd, or -1 when busy or unusable. */
static int try_lock(const struct sbx_paths *p)
{
	int fd = open(p->nslock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd >= 0 && (flock(fd, LOCK_EX | LOCK_NB) < 0 || !local_lock_current(fd, p->nslock))) {
		close(fd);
		fd = -1;	/* busy, or unlinked by a sweep meanwhile: not this slot's lock */
	}
	return fd;
}

/* What a slot is, under its lock. */
enum slot_state { SLOT_GONE, SLOT_BROKEN, SLOT_OTHER, SLOT_READY };

/* Under the slot's lock: removes a stale one (local_check_live) and a live one whose spec is
 * not its own (a take cut short between its steps 1 and 2); reads a ready one into info. */
static enum slot_state slot_look(struct sbx_paths *sp, const char *slot,
				 const struct sbx_spec *spec, struct sbx_info *info)
{
	struct sbx_err ign;

	if (!local_check_live(sp)) {
		unlink(sp->nslock);	/* a slot's name is never used again */
		return SLOT_GONE;
	}
	if (local_read_spec(sp->dir, info, &ign) < 0) {
		local_remove_locked(sp, slot, &ign);
		return SLOT_BROKEN;
	}
	if (local_spec_matches(info, spec, &ign) < 0 ||
	    info->shutdown_ns < time_now_ns() + TAKE_MARGIN_NS)
		return SLOT_OTHER;
	return SLOT_READY;
}

/* The slots of key (NULL: every slot) in b's namespace, as scandir gives them; -1 none. */
static int slots(struct sbx_backend *b, const char *key, char **nsdir, struct dirent ***ents,
		 struct sbx_err *e)
{
	char *root = paths_state_root(e), prefix[64];
	int n, k = 0;

	*nsdir = NULL;
	*ents = NULL;
	if (root == NULL)
		return -1;
	*nsdir = xasprintf("%s/%s", root, b->namespace);
	free(root);
	n = scandir(*nsdir, ents, NULL, alphasort);
	if (n < 0) {
		*ents = NULL;
		return errno == ENOENT ? 0 : err_sys(e, errno, "cannot read %s", *nsdir);
	}
	snprintf(prefix, sizeof prefix, SLOT_PREFIX "%s", key ? key : "");
	for (int i = 0; i < n; i++) {
		if (strncmp((*ents)[i]->d_name, prefix, strlen(prefix)) == 0)
			(*ents)[k++] = (*ents)[i];
		else
			free((*ents)[i]);
	}
	return k;
}

static void slots_free(char *nsdir, struct dirent **ents, int n)
{
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	free(nsdir);
}

/* A stop for the tests' kill-mid-take faults: SBX_TEST_POOL_STOP=written or renamed stops this
 * process (SIGSTOP) after that step, for the test to kill it there. */
static void test_stop(const char *step)
{
	const char *s = getenv("SBX_TEST_POOL_STOP");

	if (s && strcmp(s, step) == 0)
		raise(SIGSTOP);
}

/* Under both locks: the three steps of a take (see the top of this file). 1 taken, 0 not. */
static int take_one(const struct sbx_spec *spec, struct sbx_paths *sp, const char *slot,
		    struct sbx_paths *p, struct sbx_info *info, struct sbx_err *e)
{
	struct sbx_err ign;
	int pid;

	snprintf(info->name, sizeof info->name, "%s", spec->name);
	info->created_ns = time_now_ns();
	info->shutdown_ns = info->created_ns + spec->ttl_ns;
	info->idle = spec->idle;
	info->paused_ttl = spec->paused_ttl;
	if (local_write_spec(sp->dir, info, spec->ttl_ns, e) < 0) {
		local_remove_locked(sp, slot, &ign);
		err_clear(e);
		return 0;
	}
	test_stop("written");
	if (rename(sp->dir, p->dir) < 0) {
		local_remove_locked(sp, slot, &ign);
		return 0;
	}
	unlink(sp->nslock);	/* the slot's name is never used again */
	/* no fsync: a sandbox does not outlive a reboot (see local_write_spec) */
	test_stop("renamed");
	if ((pid = local_supervisor_pid(p->dir)) > 0)
		kill(pid, SIGHUP);
	info->ready = true;
	info->pooled = true;
	return 1;
}

/* Removes the name locks of key's slots that are gone (their supervisor removed them at their
 * shutdown time, or they were taken): the lock is taken first, so a fill making that slot
 * (which holds it from before the directory exists) keeps its own. */
static void sweep_locks(const char *nsdir, const char *key)
{
	char prefix[64];
	DIR *d = opendir(nsdir);
	struct dirent *de;

	if (d == NULL)
		return;
	snprintf(prefix, sizeof prefix, "." SLOT_PREFIX "%s-", key);
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		char *lock, *dir;
		int fd;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || n < 6 ||
		    strcmp(de->d_name + n - 5, ".lock") != 0)
			continue;
		lock = xasprintf("%s/%s", nsdir, de->d_name);
		dir = xasprintf("%s/%.*s", nsdir, (int)(n - 6), de->d_name + 1);
		fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && access(dir, F_OK) < 0 &&
		    errno == ENOENT)
			unlink(lock);
		if (fd >= 0)
			close(fd);
		free(dir);
		free(lock);
	}
	closedir(d);
}

/* What each_slot calls for a slot under its lock, with what slot_look found there; non-zero
 * stops the walk. */
typedef int (*slot_fn)(struct sbx_paths *sp, const char *slot, enum slot_state st,
		       struct sbx_info *info, void *arg);

/* Calls fn for each slot of spec's kind whose lock is free (a busy one is being taken, then
 * not ours, or expiring), until fn says stop; with sweep, removes the locks of slots gone.
 * fn's last answer, or -1 with e. */
static int each_slot(struct sbx_backend *b, const struct sbx_spec *spec, bool sweep,
		     slot_fn fn, void *arg, struct sbx_err *e)
{
	char key[LOCAL_POOL_KEY_LEN + 1], *nsdir;
	struct dirent **ents;
	int n, rc = 0;

	local_pool_key(spec, key);
	if ((n = slots(b, key, &nsdir, &ents, e)) < 0) {
		slots_free(nsdir, ents, 0);
		return -1;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		const char *slot = ents[i]->d_name;
		struct sbx_paths sp;
		struct sbx_info info;
		int lk;

		if (local_paths(b, slot, &sp, e) < 0) {
			rc = -1;
			break;
		}
		if ((lk = try_lock(&sp)) >= 0) {
			rc = fn(&sp, slot, slot_look(&sp, slot, spec, &info), &info, arg);
			close(lk);
		}
		local_paths_free(&sp);
	}
	if (sweep && nsdir)
		sweep_locks(nsdir, key);
	slots_free(nsdir, ents, n);
	return rc;
}

struct take {
	const struct sbx_spec *spec;
	struct sbx_paths *p;
	struct sbx_info *out;
	struct sbx_err *e;
};

static int take_fn(struct sbx_paths *sp, const char *slot, enum slot_state st,
		   struct sbx_info *info, void *arg)
{
	struct take *t = arg;

	if (st != SLOT_READY || !take_one(t->spec, sp, slot, t->p, info, t->e))
		return 0;
	*t->out = *info;
	return 1;
}

int local_pool_take(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_paths *p,
		    struct sbx_info *out, struct sbx_err *e)
{
	struct take t = {spec, p, out, e};
	int rc;

	/* A -secret sandbox's values are its creator's, read at its making: never pooled. */
	if (spec->secrets[0])
		return 0;
	rc = each_slot(b, spec, false, take_fn, &t, e);

	if (rc <= 0)
		err_clear(e);	/* none taken, whatever the reason: a cold start */
	return rc > 0;
}

/* A new slot name of key: SLOT_PREFIX KEY "-" 8 random hex digits. */
static int slot_name(const char *key, char *out, size_t size, struct sbx_err *e)
{
	unsigned char r[4];

	/* getentropy, not OpenSSL: loading libcrypto would cost every sbx-create its start */
	if (getentropy(r, sizeof r) < 0)
		return err_sys(e, errno, "getentropy");
	snprintf(out, size, SLOT_PREFIX "%s-%02x%02x%02x%02x", key, r[0], r[1], r[2], r[3]);
	return 0;
}

static int count_fn(struct sbx_paths *sp, const char *slot, enum slot_state st,
		    struct sbx_info *info, void *arg)
{
	struct local_pool_fill *f = arg;

	(void)sp, (void)slot, (void)info;
	f->ready += st == SLOT_READY;
	f->removed += st == SLOT_BROKEN;
	return 0;
}

int local_pool_spec_check(const struct sbx_spec *spec, struct sbx_err *e)
{
	if (spec->secrets[0])
		return err_set(e, SBX_EINVAL, "a pool cannot hold -secret sandboxes: their values "
			       "are read when each is made (sbx-create takes none from a pool)");
	return 0;
}

int local_pool_fill(struct sbx_backend *b, const struct sbx_spec *spec, int size,
		    struct local_pool_fill *f, struct sbx_err *e)
{
	char key[LOCAL_POOL_KEY_LEN + 1];

	memset(f, 0, sizeof *f);
	if (local_pool_spec_check(spec, e) < 0)
		return -1;
	local_pool_key(spec, key);
	if (each_slot(b, spec, true, count_fn, f, e) < 0)
		return -1;
	while (f->ready < size) {
		struct sbx_spec s = *spec;
		struct sbx_paths sp;
		struct sbx_info info;
		int lk, rc;

		if (slot_name(key, s.name, sizeof s.name, e) < 0 || local_paths(b, s.name, &sp, e) < 0)
			return -1;
		s.idle = SBX_IDLE_DELETE;
		rc = (lk = local_lock_name(&sp, e)) < 0 ? -1 : local_create_new(b, &s, &sp, &info, e);
		if (lk >= 0)
			close(lk);
		local_paths_free(&sp);
		if (rc < 0)
			return -1;
		f->ready++;
		f->made++;
	}
	return 0;
}

static int drain_fn(struct sbx_paths *sp, const char *slot, enum slot_state st,
		    struct sbx_info *info, void *arg)
{
	struct sbx_err ign;

	(void)info, (void)arg;
	if (st != SLOT_GONE && st != SLOT_BROKEN && local_remove_locked(sp, slot, &ign) == 0)
		unlink(sp->nslock);
	return 0;
}

int local_pool_drain(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_err *e)
{
	/* a slot being taken is skipped: it leaves the pool with its take */
	return each_slot(b, spec, true, drain_fn, NULL, e);
}

int local_pool_list(struct sbx_backend *b, int (*fn)(const struct sbx_info *, const char *pool,
						   void *), void *arg, struct sbx_err *e)
{
	char *nsdir;
	struct dirent **ents;
	int n, rc = 0;

	if ((n = slots(b, NULL, &nsdir, &ents, e)) < 0) {
		slots_free(nsdir, ents, 0);
		return -1;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		const char *slot = ents[i]->d_name;
		char dir[4096], pool[LOCAL_POOL_KEY_LEN + 1];
		struct sbx_info info;
		struct sbx_err ign;

		snprintf(dir, sizeof dir, "%s/%s", nsdir, slot);
		if (!local_alive(dir) || local_read_spec(dir, &info, &ign) < 0)
			continue;	/* gone, or a take cut short: not a pooled sandbox */
		snprintf(info.namespace, sizeof info.namespace, "%s", b->namespace);
		snprintf(info.state, sizeof info.state, "pooled");
		info.ready = true;
		snprintf(pool, sizeof pool, "%.*s", LOCAL_POOL_KEY_LEN, slot + strlen(SLOT_PREFIX));
		rc = fn(&info, pool, arg);
	}
	slots_free(nsdir, ents, n);
	return rc > 0 ? 0 : rc;
}
