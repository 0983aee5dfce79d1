/* fuzz_mcphttp.c — sbx-mcp's Streamable HTTP server as a hostile client drives it: each input
 * is one connection's bytes, sent to the real server (libmicrohttpd and lib/mcphttp, on a
 * loopback port this process listens on) and half-closed; the answer is read to its end.
 * An input starting with 'A' gets a request line and the right bearer token put in front, so
 * the fuzzer reaches past the 401; one starting with 'S' also the id of a session the harness
 * opened, so it reaches the methods behind initialize. No sbx program is on PATH: a tools/call stops at making the
 * sandbox, and every check before it (headers, sessions, versions, bodies, JSON-RPC, the MCP
 * methods) is exercised. A hang (no answer within 25 s, below libFuzzer's -timeout of 30 s,
 * so a busy machine's stalls are not findings) aborts, saying so. */
// FUZZ_SOURCES: -lmicrohttpd
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mcphttp.h"
#include "net.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define TOKEN "fuzz-token-0123456789"
#define PREFIX "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TOKEN "\r\n"

static char addr[NET_ADDR_MAX], sid_header[128];
static int stop_pipe[2];

struct run_arg {
	struct mcp_server *srv;
	int lfd;
};

static void *serve(void *arg)
{
	struct run_arg *ra = arg;
	struct mcphttp_config hc = {.token = TOKEN};
	struct sbx_err e;

	mcphttp_run(ra->srv, &hc, ra->lfd, stop_pipe[0], &e);
	return NULL;
}

static void start(void)
{
	static struct run_arg ra;
	struct mcp_server_config cfg = {.backend = "local", .homedir = "/tmp", .toolset = "basic",
					.bindir = "/nonexistent", .tool_timeout_ns = 1000000000,
					.snapshot_delay_ns = -1};
	char dir[] = "/tmp/fuzz-mcphttp-XXXXXX";
	struct sbx_err e;
	pthread_t t;

	if (mkdtemp(dir) == NULL)
		abort();
	setenv("HOME", dir, 1);
	setenv("XDG_STATE_HOME", dir, 1);
	setenv("PATH", "/nonexistent", 1);
	unsetenv("KUBECONFIG");
	unsetenv("SANDBOX_BACKEND");
	if (pipe(stop_pipe) < 0 || (ra.srv = mcp_server_new(&cfg, &e)) == NULL ||
	    (ra.lfd = net_listen("127.0.0.1:0", &e)) < 0)
		abort();
	net_local_addr(ra.lfd, addr, sizeof addr);
	if (pthread_create(&t, NULL, serve, &ra) != 0)
		abort();
}

/* Sends the input (after its prefix), half-closes, reads the whole answer into out. */
static void exchange(const char *prefix, const unsigned char *data, size_t size, char *out,
		     size_t outmax)
{
	size_t got = 0;
	int fd;

	if ((fd = net_dial(addr, 5000, NULL)) < 0) {
		fprintf(stderr, "fuzz_mcphttp: cannot connect to the server\n");
		abort();
	}
	if ((prefix && send(fd, prefix, strlen(prefix), MSG_NOSIGNAL) < 0) ||
	    (size > 0 && send(fd, data, size, MSG_NOSIGNAL) < 0))
		goto out;
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		char buf[65536];
		ssize_t n;

		if (poll(&p, 1, 25000) != 1) {
			fprintf(stderr, "fuzz_mcphttp: no answer and no close within 25 s\n");
			abort();
		}
		n = recv(fd, buf, sizeof buf, 0);
		if (n <= 0)
			break;
		if (out && got + (size_t)n < outmax) {
			memcpy(out + got, buf, (size_t)n);
			got += (size_t)n;
			out[got] = '\0';
		}
	}
out:
	close(fd);
}

/* A session for the 'S' inputs. */
static void open_session(void)
{
	static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
		"\"params\":{\"protocolVersion\":\"2025-11-25\"}}";
	char req[512], ans[8192], *h;

	snprintf(req, sizeof req, PREFIX "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
		 strlen(init), init);
	exchange(req, NULL, 0, ans, sizeof ans);
	if ((h = strstr(ans, "Mcp-Session-Id: ")) == NULL)
		abort();
	snprintf(sid_header, sizeof sid_header, PREFIX "Mcp-Session-Id: %.*s\r\n",
		 (int)strcspn(h + 16, "\r\n"), h + 16);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static bool started;
	const char *prefix = NULL;

	if (!started) {
		start();
		open_session();
		started = true;
	}
	if (size > 0 && (data[0] == 'A' || data[0] == 'S')) {
		prefix = data[0] == 'A' ? PREFIX : sid_header;
		data++;
		size--;
	}
	exchange(prefix, data, size, NULL, 0);
	return 0;
}
