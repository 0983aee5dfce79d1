/* llm-chat — one OpenAI-compatible chat completion: a request document in, the assistant's
 * message out (or, with -stream, its events as they arrive and the message last). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/duration.h"
#include "../lib/eliza.h"
#include "../lib/flag.h"
#include "../lib/llm.h"
#include "cli.h"

static const char usage[] =
	"usage: llm-chat [-model NAME] [-base-url URL] [-timeout DURATION] [-retries N]\n"
	"                [-backoff DURATION] [-stream] [-full] [-v] [FILE]\n"
	"\n"
	"Sends one chat completion request to an OpenAI-compatible API and prints the\n"
	"assistant's message (choices[0].message) as one JSON line. The request is one\n"
	"JSON document {\"model\"?, \"messages\": [...], \"tools\"?: [...]} from FILE or\n"
	"stdin. The model \"fake-eliza\" answers locally, with no network and no key.\n"
	"\n"
	"  -model NAME        model (default: the document's \"model\", $OPENAI_MODEL,\n"
	"                     $MODEL, else " LLM_DEFAULT_MODEL ")\n"
	"  -base-url URL      API base URL (default: $OPENAI_BASE_URL, else\n"
	"                     " LLM_DEFAULT_BASE_URL ")\n"
	"  -timeout DURATION  per attempt; -stream: the longest silence (default 1m0s)\n"
	"  -retries N         attempts after transport errors, 408, 429, 5xx (default 4)\n"
	"  -backoff DURATION  first wait before a retry, doubled, jittered (default 1s)\n"
	"  -stream            print {\"delta\":...} and {\"tool_call_delta\":...} lines as\n"
	"                     they arrive, then {\"message\":{...},\"finish_reason\":...}\n"
	"  -full              print the whole response instead of the message\n"
	"  -v                 trace requests and responses on stderr (API key redacted)\n"
	"\n"
	"Environment: GEMINI_API_KEY or OPENAI_API_KEY (the key), OPENAI_BASE_URL,\n"
	"OPENAI_MODEL, MODEL. Exit status: 0 ok, 100 bad usage or request, 111 API or\n"
	"transport failure, 128+n stopped by signal n.\n";

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void trap_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;	/* no SA_RESTART: a blocked read returns to see the flag */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* a closed stdout shows up as a write error instead */
}

/* -v: bodies can be megabytes, more than cli_msg's line holds, so they are written whole. */
static void trace(const char *what, const char *data, size_t len, void *arg)
{
	(void)arg;
	if (data == NULL) {
		cli_msg("%s", what);
		return;
	}
	fflush(stdout);
	fputs(cli_prog, stderr);
	fputs(": ", stderr);
	fputs(what, stderr);
	fputs(": ", stderr);
	fwrite(data, 1, len, stderr);
	fputc('\n', stderr);
}

static int print_event(struct json_object *ev, void *arg)
{
	(void)arg;
	return cli_print_json(ev);
}

/* Exit status for a failure: a signal's, usage, or the runtime failure status. */
static int fail_status(const struct sbx_err *e)
{
	if (e->code == SBX_ECANCELED && stop_signal)
		return 128 + stop_signal;
	return e->code == SBX_EINVAL ? EXIT_USAGE : EXIT_FAIL;
}

int main(int argc, char **argv)
{
	const char *model_flag = NULL, *base_flag = NULL;
	long long retries = LLM_DEFAULT_RETRIES;
	int64_t timeout = LLM_DEFAULT_TIMEOUT_NS, backoff = LLM_DEFAULT_BACKOFF_NS;
	bool stream = false, full = false, verbose = false;
	const struct flag flags[] = {
		{"model", FLAG_STRING, &model_flag, NULL},
		{"base-url", FLAG_STRING, &base_flag, NULL},
		{"timeout", FLAG_DURATION, &timeout, NULL},
		{"retries", FLAG_INT, &retries, NULL},
		{"backoff", FLAG_DURATION, &backoff, NULL},
		{"stream", FLAG_BOOL, &stream, NULL},
		{"full", FLAG_BOOL, &full, NULL},
		{"v", FLAG_BOOL, &verbose, NULL},
		{NULL, 0, NULL, NULL},
	};
	struct llm_config cfg = {0};
	struct llm_result res = {0};
	struct json_object *doc, *last;
	struct sbx_err e = {0};
	char *base_url = NULL;
	int i, fd = STDIN_FILENO, status = EXIT_OK;

	cli_init(argc, argv);
	i = flag_parse(flags, argc, argv, &e);
	if (i == FLAG_HELP)
		cli_help(usage);
	if (i < 0)
		cli_usage_error(usage, e.msg);
	if (argc - i > 1)
		cli_usage_error(usage, "too many arguments");
	if (timeout <= 0)
		cli_usage_error(usage, "-timeout must be positive");
	if (backoff < 0)
		cli_usage_error(usage, "-backoff must not be negative");
	if (retries < 0 || retries > LLM_RETRIES_MAX)
		cli_usage_error(usage, "-retries must be between 0 and 100");
	trap_signals();
	if (i < argc && strcmp(argv[i], "-") != 0 &&
	    (fd = open(argv[i], O_RDONLY | O_CLOEXEC)) < 0)
		cli_die(EXIT_USAGE, "cannot open %s: %s", argv[i], strerror(errno));
	doc = llm_read_request(fd, &stop_signal, &e);
	if (doc == NULL)
		cli_die(fail_status(&e), "%s", e.msg);
	cfg.model = llm_pick_model(model_flag, doc);
	if (strcmp(cfg.model, ELIZA_MODEL) != 0 && (cfg.api_key = llm_env_key()) == NULL)
		cli_die(EXIT_USAGE, "GEMINI_API_KEY or OPENAI_API_KEY environment variable is required");
	base_url = llm_base_url(base_flag);
	cfg.base_url = base_url;
	cfg.timeout_ns = timeout;
	cfg.retries = (int)retries;
	cfg.backoff_ns = backoff;
	cfg.stream = stream;
	cfg.cancel = &stop_signal;
	cfg.on_event = print_event;
	cfg.trace = verbose ? trace : NULL;
	if (llm_chat(&cfg, doc, &res, &e) < 0) {
		cli_msg("%s", e.msg);
		status = fail_status(&e);
		goto out;
	}
	if (stream) {
		last = json_object_new_object();
		json_object_object_add(last, "message", json_object_get(res.message));
		json_object_object_add(last, "finish_reason", *res.finish_reason ?
				       json_object_new_string(res.finish_reason) : NULL);
		if (full)
			json_object_object_add(last, "response", json_object_get(res.response));
	} else {
		last = json_object_get(full ? res.response : res.message);
	}
	if (cli_print_json(last) < 0)
		status = EXIT_FAIL;
	json_object_put(last);
out:
	llm_result_free(&res);
	json_object_put(doc);
	free(base_url);
	return cli_finish(status);
}
