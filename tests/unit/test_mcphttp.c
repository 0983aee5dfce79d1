/* test_mcphttp.c — the Streamable HTTP checks before a body, as a table: each request's
 * method, path and headers, and the status it gets (0: go on). Also Origin and Accept. */
#include "mcphttp.h"
#include "randhex.h"
#include "tap.h"

#define T "tok-123"
#define AUTH "Bearer " T
#define JSON "application/json"
#define BOTH "application/json, text/event-stream"

static const struct {
	const char *name;
	struct mcphttp_req r;
	int status;
} cases[] = {
	{"a POST with everything", {"POST", "/mcp", AUTH, NULL, BOTH, JSON, NULL, NULL, false, NULL, T}, 0},
	{"another path", {"POST", "/other", AUTH, NULL, BOTH, JSON, NULL, NULL, false, NULL, T}, 404},
	{"no token", {"POST", "/mcp", NULL, NULL, BOTH, JSON, NULL, NULL, false, NULL, T}, 401},
	{"a wrong token", {"POST", "/mcp", "Bearer tok-124", NULL, BOTH, JSON, NULL, NULL, false, NULL, T}, 401},
	{"the token as Basic", {"POST", "/mcp", "Basic " T, NULL, BOTH, JSON, NULL, NULL, false, NULL, T}, 401},
	{"bearer in lower case", {"POST", "/mcp", "bearer " T, NULL, BOTH, JSON, NULL, NULL, false, NULL, T}, 0},
	{"a foreign Origin", {"POST", "/mcp", AUTH, "http://evil.example", BOTH, JSON, NULL, NULL, false, NULL, T}, 403},
	{"localhost Origin", {"POST", "/mcp", AUTH, "http://localhost:3000", BOTH, JSON, NULL, NULL, false, NULL, T}, 0},
	{"GET", {"GET", "/mcp", AUTH, NULL, "text/event-stream", NULL, NULL, NULL, false, NULL, T}, 405},
	{"PUT", {"PUT", "/mcp", AUTH, NULL, BOTH, JSON, NULL, NULL, false, NULL, T}, 405},
	{"text/plain body", {"POST", "/mcp", AUTH, NULL, BOTH, "text/plain", NULL, NULL, false, NULL, T}, 415},
	{"application/jsonx", {"POST", "/mcp", AUTH, NULL, BOTH, "application/jsonx", NULL, NULL, false, NULL, T}, 415},
	{"json with charset", {"POST", "/mcp", AUTH, NULL, BOTH, "application/json; charset=utf-8", NULL, NULL, false, NULL, T}, 0},
	{"Accept text/html", {"POST", "/mcp", AUTH, NULL, "text/html", JSON, NULL, NULL, false, NULL, T}, 406},
	{"Accept */*", {"POST", "/mcp", AUTH, NULL, "*/*", JSON, NULL, NULL, false, NULL, T}, 0},
	{"an unknown session", {"POST", "/mcp", AUTH, NULL, BOTH, JSON, "mcp1", NULL, false, NULL, T}, 404},
	{"DELETE without a session", {"DELETE", "/mcp", AUTH, NULL, NULL, NULL, NULL, NULL, false, NULL, T}, 400},
	{"the session's version", {"POST", "/mcp", AUTH, NULL, BOTH, JSON, "mcp1", "2025-06-18", true, "2025-06-18", T}, 0},
	{"another spoken version", {"POST", "/mcp", AUTH, NULL, BOTH, JSON, "mcp1", "2025-11-25", true, "2025-06-18", T}, 400},
	{"an unknown version", {"POST", "/mcp", AUTH, NULL, BOTH, JSON, "mcp1", "1999-01-01", true, "2025-06-18", T}, 400},
	{"no version header", {"POST", "/mcp", AUTH, NULL, BOTH, JSON, "mcp1", NULL, true, "2025-06-18", T}, 0},
};

int main(void)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct mcphttp_req r = cases[i].r;
		struct mcphttp_decision d;

		mcphttp_decide(&r, &d);
		ok((d.verdict == MCPHTTP_OK ? 0 : d.status) == cases[i].status, "%s: %d", cases[i].name,
		   d.verdict == MCPHTTP_OK ? 0 : d.status);
		if (cases[i].status == 401)
			ok(d.www_authenticate != NULL, "%s: WWW-Authenticate", cases[i].name);
	}
	ok(mcphttp_origin_ok("http://127.0.0.2:8080"), "127.0.0.2 is loopback");
	ok(mcphttp_origin_ok("https://[::1]"), "[::1] is loopback");
	ok(!mcphttp_origin_ok("http://localhost.evil.example"), "localhost.evil.example is not");
	ok(!mcphttp_origin_ok("http://127.0.0.1.evil.example"), "127.0.0.1.evil.example is not");
	ok(!mcphttp_origin_ok("null"), "null is not");
	ok(!mcphttp_origin_ok("file://localhost"), "file: is not");
	ok(mcphttp_accepts(NULL, "text/event-stream"), "no Accept takes everything");
	ok(mcphttp_accepts("text/*;q=0.5", "text/event-stream"), "text/* takes event streams");
	ok(!mcphttp_accepts("application/json", "text/event-stream"), "JSON alone does not");
	{
		char tok[MCPHTTP_TOKEN_LEN + 1];
		struct sbx_err e;
		ok(randhex(tok, MCPHTTP_TOKEN_LEN / 2, &e) == 0, "a token");
		is_str(tok[MCPHTTP_TOKEN_LEN] == '\0' && strspn(tok, "0123456789abcdef") == MCPHTTP_TOKEN_LEN
		       ? "hex" : tok, "hex", "64 hex digits");
	}
	return done_testing();
}
