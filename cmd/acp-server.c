/* acp-server — the agent over the Agent Client Protocol, on TCP (optionally TLS) or stdio. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp.h"
#include "agent.h"
#include "cancel.h"
#include "flag.h"
#include "llm.h"
#include "name.h"
#include "net.h"
#include "paths.h"
#include "specflags.h"
#include "toolset.h"
#include "xalloc.h"
#include "cli.h"

static const char usage[] =
	"usage: acp-server [-listen ADDR | -stdio] [-backend local|kubernetes] [-namespace NS]\n"
	"                  [-image IMG] [-homedir D] [-toolset basic|geminicli] [-tool-timeout 2m]\n"
	"                  " SPECFLAGS_SYNOPSIS_WRAPPED("                  ") "\n"
	"                  [-auth-token-file F | -no-auth]\n"
	"                  [-tls-cert F -tls-key F] [-auth-timeout 10s] [-max-conns-per-source 64]\n"
	"                  [-max-auth-failures 10] [-auth-failure-rate 5] [-max-sessions 64]\n"
	"                  [-import-session NAME[=PRINCIPAL],...]\n"
	"                  [-max-tool-rounds 50] [-models M,...] [-images auto|yes|no]\n"
	"                  [-context-window N]\n"
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
	"  -toolset T           basic (default) or geminicli; env TOOLSET; T+open_port adds the\n"
	"                       open_port tool (a sandbox port for the user; off by default)\n"
	"  -tool-timeout D      deadline per tool call (Go duration, default 2m; 0 disables)\n"
	"  -max-tool-rounds N   model calls with tool calls in one turn before it stops (50)\n"
	"  -models M,...        more models a client may pick (the model config option)\n"
	"  -images auto|yes|no  take image prompts (auto: by the model's name)\n"
	"  -context-window N    the model's context in tokens, for usage_update (default by\n"
	"                       the model's name: gemini 1048576, else 128000)\n"
	"Each session's sandbox, handed to sbx-create(1) unchanged:\n"
	SPECFLAGS_USAGE
	"Connections:\n"
	"  -auth-token-file F   principals, one `NAME TOKEN` (or just `TOKEN`) a line; clients\n"
	"                       authenticate with a token as _meta.token. On TCP without this\n"
	"                       flag a token is generated into a 0600 file named on stderr\n"
	"  -no-auth             TCP without authentication (refused unless on loopback)\n"
	"  -auth-timeout D      close connections not authenticated within D (default 10s)\n"
	"  -max-conns-per-source N  connections one source may hold open (default 64; all of\n"
	"                       loopback is one source per local user); a new one closes the\n"
	"                       source's oldest unauthenticated one\n"
	"  -max-auth-failures N failed authentications per source and minute before it is\n"
	"                       blocked, 10s at first, doubling (default 10)\n"
	"  -auth-failure-rate N failed authentications a second on the whole server (default 5;\n"
	"                       0: no limit); past it, sources that failed lately wait\n"
	"  -max-sessions N      sessions in use (each with its sandbox) per principal (64)\n"
	"  -import-session L    let these sessions made by other tools (agent-loop) be loaded:\n"
	"                       NAME or NAME=PRINCIPAL (default principal: operator), comma-separated\n"
	"  -tls-cert F          serve TLS with this PEM certificate chain (needs -tls-key)\n"
	"  -tls-key F           the PEM private key of -tls-cert\n"
	"  -h                   show this help\n"
	"Model: OPENAI_MODEL or MODEL (fake-eliza = the built-in fake), GEMINI_API_KEY or\n"
	"OPENAI_API_KEY, OPENAI_BASE_URL.\n";

/* After SIGTERM, running turns get this long to finish before they are cancelled (a pod's
 * default grace period is 30 s, and the sandboxes still have to be deleted after). */
#define DRAIN_NS (INT64_C(15) * 1000000000)

/* Readable once SIGINT or SIGTERM came (lib/util/cancel.h). */
static int stop_fd = -1;

static void log_line(void *arg, const char *msg)
{
	(void)arg;
	cli_msg("%s", msg);
}

/* The server's own state: the issued-sessions file and generated tokens. */
static char *state_dir(void)
{
	struct sbx_err e;
	char *root = paths_state_root(&e), *d;

	if (root == NULL)
		cli_die_err("", &e);
	d = xasprintf("%s/.acp-server", root);	/* never a namespace name */
	free(root);
	return d;
}

/* -import-session: NAME[=PRINCIPAL],… recorded as issued; with srv NULL only checked (before
 * any socket is opened, so a bad value is reported as itself). operator_only: the token will
 * be generated, so its one principal is the operator. */
static void import_sessions(struct acp_server *srv, const char *list, const struct acp_auth *auth,
			    const char *anon, bool operator_only)
{
	char *copy = xstrdup(list), *save = NULL, *w;
	struct sbx_err e;

	for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		char *who = strchr(w, '=');
		bool known = !auth && !operator_only;
		size_t i;

		if (who)
			*who++ = '\0';
		else
			who = (char *)(auth || operator_only ? ACP_PRINCIPAL_OPERATOR : anon);
		for (i = 0; auth && i < auth->n; i++)
			known = known || strcmp(auth->v[i].name, who) == 0;
		if (operator_only)
			known = strcmp(who, ACP_PRINCIPAL_OPERATOR) == 0;
		if (!known)
			cli_die(EXIT_USAGE, "-import-session %s: no principal \"%s\" in the token file",
				w, who);
		if (name_given_check(NAME_SESSION, w, &e) < 0)
			cli_die(EXIT_USAGE, "-import-session: %s", e.msg);
		if (srv == NULL)
			continue;
		if (acp_server_import(srv, w, who, &e) < 0)
			cli_die_err("-import-session", &e);
		cli_msg("imported session %s for principal %s", w, who);
	}
	free(copy);
}

/* Without -auth-token-file a TCP server makes its own token, in a file only its user reads. */
static char *generate_token(const char *dir, const char *addr, struct acp_auth *auth)
{
	const char *port = strrchr(addr, ':');
	struct sbx_err e;
	char *tok, *path;

	if ((tok = acp_token_generate(&e)) == NULL)
		cli_die_err("", &e);
	path = xasprintf("%s/token-%s", dir, port ? port + 1 : "0");
	if (paths_token_write(path, tok, &e) < 0)
		cli_die_err("", &e);
	acp_auth_single(auth, ACP_PRINCIPAL_OPERATOR, tok);
	free(tok);
	cli_msg("authentication required: clients send the token in %s "
		"(acp-client -auth-token-file %s)", path, path);
	return path;
}

/* Long: a main's checks in the order acp-server(1) documents them (flags, TLS, auth, listener,
 * token file), each a line or two; the server itself is lib/acp/acp.c. */
int main(int argc, char **argv)
{
	const char *listen_addr = "127.0.0.1:8090", *backend, *image;
	const char *tsname = getenv("TOOLSET"), *token_file = NULL, *cert = NULL, *key = NULL;
	const char *model = llm_pick_model(NULL, NULL), *why = NULL, *imports = NULL;
	const char *models = NULL, *images = "auto";
	long long rounds = AGENT_DEFAULT_MAX_TOOL_ROUNDS, window = 0;
	int64_t timeout = AGENT_DEFAULT_TOOL_TIMEOUT_NS, auth_timeout = ACP_AUTH_TIMEOUT_NS;
	long long per_source = ACP_CONNS_PER_SOURCE, fails = ACP_AUTH_FAILS_PER_MIN;
	long long fail_rate = ACP_AUTH_FAILS_PER_S, max_sessions = ACP_SESSIONS_PER_PRINCIPAL;
	bool stdio = false, no_auth = false, loose = false;
	struct acp_config cfg = {0};
	struct acp_auth auth = {0};
	struct sbx_err e;
	struct acp_server *srv;
	SSL_CTX *tls = NULL;
	char *gen_path = NULL, *dir, addr[NET_ADDR_MAX];
	int i, lfd = -1;
	/* -homedir not given: NULL, which the sessions read as backend_env_homedir() */
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND | CLI_SBX_IMAGE | CLI_SBX_HOMEDIR |
					 CLI_SBX_SPEC};
	char **create_args;
	struct strvec model_list = {0};
	struct flag flags[] = {
		{"listen", FLAG_STRING, &listen_addr, NULL},
		{"stdio", FLAG_BOOL, &stdio, NULL},
		{"toolset", FLAG_STRING, &tsname, NULL},
		{"tool-timeout", FLAG_DURATION, &timeout, NULL},
		{"auth-token-file", FLAG_STRING, &token_file, NULL},
		{"no-auth", FLAG_BOOL, &no_auth, NULL},
		{"auth-timeout", FLAG_DURATION, &auth_timeout, NULL},
		{"max-conns-per-source", FLAG_INT, &per_source, NULL},
		{"max-auth-failures", FLAG_INT, &fails, NULL},
		{"auth-failure-rate", FLAG_INT, &fail_rate, NULL},
		{"max-sessions", FLAG_INT, &max_sessions, NULL},
		{"import-session", FLAG_STRING, &imports, NULL},
		{"tls-cert", FLAG_STRING, &cert, NULL},
		{"tls-key", FLAG_STRING, &key, NULL},
		{"max-tool-rounds", FLAG_INT, &rounds, NULL},
		{"models", FLAG_STRING, &models, NULL},
		{"images", FLAG_STRING, &images, NULL},
		{"context-window", FLAG_INT, &window, NULL},
		{NULL, 0, NULL, NULL},
	};

	i = cli_parse(&(const struct cli){.usage = usage, .flags = flags, .sandbox = &sb,
					  .max = 0,
					  .too_many = "unexpected arguments"}, argc, argv);
	if (toolset_find(tsname, &e) == NULL)
		cli_die(EXIT_USAGE, "%s", e.msg);
	backend = cli_sandbox_backend(&sb, &why);
	image = cli_sandbox_image(&sb);
	/* What sbx-create would refuse at a session's first tool call is refused now. */
	if (specflags_check_backend(&sb.sf, backend, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if ((cert == NULL) != (key == NULL))
		cli_usage_error(usage, "-tls-cert and -tls-key go together");
	if (stdio && cert)
		cli_usage_error(usage, "-stdio and TLS exclude each other");
	if (no_auth && token_file)
		cli_usage_error(usage, "-no-auth and -auth-token-file exclude each other");
	if (per_source < 0 || per_source > ACP_CONN_MAX || fails < 0 || fails > 1000000)
		cli_usage_error(usage, "-max-conns-per-source is 0-1024, -max-auth-failures 0-1000000");
	if (fail_rate < 0 || fail_rate > 1000000)
		cli_usage_error(usage, "-auth-failure-rate is 0-1000000");
	if (max_sessions < 1 || max_sessions > ACP_SESSIONS_MAX)
		cli_usage_error(usage, "-max-sessions is 1-10000");
	if (rounds < 1 || rounds > 100000)
		cli_usage_error(usage, "-max-tool-rounds is 1-100000");
	if (strcmp(images, "auto") != 0 && strcmp(images, "yes") != 0 && strcmp(images, "no") != 0)
		cli_usage_error(usage, "-images is auto, yes or no");
	if (window < 0)
		cli_usage_error(usage, "-context-window must not be negative");
	if (models) {
		char *copy = xstrdup(models), *save = NULL, *w;
		for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
			strvec_push(&model_list, w);
		free(copy);
	}
	if (llm_key_check(model, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if (token_file && acp_auth_load(&auth, token_file, &loose, &e) < 0)
		cli_die_err("", &e);
	if (loose)
		cli_warn("token file %s can be read by other users (chmod 600 it)", token_file);
	if (cert && (tls = net_tls_server(cert, key, &e)) == NULL)
		cli_die_err("", &e);
	if (imports)	/* every flag is checked before a socket is opened */
		import_sessions(NULL, imports, token_file ? &auth : NULL,
				stdio ? ACP_PRINCIPAL_OPERATOR : ACP_PRINCIPAL_ANONYMOUS,
				!stdio && !no_auth && !token_file);

	dir = state_dir();
	if (stdio) {
		snprintf(addr, sizeof addr, "stdio");
	} else {
		if ((lfd = net_listen(listen_addr, &e)) < 0)
			cli_die_err("", &e);
		net_local_addr(lfd, addr, sizeof addr);
		/* Without authentication anyone who reaches the port runs commands: loopback only. */
		if (no_auth && !net_is_loopback(lfd))
			cli_die(EXIT_USAGE, "-no-auth is refused on %s: it is not a loopback address, "
				"and anyone who reaches it could run commands", addr);
		if (!no_auth && token_file == NULL)
			gen_path = generate_token(dir, addr, &auth);
	}

	if ((stop_fd = cancel_install_signals((const int[]){SIGINT, SIGTERM, 0}, 0, &e)) < 0)
		cli_die(EXIT_FAIL, "%s", e.msg);

	cfg.backend = backend;
	cfg.namespace = sb.ns;
	cfg.image = image;
	cfg.homedir = sb.homedir;
	cfg.toolset = tsname;
	cfg.model = model;
	cfg.tool_timeout_ns = timeout > 0 ? timeout : 0;
	cfg.max_tool_rounds = (int)rounds;
	cfg.models = model_list.v;
	cfg.images = strcmp(images, "yes") == 0 ? 1 : strcmp(images, "no") == 0 ? 0 : -1;
	cfg.context_window = window;
	create_args = specflags_argv(&sb.sf);
	cfg.create_args = create_args;
	cfg.auth = auth.n ? &auth : NULL;
	/* stdio: the user who spawned us; -no-auth: whoever reaches the port. */
	cfg.anon_principal = stdio ? ACP_PRINCIPAL_OPERATOR : ACP_PRINCIPAL_ANONYMOUS;
	cfg.state_dir = dir;
	cfg.auth_timeout_ns = auth_timeout > 0 ? auth_timeout : 0;
	cfg.conns_per_source = (int)per_source;
	cfg.auth_fails_per_min = (int)fails;
	cfg.auth_fails_per_s = (int)fail_rate;
	cfg.max_sessions = (int)max_sessions;
	cfg.log = log_line;
	if ((srv = acp_server_new(&cfg, &e)) == NULL)
		cli_die_err("", &e);
	if (imports)
		import_sessions(srv, imports, cfg.auth, cfg.anon_principal, false);

	cli_msg("serving ACP address=\"%s\" model=\"%s\" toolset=\"%s\" image=\"%s\" backend=\"%s\""
		" tls=%s auth=%s", addr, model ? model : "", tsname ? tsname : "basic",
		image ? image : "", backend, tls ? "true" : "false", cfg.auth ? "true" : "false");
	if (acp_server_run(srv, lfd, tls, stop_fd, DRAIN_NS, &e) < 0)
		cli_warn("%s", e.msg);
	if (lfd >= 0)
		close(lfd);
	i = acp_server_delete_sandboxes(srv) ? EXIT_FAIL : EXIT_OK;
	acp_server_free(srv);
	if (gen_path)
		unlink(gen_path);	/* the token dies with the server */
	if (tls)
		SSL_CTX_free(tls);
	acp_auth_free(&auth);
	free(gen_path);
	free(dir);
	specflags_argv_free(create_args);
	strvec_clear(&model_list);
	return cli_finish(i);
}
