/* sbx-exec — run one command in a sandbox: a JSON result, or raw byte streams with -raw. The
 * request document is lib/backend/execreq.c; the run, lib/backend/relay.c and capture.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cancel.h"
#include "capture.h"
#include "duration.h"
#include "execreq.h"
#include "flag.h"
#include "relay.h"
#include "reslimit.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-exec [-backend local|kubernetes] [-namespace NS] [-timeout D] [-workdir W]\n"
	"                [-raw] [-stdin] [-max-output N] NAME [--] CMD [ARG...]\n"
	"       sbx-exec [options] NAME < request.json\n"
	"Runs CMD in sandbox NAME and prints {\"stdout\",\"stderr\",\"exit_code\"} as one JSON line\n"
	"(plus \"timed_out\", \"oom_killed\" and \"truncated\" when they apply); exits with the\n"
	"command's status (137 when the sandbox's memory limit killed it).\n"
	"Without CMD, reads {\"command\":[...],\"stdin\":\"...\",\"timeout\":\"30s\",\"workdir\":\"...\",\n"
	"\"env\":{\"K\":\"V\"}} from standard input.\n"
	"\n"
	CLI_SBX_USAGE
	"  -timeout D      kill every process the command started after D (Go duration); exit 124;\n"
	"                  a request's own \"timeout\" wins, \"0s\" (none) too\n"
	"  -workdir W      working directory inside (default: the home)\n"
	"  -raw            stream stdin/stdout/stderr as bytes, no JSON\n"
	"  -stdin          JSON mode: pass this program's standard input to the command\n"
	"  -max-output N   JSON mode: keep at most N bytes per stream (default 8M)\n"
	"  -h              show this help\n";

/* Reads and checks the request document on stdin. */
static void read_request(struct execreq *rq)
{
	struct sbx_err e;
	size_t len;
	char *text = cli_read_stdin(EXECREQ_MAX, "request", &len);
	int rc = execreq_parse(text, len, rq, &e);

	free(text);
	if (rc < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
}

static int status_of(const char *name, const struct sbx_exec_result *r, int64_t timeout, int raw)
{
	char d[DURATION_BUFSZ];

	if (r->canceled && cancel_signal())
		return 128 + cancel_signal();
	if (r->timed_out && raw)
		cli_msg("command in sandbox %s timed out after %s and was killed", name,
			duration_format(timeout, d, sizeof d));
	if (r->oom_killed && raw)
		cli_msg("command in sandbox %s ran out of memory and was killed (memory limit %s)",
			name, reslimit_size_text(r->memory_limit, d, sizeof d));
	return r->exit_code;
}

/* -raw: the command on our own descriptors, through pipes of ours (the sandbox never gets
 * our caller's descriptors); its status as sbx-exec exits with it. */
static int run_raw(struct sbx_backend *b, const char *name, const struct execreq *rq, int cancel)
{
	struct sbx_exec x = {.argv = rq->argv, .workdir = rq->workdir, .env = rq->env,
			     .in_fd = 0, .out_fd = 1, .err_fd = 2,
			     .timeout_ns = rq->timeout_ns, .cancel_fd = cancel};
	struct sbx_exec_result r;
	struct sbx_err e;

	if (relay_exec(b, name, &x, NULL, &r, &e) < 0) {
		backend_close(b);	/* exit() does not free it: valgrind counts it lost */
		cli_die(cli_status(e.code), "unable to run %s in sandbox %s: %s", rq->argv[0],
			name, e.msg);
	}
	return status_of(name, &r, rq->timeout_ns, 1);
}

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const char *workdir = NULL, *name;
	int64_t timeout = 0;
	long long max = CAPTURE_DEFAULT_MAX;
	bool raw = false, use_stdin = false;
	struct execreq rq = {0};
	struct sbx_backend *b;
	struct sbx_err e;
	int i, rc, cancel;
	struct flag flags[] = {
		{"timeout", FLAG_DURATION, &timeout, NULL},
		{"workdir", FLAG_STRING, &workdir, NULL},
		{"raw", FLAG_BOOL, &raw, NULL},
		{"stdin", FLAG_BOOL, &use_stdin, NULL},
		{"max-output", FLAG_SIZE, &max, NULL},
		{NULL, 0, NULL, NULL},
	};

	i = cli_parse(&(const struct cli){.usage = usage, .flags = flags, .sandbox = &sb,
					  .min = 1, .max = -1,
					  .missing = "missing NAME"}, argc, argv);
	if (timeout < 0)
		cli_usage_error(usage, "-timeout must not be negative");
	if (max <= 0 || max > (1LL << 32))
		cli_usage_error(usage, "-max-output must be between 1 and 4G");
	cli_names_check(NAME_SANDBOX, argv + i, 1);
	name = argv[i++];
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i < argc) {
		rq.argv = argv + i;
		rq.timeout_ns = timeout;
		rq.workdir = workdir;
	} else {
		if (raw)
			cli_usage_error(usage, "-raw needs a command on the command line");
		read_request(&rq);
		if (!rq.has_timeout)
			rq.timeout_ns = timeout;
		if (workdir && !rq.workdir)
			rq.workdir = workdir;
	}
	if ((cancel = cancel_install(&e)) < 0)
		cli_die_err("", &e);
	b = cli_backend_open(&sb);

	if (raw) {
		rc = run_raw(b, name, &rq, cancel);
	} else {
		struct capture_req cr = {.argv = rq.argv, .workdir = rq.workdir, .env = rq.env,
					 .in = rq.in, .in_len = rq.in_len,
					 .in_fd = use_stdin && !rq.in ? 0 : -1,
					 .timeout_ns = rq.timeout_ns, .cancel_fd = cancel,
					 .max = (size_t)max};
		struct capture c;
		struct json_object *o;
		if (capture_run(b, name, &cr, &c, &e) < 0) {
			backend_close(b);	/* exit() does not free it: valgrind counts it lost */
			cli_die(cli_status(e.code), "unable to run %s in sandbox %s: %s", rq.argv[0],
				name, e.msg);
		}
		o = execreq_result_json(&c);
		rc = status_of(name, &c.res, rq.timeout_ns, 0);
		if (cli_print_json(o) < 0)
			rc = EXIT_FAIL;
		json_object_put(o);
		capture_free(&c);
	}
	backend_close(b);
	execreq_free(&rq);
	return cli_finish(rc);
}
