/* agent-loop — the interactive agent (upstream's sandboxed-tools CLI): chat in the terminal,
 * tool calls in a sandbox, every step one of the sbx programs (lib/agent/agent.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "agent.h"
#include "cancel.h"
#include "chatview.h"
#include "flag.h"
#include "porttool.h"
#include "sessions.h"
#include "specflags.h"
#include "termtext.h"
#include "ticker.h"
#include "toolset.h"
#include "userline.h"
#include "warmpool.h"
#include "xalloc.h"
#include "cli.h"

static const char usage[] =
	"usage: agent-loop [-session NAME] [-backend local|kubernetes] [-namespace NS] [-image I]\n"
	"                  [-homedir D] [-toolset basic|geminicli] [-tool-timeout 2m]\n"
	"                  [-max-tool-rounds 50] [-ttl 5m] [-backup-budget SIZE] [-v]\n"
	"                  [-warm N] " SPECFLAGS_SYNOPSIS_WRAPPED("                  ") "\n"
	"Chats with an LLM whose tool calls run in a sandbox named after the session; the\n"
	"history is kept in ~/.local/sandboxed-tools/<session>/sessions/latest.jsonl and the\n"
	"sandbox home is backed up after each turn that ran a tool. Type /exit or /quit to leave,\n"
	"/port PORT to open the sandbox's PORT on this machine's loopback (prints its URL).\n"
	"\n"
	"  -session NAME         session (^[a-z0-9]{1,40}$); env SESSION_NAME, default \"default\"\n"
	CLI_SBX_USAGE
	"  -toolset T            basic or geminicli; env TOOLSET, default basic; T+open_port adds\n"
	"                        the open_port tool (a sandbox port for the user; off by default)\n"
	"  -tool-timeout D       deadline per tool call (Go duration, default 2m; 0 disables)\n"
	"  -max-tool-rounds N    LLM/tool iterations allowed in one turn (default 50)\n"
	"  -ttl D                sandbox inactivity lifetime (Go duration, default 5m)\n"
	"  -backup-budget SIZE   most the session's backups may take together (K/M/G; default\n"
	"                        3 times the home's disk cap); env SANDBOX_BACKUP_BUDGET\n"
	SPECFLAGS_USAGE
	"  -warm N               local: keep N sandboxes of the sessions' spec ready (sbx-pool),\n"
	"                        so a session's first tool call takes one (default 0: none)\n"
	"  -v                    show each JSON document exchanged between the steps on stderr\n"
	"  -h                    show this help\n";

/* Readable once SIGINT or SIGTERM came (lib/util/cancel.h, which counts them). */
static int stop_fd = -1;

/* 128+n for the signal that ends the chat: SIGTERM's when one came, else SIGINT's. */
static int signal_status(void)
{
	return 128 + (cancel_count(SIGTERM) ? SIGTERM : SIGINT);
}

static void on_log(void *arg, enum agent_log_level lv, const char *msg)
{
	(void)arg;
	fflush(stdout);
	if (lv == AGENT_LOG_WARN)
		cli_warn("%s", msg);
	else
		cli_msg("%s", msg);
}

/* -v: documents can be large; written whole rather than through cli_msg's line, with what
 * JSON leaves raw (DEL, C1, bidi controls) shown as termtext does. */
static void on_trace(void *arg, const char *label, const char *json)
{
	(void)arg;
	fflush(stdout);
	fprintf(stderr, "%s: %s: ", cli_prog, label);
	termtext_write(stderr, json, strlen(json), TERMTEXT_TEXT);
	fputc('\n', stderr);
}

/* The line of a failed result that says why: a command's exit code or signal line when it
 * has one (basic's `exit_code: N`, geminicli's `Exit Code: N` or `Signal: N`), else its
 * first line. */
static const char *failure_line(const char *tool, const char *content, int *len)
{
	static const char *const keys[] = {"\nexit_code: ", "\nExit Code: ", "\nSignal: "};
	const char *line = content, *p;

	for (size_t i = 0; strcmp(toolset_tool_kind(tool), "execute") == 0 &&
			   i < sizeof keys / sizeof keys[0]; i++)
		for (p = strstr(content, keys[i]); p; p = strstr(p + 1, keys[i]))
			line = p + 1;
	*len = (int)strcspn(line, "\n");
	return line;
}

/* On a terminal: a live line for a tool call running longer than this, redrawn each second. */
#define LIVE_DELAY_NS (2 * INT64_C(1000000000))
#define LIVE_PERIOD_NS INT64_C(1000000000)
/* What the live line shows of the arguments, in bytes. */
#define LIVE_ARGS_MAX 60

/* Standard error is a terminal: people wait there, so say what runs and why the model waits. */
static bool on_tty;
static struct {
	struct ticker *t;
	char *what;
} live;

static void live_tick(void *arg, int64_t elapsed_ns)
{
	(void)arg;
	fprintf(stderr, "\r\033[K%s: running: %s (%lld s)", cli_prog, live.what,
		(long long)(elapsed_ns / 1000000000));
	fflush(stderr);
}

static void on_tool_start(void *arg, const struct agent_tool_call *c)
{
	char *args, *what;
	size_t n;

	(void)arg;
	if (!on_tty)
		return;
	args = chatview_args(c->arguments);
	n = strlen(args);
	if (n > LIVE_ARGS_MAX)	/* cut at a character's start */
		for (n = LIVE_ARGS_MAX; n > 0 && ((unsigned char)args[n] & 0xc0) == 0x80; n--)
			;
	what = xasprintf("%s(%.*s%s)", c->name, (int)n, args, args[n] ? "…" : "");
	live.what = termtext_str(what, TERMTEXT_TEXT);	/* the model's words: never raw */
	free(what);
	free(args);
	fflush(stdout);
	live.t = ticker_start(LIVE_DELAY_NS, LIVE_PERIOD_NS, live_tick, NULL);
}

/* Ends the live line, erasing it when it was drawn. */
static void live_end(void)
{
	if (ticker_stop(live.t))
		fputs("\r\033[K", stderr);
	live.t = NULL;
	free(live.what);
	live.what = NULL;
}

static void on_llm_retry(void *arg, const char *why, int64_t wait_ns, int attempt, int attempts)
{
	(void)arg;
	if (!on_tty)
		return;
	fflush(stdout);
	cli_msg("retrying in %lld s (%d/%d): %s", (long long)((wait_ns + 999999999) / 1000000000),
		attempt - 1, attempts - 1, why);
}

/* One line per tool call: name, arguments as people read them (shortened), outcome. */
static void on_tool_end(void *arg, const struct agent_tool_call *c, bool failed,
			const char *content)
{
	int shown;
	const char *why = failure_line(c->name, content, &shown);
	char *args = chatview_args(c->arguments);

	(void)arg;
	live_end();
	fflush(stdout);
	if (failed && strstr(content, "the user cancelled the turn"))
		cli_msg("tool %s(%.300s): cancelled", c->name, args);
	else if (failed)
		cli_msg("tool %s(%.300s): failed: %.*s", c->name, args,
			shown > 300 ? 300 : shown, why);
	else
		cli_msg("tool %s(%.300s): completed", c->name, args);
	free(args);
}

/* "/port PORT" at the prompt: the sandbox's PORT opened as sbx-port -d does; its URL on
 * stdout, or why not on stderr. */
static void port_command(struct agent_session *s, const char *arg)
{
	char *end, *url = NULL;
	long port;
	struct sbx_err e;

	errno = 0;
	port = strtol(arg, &end, 10);
	while (*end == ' ' || *end == '\t')
		end++;
	if (end == arg || *end != '\0' || errno != 0 || port < 1 || port > 65535) {
		cli_msg("/port wants a port number from 1 to 65535, such as /port 8000");
		return;
	}
	if (agent_session_ensure_sandbox(s, stop_fd, &e) < 0 ||
	    porttool_open(agent_session_backend(s), agent_session_namespace(s),
			  agent_session_name(s), (int)port, NULL, stop_fd, &url, &e) != PORTTOOL_OPEN) {
		cli_msg("cannot open port %ld: %s", port, e.msg);
		return;
	}
	printf("%s (port %ld of the sandbox, open until it ends)\n", url, port);
	fflush(stdout);
	free(url);
}

/* The chat loop. Returns the exit status. */
static int chat(struct agent_session *s)
{
	struct chatview v = {.out = stdout};
	struct agent_callbacks cb = {.arg = &v, .on_delta = chatview_delta,
				     .on_assistant = chatview_assistant, .on_tool_end = on_tool_end,
				     .on_tool_start = on_tool_start, .on_llm_retry = on_llm_retry};
	struct sbx_err e;
	char *line, *reply, *in;
	int status = EXIT_OK, seen;

	for (;;) {
		enum userline_result pr = userline_read("\nUser> ", &line);
		enum agent_status st;

		if (pr == USERLINE_EOF)
			break;
		if (pr == USERLINE_INTERRUPTED || pr == USERLINE_ERROR) {
			fputs("\n", stderr);	/* upstream: a cancelled context prints a newline */
			if (pr == USERLINE_ERROR)
				cli_msg("error reading standard input: %s", strerror(errno));
			status = pr == USERLINE_ERROR ? EXIT_FAIL : signal_status();
			break;
		}
		in = chatview_trim(line);
		if (*in == '\0' || strcasecmp(in, "/exit") == 0 || strcasecmp(in, "/quit") == 0) {
			bool quit = *in != '\0';
			free(line);
			if (quit)
				break;
			continue;
		}
		userline_remember(in);
		if (strncasecmp(in, "/port", 5) == 0 && (in[5] == '\0' || in[5] == ' ')) {
			port_command(s, in + 5);
			free(line);
			continue;
		}
		seen = cancel_count(SIGINT);	/* a Ctrl-C from now on cancels this turn */
		st = agent_turn(s, in, &cb, stop_fd, &reply, &e);
		live_end();
		free(line);
		free(reply);
		chatview_end_turn(&v);
		if (st == AGENT_ERROR) {
			cli_msg("%s", e.msg);
			status = EXIT_FAIL;
			break;
		}
		if (st == AGENT_LIMIT)
			cli_warn("%s", e.msg);
		if (st == AGENT_CANCELED)
			cli_msg("turn cancelled; press Ctrl-C again at the prompt to quit");
		/* Drain first, count after: a signal after the drain leaves a byte that interrupts
		 * the prompt, one before it is in the count; none is lost. */
		cancel_drain();
		if (cancel_count(SIGTERM) || cancel_count(SIGINT) - seen > 1) {
			fputs("\n", stderr);
			status = signal_status();
			break;
		}
	}
	return status;
}

int main(int argc, char **argv)
{
	const char *session = sessions_env_name("default"), *backend, *image, *toolset = NULL, *why;
	const char *budget = NULL;
	long long budget_bytes;
	int64_t tool_timeout = AGENT_DEFAULT_TOOL_TIMEOUT_NS, ttl = 0;
	long long rounds = AGENT_DEFAULT_MAX_TOOL_ROUNDS, warm = 0;
	pid_t pool;
	bool verbose = false;
	struct agent_session *s;
	struct sbx_err e;
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND | CLI_SBX_IMAGE | CLI_SBX_HOMEDIR |
					 CLI_SBX_SPEC | CLI_SBX_AGENT};
	char **create_args;
	int status;
	struct flag flags[] = {
		{"session", FLAG_STRING, &session, NULL},
		{"toolset", FLAG_STRING, &toolset, NULL},
		{"tool-timeout", FLAG_DURATION, &tool_timeout, NULL},
		{"max-tool-rounds", FLAG_INT, &rounds, NULL},
		{"ttl", FLAG_DURATION, &ttl, NULL},
		{"backup-budget", FLAG_STRING, &budget, NULL},
		{"v", FLAG_BOOL, &verbose, NULL},
		{"warm", FLAG_INT, &warm, NULL},
		{NULL, 0, NULL, NULL},
	};

	on_tty = isatty(STDERR_FILENO);
	(void)cli_parse(&(const struct cli){.usage = usage, .flags = flags, .sandbox = &sb,
					    .max = 0}, argc, argv);
	if (rounds < 1 || rounds > 100000)
		cli_usage_error(usage, "-max-tool-rounds must be between 1 and 100000");
	if (ttl < 0)
		cli_usage_error(usage, "-ttl must not be negative");
	if (warm < 0 || warm > WARMPOOL_MAX)
		cli_usage_error(usage, "-warm must be between 0 and 64");
	if (budget && (flag_parse_size(budget, &budget_bytes) < 0 || budget_bytes <= 0))
		cli_usage_error(usage, "-backup-budget must be a positive size such as 30G");
	backend = cli_sandbox_backend(&sb, &why);
	if (specflags_check_backend(&sb.sf, backend, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	create_args = specflags_argv(&sb.sf);
	if ((image = sb.image) == NULL || *image == '\0')
		image = backend_env_image();

	/* no SA_RESTART (lib/util/cancel.h): blocking calls return to see a signal */
	if ((stop_fd = cancel_install_signals((const int[]){SIGINT, SIGTERM, 0}, 0, &e)) < 0)
		cli_die(EXIT_FAIL, "%s", e.msg);

	{
		struct agent_config cfg = {
			.session = session, .backend = backend, .namespace = sb.ns, .image = image,
			.homedir = sb.homedir, .toolset = toolset, .tool_timeout_ns = tool_timeout,
			.ttl_ns = ttl, .max_tool_rounds = (int)rounds, .log = on_log,
			.trace = verbose ? on_trace : NULL, .create_args = create_args,
			.backup_budget = budget,
		};
		if ((s = agent_session_open(&cfg, &e)) == NULL)
			cli_die(cli_status(e.code), "%s", e.msg);
	}
	if (warmpool_start((int)warm, &(struct warmpool_spec){backend, sb.ns, image, sb.homedir,
							     create_args}, &pool, &e) < 0)
		cli_die(cli_status(e.code), "%s", e.msg);
	userline_init(stop_fd);
	if (chatview_banner(stdout, s, why))
		cli_msg("sandbox backend: %s (%s)", agent_session_backend(s), why);
	status = chat(s);
	fflush(stdout);
	if (agent_session_close(s, &e) < 0)
		cli_warn("%s", e.msg);
	warmpool_stop(pool);
	specflags_argv_free(create_args);
	return cli_finish(status);
}
