/* proxyfilter.h — sbx-proxy's own confinement: no_new_privs and a seccomp allowlist of the
 * system calls its serving loop makes (sockets, splice, threads, reading the resolver's
 * files), so that a flaw in parsing what a sandbox sends cannot run a program, write a
 * file, trace or signal another process, or make any other call. Refused calls fail with
 * EPERM (clone3 with ENOSYS, so that libc falls back to clone, whose flags are checked). */
#ifndef SBX_PROXYFILTER_H
#define SBX_PROXYFILTER_H

#include "err.h"

/* Confines the calling process (all its threads) for good; -1 with e when it cannot. */
int proxyfilter_apply(struct sbx_err *e);

#endif
