/* fuzz_toolcall.c — tool-call argument decoding through the registry (sbx-tool's input), for
 * both toolsets. The first byte picks the tool; the rest is the arguments text. The backend
 * refuses to run anything, so only decoding and validation are exercised; whatever comes
 * back must be valid UTF-8 of the length given. */
#include <stdlib.h>
#include <string.h>

#include "toolset.h"
#include "utf8.h"
#include "xalloc.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int no_exec(struct sbx_backend *b, const char *n, const struct sbx_exec *x,
		   struct sbx_exec_result *r, struct sbx_err *e)
{
	(void)b, (void)n, (void)x, (void)r;
	return err_set(e, SBX_EIO, "no sandbox in the fuzzer");
}

static const struct backend_ops ops = {.name = "fuzz", .exec = no_exec};

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const char *const names[] = {"run_command", "ls", "read", "write", "nosuch",
					    "run_shell_command", "read_file", "glob"};
	struct sbx_backend b = {.ops = &ops};
	struct tool_ctx ctx = {.b = &b, .sandbox = "fuzz", .homedir = "/h", .cancel_fd = -1};
	struct sbx_err e;
	char *args, *out;
	size_t len;
	int failed;

	if (size == 0)
		return 0;
	args = xstrndup((const char *)data + 1, size - 1);
	out = toolset_call(data[0] & 0x80 ? &toolset_geminicli : &toolset_basic, &ctx,
			   names[(data[0] & 0x7f) % 8], args, &len, &failed, &e);
	if (out && (!utf8_valid(out, len) || strlen(out) > len))
		abort();
	free(out);
	free(args);
	return 0;
}
