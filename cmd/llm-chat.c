/* llm-chat — one OpenAI-compatible chat completion: a request document in, the assistant's
 * message out (or, with -stream, its events as they arrive and the message last). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cancel.h"
#include "duration.h"
#include "eliza.h"
#include "flag.h"
#include "llm.h"
#include "termtext.h"
#include "cli.h"

static const char usage[] =
	"usage: llm-chat [-model NAME] [-base-url URL] [-vendor NAME] [-auth-header NAME]\n"
	"                [-timeout DURATION] [-retries N] [-backoff DURATION] [-stream]\n"
	"                [-full] [-v] [FILE]\n"
	"\n"
	"Sends one chat completion request to an OpenAI-compatible API and prints the\n"
	"assistant's message (choices[0].message) as one JSON line. The request is one\n"
	"JSON document {\"model\"?, \"messages\": [...], \"tools\"?: [...]} from FILE or\n"
	"stdin. The model \"fake-eliza\" answers locally, with no network and no key.\n"
	"\n"
	"  -model NAME        model (default: the document's \"model\", $OPENAI_MODEL,\n"
	"                     $MODEL, else " LLM_DEFAULT_MODEL ")\n"
	"  -base-url URL      API base URL, a query kept (default: $OPENAI_BASE_URL, else\n"
	"                     " LLM_DEFAULT_BASE_URL ")\n"
	"  -vendor NAME       what the request may carry back: openai, azure, gemini,\n"
	"                     groq, deepseek, openrouter, mistral, dashscope, ollama,\n"
	"                     vllm, llamacpp, generic (default: $LLM_VENDOR, else from the\n"
	"                     base URL's host, else generic)\n"
	"  -auth-header NAME  header for the key: Authorization (Bearer) or e.g. api-key\n"
	"                     (default: $LLM_AUTH_HEADER, else the vendor's; azure: api-key)\n"
	"  -timeout DURATION  per attempt; -stream: the longest silence (default 1m0s)\n"
	"  -retries N         attempts after transport errors, 408, 409, 429, 5xx (default 4)\n"
	"  -backoff DURATION  first wait before a retry, doubled, jittered (default 1s)\n"
	"  -stream            print {\"delta\":...}, {\"reasoning_delta\":...} and\n"
	"                     {\"tool_call_delta\":...} lines as they arrive, a\n"
	"                     {\"retry\":{...}} line before each retry's wait, then\n"
	"                     {\"message\":{...},\"finish_reason\":...,\"usage\":{...}}\n"
	"  -full              print the whole response instead of the message\n"
	"  -v                 trace requests and responses on stderr (API key redacted)\n"
	"\n"
	"Environment: GEMINI_API_KEY or OPENAI_API_KEY (the key), OPENAI_BASE_URL,\n"
	"OPENAI_MODEL, MODEL, LLM_VENDOR, LLM_AUTH_HEADER. Exit status: 0 ok, 100 bad\n"
	"usage or request, 111 API or transport failure, 128+n stopped by signal n.\n";

/* -v: bodies can be megabytes, more than cli_msg's line holds, so they are written whole, their
 * controls made visible (the server's bytes: termtext.h). */
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
	termtext_write(stderr, data, len, TERMTEXT_TEXT);
	fputc('\n', stderr);
}

static int print_event(struct json_object *ev, void *arg)
{
	(void)arg;
	return cli_print_json(ev);
}

/* -stream: {"retry":{"attempt":k,"attempts":M,"wait_ms":N,"error":"…"}} before a retry's wait,
 * so whoever reads the stream can say why it waits. */
static void print_retry(const char *why, int64_t wait_ns, int attempt, int attempts, void *arg)
{
	struct json_object *ev = json_object_new_object(), *r = json_object_new_object();

	(void)arg;
	json_object_object_add(r, "attempt", json_object_new_int(attempt));
	json_object_object_add(r, "attempts", json_object_new_int(attempts));
	json_object_object_add(r, "wait_ms", json_object_new_int64(wait_ns / 1000000));
	json_object_object_add(r, "error", json_object_new_string(why));
	json_object_object_add(ev, "retry", r);
	(void)cli_print_json(ev);
	json_object_put(ev);
}

/* Exit status for a failure: a signal's, usage, or the runtime failure status. */
static int fail_status(const struct sbx_err *e)
{
	if (e->code == SBX_ECANCELED && cancel_signal())
		return 128 + cancel_signal();
	return e->code == SBX_EINVAL ? EXIT_USAGE : EXIT_FAIL;
}

/* What is printed last: -stream's closing line (message, finish_reason, usage when the server
 * sent it, -full's response), else the message or -full's response. New reference. */
static struct json_object *answer_doc(const struct llm_result *res, bool stream, bool full)
{
	struct json_object *last, *v;

	if (!stream)
		return json_object_get(full ? res->response : res->message);
	last = json_object_new_object();
	json_object_object_add(last, "message", json_object_get(res->message));
	json_object_object_add(last, "finish_reason", *res->finish_reason ?
			       json_object_new_string(res->finish_reason) : NULL);
	if (json_object_object_get_ex(res->response, "usage", &v) &&
	    json_object_is_type(v, json_type_object))
		json_object_object_add(last, "usage", json_object_get(v));
	if (full)
		json_object_object_add(last, "response", json_object_get(res->response));
	return last;
}

int main(int argc, char **argv)
{
	const char *model_flag = NULL, *base_flag = NULL, *vendor_flag = NULL, *auth_flag = NULL;
	long long retries = LLM_DEFAULT_RETRIES;
	int64_t timeout = LLM_DEFAULT_TIMEOUT_NS, backoff = LLM_DEFAULT_BACKOFF_NS;
	bool stream = false, full = false, verbose = false;
	const struct flag flags[] = {
		{"model", FLAG_STRING, &model_flag, NULL},
		{"base-url", FLAG_STRING, &base_flag, NULL},
		{"vendor", FLAG_STRING, &vendor_flag, NULL},
		{"auth-header", FLAG_STRING, &auth_flag, NULL},
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

	i = cli_parse(&(const struct cli){.usage = usage, .flags = flags,
					  .max = 1}, argc, argv);
	if (timeout <= 0)
		cli_usage_error(usage, "-timeout must be positive");
	if (backoff < 0)
		cli_usage_error(usage, "-backoff must not be negative");
	if (retries < 0 || retries > LLM_RETRIES_MAX)
		cli_usage_error(usage, "-retries must be between 0 and 100");
	if (llm_pick_vendor(vendor_flag, &cfg.vendor, &e) < 0)
		cli_usage_error(usage, e.msg);
	cfg.auth_header = llm_auth_header(auth_flag);
	/* SIGINT, SIGTERM (lib/util/cancel.h; no SA_RESTART: a blocked read returns to see them);
	 * SIGPIPE ignored: a closed stdout shows up as a write error instead. */
	if (cancel_install_signals((const int[]){SIGINT, SIGTERM, 0}, 0, &e) < 0)
		cli_die(EXIT_FAIL, "%s", e.msg);
	if (i < argc && strcmp(argv[i], "-") != 0 &&
	    (fd = open(argv[i], O_RDONLY | O_CLOEXEC)) < 0)
		cli_die(EXIT_USAGE, "cannot open %s: %s", argv[i], strerror(errno));
	doc = llm_read_request(fd, cancel_flag(), &e);
	if (doc == NULL)
		cli_die(fail_status(&e), "%s", e.msg);
	cfg.model = llm_pick_model(model_flag, doc);
	if (llm_key_check(cfg.model, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	cfg.api_key = llm_env_key();
	base_url = llm_base_url(base_flag);
	cfg.base_url = base_url;
	cfg.timeout_ns = timeout;
	cfg.retries = (int)retries;
	cfg.backoff_ns = backoff;
	cfg.stream = stream;
	cfg.cancel = cancel_flag();
	cfg.on_event = print_event;
	cfg.on_retry = stream ? print_retry : NULL;
	cfg.trace = verbose ? trace : NULL;
	if (llm_chat(&cfg, doc, &res, &e) < 0) {
		cli_msg("%s", e.msg);
		status = fail_status(&e);
		goto out;
	}
	last = answer_doc(&res, stream, full);
	if (cli_print_json(last) < 0)
		status = EXIT_FAIL;
	json_object_put(last);
out:
	llm_result_free(&res);
	json_object_put(doc);
	free(base_url);
	return cli_finish(status);
}
