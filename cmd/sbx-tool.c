/* sbx-tool — run one model tool call in a sandbox and print the tool message. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cancel.h"
#include "flag.h"
#include "gojson.h"
#include "toolset.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-tool [-backend local|kubernetes] [-namespace NS] [-toolset basic|geminicli]\n"
	"                [-tool-timeout 2m] [-homedir D] [-workdir W] SANDBOX < tool-call.json\n"
	"       sbx-tool [-toolset basic|geminicli] -list\n"
	"Reads one tool call {\"id\",\"type\":\"function\",\"function\":{\"name\",\"arguments\"}} on\n"
	"standard input (\"arguments\" as JSON text or an object; other fields are refused), runs\n"
	"it in SANDBOX and prints the tool message\n"
	"{\"role\":\"tool\",\"tool_call_id\",\"content\"}. Exits 1 when the tool reported an error\n"
	"(the message, with upstream's error text, is still printed), 101 when the sandbox was not\n"
	"there (nothing ran: create it and call again), 102 when it went away while the tool ran\n"
	"(the message says so; the call may have run in part, so it is not to be repeated).\n"
	"\n"
	"  -toolset T       basic (default) or geminicli; env TOOLSET\n"
	"  -tool-timeout D  deadline per call (Go duration, default 2m; 0 disables)\n"
	"  -list            print the toolset's declarations (the \"tools\" of a chat request)\n"
	CLI_SBX_USAGE
	"  -homedir D       home directory inside; env SANDBOX_HOME_DIR, default /home/clawtainer\n"
	"  -workdir W       the tools' working directory inside (absolute; default: the\n"
	"                   backend's, / on the local backend)\n"
	"  -h               show this help\n";

/* A tool call is small; its arguments carry at most a file to write. */
#define CALL_MAX (64u << 20)

/* The fields of a tool call as OpenAI-compatible APIs send it (index when streamed; Gemini's
 * thought_signature and extra_content): any other is refused, never ignored. */
static const char *const call_fields[] = {"id", "type", "function", "index", "thought_signature",
					  "extra_content", NULL};
static const char *const function_fields[] = {"name", "arguments", "thought_signature", NULL};

/* Dies (usage) naming the first field of o not in known. */
static void refuse_unknown(struct json_object *o, const char *const *known, const char *where)
{
	const char *bad = gojson_unknown_field(o, known);
	struct buf q = {0};

	if (bad == NULL)
		return;
	gojson_append_string(&q, bad, strlen(bad));
	cli_die(EXIT_USAGE, "invalid tool call: unknown field %s%s", q.data, where);
}

static struct json_object *read_call(void)
{
	struct json_object *o;
	const char *why;
	size_t len;
	char *text = cli_read_stdin(CALL_MAX, "tool call", &len);

	o = gojson_parse(text, len, &why);
	free(text);
	if (o == NULL)
		cli_die(EXIT_USAGE, "invalid tool call: not valid JSON: %s", why);
	return o;
}

/* Long: a main's checks in the order their usage errors are tested (flags, -list, the call
 * document's fields), then one toolset_call. */
/* The call read from stdin and checked: its id, function name and arguments (JSON text;
 * *args_text owns it when the call gave an object). Refused with a usage error when malformed.
 * New reference. */
static struct json_object *parse_call(const char **id, const char **fname, const char **fargs,
				      char **args_text)
{
	struct json_object *call = read_call(), *fn, *v;

	*args_text = NULL;
	if (!json_object_is_type(call, json_type_object) ||
	    !json_object_object_get_ex(call, "function", &fn) ||
	    !json_object_is_type(fn, json_type_object) ||
	    !json_object_object_get_ex(fn, "name", &v) || !json_object_is_type(v, json_type_string))
		cli_die(EXIT_USAGE, "invalid tool call: want {\"id\",\"type\":\"function\","
			"\"function\":{\"name\",\"arguments\"}}");
	*fname = json_object_get_string(v);
	refuse_unknown(call, call_fields, "");
	refuse_unknown(fn, function_fields, " in \"function\"");
	/* arguments: JSON text, as the API sends it, or the object itself, as many frameworks
	 * pass it on */
	if (!json_object_object_get_ex(fn, "arguments", &v) || v == NULL)
		*fargs = "";
	else if (json_object_is_type(v, json_type_string))
		*fargs = json_object_get_string(v);
	else if (json_object_is_type(v, json_type_object))
		*fargs = *args_text = gojson_encode(v);
	else
		cli_die(EXIT_USAGE, "invalid tool call: \"function.arguments\" must be a JSON string or "
			"object");
	if (json_object_object_get_ex(call, "type", &v) &&
	    !(json_object_is_type(v, json_type_string) && strcmp(json_object_get_string(v), "function") == 0))
		cli_die(EXIT_USAGE, "invalid tool call: \"type\" must be \"function\"");
	*id = "";
	if (json_object_object_get_ex(call, "id", &v)) {
		if (!json_object_is_type(v, json_type_string))
			cli_die(EXIT_USAGE, "invalid tool call: \"id\" must be a string");
		*id = json_object_get_string(v);
	}
	return call;
}

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const char *tsname = getenv("TOOLSET"), *homedir = NULL;
	const char *workdir = NULL;
	const char *id, *fname, *fargs;
	int64_t timeout = 120 * INT64_C(1000000000);
	bool list = false;
	struct json_object *call, *msg, *parts = NULL;
	const struct toolset *ts;
	struct sbx_backend *b;
	struct sbx_err e;
	int i, failed, rc, cancel;
	char *content, *args_text;
	size_t content_len;
	struct flag flags[] = {
		{"toolset", FLAG_STRING, &tsname, NULL},
		{"tool-timeout", FLAG_DURATION, &timeout, NULL},
		{"homedir", FLAG_STRING, &homedir, NULL},
		{"workdir", FLAG_STRING, &workdir, NULL},
		{"list", FLAG_BOOL, &list, NULL},
		{NULL, 0, NULL, NULL},
	};

	i = cli_parse(&(const struct cli){.usage = usage, .flags = flags, .sandbox = &sb,
					  .max = -1}, argc, argv);
	if ((ts = toolset_find(tsname, &e)) == NULL)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if (list) {
		struct json_object *d = toolset_declarations(ts);
		rc = cli_print_json(d) < 0 ? EXIT_FAIL : EXIT_OK;
		json_object_put(d);
		return cli_finish(rc);
	}
	if (argc - i != 1)
		cli_usage_error(usage, argc - i < 1 ? "missing SANDBOX" : "too many arguments");
	cli_names_check(NAME_SANDBOX, argv + i, 1);
	if (homedir == NULL)
		homedir = backend_env_homedir();
	else if (*homedir == '\0')
		homedir = SBX_DEFAULT_HOMEDIR;
	if (workdir && workdir[0] != '/')
		cli_usage_error(usage, "-workdir must be an absolute path");

	call = parse_call(&id, &fname, &fargs, &args_text);

	if ((cancel = cancel_install(&e)) < 0)
		cli_die_err("", &e);

	b = cli_backend_open(&sb);
	{
		struct tool_ctx ctx = {.b = b, .sandbox = argv[i], .homedir = homedir,
				       .workdir = workdir && *workdir ? workdir : NULL,
				       .timeout_ns = timeout > 0 ? timeout : 0,
				       .cancel_fd = cancel, .call_id = id, .parts = &parts};
		content = toolset_call(ts, &ctx, fname, fargs, &content_len, &failed, &e);
	}
	if (content == NULL) {
		if (e.code == SBX_ECANCELED && cancel_signal())
			cli_die(128 + cancel_signal(), "tool %s canceled", fname);
		cli_die(cli_status(e.code), "unable to run tool %s in sandbox %s: %s", fname, argv[i],
			e.msg);
	}
	msg = json_object_new_object();
	json_object_object_add(msg, "role", json_object_new_string("tool"));
	/* NUL bytes in a result travel as \u0000 */
	json_object_object_add(msg, "content", json_object_new_string_len(content, (int)content_len));
	json_object_object_add(msg, "tool_call_id", json_object_new_string(id));
	if (parts)	/* inline data: the result as gemini-cli's Parts too */
		json_object_object_add(msg, "parts", parts);
	rc = cli_print_json(msg) < 0 ? EXIT_FAIL
	     : failed == TOOL_SANDBOX_GONE ? EXIT_GONE : failed ? 1 : EXIT_OK;
	json_object_put(msg);
	json_object_put(call);
	free(args_text);
	free(content);
	backend_close(b);
	return cli_finish(rc);
}
