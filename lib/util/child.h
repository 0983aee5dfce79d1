/* child.h — the one way sbx spawns a program (git's run-command): child_run runs it to the
 * end with bytes on its stdin, its stdout read line by line as it arrives (or collected), its
 * stderr's tail kept for the error message, an optional environment, deadline and cancel
 * descriptor (SIGTERM to its process group, SIGKILL after a grace period); child_start only
 * spawns it, on descriptors the caller wires (a long-lived peer), for the caller to reap.
 * Thread-safe: posix_spawn, close-on-exec everywhere, no globals, no signal handlers; stdin
 * is a socket written with MSG_NOSIGNAL, so no SIGPIPE either. The child runs in its own
 * process group with default signal dispositions and an empty signal mask, so a terminal's
 * Ctrl-C reaches only the parent, which decides.
 * Ownership: request strings are borrowed; child_result's buffers are freed with
 * child_result_free; child_find/child_self_dir return newly allocated strings. */
#ifndef SBX_CHILD_H
#define SBX_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include "err.h"

/* Default cap on collected stdout / one stdout line: a tool message carries at most two 8 MiB
 * streams plus framing; an LLM answer is far smaller. */
#define CHILD_OUT_MAX ((size_t)32 << 20)
/* Stderr kept: the tail, enough for any error message and some context. */
#define CHILD_ERR_MAX ((size_t)64 << 10)

/* A zero cancel_fd is descriptor 0: set it to -1 when there is none (CHILD_REQ_INIT). */
struct child_req {
	const char *path;		/* absolute path, or a name looked up on PATH */
	char *const *argv;
	char *const *envp;		/* the child's environment; NULL: this process's */
	const char *cwd;		/* its working directory; NULL: ours */
	const char *in;			/* stdin bytes; NULL: the child reads EOF at once */
	size_t in_len;
	int cancel_fd;			/* -1, or readable to stop the child */
	int64_t timeout_ns;		/* 0: none; else stopped as on cancel, timed_out set */
	int64_t grace_ns;		/* SIGTERM → SIGKILL delay; 0: 5 s */
	size_t out_max;			/* 0: CHILD_OUT_MAX */
	/* Each complete stdout line (NUL-terminated, newline removed) as it arrives; NULL:
	 * stdout is collected into child_result.out. A non-zero return stops the child like a
	 * cancellation, with child_result.aborted set. */
	int (*on_line)(void *arg, char *line, size_t len);
	void *arg;
};

/* A request with no cancel descriptor, the fields given set as in an initialiser (git's
 * CHILD_PROCESS_INIT): struct child_req r = CHILD_REQ_INIT(.path = p, .argv = argv); */
#define CHILD_REQ_INIT(...) {.cancel_fd = -1, __VA_ARGS__}

struct child_result {
	int status;			/* exit status; 128+n when killed by signal n */
	int signal;			/* n when signal n ended it, else 0 */
	bool canceled;			/* cancel_fd fired and the child was stopped */
	bool timed_out;			/* timeout_ns passed and the child was stopped */
	bool aborted;			/* on_line asked to stop */
	char *out;			/* collected stdout (on_line == NULL), NUL-terminated */
	size_t out_len;
	char *err;			/* stderr tail, NUL-terminated */
	size_t err_len;
};

/* Runs the child to completion. 0 when it ran (whatever its status), -1 with e when it could
 * not be started, its output broke a limit (SBX_EIO), or a descriptor failed. */
int child_run(const struct child_req *r, struct child_result *res, struct sbx_err *e);
void child_result_free(struct child_result *res);

/* Spawns r's program (path, argv, envp, cwd; the rest is child_run's) with in_fd, out_fd and
 * err_fd as its descriptors 0, 1 and 2 (-1: it inherits ours), in its own process group. 0
 * with *pid, or the errno of the failure (ENOENT: not found) with e. The caller reaps it. */
int child_start(const struct child_req *r, int in_fd, int out_fd, int err_fd, pid_t *pid,
		struct sbx_err *e);

/* dir/prog when that is an executable file, else NULL. */
char *child_find(const char *dir, const char *prog);
/* The directory of the running executable (/proc/self/exe), or NULL. */
char *child_self_dir(void);
/* The last non-empty line of a child's stderr with a leading "prog: " removed (newly
 * allocated; "" when there is none): the message of a failed sbx program. */
char *child_err_message(const struct child_result *res, const char *prog);

#endif
