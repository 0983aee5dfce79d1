/* test_calldocs.c — the documents the thin mains hand to lib/: sbx-exec's request
 * (lib/backend/execreq) and sbx-tool's tool call (lib/toolset/toolcall), each accepted whole
 * or refused with SBX_EINVAL naming what is wrong, and the documents answering them. */
#include <stdlib.h>
#include <string.h>

#include "execreq.h"
#include "gojson.h"
#include "toolcall.h"
#include "tap.h"

#define S(lit) lit, sizeof lit - 1

/* An execreq_parse refusal whose message holds want. */
static void exec_refused(const char *doc, size_t len, const char *want)
{
	struct execreq rq;
	struct sbx_err e = {0};
	int rc = execreq_parse(doc, len, &rq, &e);

	ok(rc < 0 && e.code == SBX_EINVAL && strstr(e.msg, want), "request refused: %s (%s)", want,
	   e.msg);
	execreq_free(&rq);
}

static void test_execreq(void)
{
	struct execreq rq;
	struct sbx_err e = {0};
	struct capture c = {.out = "o", .out_len = 1, .err = "", .res = {.exit_code = 3,
			    .timed_out = true}, .err_truncated = true};
	struct json_object *o;
	char *s;

	ok(execreq_parse(S("{\"command\":[\"sh\",\"-c\",\"x\"],\"stdin\":\"in\\u0000put\","
			   "\"timeout\":\"0s\",\"workdir\":\"/w\",\"env\":{\"K\":\"V\"}}"), &rq, &e) == 0,
	   "a whole request is taken");
	ok(rq.argv && strcmp(rq.argv[2], "x") == 0 && rq.argv[3] == NULL, "its command");
	ok(rq.in_len == 6 && memcmp(rq.in, "in\0put", 6) == 0, "stdin keeps its NUL bytes");
	ok(rq.has_timeout && rq.timeout_ns == 0, "an explicit \"0s\" is a timeout given");
	ok(strcmp(rq.workdir, "/w") == 0 && strcmp(rq.env[0], "K=V") == 0 && rq.env[1] == NULL,
	   "workdir and env");
	execreq_free(&rq);
	ok(execreq_parse(S("{\"command\":[\"true\"]}"), &rq, &e) == 0 && !rq.has_timeout &&
	   rq.env == NULL && rq.workdir == NULL && rq.in == NULL, "only a command");
	execreq_free(&rq);
	exec_refused(S("{"), "not valid JSON");
	exec_refused(S("[1]"), "not a JSON object");
	exec_refused(S("{\"command\":[\"a\"],\"cmd\":1}"), "unknown field \"cmd\"");
	exec_refused(S("{\"command\":[]}"), "\"command\" must be a non-empty array");
	exec_refused(S("{\"command\":[\"a\",1]}"), "\"command\" must be a non-empty array");
	exec_refused(S("{\"command\":[\"a\\u0000b\"]}"), "a string of \"command\" holds a NUL");
	exec_refused(S("{\"command\":[\"a\"],\"env\":{\"K\":\"v\\u0000\"}}"),
		     "a string of \"env\" holds a NUL");
	exec_refused(S("{\"command\":[\"a\"],\"env\":{\"K=\":\"v\"}}"), "\"env\" must be an object");
	exec_refused(S("{\"command\":[\"a\"],\"timeout\":\"-1s\"}"), "\"timeout\" must be a Go duration");
	exec_refused(S("{\"command\":[\"a\"],\"workdir\":\"/\\u0000\"}"),
		     "a string of \"workdir\" holds a NUL");
	o = execreq_result_json(&c);
	s = gojson_encode(o);
	is_str(s, "{\"stdout\":\"o\",\"stderr\":\"\",\"exit_code\":3,\"timed_out\":true,"
	       "\"truncated\":true}", "the result document");
	free(s);
	json_object_put(o);
}

static void call_refused(const char *doc, size_t len, const char *want)
{
	struct toolcall tc;
	struct sbx_err e = {0};
	int rc = toolcall_parse(doc, len, &tc, &e);

	ok(rc < 0 && e.code == SBX_EINVAL && strstr(e.msg, want), "call refused: %s (%s)", want,
	   e.msg);
	toolcall_free(&tc);
}

static void test_toolcall(void)
{
	struct toolcall tc;
	struct sbx_err e = {0};
	struct json_object *m;
	char *s;

	ok(toolcall_parse(S("{\"id\":\"c1\",\"type\":\"function\",\"index\":0,\"function\":"
			    "{\"name\":\"ls\",\"arguments\":\"{\\\"a\\\":1}\"}}"), &tc, &e) == 0 &&
	   strcmp(tc.id, "c1") == 0 && strcmp(tc.name, "ls") == 0 && strcmp(tc.args, "{\"a\":1}") == 0,
	   "a call with its arguments as text");
	toolcall_free(&tc);
	ok(toolcall_parse(S("{\"function\":{\"name\":\"ls\",\"arguments\":{\"a\":1}}}"), &tc, &e) == 0 &&
	   strcmp(tc.id, "") == 0 && strcmp(tc.args, "{\"a\":1}") == 0 && tc.args_text,
	   "arguments as an object are encoded; no id is \"\"");
	toolcall_free(&tc);
	ok(toolcall_parse(S("{\"function\":{\"name\":\"ls\"}}"), &tc, &e) == 0 && *tc.args == '\0',
	   "no arguments");
	toolcall_free(&tc);
	call_refused(S("nope"), "not valid JSON");
	call_refused(S("{\"function\":{}}"), "want {\"id\"");
	call_refused(S("{\"function\":{\"name\":\"ls\"},\"x\":1}"), "unknown field \"x\"");
	call_refused(S("{\"function\":{\"name\":\"ls\",\"y\":1}}"), "unknown field \"y\" in \"function\"");
	call_refused(S("{\"function\":{\"name\":\"ls\",\"arguments\":[1]}}"), "\"function.arguments\"");
	call_refused(S("{\"type\":\"tool\",\"function\":{\"name\":\"ls\"}}"), "\"type\" must be");
	call_refused(S("{\"id\":1,\"function\":{\"name\":\"ls\"}}"), "\"id\" must be a string");
	m = toolcall_message("c1", "a\0b", 3, NULL);
	s = gojson_encode(m);
	is_str(s, "{\"role\":\"tool\",\"content\":\"a\\u0000b\",\"tool_call_id\":\"c1\"}",
	       "the tool message, a NUL byte escaped");
	free(s);
	json_object_put(m);
}

int main(void)
{
	test_execreq();
	test_toolcall();
	return done_testing();
}
