/* local.h — the local backend's three parts, private to them (nothing outside lib/local/local_*.c
 * includes this):
 *   local_backend.c  the state of each sandbox on the host (its directory, locks, spec.json)
 *                    and the backend_ops built on it;
 *   local_bwrap.c    the privileged door: what a sandbox is made of (namespaces, mounts, the
 *                    environment, identities) and how it is started — the one file a security
 *                    reviewer reads end to end;
 *   local_exec.c     the client of a sandbox's exec service, the mirror of cmd/sbx-init/serve.c.
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
 * otherwise this process's own. 0 or -1. */
int local_bwrap_ids(struct local_ids *ids, struct sbx_err *e);
/* Starts the supervisor (and through it bubblewrap) detached; returns once it runs. */
int local_bwrap_start(const struct local_start *st, struct sbx_err *e);

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
