/* idmap.h — the host ids of root's sandboxes and the user namespaces that map them: each
 * sandbox gets IDMAP_RANGE ids of its own (root inside is the first), as Docker's
 * userns-remap and rootless podman give a container. Built into libsbx and into the static
 * sbx-init. Ownership: nothing returned is allocated; descriptors returned are the caller's. */
#ifndef SBX_IDMAP_H
#define SBX_IDMAP_H

#include <sys/types.h>

struct idmap_req;

/* Ids per sandbox: 0..65535 inside, what a distribution's users and groups need. */
#define IDMAP_RANGE 65536UL

/* The pool root's sandboxes take their ranges from: the "sbx" entries of /etc/subuid and
 * /etc/subgid when the host has them, else the default (see idmap.c). */
struct idmap_pool {
	unsigned long uid_start, gid_start;
	unsigned long slots;		/* ranges of IDMAP_RANGE ids in it */
};

/* Reads the pool. 0, or -1 with *why (static text) when an "sbx" entry is too small. */
int idmap_pool(struct idmap_pool *p, const char **why);
/* How many ids a sandbox whose root is host uid owner has: IDMAP_RANGE when owner starts a
 * range of the pool, else 1 (an id pinned with SBX_SANDBOX_UID). */
unsigned long idmap_count_of(uid_t owner);

/* A user's own pool for the user's sandboxes: the user's entries (by name or by uid) in
 * /etc/subuid and /etc/subgid, the first of each that holds IDMAP_RANGE ids or more. 0, or -1
 * with errno: ENOENT the user has no entry in one of them, ERANGE no entry is large enough. */
int idmap_user_pool(const char *name, uid_t uid, struct idmap_pool *p);
/* 1 when newuidmap and newgidmap (Debian package uidmap) are installed, which a user's
 * sandbox needs to map the user's subordinate ids. */
int idmap_helpers_present(void);
/* The subordinate ids a user's sandbox maps, recorded by sbx-create in its directory (the
 * parent of its home, home given) for what works on the home from the host: fills r (the
 * ids of a helper request) and returns 0, or -1 when it maps none (the user's own id only). */
int idmap_user_of_home(const char *home, struct idmap_req *r);
/* What sbx-create records there: "SUBUID SUBGID COUNT". */
#define IDMAP_USER_FILE "subids"

/* What idmap_userns makes. */
struct idmap_req {
	uid_t uid;			/* the host ids 0 maps to, and count of each */
	gid_t gid;
	unsigned long count;
	int owned;			/* 1: the namespace belongs to uid:gid, else to root */
	int inner;			/* 1: a namespace below it too, see idmap_userns */
	uid_t in_uid;			/* the inner namespace's ids of the outer root */
	gid_t in_gid;
	/* 1: this process is a user, not root (owned is then implied), and the maps are written
	 * by newuidmap and newgidmap from the user's subordinate ids: 0 is the user's own uid and
	 * gid, 1..count-1 are uid+1.. and gid+1.. (uid and gid start the range, their first id
	 * stands for the user's). With inner, the outer namespace's own inotify limits are then
	 * a share of the user's (every process of it counts as the user too). */
	int helper;
};

/* A user namespace that maps 0..count-1 to r->uid.. and r->gid.. (an owned one is what
 * bubblewrap, running as uid:gid, may join with --userns). With r->inner, also one below it
 * for --userns2, where the outer root is (in_uid, in_gid) and every other id of the range
 * keeps a place, and where no further user namespace can be made (user.max_user_namespaces
 * 1 in the outer one, as bubblewrap's own --disable-userns does). Needs root, or r->helper
 * and the user's subordinate ids. Returns the
 * outer namespace's fd (close-on-exec) and the inner one's in *inner, or -1 with errno. */
int idmap_userns(const struct idmap_req *r, int *inner);
/* In a child about to work on a sandbox's files: enters the namespace (an idmap_userns one)
 * as its root, so it has the sandbox root's rights over the sandbox's ids and none over any
 * other. Single-threaded callers only. 0 or -1 with errno. */
int idmap_enter(int userns);

#endif
