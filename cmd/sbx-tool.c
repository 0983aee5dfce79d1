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
#include "toolcall.h"
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

/* The call read from stdin and checked (lib/toolset/toolcall.c); a malformed one is a usage
 * error. */
static void read_call(struct toolcall *tc)
{
	struct sbx_err e;
	size_t len;
	char *text = cli_read_stdin(TOOLCALL_MAX, "tool call", &len);
	int rc = toolcall_parse(text, len, tc, &e);

	free(text);
	if (rc < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
}

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const char *tsname = NULL, *homedir = NULL;
	const char *workdir = NULL;
	struct toolcall tc;
	int64_t timeout = 120 * INT64_C(1000000000);
	bool list = false;
	struct json_object *msg, *parts = NULL;
	const struct toolset *ts;
	struct sbx_backend *b;
	struct sbx_err e;
	int i, failed, rc, cancel;
	char *content;
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
	if ((ts = toolset_find(toolset_pick(tsname), &e)) == NULL)
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

	read_call(&tc);

	if ((cancel = cancel_install(&e)) < 0)
		cli_die_err("", &e);

	b = cli_backend_open(&sb);
	{
		struct tool_ctx ctx = {.b = b, .sandbox = argv[i], .homedir = homedir,
				       .workdir = workdir && *workdir ? workdir : NULL,
				       .timeout_ns = timeout > 0 ? timeout : 0,
				       .cancel_fd = cancel, .call_id = tc.id, .parts = &parts};
		content = toolset_call(ts, &ctx, tc.name, tc.args, &content_len, &failed, &e);
	}
	if (content == NULL) {
		if (e.code == SBX_ECANCELED && cancel_signal())
			cli_die(128 + cancel_signal(), "tool %s canceled", tc.name);
		cli_die(cli_status(e.code), "unable to run tool %s in sandbox %s: %s", tc.name, argv[i],
			e.msg);
	}
	msg = toolcall_message(tc.id, content, content_len, parts);
	rc = cli_print_json(msg) < 0 ? EXIT_FAIL
	     : failed == TOOL_SANDBOX_GONE ? EXIT_GONE : failed ? 1 : EXIT_OK;
	json_object_put(msg);
	toolcall_free(&tc);
	free(content);
	backend_close(b);
	return cli_finish(rc);
}
