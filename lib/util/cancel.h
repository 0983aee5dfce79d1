/* cancel.h — the one self-pipe signal helper: signals turned into a readable file descriptor,
 * so long operations (poll loops, sbx_exec's cancel_fd, a prompt's read) stop cleanly and the
 * program can still clean up and exit 128+n. Process-wide: install once, from main. SIGPIPE is
 * ignored (a closed pipe is an error return, not a death). The handlers do not restart
 * interrupted calls (no SA_RESTART): a blocking read returns to see the signal. */
#ifndef SBX_CANCEL_H
#define SBX_CANCEL_H

#include <signal.h>

#include "err.h"

/* Installs the handlers for SIGINT, SIGTERM and SIGHUP; returns the fd that becomes readable
 * on the first signal, or -1. */
int cancel_install(struct sbx_err *e);
/* The same for the signals of sigs (0-terminated), with flags: CANCEL_ONCE, each signal's
 * default action comes back after its first arrival (a second Ctrl-C then ends the
 * program); CANCEL_RESTART, interrupted calls are restarted (SA_RESTART) for a program whose
 * main thread must not see EINTR and that watches the descriptor on a thread of its own. */
enum { CANCEL_ONCE = 1 << 0, CANCEL_RESTART = 1 << 1 };
int cancel_install_signals(const int *sigs, unsigned flags, struct sbx_err *e);
/* The first signal that arrived, or 0. */
int cancel_signal(void);
/* The same as a flag to poll from code that takes one (lib/llm/llm.h's cancel). */
const volatile sig_atomic_t *cancel_flag(void);
/* How many times sig arrived (only counted for the signals installed). */
int cancel_count(int sig);
/* Reads away the wake-ups pending on the descriptor (the counts stay). */
void cancel_drain(void);

#endif
