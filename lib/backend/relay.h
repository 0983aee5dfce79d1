/* relay.h — run one command in a sandbox without handing it a descriptor of the caller's.
 * A backend that passes descriptors into the sandbox (the local one) would otherwise give it
 * the caller's terminal, files and pipes, for as long as anything the command left behind
 * runs: keystrokes read, terminal settings changed, files written after the command ended.
 * So pipes this process owns are passed instead, and a thread copies between them and the
 * caller's descriptors while the command runs — a terminal on stdin too. When the command
 * ends, what is already in the pipes is delivered and the copying stops, whatever the
 * command left running. /dev/null is passed as an open of its own (no copying), and a
 * backend that does not pass descriptors (Kubernetes) gets them unchanged.
 * Ownership: every descriptor given stays the caller's. */
#ifndef SBX_RELAY_H
#define SBX_RELAY_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"

/* Takes n bytes of the command's output (instead of writing them to a descriptor). */
typedef void (*relay_take_fn)(void *arg, int stream, const char *p, size_t n);

struct relay_opts {
	bool in_own;		/* x->in_fd is sbx's own (a memfd of the request's stdin): pass it */
	bool out_own;		/* x->out_fd and x->err_fd are sbx's own (pipes, memfds): pass them */
	bool merge;		/* stderr goes into stdout's stream (one pipe, order kept) */
	relay_take_fn take;	/* non-NULL: output goes here (stream 1 or 2), not to x's fds */
	void *arg;
};

/* Runs x like sbx_exec, its in_fd, out_fd and err_fd the caller's (opts may be NULL).
 * Returns sbx_exec's result. */
int relay_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
	       const struct relay_opts *opts, struct sbx_exec_result *r, struct sbx_err *e);

#endif
