/* sbx-exec — run one command in a sandbox: a JSON result, or raw byte streams with -raw. */
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
#include "flag.h"
#include "gojson.h"
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

/* A request document is read whole; its stdin field is the only big part. */
#define REQUEST_MAX (64u << 20)

/* Every field a request may have: any other is refused, never ignored. */
static const char *const request_fields[] = {"command", "stdin", "timeout", "workdir", "env", NULL};

struct request {
	char **argv;
	char **env;
	const char *workdir;
	const char *in;
	size_t in_len;
	int64_t timeout;
	bool has_timeout;	/* the request named one: it wins over -timeout, "0s" too */
	struct json_object *doc;
};

/* A string of the request as C sees it: one with an embedded NUL would be cut there, so that
 * the sandbox ran something other than what was asked; it is refused instead (as Go's exec). */
static const char *request_string(struct json_object *v, const char *field)
{
	const char *s = json_object_get_string(v);

	if (memchr(s, '\0', (size_t)json_object_get_string_len(v)) != NULL)
		cli_die(EXIT_USAGE, "invalid request: a string of \"%s\" holds a NUL byte", field);
	return s;
}

/* Reads and checks the request document on stdin. */
static void read_request(struct request *rq)
{
	struct json_object *cmd, *v;
	const char *why;
	size_t i, n, len;
	char *text = cli_read_stdin(REQUEST_MAX, "request", &len);

	rq->doc = gojson_parse(text, len, &why);
	free(text);
	if (rq->doc == NULL)
		cli_die(EXIT_USAGE, "invalid request: not valid JSON: %s", why);
	if (!json_object_is_type(rq->doc, json_type_object))
		cli_die(EXIT_USAGE, "invalid request: not a JSON object");
	if ((why = gojson_unknown_field(rq->doc, request_fields)) != NULL) {
		struct buf q = {0};
		gojson_append_string(&q, why, strlen(why));
		cli_die(EXIT_USAGE, "invalid request: unknown field %s (a request has command, stdin, "
			"timeout, workdir, env)", q.data);
	}
	if (!json_object_object_get_ex(rq->doc, "command", &cmd) ||
	    !json_object_is_type(cmd, json_type_array) || json_object_array_length(cmd) == 0)
		cli_die(EXIT_USAGE, "invalid request: \"command\" must be a non-empty array of strings");
	n = json_object_array_length(cmd);
	rq->argv = xcalloc(n + 1, sizeof *rq->argv);
	for (i = 0; i < n; i++) {
		v = json_object_array_get_idx(cmd, i);
		if (!json_object_is_type(v, json_type_string))
			cli_die(EXIT_USAGE, "invalid request: \"command\" must be a non-empty array of strings");
		rq->argv[i] = (char *)request_string(v, "command");
	}
	if (json_object_object_get_ex(rq->doc, "stdin", &v)) {
		if (!json_object_is_type(v, json_type_string))
			cli_die(EXIT_USAGE, "invalid request: \"stdin\" must be a string");
		rq->in = json_object_get_string(v);
		rq->in_len = (size_t)json_object_get_string_len(v);
	}
	if (json_object_object_get_ex(rq->doc, "timeout", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    duration_parse(json_object_get_string(v), &rq->timeout) < 0 || rq->timeout < 0)
			cli_die(EXIT_USAGE, "invalid request: \"timeout\" must be a Go duration such as \"30s\"");
		rq->has_timeout = true;
	}
	if (json_object_object_get_ex(rq->doc, "workdir", &v)) {
		if (!json_object_is_type(v, json_type_string))
			cli_die(EXIT_USAGE, "invalid request: \"workdir\" must be a string");
		rq->workdir = request_string(v, "workdir");
	}
	if (json_object_object_get_ex(rq->doc, "env", &v)) {
		size_t k = 0;
		if (!json_object_is_type(v, json_type_object))
			cli_die(EXIT_USAGE, "invalid request: \"env\" must be an object of strings");
		rq->env = xcalloc((size_t)json_object_object_length(v) + 1, sizeof *rq->env);
		json_object_object_foreach(v, key, val) {
			if (!json_object_is_type(val, json_type_string) || !*key || strchr(key, '='))
				cli_die(EXIT_USAGE, "invalid request: \"env\" must be an object of strings");
			rq->env[k++] = xasprintf("%s=%s", key, request_string(val, "env"));
		}
	}
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

/* Long: a main's checks in the order their usage errors are tested, then the request built and
 * run; the exec is lib/backend/relay.c and lib/backend/capture.c. */
/* -raw: the command on our own descriptors, through pipes of ours (the sandbox never gets
 * our caller's descriptors); its status as sbx-exec exits with it. */
static int run_raw(struct sbx_backend *b, const char *name, const struct request *rq, int cancel)
{
	struct sbx_exec x = {.argv = rq->argv, .workdir = rq->workdir, .env = rq->env,
			     .in_fd = 0, .out_fd = 1, .err_fd = 2,
			     .timeout_ns = rq->timeout, .cancel_fd = cancel};
	struct sbx_exec_result r;
	struct sbx_err e;

	if (relay_exec(b, name, &x, NULL, &r, &e) < 0) {
		backend_close(b);	/* exit() does not free it: valgrind counts it lost */
		cli_die(cli_status(e.code), "unable to run %s in sandbox %s: %s", rq->argv[0],
			name, e.msg);
	}
	return status_of(name, &r, rq->timeout, 1);
}

/* The document printed for a captured run. New reference. */
static struct json_object *capture_json(const struct capture *c)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "stdout", json_object_new_string_len(c->out, (int)c->out_len));
	json_object_object_add(o, "stderr", json_object_new_string_len(c->err, (int)c->err_len));
	json_object_object_add(o, "exit_code", json_object_new_int(c->res.exit_code));
	if (c->res.timed_out)
		json_object_object_add(o, "timed_out", json_object_new_boolean(1));
	if (c->res.oom_killed)
		json_object_object_add(o, "oom_killed", json_object_new_boolean(1));
	if (c->out_truncated || c->err_truncated)
		json_object_object_add(o, "truncated", json_object_new_boolean(1));
	return o;
}

static void request_free(struct request *rq)
{
	for (char **p = rq->env; p && *p; p++)
		free(*p);
	free(rq->env);
	if (rq->doc) {
		free(rq->argv);
		json_object_put(rq->doc);
	}
}

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const char *workdir = NULL, *name;
	int64_t timeout = 0;
	long long max = CAPTURE_DEFAULT_MAX;
	bool raw = false, use_stdin = false;
	struct request rq = {0};
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
		rq.timeout = timeout;
		rq.workdir = workdir;
	} else {
		if (raw)
			cli_usage_error(usage, "-raw needs a command on the command line");
		read_request(&rq);
		if (!rq.has_timeout)
			rq.timeout = timeout;
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
					 .timeout_ns = rq.timeout, .cancel_fd = cancel,
					 .max = (size_t)max};
		struct capture c;
		struct json_object *o;
		if (capture_run(b, name, &cr, &c, &e) < 0) {
			backend_close(b);	/* exit() does not free it: valgrind counts it lost */
			cli_die(cli_status(e.code), "unable to run %s in sandbox %s: %s", rq.argv[0],
				name, e.msg);
		}
		o = capture_json(&c);
		rc = status_of(name, &c.res, rq.timeout, 0);
		if (cli_print_json(o) < 0)
			rc = EXIT_FAIL;
		json_object_put(o);
		capture_free(&c);
	}
	backend_close(b);
	request_free(&rq);
	return cli_finish(rc);
}
