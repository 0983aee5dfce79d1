/* acp-client — a small interactive Agent Client Protocol client (upstream's example client). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp.h"
#include "acpclient.h"
#include "cancel.h"
#include "flag.h"
#include "fsutil.h"
#include "net.h"
#include "paths.h"
#include "termtext.h"
#include "cli.h"

static const char usage[] =
	"usage: acp-client [-addr HOST:PORT | -cmd \"AGENT ARGS\"] [-prompt TEXT] [-session-id ID]\n"
	"                  [-cwd DIR] [-yolo] [-auth-method ID] [-auth-token-file F]\n"
	"                  [-tls [-tls-ca F | -tls-insecure]] [-setup-timeout 60s] [-debug]\n"
	"                  [-agent-log FILE]\n"
	"Talks to an ACP agent: over TCP with -addr, else by spawning -cmd (default\n"
	"\"gemini --acp\") and speaking on its standard input/output. Reads prompts from standard\n"
	"input, one per line, until end of input or /exit (/mode ID switches the agent's mode);\n"
	"-prompt sends one prompt and exits.\n"
	"\n"
	"  -addr HOST:PORT    TCP address of the agent (e.g. localhost:8090)\n"
	"  -cmd CMD           agent command to spawn (split at white space); it runs in its own\n"
	"                     process group, so Ctrl-C cancels the turn without killing it\n"
	"  -agent-log FILE    where the spawned agent's standard error goes, appended (default\n"
	"                     ~/.local/state/sbx/acp-client/agent.log; - for this terminal)\n"
	"  -cwd DIR           session directory (default: the current directory)\n"
	"  -session-id ID     resume this session (session/load) instead of starting one\n"
	"  -prompt TEXT       one-shot: send TEXT, print the turn, exit\n"
	"  -yolo              approve every tool call (first option whose kind starts with allow)\n"
	"  -auth-method ID    authentication method (default: the first one advertised)\n"
	"  -auth-token-file F bearer token sent as _meta.token in authenticate (a file holding\n"
	"                     TOKEN or NAME TOKEN); with -addr on loopback and no such flag, the\n"
	"                     token acp-server generated for that port is used if readable\n"
	"  -tls               use TLS with -addr; -tls-ca F trusts F (PEM), -tls-insecure trusts\n"
	"                     any certificate (tests only)\n"
	"  -setup-timeout D   limit for initialize and session setup (default 60s)\n"
	"  -debug             show every JSON-RPC line on standard error\n"
	"  -h                 show this help\n";

/* How long a connection attempt may take. */
#define DIAL_TIMEOUT_MS 10000

/* After the conversation, how long a spawned agent gets to exit (it may be deleting its
 * sandboxes) before it is sent SIGTERM. */
#define AGENT_EXIT_WAIT_MS 20000
/* When setup failed: how long the agent may take to finish dying (its last words in the log). */
#define AGENT_DIED_WAIT_MS 2000

static struct acpclient *client;

/* The one token of a token file. */
static char *read_token(const char *path)
{
	struct sbx_err e;
	char *tok = acp_read_token(path, &e);

	if (tok == NULL)
		cli_die_err("", &e);
	return tok;
}

/* The token acp-server generated for a loopback -addr's port, when this user can read it. */
static char *local_token(const char *addr)
{
	char host[NET_ADDR_MAX], *root, *path, *tok = NULL;
	const char *port = strrchr(addr, ':');
	struct sbx_err e;

	if (port == NULL || net_split_host(addr, host, sizeof host, &e) < 0)
		return NULL;
	/* Never offered to another host: only to our own machine. */
	if (strcmp(host, "localhost") != 0 && strncmp(host, "127.", 4) != 0 && strcmp(host, "::1") != 0)
		return NULL;
	if ((root = paths_state_root(&e)) == NULL)
		return NULL;
	path = xasprintf("%s/.acp-server/token-%s", root, port + 1);
	if (access(path, R_OK) == 0)
		tok = read_token(path);
	free(path);
	free(root);
	return tok;
}
static pid_t agent_pid = -1;

static void emit(void *arg, const char *text)
{
	(void)arg;
	fputs(text, stdout);
	fflush(stdout);
}

static char *read_line(void *arg)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	(void)arg;
	if ((n = getline(&line, &cap, stdin)) < 0) {
		free(line);
		return NULL;
	}
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	return line;
}

static void debug(void *arg, const char *dir, const char *line)
{
	const char *tok = strstr(line, "\"token\":\"");

	(void)arg;
	/* The bearer token of authenticate is a secret: never shown. */
	if (tok)
		cli_msg("%s %.*s\"[REDACTED]\"}}}", dir, (int)(tok - line + 8), line);
	else
		cli_msg("%s %.*s", dir, (int)strcspn(line, "\n"), line);
}

/* Readable after the first Ctrl-C (lib/util/cancel.h, CANCEL_ONCE: the default action comes back
 * for a second one). */
static int stop_fd = -1;

/* Sends session/cancel outside the signal handler (it allocates). */
static void *canceller(void *arg)
{
	struct pollfd pf = {.fd = stop_fd, .events = POLLIN};

	(void)arg;
	for (;;) {
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			return NULL;
		if (pf.revents & POLLIN) {
			cancel_drain();
			acpclient_cancel(client);
		}
	}
}

/* The spawned agent's log: FILE appended (0600), its directory made; -1 for "-" (ours). */
static int open_agent_log(const char *file, char **shown)
{
	struct sbx_err e;
	char *root, *path;
	int fd;

	*shown = NULL;
	if (file && strcmp(file, "-") == 0)
		return -1;
	if (file == NULL) {
		if ((root = paths_state_root(&e)) == NULL)
			cli_die_err("cannot place the agent's log (use -agent-log)", &e);
		path = xasprintf("%s/acp-client", root);
		if (paths_mkdirs(path, 0700, &e) < 0)
			cli_die_err("", &e);
		free(path);
		path = xasprintf("%s/acp-client/agent.log", root);
		free(root);
	} else {
		path = xstrdup(file);
	}
	if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0)
		cli_die(EXIT_FAIL, "cannot open the agent's log %s: %s", path, strerror(errno));
	*shown = path;
	return fd;
}

/* The chat's notes (a refused prompt or mode) and the agent's last log lines on standard error. */
static void note(void *arg, const char *text)
{
	(void)arg;
	cli_msg("%s", text);
}

/* The last lines of the agent's log that this run wrote: why the agent it started went away
 * (cli_msg shows each line as lib/termtext does: no control reaches the screen). */
static void show_agent_log(const char *path, long long from)
{
	acpclient_log_tail(path, from, note, NULL);
}

/* Spawns the agent command (split at white space), its standard error to log_fd. */
static struct peer *spawn_agent(const char *cmd, const char *cwd, int log_fd)
{
	struct sbx_err e;
	struct peer *p;
	int errnum;

	if ((p = acpclient_spawn(cmd, cwd, log_fd, &agent_pid, &errnum, &e)) == NULL &&
	    e.code == SBX_EINVAL && errnum == 0)
		cli_usage_error(usage, e.msg);
	if (p == NULL)
		cli_die(errnum == ENOENT ? EXIT_CMD_NOT_FOUND : errnum ? EXIT_CANNOT_EXEC : EXIT_FAIL,
			"%s", e.msg);
	return p;
}

/* Long: a main's linear steps (flags, spawn or dial, setup, one prompt or the chat loop), each
 * short; the client itself is lib/acp/acpclient.c. */
/* The session could not be set up: the agent's last log lines, then the cause. */
_Noreturn static void open_failed(const struct sbx_err *e, const char *log_path, long long log_from)
{
	if (agent_pid > 0)
		peer_reap(agent_pid, AGENT_DIED_WAIT_MS);
	if (log_path)
		show_agent_log(log_path, log_from);
	cli_die(cli_status(e->code) == EXIT_USAGE ? EXIT_FAIL : cli_status(e->code), "%s", e->msg);
}

/* The agent (-cmd) started with its stderr in the agent log (*log_path, from *log_from on). */
static struct peer *start_agent(const char *cmd, const char *cwd, const char *agent_log, bool dbg,
				char **log_path, long long *log_from)
{
	int log_fd = open_agent_log(agent_log, log_path);
	struct peer *p;

	*log_from = log_fd >= 0 ? (long long)lseek(log_fd, 0, SEEK_END) : 0;
	p = spawn_agent(cmd, cwd, log_fd);
	if (log_fd >= 0)
		close(log_fd);
	if (dbg && *log_path)
		cli_msg("the agent's messages go to %s", *log_path);
	return p;
}

static void print_session(void)
{
	char *sid = termtext_str(acpclient_session(client), TERMTEXT_LINE);	/* the agent's */

	printf("Session: %s\n", sid);
	free(sid);
	fflush(stdout);
}

/* SIGINT to the canceller thread (SA_RESTART: the main thread's reads go on; the canceller
 * watches stop_fd). */
static void start_canceller(void)
{
	struct sbx_err e;
	pthread_t t;

	if ((stop_fd = cancel_install_signals((const int[]){SIGINT, 0},
					      CANCEL_ONCE | CANCEL_RESTART, &e)) >= 0 &&
	    pthread_create(&t, NULL, canceller, NULL) == 0)
		pthread_detach(t);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *cmd = "gemini --acp", *cwd_flag = NULL, *session = NULL;
	const char *prompt = NULL, *auth_method = NULL, *token_file = NULL, *ca = NULL;
	const char *agent_log = NULL;
	int64_t setup_timeout = INT64_C(60) * 1000000000;
	bool yolo = false, use_tls = false, insecure = false, dbg = false;
	bool ended;
	long long log_from = 0;
	char cwd[PATH_MAX], *token, *log_path = NULL;
	struct sbx_err e;
	struct peer *p;
	int status = EXIT_OK;
	struct flag flags[] = {
		{"addr", FLAG_STRING, &addr, NULL},
		{"cmd", FLAG_STRING, &cmd, NULL},
		{"cwd", FLAG_STRING, &cwd_flag, NULL},
		{"session-id", FLAG_STRING, &session, NULL},
		{"prompt", FLAG_STRING, &prompt, NULL},
		{"yolo", FLAG_BOOL, &yolo, NULL},
		{"auth-method", FLAG_STRING, &auth_method, NULL},
		{"auth-token-file", FLAG_STRING, &token_file, NULL},
		{"tls", FLAG_BOOL, &use_tls, NULL},
		{"tls-ca", FLAG_STRING, &ca, NULL},
		{"tls-insecure", FLAG_BOOL, &insecure, NULL},
		{"setup-timeout", FLAG_DURATION, &setup_timeout, NULL},
		{"debug", FLAG_BOOL, &dbg, NULL},
		{"agent-log", FLAG_STRING, &agent_log, NULL},
		{NULL, 0, NULL, NULL},
	};

	(void)cli_parse(&(const struct cli){.usage = usage, .flags = flags, .max = 0,
					    .too_many = "unexpected arguments"}, argc, argv);
	if ((ca || insecure) && !use_tls)
		cli_usage_error(usage, "-tls-ca and -tls-insecure need -tls");
	if (use_tls && addr == NULL)
		cli_usage_error(usage, "-tls needs -addr");
	if (realpath(cwd_flag ? cwd_flag : ".", cwd) == NULL)
		cli_die(EXIT_USAGE, "invalid -cwd %s: %s", cwd_flag ? cwd_flag : ".", strerror(errno));
	token = token_file ? read_token(token_file) : addr ? local_token(addr) : NULL;
	signal(SIGPIPE, SIG_IGN);

	if (agent_log && addr)
		cli_usage_error(usage, "-agent-log goes with -cmd");
	if (addr == NULL)
		p = start_agent(cmd, cwd, agent_log, dbg, &log_path, &log_from);
	else if ((p = peer_dial(addr, DIAL_TIMEOUT_MS, use_tls, ca, insecure, &e)) == NULL)
		cli_die(EXIT_FAIL, "cannot connect to %s: %s", addr, e.msg);
	client = acpclient_open(&(const struct acpclient_config){
		.cwd = cwd, .session_id = session, .auth_method = auth_method, .token = token,
		.yolo = yolo, .setup_timeout_ns = setup_timeout > 0 ? setup_timeout : 0,
		.emit = emit, .read_line = read_line, .debug = dbg ? debug : NULL}, p, &e);
	if (client == NULL)
		open_failed(&e, log_path, log_from);
	print_session();
	start_canceller();
	if (prompt) {
		if (acpclient_prompt(client, prompt, &e) < 0) {
			cli_msg("prompt failed: %s", e.msg);
			status = EXIT_FAIL;
		}
	} else {
		status = acpclient_chat(client, isatty(0), note, NULL) < 0 ? EXIT_FAIL : EXIT_OK;
	}
	ended = acpclient_input_ended(client);
	acpclient_close(client);
	if (agent_pid > 0)
		peer_reap(agent_pid, AGENT_EXIT_WAIT_MS);
	if (status != EXIT_OK && log_path)
		show_agent_log(log_path, log_from);
	if (ended) {
		cli_msg("input ended at a permission prompt: the tool call was cancelled");
		status = EXIT_FAIL;
	}
	free(log_path);
	free(token);
	return cli_finish(status);
}
