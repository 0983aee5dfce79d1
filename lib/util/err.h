/* err.h — how lib/ reports failure: a code a main can map to an exit status, and a cause. */
#ifndef SBX_ERR_H
#define SBX_ERR_H

#include <stddef.h>

/* Error classes. Mains map these to exit statuses (see lib/README.md). */
enum sbx_errcode {
	SBX_OK = 0,
	SBX_EINVAL,	/* bad input: flag, name, JSON, argument */
	SBX_ENOTFOUND,	/* the sandbox (or object) does not exist: nothing was started */
	SBX_EGONE,	/* the sandbox went away while a command ran: it may have run, in part */
	SBX_EEXIST,	/* exists and does not match */
	SBX_ECONFLICT,	/* optimistic concurrency lost (409) */
	SBX_ETIMEDOUT,	/* a deadline passed */
	SBX_ECANCELED,	/* a signal asked us to stop */
	SBX_EUNAVAIL,	/* a dependency is missing (bubblewrap, API server) */
	SBX_EPERM,	/* forbidden (401/403, permissions) */
	SBX_EBUSY,	/* held by another process (a session in use) */
	SBX_EIO,	/* anything else at run time */
};

/* Cause text limit: long enough for a path, a server message and a few prefixes. */
#define SBX_ERR_MAX 2048

struct sbx_err {
	int code;
	char msg[SBX_ERR_MAX];
};

/* Sets *e (if e is not NULL) and returns -1, so callers can `return err_set(...)`. */
int err_set(struct sbx_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Like err_set, appending ": strerror(errnum)". */
int err_sys(struct sbx_err *e, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Puts "prefix: " before the current message; keeps the code. Returns -1. */
int err_prefix(struct sbx_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Clears e. */
void err_clear(struct sbx_err *e);

#endif
