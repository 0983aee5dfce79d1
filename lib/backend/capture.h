/* capture.h — run one command in a sandbox and collect its output in memory, each stream
 * capped so a runaway command cannot exhaust memory. Built on backend exec (any backend).
 * Ownership: the capture's buffers are the caller's, freed with capture_free. */
#ifndef SBX_CAPTURE_H
#define SBX_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* Default per-stream cap: upstream's 8 MiB limited writer. */
#define CAPTURE_DEFAULT_MAX (8u << 20)

struct capture {
	char *out, *err;		/* NUL-terminated, at most max bytes each */
	size_t out_len, err_len;
	bool out_truncated, err_truncated;
	size_t out_dropped, err_dropped;	/* bytes read but not kept */
	struct sbx_exec_result res;
};

struct capture_req {
	char *const *argv;
	const char *workdir;		/* NULL: backend default */
	char *const *env;		/* extra NAME=VALUE or NULL */
	const char *in;			/* stdin bytes, or NULL for none */
	size_t in_len;
	int in_fd;			/* used instead of `in` when >= 0 */
	int64_t timeout_ns;		/* 0: none */
	int cancel_fd;			/* -1 or readable to stop */
	size_t max;			/* per-stream cap; 0 = CAPTURE_DEFAULT_MAX */
	bool merge;			/* stderr goes into out too (one shared cap) */
	bool keep_tail;			/* over the cap, keep the last max bytes, not the first */
	size_t head;			/* with keep_tail: the first head bytes are kept too */
};

/* Runs the command; 0 when it ran (whatever its status), -1 with e otherwise. */
int capture_run(struct sbx_backend *b, const char *name, const struct capture_req *req,
		struct capture *out, struct sbx_err *e);
void capture_free(struct capture *c);

#endif
