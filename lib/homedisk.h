/* homedisk.h — the home's disk cap for root's sandboxes: an ext4 filesystem image of exactly
 * the cap, sparse on the host disk, loop-mounted (nosuid, nodev, discard) on the home's host
 * path in the caller's mount namespace, so every host-side reader of the home (snapshots,
 * restores) sees it unchanged. A write past the cap fails with ENOSPC inside; the image file
 * never grows past the cap, and discard gives freed blocks back to the host disk.
 * Making the filesystem costs one mke2fs per size, kept as a template under the state root;
 * each sandbox copies the template's few allocated blocks. Needs root (loop devices and
 * mount); e2fsprogs' mke2fs. libc only (sbx-init links it). Ownership: nothing escapes. */
#ifndef SBX_HOMEDISK_H
#define SBX_HOMEDISK_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/* The image beside the home: DIR/home.img for the home DIR/home. */
#define HOMEDISK_IMAGE "home.img"

/* Makes DIR/home.img of size bytes from the template in cache_dir and mounts it on DIR/home
 * (which must exist), its root owned by uid:gid. On failure nothing is left mounted. */
int homedisk_create(const char *dir, const char *cache_dir, int64_t size, uid_t uid, gid_t gid,
		    struct sbx_err *e);
/* Detaches DIR/home's filesystem (lazily: a reader still inside keeps it until it leaves)
 * and removes the image. Harmless when there is none. 0, or -1 with errno. */
int homedisk_release(const char *dir);

#endif
