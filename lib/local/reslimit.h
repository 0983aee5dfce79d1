/* reslimit.h — a local sandbox's resource limits put in force and taken away again: its
 * cgroup (lib/cgroup: memory with swap, pids, CPU), its home's disk cap (lib/homedisk: a
 * loop mount as root, fuse2fs as a user) and the sizes of its tmpfs mounts. State in the sandbox directory DIR: DIR/cgroups
 * (the cgroup set as text), DIR/memory.oom (a symlink to the cgroup's OOM counter file) and
 * DIR/home.img. The local backend calls reslimit_setup and reslimit_release; the supervisor
 * (sbx-init, which links this statically: libc only) reslimit_join and reslimit_release.
 * Ownership: nothing allocated escapes. */
#ifndef SBX_RESLIMIT_H
#define SBX_RESLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "cgroup.h"
#include "err.h"
#include "homedisk.h"

/* How long taking a sandbox down waits for its processes to leave its cgroup. */
#define RESLIMIT_RELEASE_WAIT_MS 2000

/* The tmpfs mounts of a sandbox. Each has a size below the memory limit, and their pages are
 * charged to the sandbox's cgroup; the caps of the four that hold data add up to 7/8 of it,
 * so a sandbox whose every tmpfs is full still has memory to run the command that cleans up. */
enum reslimit_tmpfs {
	RESLIMIT_TMP,		/* /tmp: 1/4 of the memory limit */
	RESLIMIT_VAR,		/* /var (and /var/tmp): 1/4 */
	RESLIMIT_RUN,		/* /run: 1/8, at most 64M */
	RESLIMIT_SHM,		/* /dev/shm: 64M, at most 1/4 */
	RESLIMIT_MASK,		/* the empty tmpfs masking /etc/ssh and the like: 64K */
	RESLIMIT_ROOT,		/* / over the host's root: mount points and small files, 1M */
};

struct reslimit_ctx {
	const char *dir;		/* the sandbox directory, home in DIR/home */
	const char *leaf;		/* the cgroup's name */
	const char *cache_dir;		/* where disk image templates are kept */
	uid_t uid;			/* owner of the home (host ids) */
	gid_t gid;
	bool can_cap;			/* the home can be capped: a mounted image */
	enum homedisk_kind disk_kind;	/* how the image is mounted (root: loop; a user: FUSE) */
};

/* Puts want in force for the sandbox of c; *in_force says what is (disk 0 when the home
 * cannot be capped: !can_cap). Fails, saying why and how to fix it, when want is enforced
 * and no cgroup can be had; on failure nothing is left behind. */
int reslimit_setup(const struct reslimit_ctx *c, const struct sbx_limits *want,
		   struct sbx_limits *in_force, struct sbx_err *e);
/* Moves the calling process into DIR's cgroups (nothing to do without). 0, or -1 + errno. */
int reslimit_join(const char *dir);
/* The sandbox's cgroup set as reslimit_setup saved it in dir. 0, or -1 with errno (ENOENT: no
 * limits). */
int reslimit_load(const char *dir, struct cgroup_set *s);
/* Kills what is left in DIR's cgroups, removes them, unmounts and removes the home's image.
 * Harmless when there is nothing. 0, or -1 when something stays. */
int reslimit_release(const char *dir);
/* Freezes (paused true) or thaws every process of the sandbox in DIR through its cgroup,
 * waiting at most wait_ms for the kernel to finish. 0, or -1 with errno: ENOENT when the
 * sandbox has no cgroup (-limits none), ENOTSUP when its cgroup has no freezer, ETIMEDOUT. */
int reslimit_freeze(const char *dir, bool paused, int wait_ms);
/* 1 when the sandbox in DIR is frozen (or being frozen), 0 when not, -1 without a freezer. */
int reslimit_frozen(const char *dir);
/* SIGKILLs every process in DIR's cgroups, frozen ones too (they die at once); the cgroups
 * stay for reslimit_release. Nothing to do without. */
void reslimit_kill(const char *dir);
/* How many processes the memory limit has killed in the sandbox; -1 without a cgroup. */
long long reslimit_oom_kills(const char *dir);
/* The size in bytes of a tmpfs for a sandbox whose memory limit is memory. */
int64_t reslimit_tmpfs_size(int64_t memory, enum reslimit_tmpfs which);
/* bytes as the flags write sizes ("128M", "2G", "1536K", else plain bytes) into buf. */
const char *reslimit_size_text(int64_t bytes, char *buf, size_t cap);

#endif
