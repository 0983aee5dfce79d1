/* local_pool.h — warm pools of local sandboxes (sbx-pool): ready sandboxes of one spec kept
 * under pool names (NSDIR/pool-KEY-ID), so that sbx-create of that spec takes one instead of
 * starting a sandbox (lib/local/local_pool.c says how a take renames one).
 * Ownership: infos passed to callbacks are valid during the call only. */
#ifndef SBX_LOCAL_POOL_H
#define SBX_LOCAL_POOL_H

#include "backend.h"

/* The pool key of a spec: 16 hex digits over what a take must match (image, homedir,
 * network, allowed hosts, limits), the same for every program given the same flags. */
#define LOCAL_POOL_KEY_LEN 16
void local_pool_key(const struct sbx_spec *spec, char key[LOCAL_POOL_KEY_LEN + 1]);

/* What one look at a pool found and did. */
struct local_pool_fill {
	int ready;		/* pooled sandboxes of the spec ready after the fill */
	int made;		/* of them, made by this fill */
	int removed;		/* broken ones removed (a take cut short) */
};
/* Whether a pool may keep sandboxes of spec: not -secret ones, whose values are read when
 * each is made. 0, or -1 with e (SBX_EINVAL). */
int local_pool_spec_check(const struct sbx_spec *spec, struct sbx_err *e);
/* Makes pooled sandboxes of spec (its ttl: how long one waits unclaimed before its supervisor
 * removes it) until size are ready, on the local backend b. 0, or -1 with e (*f says how far
 * it got). */
int local_pool_fill(struct sbx_backend *b, const struct sbx_spec *spec, int size,
		    struct local_pool_fill *f, struct sbx_err *e);
/* Removes every pooled sandbox of spec (a pool that stops). 0 or -1. */
int local_pool_drain(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_err *e);
/* Calls fn for each live pooled sandbox in b's namespace (of any spec), in slot order: its
 * handle, named after its slot, state "pooled", and pool its spec's key; fn returning
 * non-zero stops the walk. 0 or -1 with e. */
int local_pool_list(struct sbx_backend *b, int (*fn)(const struct sbx_info *, const char *pool,
						   void *), void *arg, struct sbx_err *e);

#endif
