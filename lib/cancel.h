/* cancel.h — turns SIGINT, SIGTERM and SIGHUP into a readable file descriptor, so long
 * operations (poll loops, sbx_exec's cancel_fd) stop cleanly and the program can still clean
 * up and exit 128+n. Process-wide: call once, from main. SIGPIPE is ignored (a closed pipe is
 * an error return, not a death). */
#ifndef SBX_CANCEL_H
#define SBX_CANCEL_H

#include "err.h"

/* Installs the handlers; returns the fd that becomes readable on the first signal, or -1. */
int cancel_install(struct sbx_err *e);
/* The signal that arrived, or 0. */
int cancel_signal(void);

#endif
