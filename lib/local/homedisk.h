/* homedisk.h — the home's disk cap: an ext4 filesystem image of exactly the cap, sparse on the
 * host disk, mounted (nosuid, nodev) on the home's host path in the caller's mount namespace,
 * so every host-side reader of the home (snapshots, restores) sees it unchanged. A write past
 * the cap fails with ENOSPC inside; the image file never grows past the cap.
 * Two ways to mount it. Root: a loop device and the kernel's ext4, with discard, which gives
 * freed blocks back to the host disk. A user: fuse2fs (e2fsprogs' ext4 in user space, run as
 * the user outside the sandbox), mounted through fuse3's setuid fusermount3 — what a user may
 * do where /dev/fuse is open to users, as udev makes it on every distribution; freed blocks
 * stay in the image (its size is the home's high-water mark, never past the cap), and the
 * home lives as long as that fuse2fs process (killed, the home reads "Transport endpoint is
 * not connected" inside and out, and homedisk_look says so).
 * Making the filesystem costs one mke2fs per size (and owner), kept as a template under the
 * state root; each sandbox copies the template's few allocated blocks. e2fsprogs' mke2fs;
 * fuse2fs and fusermount3 for a user. libc only (sbx-init links it). Ownership: nothing
 * escapes. */
#ifndef SBX_HOMEDISK_H
#define SBX_HOMEDISK_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/* The image beside the home: DIR/home.img for the home DIR/home. */
#define HOMEDISK_IMAGE "home.img"

enum homedisk_kind {
	HOMEDISK_LOOP,			/* root: loop device + the kernel's ext4 */
	HOMEDISK_FUSE,			/* a user: fuse2fs through fusermount3 */
};

/* Whether this process can mount a home with fuse2fs: 0, or -1 with why (what is missing and
 * how to get it) in why. */
int homedisk_fuse_usable(char *why, size_t cap);
/* Makes DIR/home.img of size bytes from the template in cache_dir and mounts it on DIR/home
 * (which must exist), its root owned by uid:gid (for HOMEDISK_FUSE, this process's ids). On
 * failure nothing is left mounted. */
int homedisk_create(const char *dir, const char *cache_dir, int64_t size, uid_t uid, gid_t gid,
		    enum homedisk_kind kind, struct sbx_err *e);
/* What homedisk_look finds. */
#define HOMEDISK_MOUNTED 0		/* no image, or the home is on it */
#define HOMEDISK_LOST 1			/* its filesystem is gone (its fuse2fs ended, or it was
					 * unmounted): what the host path shows is not the home */
/* Looks at DIR's home: HOMEDISK_MOUNTED with the path to read and write it by in home (DIR/home,
 * or, for a caller in another mount namespace than the one it is mounted in, the same seen
 * through holder's: /proc/HOLDER/root/DIR/home); HOMEDISK_LOST with e saying why (what of
 * "the home"); or -1 with e when this process cannot tell (not mounted in its namespace and
 * holder's view closed to it). holder: a process that sees the mount (the supervisor). */
int homedisk_look(const char *dir, pid_t holder, char *home, size_t cap, struct sbx_err *e);
/* Detaches DIR/home's filesystem (lazily: a reader still inside keeps it until it leaves)
 * and removes the image. Harmless when there is none. 0, or -1 with errno. */
int homedisk_release(const char *dir);

#endif
