/* toolset_run.c — what every toolset's tools share below the registry: one command of a tool
 * run in the sandbox with the call's directory, deadline and cancel, and what a memory-limit
 * kill tells the model. */
#include "toolset.h"

#include <stdio.h>

#include "capture.h"
#include "reslimit.h"

int toolset_capture(const struct tool_ctx *ctx, struct capture_req *rq, struct capture *c,
		    struct sbx_err *e)
{
	rq->in_fd = -1;
	rq->workdir = ctx->workdir;
	rq->timeout_ns = ctx->timeout_ns;
	rq->cancel_fd = ctx->cancel_fd;
	if (capture_run(ctx->b, ctx->sandbox, rq, c, e) < 0)
		return -1;
	if (c->res.timed_out) {
		capture_free(c);
		return err_set(e, SBX_ETIMEDOUT, "context deadline exceeded");
	}
	if (c->res.canceled) {
		capture_free(c);
		return err_set(e, SBX_ECANCELED, "context canceled");
	}
	return 0;
}

const char *toolset_oom_text(const struct sbx_exec_result *r, char *buf, size_t cap)
{
	char size[32];

	if (!r->oom_killed)
		return buf[0] = '\0', buf;
	snprintf(buf, cap, "The command ran out of memory: the sandbox's memory limit (%s) killed "
		 "it (exit code 137). Use less memory, e.g. smaller inputs or fewer processes at once.",
		 reslimit_size_text(r->memory_limit, size, sizeof size));
	return buf;
}
