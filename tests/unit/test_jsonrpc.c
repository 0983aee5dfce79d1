/* test_jsonrpc.c — NDJSON framing, message classification, builders, pending requests, and the
 * small ACP helpers (tool kinds, session ids, token comparison). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "acp.h"
#include "jsonrpc.h"
#include "tap.h"

struct lines {
	char got[16][64];
	int n, too_long;
};

static int collect(enum jsonrpc_event ev, const char *line, size_t len, void *arg)
{
	struct lines *l = arg;

	if (ev == JSONRPC_TOO_LONG) {
		l->too_long++;
		return 0;
	}
	if (l->n < 16)
		snprintf(l->got[l->n++], 64, "%.*s", (int)len, line);
	return 0;
}

static void framing(void)
{
	struct jsonrpc_reader r = {0};
	struct lines l = {0};
	const char *in = "a\r\n\n  \r\nb\nc";
	size_t i;
	char *big;

	/* Byte by byte: splits anywhere must not matter. */
	for (i = 0; in[i]; i++)
		jsonrpc_reader_feed(&r, in + i, 1, collect, &l);
	ok(l.n == 2, "two complete lines before EOF");
	jsonrpc_reader_finish(&r, collect, &l);
	ok(l.n == 3, "a final line without newline counts at EOF");
	is_str(l.got[0], "a", "CRLF stripped");
	is_str(l.got[1], "b", "blank and white-space lines skipped");
	is_str(l.got[2], "c", "last line");

	big = malloc(JSONRPC_LINE_MAX + 10);
	memset(big, 'x', JSONRPC_LINE_MAX + 10);
	memset(&l, 0, sizeof l);
	jsonrpc_reader_feed(&r, big, JSONRPC_LINE_MAX + 10, collect, &l);
	jsonrpc_reader_feed(&r, "yy\nok\n", 6, collect, &l);
	ok(l.too_long == 1 && l.n == 1, "an over-long line is reported once and skipped");
	is_str(l.got[0], "ok", "the next line is read normally");
	free(big);
	jsonrpc_reader_free(&r);
}

static void parsing(void)
{
	static const struct {
		const char *in;
		int code;		/* 0 = valid */
		int kind;
		const char *id;		/* JSON of the id echoed, "" = none */
	} cases[] = {
		{"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"}", 0, JSONRPC_REQUEST, "0"},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"method\":\"m\",\"params\":{}}", 0, JSONRPC_REQUEST, "\"0\""},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{}}", 0, JSONRPC_NOTIFICATION, ""},
		{"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}", 0, JSONRPC_RESPONSE, "4"},
		{"{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":1,\"message\":\"x\"}}", 0, JSONRPC_RESPONSE, "4"},
		{"nope", JSONRPC_PARSE_ERROR, 0, ""},
		{"{\"jsonrpc\":\"2.0\"", JSONRPC_PARSE_ERROR, 0, ""},
		{"[]", JSONRPC_INVALID_REQUEST, 0, ""},
		{"42", JSONRPC_INVALID_REQUEST, 0, ""},
		{"null", JSONRPC_INVALID_REQUEST, 0, ""},
		{"{\"id\":5,\"method\":\"m\"}", JSONRPC_INVALID_REQUEST, 0, "5"},
		{"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}", JSONRPC_INVALID_REQUEST, 0, "5"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}", JSONRPC_INVALID_REQUEST, 0, ""},
		{"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"m\",\"params\":3}", JSONRPC_INVALID_REQUEST, 0, "6"},
		{"{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":1,\"error\":{}}", JSONRPC_INVALID_REQUEST, 0, "6"},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct jsonrpc_msg m;
		struct json_object *bad = NULL;
		struct sbx_err e;
		int code = 0, rc = jsonrpc_parse(cases[i].in, strlen(cases[i].in), &m, &code, &bad, &e);
		const char *id;

		if (cases[i].code == 0) {
			ok(rc == 0 && (int)m.kind == cases[i].kind, "valid: %s", cases[i].in);
			id = m.id ? json_object_to_json_string(m.id) : "";
			is_str(id, cases[i].id, "id echoed with its type: %s", cases[i].in);
			jsonrpc_msg_free(&m);
		} else {
			ok(rc < 0 && code == cases[i].code, "error %d: %s", cases[i].code, cases[i].in);
			id = bad ? json_object_to_json_string(bad) : "";
			is_str(id, cases[i].id, "error id: %s", cases[i].in);
		}
		json_object_put(bad);
	}
}

static void builders(void)
{
	struct json_object *id = json_object_new_string("7"), *p = json_object_new_object();
	char *s;

	json_object_object_add(p, "text", json_object_new_string("<a&b>"));
	s = jsonrpc_result_line(id, NULL);
	is_str(s, "{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":{}}\n", "empty result is {}");
	free(s);
	s = jsonrpc_error_line(NULL, -32700, "parse error: x", NULL);
	is_str(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse error: x\"}}\n",
	       "error with id null");
	free(s);
	s = jsonrpc_notification_line("session/update", p);
	is_str(s, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"text\":\"\\u003ca\\u0026b\\u003e\"}}\n",
	       "notification, Go escaping, one line");
	free(s);
	s = jsonrpc_request_line(0, "session/request_permission", NULL);
	is_str(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"session/request_permission\"}\n",
	       "request ids start at 0");
	free(s);
	json_object_put(id);
	json_object_put(p);
}

struct waiter {
	struct jsonrpc_pending *p;
	int64_t id;
	volatile int stop;
	int rc, code;
	struct json_object *result, *error;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;
	struct sbx_err e;

	w->rc = jsonrpc_pending_wait(w->p, w->id, &w->stop, &w->result, &w->error, &e);
	w->code = e.code;
	return NULL;
}

static void resolve_line(struct jsonrpc_pending *p, const char *line, int want)
{
	struct jsonrpc_msg m;
	struct json_object *bad = NULL;
	struct sbx_err e;
	int code;

	jsonrpc_parse(line, strlen(line), &m, &code, &bad, &e);
	ok(jsonrpc_pending_resolve(p, &m) == want, "resolve %s → %d", line, want);
	jsonrpc_msg_free(&m);
}

static void pending(void)
{
	struct jsonrpc_pending p;
	struct waiter w = {0};
	struct sbx_err e;
	pthread_t t;
	int64_t a, b, c;

	jsonrpc_pending_init(&p, 2);
	ok(jsonrpc_pending_add(&p, &a, &e) == 0 && a == 0, "first id 0");
	ok(jsonrpc_pending_add(&p, &b, &e) == 0 && b == 1, "second id 1");
	ok(jsonrpc_pending_add(&p, &c, &e) < 0 && strstr(e.msg, "limit 2"), "limit reached: %s", e.msg);
	w.p = &p;
	w.id = 0;
	pthread_create(&t, NULL, wait_main, &w);
	resolve_line(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"result\":{}}", -1);
	resolve_line(&p, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}", -1);
	resolve_line(&p, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"ok\":true}}", 0);
	pthread_join(t, NULL);
	ok(w.rc == 0 && w.result && json_object_object_get_ex(w.result, "ok", NULL), "waiter got its answer");
	json_object_put(w.result);

	memset(&w, 0, sizeof w);
	w.p = &p;
	w.id = 1;
	pthread_create(&t, NULL, wait_main, &w);
	w.stop = 1;
	/* The waiter may not be waiting yet: wake until it has seen the flag. */
	while (pthread_tryjoin_np(t, NULL) != 0) {
		jsonrpc_pending_wake(&p);
		usleep(1000);
	}
	ok(w.rc < 0 && w.code == SBX_ECANCELED, "stop flag ends the wait");

	ok(jsonrpc_pending_add(&p, &a, &e) == 0, "ids free again after waits");
	jsonrpc_pending_close(&p);
	memset(&w, 0, sizeof w);
	w.p = &p;
	w.id = a;
	wait_main(&w);
	ok(w.rc < 0 && w.code == SBX_EIO, "a closed peer fails the wait");
	ok(jsonrpc_pending_add(&p, &b, &e) < 0, "no new requests after close");
	jsonrpc_pending_destroy(&p);
}

static void acp_helpers(void)
{
	char id[ACP_SESSION_ID_LEN + 1];
	struct sbx_err e;
	size_t i;
	bool hex = true;

	is_str(acp_tool_kind("run_command"), "execute", "run_command → execute");
	is_str(acp_tool_kind("grep_search"), "search", "grep_search → search");
	is_str(acp_tool_kind("read_many_files"), "read", "read_many_files → read");
	is_str(acp_tool_kind("replace"), "edit", "replace → edit");
	is_str(acp_tool_kind("web_fetch"), "other", "unknown → other");
	ok(acp_new_session_id(id, &e) == 0 && strlen(id) == 35 && strncmp(id, "acp", 3) == 0, "id %s", id);
	for (i = 3; i < ACP_SESSION_ID_LEN; i++)
		hex = hex && ((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'));
	ok(hex, "32 lowercase hex digits (128 random bits)");
	ok(acp_token_equal("abc", "abc"), "equal tokens");
	ok(!acp_token_equal("abc", "abd") && !acp_token_equal("abc", "abcd") && !acp_token_equal("", "a"),
	   "different tokens");
}

int main(void)
{
	framing();
	parsing();
	builders();
	pending();
	acp_helpers();
	return done_testing();
}
