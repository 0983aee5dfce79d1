/* warmpool.h — the warm pool an agent program keeps for its sessions (-warm N): sbx-pool
 * started beside it with the spec its sessions' sbx-create gets, so a session's first tool
 * call takes a ready sandbox. Local backend only (a cluster's pools are SandboxWarmPools).
 * Ownership: strings passed in are borrowed for the call. */
#ifndef SBX_WARMPOOL_H
#define SBX_WARMPOOL_H

#include <sys/types.h>

#include "err.h"

/* Most sandboxes -warm may ask for (sbx-pool's own cap). */
#define WARMPOOL_MAX 64

/* What a session's sbx-create is given: the pool is made of the same spec. image and ns may
 * be NULL (the defaults); homedir NULL: $SANDBOX_HOME_DIR or the default. */
struct warmpool_spec {
	const char *backend, *ns, *image, *homedir;
	char *const *create_args;	/* specflags_argv's words */
};

/* Starts sbx-pool -size n (found next to this program) for spec, its output discarded, its
 * messages on our stderr; *pid its pid, or 0 when there is nothing to start (n 0, or a
 * backend other than local). 0 or -1 with e. */
int warmpool_start(int n, const struct warmpool_spec *spec, pid_t *pid, struct sbx_err *e);
/* Stops the pool started (SIGTERM: it removes its sandboxes) and waits for it. */
void warmpool_stop(pid_t pid);

#endif
