/* cgroup.h — one cgroup per sandbox for its memory, pids and CPU limits, on cgroup v2 or v1.
 * It is made beneath the caller's own cgroups (as /proc/self/cgroup names them): on v2 in the
 * lowest cgroup at or above the caller's that has the controllers delegated and that the
 * caller may write (root: any; a user: one it owns, e.g. its systemd user@UID.service), on v1
 * in each controller's hierarchy directly below the caller's cgroup. Processes are never moved
 * out of their cgroups: only a sandbox's own new process joins it. What is made is removed.
 * Every function works over the texts of /proc/self/cgroup and /proc/self/mountinfo given
 * to it, so a unit test runs the logic over a fake cgroupfs tree.
 * libc only (sbx-init links it statically). Ownership: no allocation escapes. */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/* v1 keeps one directory per hierarchy: memory, pids and cpu at most, and the freezer's (made
 * where the host has that hierarchy, so the sandbox can be paused). */
#define CGROUP_MAX_DIRS 4

struct cgroup_want {
	int64_t memory;		/* bytes of memory + swap; 0: no memory limit */
	int64_t pids;		/* 0: no pids limit */
	int64_t cpus_milli;	/* 0: no CPU limit */
};

struct cgroup_set {
	int version;				/* 1 or 2; 0: none */
	int n;					/* directories made */
	char dir[CGROUP_MAX_DIRS][PATH_MAX];
	char oom[PATH_MAX];			/* memory.events (v2) or memory.oom_control (v1) */
};

/* Where cgroups are, as seen by this process. */
struct cgroup_host {
	const char *self;	/* text of /proc/self/cgroup */
	const char *mountinfo;	/* text of /proc/self/mountinfo */
	uid_t euid;
};

/* Makes the cgroup(s) named leaf with w's limits written into them. On failure nothing is
 * left behind and e says why and how to get limits (or to pass -limits none). */
int cgroup_create(const struct cgroup_host *h, const char *leaf, const struct cgroup_want *w,
		  struct cgroup_set *out, struct sbx_err *e);
/* cgroup_create with this process's own /proc/self texts and euid. */
int cgroup_create_here(const char *leaf, const struct cgroup_want *w, struct cgroup_set *out,
		       struct sbx_err *e);
/* Moves process pid into every directory of s; 0 is the caller, which must then be single-
 * threaded (a freshly forked child): on v1 only its thread is moved. 0, or -1 with errno. */
int cgroup_join(const struct cgroup_set *s, pid_t pid);
/* Kills every process in s, frozen ones too (thawed once killed, so none runs again), and
 * removes its directories, waiting at most wait_ms for the processes to go. 0, or -1 with errno when a directory stays. */
int cgroup_destroy(const struct cgroup_set *s, int wait_ms);
/* SIGKILLs every process in s, frozen ones too (then thawed so that the kill lands: on v1 a
 * frozen process only dies once thawed). The directories stay. */
void cgroup_kill(const struct cgroup_set *s);
/* Freezes (frozen true) or thaws every process in s, then waits at most wait_ms until the
 * kernel says it is done (v2: cgroup.events "frozen 1"; v1: freezer.state FROZEN). A freeze
 * not done in time is undone. 0, or -1 with errno: ENOTSUP when s has no freezer (a v1 set
 * without the freezer hierarchy), ETIMEDOUT, or the file's own. */
int cgroup_freeze(const struct cgroup_set *s, bool frozen, int wait_ms);
/* 1 when s is frozen or being frozen, 0 when not, -1 with errno (ENOTSUP: no freezer). */
int cgroup_frozen(const struct cgroup_set *s);
/* How many processes the memory limit has killed in s so far; -1 if unknown. */
long long cgroup_oom_kills(const char *oom_file);
/* s as text for a state file, and back. _format returns the length or -1 if cap is short. */
int cgroup_set_format(const struct cgroup_set *s, char *buf, size_t cap);
int cgroup_set_parse(const char *text, struct cgroup_set *s);

#endif
