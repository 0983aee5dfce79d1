/* fuzz_acp.c — acp-server's dispatch as a hostile client drives it, without a backend: the
 * input is one connection's bytes (JSON-RPC lines); answers go to /dev/null. The agent
 * configuration names a backend that does not exist, so session/new and session/load stop at
 * opening the agent and every parameter check before that is exercised: initialize,
 * authenticate (a token is configured when the first byte is odd), session/new, session/load,
 * session/prompt and session/cancel on unknown sessions, unknown methods, responses to
 * requests never sent. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "acp.h"
#include "peer.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static struct acp_server *open_srv, *token_srv;
static struct acp_auth auth;

static struct acp_server *server(bool token)
{
	struct acp_config cfg = {
		.backend = "fuzz-no-such-backend",
		.homedir = "/tmp",
		.toolset = "default",
		.model = "fake-eliza",
		.tool_timeout_ns = 1000000000,
		.auth = token ? &auth : NULL,
	};
	struct acp_server **s = token ? &token_srv : &open_srv;
	struct sbx_err e;

	if (auth.n == 0)
		acp_auth_single(&auth, "fuzzer", "fuzz-token-0123456789");
	if (*s == NULL && (*s = acp_server_new(&cfg, &e)) == NULL)
		abort();
	return *s;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	int in = memfd_create("acp-in", 0), out = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct sbx_err e;
	struct peer *p;

	if (in < 0 || out < 0)
		abort();
	if (size == 0) {
		close(in);
		close(out);
		return 0;
	}
	if (write(in, data + 1, size - 1) != (ssize_t)(size - 1))
		abort();
	lseek(in, 0, SEEK_SET);
	p = peer_new(in, out, NULL);
	acp_serve(server(data[0] & 1), p, &e);
	close(in);
	close(out);
	return 0;
}
