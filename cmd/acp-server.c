/* acp-server — the agent over the Agent Client Protocol, on TCP (optionally TLS) or stdio. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/acp.h"
#include "../lib/agent.h"
#include "../lib/flag.h"
#include "../lib/net.h"
#include "../lib/specflags.h"
#include "../lib/toolset.h"
#include "cli.h"

static const char usage[] =
	"usage: acp-server [-listen ADDR | -stdio] [-backend local|kubernetes] [-namespace NS]\n"
	"                  [-image IMG] [-homedir D] [-toolset basic|geminicli] [-tool-timeout 2m]\n"
	"                  " SPECFLAGS_SYNOPSIS " [-auth-token-file F] [-tls-cert F -tls-key F]\n"
	"Serves the agent over the Agent Client Protocol v1 (JSON-RPC 2.0, one JSON object per\n"
	"line). Each ACP session gets a sandbox named after it; every tool call is put to the\n"
	"client for approval.\n"
	"\n"
	"  -listen ADDR         TCP address (default 127.0.0.1:8090; \":8090\" = every interface)\n"
	"  -stdio               speak ACP on standard input/output instead (editors spawn it)\n"
	"  -backend B           local or kubernetes; env SANDBOX_BACKEND (default: kubernetes when\n"
	"                       a Kubernetes configuration exists, else local)\n"
	"  -namespace NS        env SANDBOX_NAMESPACE, default \"default\"\n"
	"  -image IMG           Sandbox container image; if empty, uses the toolset's default image.\n"
	"  -homedir D           home directory inside; env SANDBOX_HOME_DIR, default /home/clawtainer\n"
	"  -toolset T           basic (default) or geminicli; env TOOLSET\n"
	"  -tool-timeout D      deadline per tool call (Go duration, default 2m; 0 disables)\n"
	"  -auth-token-file F   require ACP authenticate with this bearer token (_meta.token)\n"
	"  -tls-cert F          serve TLS with this PEM certificate chain (needs -tls-key)\n"
	"  -tls-key F           the PEM private key of -tls-cert\n"
	"  -h                   show this help\n"
	"Model: OPENAI_MODEL or MODEL (fake-eliza = the built-in fake), GEMINI_API_KEY or\n"
	"OPENAI_API_KEY, OPENAI_BASE_URL.\n";

/* After SIGTERM, running turns get this long to finish before they are cancelled (a pod's
 * default grace period is 30 s, and the sandboxes still have to be deleted after). */
#define DRAIN_NS (INT64_C(15) * 1000000000)

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* already pending */
	}
	errno = saved;
}

static void log_line(void *arg, const char *msg)
{
	(void)arg;
	cli_msg("%s", msg);
}

int main(int argc, char **argv)
{
	const char *listen_addr = "127.0.0.1:8090", *backend = NULL, *ns = NULL;
	const char *image = getenv("SANDBOX_IMAGE"), *homedir = getenv("SANDBOX_HOME_DIR");
	const char *tsname = getenv("TOOLSET"), *token_file = NULL, *cert = NULL, *key = NULL;
	const char *model = getenv("OPENAI_MODEL"), *why = NULL;
	int64_t timeout = AGENT_DEFAULT_TOOL_TIMEOUT_NS;
	bool stdio = false;
	struct acp_config cfg = {0};
	struct sbx_err e;
	struct sigaction sa;
	struct acp_server *srv;
	SSL_CTX *tls = NULL;
	char *token = NULL, addr[NET_ADDR_MAX];
	int i, lfd = -1;
	struct specflags sf = {0};
	char **create_args;
	struct flag flags[11 + SPECF_COUNT + 1] = {
		{"listen", FLAG_STRING, &listen_addr, NULL},
		{"stdio", FLAG_BOOL, &stdio, NULL},
		{"backend", FLAG_STRING, &backend, NULL},
		{"namespace", FLAG_STRING, &ns, NULL},
		{"image", FLAG_STRING, &image, NULL},
		{"homedir", FLAG_STRING, &homedir, NULL},
		{"toolset", FLAG_STRING, &tsname, NULL},
		{"tool-timeout", FLAG_DURATION, &timeout, NULL},
		{"auth-token-file", FLAG_STRING, &token_file, NULL},
		{"tls-cert", FLAG_STRING, &cert, NULL},
		{"tls-key", FLAG_STRING, &key, NULL},
	};

	cli_init(argc, argv);
	specflags_table(&sf, flags + 11);
	i = flag_parse(flags, argc, argv, &e);
	if (i == FLAG_HELP)
		cli_help(usage);
	if (i < 0)
		cli_usage_error(usage, e.msg);
	if (i < argc)
		cli_usage_error(usage, "unexpected arguments");
	if (toolset_find(tsname, &e) == NULL)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if (specflags_check(&sf, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if ((cert == NULL) != (key == NULL))
		cli_usage_error(usage, "-tls-cert and -tls-key go together");
	if (stdio && cert)
		cli_usage_error(usage, "-stdio and TLS exclude each other");
	if (model == NULL || *model == '\0')
		model = getenv("MODEL");
	if ((model == NULL || strcmp(model, "fake-eliza") != 0) &&
	    !(getenv("GEMINI_API_KEY") && *getenv("GEMINI_API_KEY")) &&
	    !(getenv("OPENAI_API_KEY") && *getenv("OPENAI_API_KEY")))
		cli_die(EXIT_USAGE, "GEMINI_API_KEY or OPENAI_API_KEY environment variable is required");
	if (token_file && (token = acp_read_token(token_file, &e)) == NULL)
		cli_die_err("", &e);
	if (cert && (tls = net_tls_server(cert, key, &e)) == NULL)
		cli_die_err("", &e);
	if (backend == NULL || *backend == '\0')
		backend = agent_default_backend(&why);

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		cli_die(EXIT_FAIL, "pipe: %s", strerror(errno));
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	cfg.backend = backend;
	cfg.namespace = ns;
	cfg.image = image;
	cfg.homedir = homedir;
	cfg.toolset = tsname;
	cfg.model = model;
	cfg.tool_timeout_ns = timeout > 0 ? timeout : 0;
	create_args = specflags_argv(&sf);
	cfg.create_args = create_args;
	cfg.auth_token = token;
	cfg.log = log_line;
	srv = acp_server_new(&cfg);

	if (stdio) {
		snprintf(addr, sizeof addr, "stdio");
	} else {
		if ((lfd = net_listen(listen_addr, &e)) < 0)
			cli_die_err("", &e);
		net_local_addr(lfd, addr, sizeof addr);
	}
	cli_msg("serving ACP address=\"%s\" model=\"%s\" toolset=\"%s\" image=\"%s\" backend=\"%s\""
		" tls=%s auth=%s", addr, model ? model : "", tsname ? tsname : "basic",
		image ? image : "", backend, tls ? "true" : "false", token ? "true" : "false");
	if (acp_server_run(srv, lfd, tls, sig_pipe[0], DRAIN_NS, &e) < 0)
		cli_warn("%s", e.msg);
	if (lfd >= 0)
		close(lfd);
	i = acp_server_delete_sandboxes(srv) ? EXIT_FAIL : EXIT_OK;
	acp_server_free(srv);
	if (tls)
		SSL_CTX_free(tls);
	free(token);
	specflags_argv_free(create_args);
	return cli_finish(i);
}
