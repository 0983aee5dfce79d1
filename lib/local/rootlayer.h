/* rootlayer.h — a sandbox's writable root: each directory of the image it covers (/usr, /etc,
 * /var, /opt, …) an overlay whose lower layer is the image's directory, read-only and
 * idmapped to the sandbox's range of ids (so the image's root-owned files are the sandbox
 * root's), and whose upper layer is on one tmpfs of the sandbox's cap (-root-size). The
 * host half of the plan (lib/local/local_bwrap.c) writes what to cover; the supervisor mounts
 * it in its private mount namespace, where it vanishes with the sandbox. Built into libsbx and
 * into the static sbx-init. Ownership: nothing returned is allocated. */
#ifndef SBX_ROOTLAYER_H
#define SBX_ROOTLAYER_H

#include <stdint.h>
#include <sys/types.h>

/* The plan's file, in the sandbox's directory: the cap in bytes on the first line, then
 * one host directory per line (a layer's lower; "-": an empty directory of the upper). */
#define ROOTLAYER_FILE "rootlayer"
/* Most layers a plan has: the image's top-level directories that are covered. */
#define ROOTLAYER_MAX 16

/* Writes dir's plan: n lower directories, their layers capped at size bytes in all. 0 or -1
 * with errno. */
int rootlayer_write(const char *dir, int64_t size, const char *const *lower, int n);
/* In the supervisor, as root, in its own mount namespace: reads dir's plan (none: nothing to
 * do) and mounts the tmpfs of the cap at stage/upper and layer i at stage/layer/I, its lower
 * seen through userns (the sandbox's inner user namespace, where commands run: the image's
 * ids are theirs) and its top owned as the lower's is seen so; an empty directory's by uid:gid
 * (host ids). 0 or -1 with errno. */
int rootlayer_mount(const char *dir, const char *stage, int userns, uid_t uid, gid_t gid);

#endif
