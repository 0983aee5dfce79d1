/* sbx-mcp — sbx's toolsets as MCP tools (stdio or Streamable HTTP), each MCP session with its
 * own sandbox and agent-loop's lifecycle (lib/mcp/mcpserver.h, lib/mcp/mcphttp.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp.h"
#include "acpauth.h"
#include "agent.h"
#include "cancel.h"
#include "flag.h"
#include "mcphttp.h"
#include "mcpserver.h"
#include "name.h"
#include "net.h"
#include "paths.h"
#include "randhex.h"
#include "sessions.h"
#include "specflags.h"
#include "xalloc.h"
#include "warmpool.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-mcp [-listen ADDR [-auth-token-file F]] [-session NAME] [-backend B]\n"
	"               [-namespace NS] [-image I] [-homedir D] [-toolset basic|geminicli]\n"
	"               [-tool-timeout 2m] [-ttl 5m] [-snapshot-delay 2s] [-v]\n"
	"               [-warm N] " SPECFLAGS_SYNOPSIS_WRAPPED("               ") "\n"
	"Serves a toolset's tools over the Model Context Protocol: on standard input and output\n"
	"(one client; nothing but protocol on stdout), or over Streamable HTTP at\n"
	"http://ADDR/mcp with -listen. Every MCP session has its own sandbox, made on its first\n"
	"tool call and restored from the session's latest backup when it had expired; the home\n"
	"is backed up once the session is quiet after a call that may have changed it.\n"
	"\n"
	"  -listen ADDR          Streamable HTTP on ADDR (host:port; 127.0.0.1:PORT for\n"
	"                        loopback, which is what to use unless told otherwise)\n"
	"  -auth-token-file F    the bearer token HTTP clients must send; without it one is\n"
	"                        generated and written (0600) to a file named on stderr\n"
	"  -session NAME         stdio: the session and sandbox name (^[a-z0-9]{1,40}$); env\n"
	"                        SESSION_NAME; default: generated and reported on stderr\n"
	CLI_SBX_USAGE
	"  -toolset T            basic or geminicli; env TOOLSET, default basic; T+open_port adds\n"
	"                        the open_port tool (a sandbox port for the user; off by default)\n"
	"  -tool-timeout D       deadline per tool call (Go duration, default 2m; 0 disables)\n"
	"  -ttl D                sandbox inactivity lifetime (Go duration, default 5m)\n"
	"  -snapshot-delay D     quiet time after a call that may have changed the home before\n"
	"                        it is backed up (default 2s; 0: right after each such call)\n"
	SPECFLAGS_USAGE
	"  -warm N               local: keep N sandboxes of the sessions' spec ready (sbx-pool),\n"
	"                        so a session's first tool call takes one (default 0: none)\n"
	"  -v                    show each step's command line and documents on stderr\n"
	"  -h                    show this help\n";

/* Readable once SIGINT or SIGTERM came (lib/util/cancel.h). */
static int stop_fd = -1;

static void on_log(void *arg, const char *msg)
{
	(void)arg;
	cli_msg("%s", msg);
}

static void on_trace(void *arg, const char *label, const char *json)
{
	(void)arg;
	cli_msg("%s: %s", label, json);
}

/* stdio: the protocol gets private copies of descriptors 0 and 1; 0 then reads /dev/null and
 * 1 goes to stderr, so nothing any library or child prints can reach the protocol stream. */
static void take_stdio(int *in, int *out)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	*in = fcntl(0, F_DUPFD_CLOEXEC, 3);
	*out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (*in < 0 || *out < 0 || null < 0 || dup2(null, 0) < 0 || dup2(2, 1) < 0)
		cli_die(EXIT_FAIL, "cannot set up standard input and output: %s", strerror(errno));
	close(null);
}

/* The token for HTTP: read from -auth-token-file (lfd unused: read before any socket is
 * opened, so a bad file is reported as itself), else generated and written next to the local
 * state (one file per port of lfd). Newly allocated. */
static char *http_token(const char *file, int lfd)
{
	char addr[NET_ADDR_MAX], tok[MCPHTTP_TOKEN_LEN + 1], *root, *path, *port;
	struct sbx_err e;

	if (file) {
		/* acp-server's token file format; one MCP endpoint has one token. */
		struct acp_auth a = {0};
		char *t;
		if (acp_auth_load(&a, file, NULL, &e) < 0)
			cli_die_err("", &e);
		if (a.n != 1)
			cli_die(EXIT_USAGE, "%s: holds %zu tokens; sbx-mcp takes exactly one", file, a.n);
		t = xstrdup(a.v[0].token);
		acp_auth_free(&a);
		return t;
	}
	net_local_addr(lfd, addr, sizeof addr);
	port = strrchr(addr, ':');
	if ((root = paths_state_root(&e)) == NULL || randhex(tok, MCPHTTP_TOKEN_LEN / 2, &e) < 0)
		cli_die_err("cannot make an auth token", &e);
	path = xasprintf("%s/sbx-mcp/token-%s", root, port ? port + 1 : "0");
	if (paths_token_write(path, tok, &e) < 0)
		cli_die_err("cannot write the auth token", &e);
	cli_msg("auth token written to %s (send \"Authorization: Bearer <its content>\")", path);
	free(root);
	free(path);
	return xstrdup(tok);
}

/* Long: a main's checks in the order sbx-mcp(1) documents them, then stdio or -listen; the
 * server is lib/mcp/mcpserver.c. */
/* Serves MCP over HTTP on listen_addr until stop_fd fires; the exit status. */
static int serve_http(struct mcp_server *srv, const struct mcp_server_config *cfg,
		      const char *listen_addr, const char *token_file)
{
	struct mcphttp_config hc = {.log = on_log};
	char *token = token_file ? http_token(token_file, -1) : NULL, addr[NET_ADDR_MAX];
	struct sbx_err e;
	int lfd = net_listen(listen_addr, &e), status = EXIT_OK;

	if (lfd < 0)
		cli_die_err("", &e);
	net_local_addr(lfd, addr, sizeof addr);
	if (strncmp(addr, "127.", 4) != 0 && strncmp(addr, "[::1]", 5) != 0)
		cli_warn("serving on %s, beyond loopback, without TLS: the token and every "
			 "call cross the network in clear", addr);
	if (token == NULL)
		token = http_token(NULL, lfd);
	hc.token = token;
	cli_msg("serving MCP url=\"http://%s" MCPHTTP_PATH "\" toolset=\"%s\" backend=\"%s\"",
		addr, cfg->toolset ? cfg->toolset : "basic", cfg->backend);
	if (mcphttp_run(srv, &hc, lfd, stop_fd, &e) < 0) {
		cli_warn("%s", e.msg);
		status = EXIT_FAIL;
	}
	free(token);
	return status;
}

/* Serves one MCP session (named session, or a new name) on stdin and stdout until either
 * ends or stop_fd fires, then closes it (its sandbox deleted); the exit status. */
static int serve_stdio(struct mcp_server *srv, const struct mcp_server_config *cfg,
		       const char *session)
{
	struct mcp_session *ss;
	struct sbx_err e;
	int in, out;

	take_stdio(&in, &out);
	if ((ss = mcp_session_open(srv, session, &e)) == NULL)
		cli_die_err("", &e);
	cli_msg("serving MCP on stdio session=\"%s\" toolset=\"%s\" backend=\"%s\"",
		mcp_session_name(ss), cfg->toolset ? cfg->toolset : "basic", cfg->backend);
	if (mcp_serve_stream(ss, in, out, stop_fd, &e) < 0)
		cli_warn("%s", e.msg);
	if (mcp_session_close(ss, true, &e) < 0) {
		cli_warn("%s", e.msg);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	const char *listen_addr = NULL, *token_file = NULL, *session = sessions_env_name(NULL);
	const char *why;
	int64_t snap = MCP_DEFAULT_SNAPSHOT_DELAY_NS;
	bool verbose = false;
	struct mcp_server_config cfg = {.tool_timeout_ns = AGENT_DEFAULT_TOOL_TIMEOUT_NS,
					.log = on_log};
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND | CLI_SBX_IMAGE | CLI_SBX_HOMEDIR |
					 CLI_SBX_SPEC | CLI_SBX_AGENT};
	struct mcp_server *srv;
	struct sbx_err e;
	int status;
	bool session_flag = false;
	long long warm = 0;
	pid_t pool;
	struct flag flags[] = {
		{"listen", FLAG_STRING, &listen_addr, NULL},
		{"auth-token-file", FLAG_STRING, &token_file, NULL},
		{"session", FLAG_STRING, &session, &session_flag},
		{"toolset", FLAG_STRING, &cfg.toolset, NULL},
		{"tool-timeout", FLAG_DURATION, &cfg.tool_timeout_ns, NULL},
		{"ttl", FLAG_DURATION, &cfg.ttl_ns, NULL},
		{"snapshot-delay", FLAG_DURATION, &snap, NULL},
		{"v", FLAG_BOOL, &verbose, NULL},
		{"warm", FLAG_INT, &warm, NULL},
		{NULL, 0, NULL, NULL},
	};

	(void)cli_parse(&(const struct cli){.usage = usage, .flags = flags, .sandbox = &sb,
					    .max = 0,
					    .too_many = "unexpected arguments"}, argc, argv);
	if (cfg.ttl_ns < 0 || snap < 0)
		cli_usage_error(usage, "-ttl and -snapshot-delay must not be negative");
	if (warm < 0 || warm > WARMPOOL_MAX)
		cli_usage_error(usage, "-warm must be between 0 and 64");
	if (listen_addr || (session && *session == '\0'))
		session = session_flag ? session : NULL;
	if (session && *session == '\0')
		session = NULL;
	if (session && name_given_check(NAME_SESSION, session, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if (listen_addr && session_flag)
		cli_usage_error(usage, "-session names the stdio session; over HTTP every MCP session "
				"gets its own");
	if (token_file && !listen_addr)
		cli_usage_error(usage, "-auth-token-file goes with -listen");
	cfg.backend = cli_sandbox_backend(&sb, &why);
	cfg.namespace = sb.ns;
	cfg.image = cli_sandbox_image(&sb);
	cfg.homedir = sb.homedir;
	if (specflags_check_backend(&sb.sf, cfg.backend, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if (cfg.tool_timeout_ns < 0)
		cfg.tool_timeout_ns = 0;
	cfg.snapshot_delay_ns = snap;
	cfg.trace = verbose ? on_trace : NULL;
	cfg.create_args = specflags_argv(&sb.sf);

	if ((stop_fd = cancel_install_signals((const int[]){SIGINT, SIGTERM, 0}, 0, &e)) < 0)
		cli_die(EXIT_FAIL, "%s", e.msg);

	if ((srv = mcp_server_new(&cfg, &e)) == NULL)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if (warmpool_start((int)warm, &(struct warmpool_spec){cfg.backend, cfg.namespace, cfg.image,
							     cfg.homedir, cfg.create_args},
			   &pool, &e) < 0)
		cli_die(cli_status(e.code), "%s", e.msg);
	status = listen_addr ? serve_http(srv, &cfg, listen_addr, token_file)
			     : serve_stdio(srv, &cfg, session);
	warmpool_stop(pool);
	mcp_server_free(srv);
	specflags_argv_free((char **)cfg.create_args);
	return cli_finish(status);
}
