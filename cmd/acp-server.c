/* acp-server — the agent over the Agent Client Protocol, on TCP (optionally TLS) or stdio. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp.h"
#include "acpflags.h"
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
#include "warmpool.h"
#include "cli.h"

static const char usage[] =
	"usage: acp-server [-listen ADDR | -stdio] [-backend local|kubernetes] [-namespace NS]\n"
	"                  [-image I] [-homedir D] [-toolset basic|geminicli] [-tool-timeout 2m]\n"
	"                  " SPECFLAGS_SYNOPSIS_WRAPPED("                  ") "\n"
	"                  [-auth-token-file F | -no-auth]\n"
	"                  [-tls-cert F -tls-key F] [-auth-timeout 10s] [-max-conns-per-source 64]\n"
	"                  [-max-auth-failures 10] [-auth-failure-rate 5] [-max-sessions 64]\n"
	"                  [-import-session NAME[=PRINCIPAL],...] [-warm N]\n"
	"                  [-max-tool-rounds 50] [-models M,...] [-images auto|yes|no]\n"
	"                  [-context-window N]\n"
	"Serves the agent over the Agent Client Protocol v1 (JSON-RPC 2.0, one JSON object per\n"
	"line). Each ACP session gets a sandbox named after it; every tool call is put to the\n"
	"client for approval.\n"
	"\n"
	"  -listen ADDR         TCP address (default 127.0.0.1:8090; \":8090\" = every interface)\n"
	"  -stdio               speak ACP on standard input/output instead (editors spawn it)\n"
	CLI_SBX_USAGE
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
	"  -warm N              local: keep N sandboxes of the sessions' spec ready (sbx-pool),\n"
	"                       so a session's first tool call takes one (default 0: none)\n"
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

/* The command line, checked in the order acp-server(1) documents the flags. */
struct opts {
	const char *listen_addr, *backend, *image, *tsname, *model, *imports, *models;
	int64_t timeout, auth_timeout;
	long long warm;			/* -warm: sandboxes kept ready (sbx-pool) */
	struct acp_flags f;		/* checked by acp_flags_check */
	struct cli_sandbox sb;
};

/* Parses and checks every flag: nothing is opened yet. */
static void parse(struct opts *o, int argc, char **argv)
{
	const char *why = NULL;
	struct sbx_err e;
	struct flag flags[] = {
		{"listen", FLAG_STRING, &o->listen_addr, NULL},
		{"stdio", FLAG_BOOL, &o->f.stdio, NULL},
		{"toolset", FLAG_STRING, &o->tsname, NULL},
		{"tool-timeout", FLAG_DURATION, &o->timeout, NULL},
		{"auth-token-file", FLAG_STRING, &o->f.token_file, NULL},
		{"no-auth", FLAG_BOOL, &o->f.no_auth, NULL},
		{"auth-timeout", FLAG_DURATION, &o->auth_timeout, NULL},
		{"max-conns-per-source", FLAG_INT, &o->f.conns_per_source, NULL},
		{"max-auth-failures", FLAG_INT, &o->f.auth_fails, NULL},
		{"auth-failure-rate", FLAG_INT, &o->f.auth_fail_rate, NULL},
		{"max-sessions", FLAG_INT, &o->f.max_sessions, NULL},
		{"import-session", FLAG_STRING, &o->imports, NULL},
		{"tls-cert", FLAG_STRING, &o->f.cert, NULL},
		{"tls-key", FLAG_STRING, &o->f.key, NULL},
		{"max-tool-rounds", FLAG_INT, &o->f.max_tool_rounds, NULL},
		{"models", FLAG_STRING, &o->models, NULL},
		{"images", FLAG_STRING, &o->f.images, NULL},
		{"context-window", FLAG_INT, &o->f.context_window, NULL},
		{"warm", FLAG_INT, &o->warm, NULL},
		{NULL, 0, NULL, NULL},
	};

	(void)cli_parse(&(const struct cli){.usage = usage, .flags = flags, .sandbox = &o->sb,
					    .max = 0, .too_many = "unexpected arguments"},
			argc, argv);
	o->tsname = toolset_pick(o->tsname);
	if (toolset_find(o->tsname, &e) == NULL)
		cli_die(EXIT_USAGE, "%s", e.msg);
	o->backend = cli_sandbox_backend(&o->sb, &why);
	o->image = cli_sandbox_image(&o->sb);
	/* What sbx-create would refuse at a session's first tool call is refused now. */
	if (specflags_check_backend(&o->sb.sf, o->backend, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if (acp_flags_check(&o->f, &e) < 0)
		cli_usage_error(usage, e.msg);
	if (o->warm < 0 || o->warm > WARMPOOL_MAX)
		cli_usage_error(usage, "-warm must be between 0 and 64");
	if (llm_key_check(o->model, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
}

/* The server's configuration from the checked flags; the vectors are the caller's to free. */
static void configure(struct acp_config *cfg, const struct opts *o, struct acp_auth *auth,
		      struct strvec *model_list, char *const *create_args, char *dir)
{
	if (o->models) {
		char *copy = xstrdup(o->models), *save = NULL, *w;
		for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
			strvec_push(model_list, w);
		free(copy);
	}
	*cfg = (struct acp_config){
		.backend = o->backend,
		.namespace = o->sb.ns,
		.image = o->image,
		.homedir = o->sb.homedir,
		.toolset = o->tsname,
		.model = o->model,
		.tool_timeout_ns = o->timeout > 0 ? o->timeout : 0,
		.max_tool_rounds = (int)o->f.max_tool_rounds,
		.models = model_list->v,
		.images = acp_flags_images(&o->f),
		.context_window = o->f.context_window,
		.create_args = create_args,
		.auth = auth->n ? auth : NULL,
		/* stdio: the user who spawned us; -no-auth: whoever reaches the port. */
		.anon_principal = o->f.stdio ? ACP_PRINCIPAL_OPERATOR : ACP_PRINCIPAL_ANONYMOUS,
		.state_dir = dir,
		.auth_timeout_ns = o->auth_timeout > 0 ? o->auth_timeout : 0,
		.conns_per_source = (int)o->f.conns_per_source,
		.auth_fails_per_min = (int)o->f.auth_fails,
		.auth_fails_per_s = (int)o->f.auth_fail_rate,
		.max_sessions = (int)o->f.max_sessions,
		.log = log_line,
	};
}

/* The TCP listener (its address in addr), refused without authentication off loopback, and
 * the token generated when no token file is given (its path returned). -1: stdio. */
static int open_listener(const struct opts *o, const char *dir, struct acp_auth *auth,
			 char *addr, size_t size, char **gen_path)
{
	struct sbx_err e;
	int lfd;

	if (o->f.stdio) {
		snprintf(addr, size, "stdio");
		return -1;
	}
	if ((lfd = net_listen(o->listen_addr, &e)) < 0)
		cli_die_err("", &e);
	net_local_addr(lfd, addr, size);
	/* Without authentication anyone who reaches the port runs commands: loopback only. */
	if (o->f.no_auth && !net_is_loopback(lfd))
		cli_die(EXIT_USAGE, "-no-auth is refused on %s: it is not a loopback address, "
			"and anyone who reaches it could run commands", addr);
	if (!o->f.no_auth && o->f.token_file == NULL)
		*gen_path = generate_token(dir, addr, auth);
	return lfd;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.listen_addr = "127.0.0.1:8090",
		.model = llm_pick_model(NULL, NULL), .timeout = AGENT_DEFAULT_TOOL_TIMEOUT_NS,
		.auth_timeout = ACP_AUTH_TIMEOUT_NS,
		.f = {.images = "auto", .max_tool_rounds = AGENT_DEFAULT_MAX_TOOL_ROUNDS,
		      .conns_per_source = ACP_CONNS_PER_SOURCE, .auth_fails = ACP_AUTH_FAILS_PER_MIN,
		      .auth_fail_rate = ACP_AUTH_FAILS_PER_S,
		      .max_sessions = ACP_SESSIONS_PER_PRINCIPAL},
		/* -homedir not given: NULL, which the sessions read as backend_env_homedir() */
		.sb = {.take = CLI_SBX_BACKEND | CLI_SBX_IMAGE | CLI_SBX_HOMEDIR | CLI_SBX_SPEC |
			       CLI_SBX_AGENT},
	};
	struct acp_config cfg;
	struct acp_auth auth = {0};
	struct strvec model_list = {0};
	struct acp_server *srv;
	struct sbx_err e;
	SSL_CTX *tls = NULL;
	char *gen_path = NULL, *dir, addr[NET_ADDR_MAX], **create_args;
	bool loose = false;
	int rc, lfd;
	pid_t pool;

	parse(&o, argc, argv);
	if (o.f.token_file && acp_auth_load(&auth, o.f.token_file, &loose, &e) < 0)
		cli_die_err("", &e);
	if (loose)
		cli_warn("token file %s can be read by other users (chmod 600 it)", o.f.token_file);
	if (o.f.cert && (tls = net_tls_server(o.f.cert, o.f.key, &e)) == NULL)
		cli_die_err("", &e);
	if (o.imports)	/* every flag is checked before a socket is opened */
		import_sessions(NULL, o.imports, o.f.token_file ? &auth : NULL,
				o.f.stdio ? ACP_PRINCIPAL_OPERATOR : ACP_PRINCIPAL_ANONYMOUS,
				!o.f.stdio && !o.f.no_auth && !o.f.token_file);

	dir = state_dir();
	lfd = open_listener(&o, dir, &auth, addr, sizeof addr, &gen_path);
	if ((stop_fd = cancel_install_signals((const int[]){SIGINT, SIGTERM, 0}, 0, &e)) < 0)
		cli_die(EXIT_FAIL, "%s", e.msg);
	create_args = specflags_argv(&o.sb.sf);
	configure(&cfg, &o, &auth, &model_list, create_args, dir);
	if ((srv = acp_server_new(&cfg, &e)) == NULL)
		cli_die_err("", &e);
	if (o.imports)
		import_sessions(srv, o.imports, cfg.auth, cfg.anon_principal, false);
	if (warmpool_start((int)o.warm, &(struct warmpool_spec){o.backend, o.sb.ns, o.image,
							      o.sb.homedir, create_args},
			   &pool, &e) < 0)
		cli_die_err("", &e);

	cli_msg("serving ACP address=\"%s\" model=\"%s\" toolset=\"%s\" image=\"%s\" backend=\"%s\""
		" tls=%s auth=%s", addr, o.model ? o.model : "", o.tsname ? o.tsname : "basic",
		o.image ? o.image : "", o.backend, tls ? "true" : "false",
		cfg.auth ? "true" : "false");
	if (acp_server_run(srv, lfd, tls, stop_fd, DRAIN_NS, &e) < 0)
		cli_warn("%s", e.msg);
	if (lfd >= 0)
		close(lfd);
	rc = acp_server_delete_sandboxes(srv) ? EXIT_FAIL : EXIT_OK;
	warmpool_stop(pool);
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
	return cli_finish(rc);
}
