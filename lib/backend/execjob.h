/* execjob.h — one command (tar, mostly) in a sandbox, run on a thread of its own while the
 * caller handles the stream it reads or writes, its stderr kept for the error message, its
 * outcome in upstream's words. Used by snapshots, restores and copies. Ownership: the job
 * holds its stderr memfd until execjob_finish; argv and the fds it is given stay the caller's,
 * but for out_fd, which the job closes when the command ends (so a reader sees EOF). */
#ifndef SBX_EXECJOB_H
#define SBX_EXECJOB_H

#include <pthread.h>
#include <stdbool.h>

#include "backend.h"

/* What of the command's stderr is kept for the message. */
#define EXECJOB_STDERR_MAX 4096

struct execjob {
	struct sbx_backend *b;
	const char *name;
	struct sbx_exec x;
	struct sbx_exec_result res;
	struct sbx_err err;
	int rc, errfd;
	int close_after;	/* out_fd, closed by the thread when the command ends; or -1 */
	pthread_t th;
	bool started;
};

/* Starts argv in sandbox name on its own thread: stdin from in_fd (-1: none), stdout to out_fd
 * (-1: kept with stderr), out_fd closed when it ends. 0, or -1 with e (nothing started). */
int execjob_start(struct execjob *j, struct sbx_backend *b, const char *name, char **argv,
		  int in_fd, int out_fd, int cancel_fd, struct sbx_err *e);
/* Runs it here instead, to the end; then execjob_finish. */
int execjob_run(struct execjob *j, struct sbx_backend *b, const char *name, char **argv,
		int in_fd, int out_fd, int cancel_fd, struct sbx_err *e);
/* Waits for it and says how it went, what naming it ("snapshot", "restore"): 0 when it exited
 * 0; else `failed to execute <what>: <why>`, SBX_ECANCELED, or `<what> failed with exit code
 * <n>: <stderr>` (the status kept in res.exit_code). Frees the job's resources. */
int execjob_finish(struct execjob *j, const char *what, struct sbx_err *e);

/* What reads a command's output (from fd, to its end) or writes its input (to fd, closed after
 * by the caller): 0, or -1 with e. */
typedef int (*execjob_io_fn)(int fd, void *arg, struct sbx_err *e);

/* Runs argv in the sandbox, its standard output read by consume on this thread. When consume
 * fails the command is stopped. The error is the command's when it failed (a stream cut short
 * because tar failed says why tar did), else consume's. */
int execjob_read(struct sbx_backend *b, const char *name, char **argv, execjob_io_fn consume,
		 void *arg, const char *what, struct sbx_err *e);
/* Runs argv in the sandbox (stopped when cancel_fd is readable), its standard input written by
 * produce on a thread of its own. The error is the command's when it failed, else
 * produce's. */
int execjob_write(struct sbx_backend *b, const char *name, char **argv, int cancel_fd,
		  execjob_io_fn produce, void *arg, const char *what, struct sbx_err *e);

#endif
