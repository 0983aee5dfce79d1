/* child.h — run one sbx program as a child process the way the agent composes them: bytes on
 * its stdin, its stdout read line by line as it arrives (or collected), its stderr kept for the
 * error message, and a cancel descriptor that stops it (SIGTERM to its process group, SIGKILL
 * after a grace period). Thread-safe: posix_spawn, close-on-exec everywhere, no globals, no
 * signal handlers; stdin is a socket written with MSG_NOSIGNAL, so no SIGPIPE either.
 * The child runs in its own process group with default signal dispositions and an empty
 * signal mask, so a terminal's Ctrl-C reaches only the parent, which decides.
 * Ownership: request strings are borrowed; child_result's buffers are freed with
 * child_result_free; child_find/child_self_dir return newly allocated strings. */
#ifndef SBX_CHILD_H
#define SBX_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Default cap on collected stdout / one stdout line: a tool message carries at most two 8 MiB
 * streams plus framing; an LLM answer is far smaller. */
#define CHILD_OUT_MAX ((size_t)32 << 20)
/* Stderr kept: the tail, enough for any error message and some context. */
#define CHILD_ERR_MAX ((size_t)64 << 10)

struct child_req {
	const char *path;		/* absolute path, or a name looked up on PATH */
	char *const *argv;
	const char *in;			/* stdin bytes; NULL: the child reads EOF at once */
	size_t in_len;
	int cancel_fd;			/* -1, or readable to stop the child */
	int64_t grace_ns;		/* SIGTERM → SIGKILL delay; 0: 5 s */
	size_t out_max;			/* 0: CHILD_OUT_MAX */
	/* Each complete stdout line (NUL-terminated, newline removed) as it arrives; NULL:
	 * stdout is collected into child_result.out. A non-zero return stops the child like a
	 * cancellation, with child_result.aborted set. */
	int (*on_line)(void *arg, char *line, size_t len);
	void *arg;
};

struct child_result {
	int status;			/* exit status; 128+n when killed by signal n */
	bool canceled;			/* cancel_fd fired and the child was stopped */
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

/* dir/prog when that is an executable file, else NULL. */
char *child_find(const char *dir, const char *prog);
/* The directory of the running executable (/proc/self/exe), or NULL. */
char *child_self_dir(void);
/* The last non-empty line of a child's stderr with a leading "prog: " removed (newly
 * allocated; "" when there is none): the message of a failed sbx program. */
char *child_err_message(const struct child_result *res, const char *prog);

#endif
