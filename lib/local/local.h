/* local.h — the local backend's three parts, private to them (nothing outside lib/local/local_*.c
 * includes this):
 *   local_backend.c  the backend_ops, built on
 *   local_state.c    the state of each sandbox on the host (its directory, locks, spec.json);
 *   local_bwrap.c    the privileged door: what a sandbox is made of (namespaces, mounts, the
 *                    environment, identities) and how it is started — the one file a security
 *                    reviewer reads end to end;
 *   local_exec.c     the client of a sandbox's exec service, the mirror of cmd/sbx-init/serve.c;
 *   local_pool.c     warm pools: ready sandboxes of a spec kept under pool names, taken by a
 *                    create of that spec (lib/local/local_pool.h).
 * Ownership: strings and images returned are the caller's (free, oci_image_free). */
#ifndef SBX_LOCAL_H
#define SBX_LOCAL_H

#include "backend.h"
#include "oci.h"

/* Host paths of one sandbox: the namespace directory, the sandbox's directory and the per-name
 * lock that serializes operations on that name. */
struct sbx_paths {
	char *nsdir, *dir, *nslock;
};

/* ---- local_bwrap.c: the privileged door ---- */

/* The host identity a sandbox runs as. */
/* No range yet, no lock held. */
#define LOCAL_IDS_INIT {.lock = -1}
struct local_ids {
	uid_t uid;			/* the first host id of the sandbox's range */
	gid_t gid;
	unsigned long count;		/* ids in the range (lib/local/idmap.h), 1 for a user's */
	int drop;			/* 1: this process is root and the sandbox runs as uid:gid */
	int lock;			/* held while the sandbox has uid:gid (-1: none); see below */
	/* A user's sandbox: the first of the user's subordinate ids its range maps (root inside
	 * is the user, id n > 0 inside is sub_uid + n), 0 when it has the user's own id only. */
	unsigned long sub_uid, sub_gid;
	char notice[320];		/* "" or what the person making it should be told */
};

/* What the door needs to start one sandbox. */
struct local_start {
	const struct sbx_spec *spec;
	const struct sbx_paths *paths;
	const char *home;		/* host directory bound as the sandbox's home */
	const struct oci_image *img;	/* NULL: no OCI image */
	int lsock;			/* the exec service's listening socket (stays the caller's) */
	const struct local_ids *ids;	/* ids->lock goes to the supervisor, which holds it */
	int64_t root_size;		/* the writable root's cap; 0: the root read-only */
};

/* 0 when the local backend can run image ("host", a root filesystem directory, an OCI ref). */
int local_bwrap_check_image(const char *image, struct sbx_err *e);
/* Has sbx-image unpack (or find in its cache) the OCI image the spec names. NULL on failure. */
struct oci_image *local_bwrap_open_image(const struct sbx_spec *spec, struct sbx_err *e);
/* Chooses the host identity of a new sandbox: as root, a range of uids and gids of its own
 * from the documented pool, reserved by ids->lock (close it, or hand it to local_bwrap_start);
 * otherwise this process's own, with a range of the user's subordinate ids where the user
 * has some (reserved the same way, under state_root), and ids->notice set where the user
 * has none (once per state directory) or shares a range. 0 or -1. */
int local_bwrap_ids(struct local_ids *ids, const char *state_root, struct sbx_err *e);
/* Starts the supervisor (and through it bubblewrap) detached; returns once it runs. */
int local_bwrap_start(const struct local_start *st, struct sbx_err *e);

/* ---- local_state.c: one sandbox's state, for local_backend.c and local_pool.c ---- */

/* How long create waits for a new sandbox's exec service to answer. bwrap starts in
 * milliseconds; this only bounds a broken host. */
#define READY_TIMEOUT_MS 10000

/* p's paths for sandbox (or pool slot) name in b's namespace; free with local_paths_free. */
int local_paths(struct sbx_backend *b, const char *name, struct sbx_paths *p, struct sbx_err *e);
void local_paths_free(struct sbx_paths *p);
/* Takes p's per-name lock (waiting); returns its fd or -1. */
int local_lock_name(struct sbx_paths *p, struct sbx_err *e);
/* Whether fd (a lock file, locked) is still the file at path: one unlinked meanwhile (a
 * pool's sweep of unused slot locks) guards nothing. */
bool local_lock_current(int fd, const char *path);
/* 1 when a supervisor holds dir/lock. */
int local_alive(const char *dir);
/* Under the name lock: 1 when a live sandbox is in p->dir; removes a stale directory. */
int local_check_live(struct sbx_paths *p);
/* dir/spec.json into out; -1 when unreadable or not the spec of dir's own name. */
int local_read_spec(const char *dir, struct sbx_info *out, struct sbx_err *e);
/* Writes dir's spec.json, deadline and idle files from in. */
int local_write_spec(const char *dir, const struct sbx_info *in, int64_t ttl_ns,
		     struct sbx_err *e);
/* Under the name lock: makes sandbox spec->name in p and waits until it is ready. */
int local_create_new(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_paths *p,
		     struct sbx_info *out, struct sbx_err *e);
/* 0 when have (a live sandbox's handle) is what want asks for; else SBX_EEXIST saying why. */
int local_spec_matches(const struct sbx_info *have, const struct sbx_spec *want,
		       struct sbx_err *e);
/* Under the name lock: stops the sandbox in p and removes it with its home. */
int local_remove_locked(struct sbx_paths *p, const char *name, struct sbx_err *e);
/* The pid of dir's supervisor, or -1. */
int local_supervisor_pid(const char *dir);
/* 1 when dir is a directory (not followed if a symlink). */
int local_dir_exists(const char *dir);
/* Removes a sandbox directory nobody holds any more, and what its limits hold outside it. */
int local_remove_dead(const char *dir);
/* homedisk_look on dir's home (HOMEDISK_*); *home (may be NULL) the path to reach it by. */
int local_look_home(const char *dir, char **home, struct sbx_err *e);
/* Removes the trash (.trash.NAME.PID) nobody holds in nsdir; with name, waits for that
 * sandbox's removal under way. */
void local_sweep_trash(const char *nsdir, const char *name);

/* ---- local_pool.c: taking a pooled sandbox ---- */

/* Under p's name lock, with no sandbox there: renames a ready pooled sandbox of spec's kind
 * to spec->name (its clock started, its ttl and idle policy spec's) and fills out. 1 taken,
 * 0 none to take (the caller makes one), -1 error. */
int local_pool_take(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_paths *p,
		    struct sbx_info *out, struct sbx_err *e);

/* ---- local_exec.c: the exec service client ---- */

/* Makes the service's listening socket at dir/sock; returns it, or -1. */
int local_exec_listen(const char *dir, struct sbx_err *e);
/* 0 when the service in dir answers within timeout_ms. */
int local_exec_ping(const char *dir, int timeout_ms);

/* How a run ended when it did not produce a result. */
enum local_exec_fail {
	LOCAL_EXEC_NOCONN = 1,	/* could not reach the service: nothing ran */
	LOCAL_EXEC_LOST,	/* the service hung up mid-command: it may have run in part */
	LOCAL_EXEC_OTHER,	/* anything else; e says what */
};
/* What a waiting run calls (with arg) each time it finds the sandbox frozen. */
struct local_exec_watch {
	void (*frozen)(void *arg);
	void *arg;
};
/* Runs one command through the service in dir, w (or NULL) watching; fills r. Returns 0, or
 * -1 with *why and e. */
int local_exec_run(const char *dir, const char *name, const struct sbx_exec *x,
		   const struct local_exec_watch *w, struct sbx_exec_result *r,
		   enum local_exec_fail *why, struct sbx_err *e);

#endif
