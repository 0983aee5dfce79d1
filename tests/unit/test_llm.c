/* test_llm.c — the event-stream parser, fake-eliza's rules, retry decisions, delta assembly,
 * content parts, vendor error bodies, the per-vendor request policy and request checks. */
#include <stdlib.h>

#include <curl/curl.h>

#include "eliza.h"
#include "gojson.h"
#include "llm.h"
#include "llmmsg.h"
#include "sse.h"
#include "llmmedia.h"
#include "toolparts.h"
#include "vendor.h"
#include "tap.h"

/* Collects events as "type|id|data\n" lines. */
static int collect(const struct sse_event *ev, void *arg, struct sbx_err *e)
{
	(void)e;
	buf_printf(arg, "%s|%s|%s\n", ev->type, ev->id, ev->data);
	return 0;
}

static int stop_at_second(const struct sse_event *ev, void *arg, struct sbx_err *e)
{
	int *n = arg;

	(void)ev;
	return ++*n == 2 ? err_set(e, SBX_EIO, "enough") : 0;
}

/* Parses s fed in pieces of `step` bytes (0 = all at once); returns the collected events. */
static char *parse_split(const char *s, size_t step)
{
	struct sse_parser p;
	struct buf out = {0};
	struct sbx_err e;
	size_t n = strlen(s), i;

	sse_init(&p, 1024, 4096, collect, &out);
	if (step == 0)
		step = n ? n : 1;
	for (i = 0; i < n; i += step)
		if (sse_feed(&p, s + i, n - i < step ? n - i : step, &e) < 0)
			buf_printf(&out, "ERROR %s\n", e.msg);
	sse_free(&p);
	return buf_steal(&out);
}

static void sse(void)
{
	static const char stream[] =
		"\xef\xbb\xbf: comment\r\n"
		"data: {\"a\":\"\xc3\xa9\"}\r\n\r\n"
		"event: ping\ndata:x\ndata:  y\n\n"
		"id: 7\rdata\r\r"
		"data: [DONE]\n\n"
		"retry: 10\nfoo: bar\n\n"
		"data: unterminated";
	static const char want[] =
		"message||{\"a\":\"\xc3\xa9\"}\n"
		"ping||x\n y\n"
		"message|7|\n"
		"message|7|[DONE]\n";
	char *whole = parse_split(stream, 0), *got;
	size_t step;
	int bad = 0, n = 0;
	struct sse_parser p;
	struct sbx_err e;

	is_str(whole, want, "sse: BOM, CRLF/LF/CR endings, comments, fields, multi-line data");
	for (step = 1; step < sizeof stream; step++) {
		got = parse_split(stream, step);
		if (strcmp(got, want) != 0) {
			bad++;
			printf("# split %zu gave:\n%s", step, got);
		}
		free(got);
	}
	ok(bad == 0, "sse: same events for every split size 1..%zu", sizeof stream - 1);
	free(whole);

	/* Random partitions (fixed seed, so a failure can be replayed). */
	srand(42);
	for (bad = 0, step = 0; step < 300; step++) {
		struct sse_parser rp;
		struct buf out = {0};
		size_t at = 0, len = sizeof stream - 1;

		sse_init(&rp, 1024, 4096, collect, &out);
		while (at < len) {
			size_t k = 1 + (size_t)rand() % 9;

			if (k > len - at)
				k = len - at;
			sse_feed(&rp, stream + at, k, &e);
			at += k;
		}
		bad += !(out.data && strcmp(out.data, want) == 0);
		sse_free(&rp);
		buf_free(&out);
	}
	ok(bad == 0, "sse: same events for 300 random partitions");
	/* Random bytes: the parser must neither crash nor exceed its limits. */
	for (bad = 0, step = 0; step < 200; step++) {
		struct sse_parser rp;
		struct buf out = {0};
		char junk[512];
		size_t j;

		static const char alphabet[] = "data:event\r\n :x\xff";	/* NUL included */

		for (j = 0; j < sizeof junk; j++)
			junk[j] = alphabet[(size_t)rand() % sizeof alphabet];
		sse_init(&rp, 64, 128, collect, &out);
		if (sse_feed(&rp, junk, sizeof junk, &e) < 0 && !strstr(e.msg, "longer") &&
		    !strstr(e.msg, "larger"))
			bad++;
		sse_free(&rp);
		buf_free(&out);
	}
	ok(bad == 0, "sse: random bytes fail only on the limits");

	got = parse_split("data: a\r", 0);
	is_str(got, "", "sse: no event before its blank line");
	free(got);
	/* CR at the end of one piece, LF at the start of the next: one line ending, not two. */
	{
		struct buf out = {0};

		sse_init(&p, 64, 64, collect, &out);
		sse_feed(&p, "data: a\r", 8, &e);
		sse_feed(&p, "\ndata: b\r", 9, &e);
		sse_feed(&p, "\n\r", 2, &e);
		sse_feed(&p, "\n", 1, &e);
		ok(out.data && strcmp(out.data, "message||a\nb\n") == 0, "sse: CR|LF split is one line ending");
		ok(!sse_pending(&p), "sse: nothing pending after a complete event");
		sse_feed(&p, "data: c", 7, &e);
		ok(sse_pending(&p), "sse: an unfinished line is pending");
		sse_free(&p);
		buf_free(&out);
	}
	{
		struct buf out = {0};
		char line[100];

		memset(line, 'x', sizeof line);
		sse_init(&p, 64, 1 << 20, collect, &out);
		ok(sse_feed(&p, line, sizeof line, &e) < 0 && strstr(e.msg, "line longer than 64"),
		   "sse: line limit enforced without a newline in sight");
		ok(sse_feed(&p, "\n", 1, &e) < 0, "sse: a failed parser stays failed");
		sse_free(&p);
		sse_init(&p, 64, 20, collect, &out);
		ok(sse_feed(&p, "data: 0123456789\ndata: 0123456789\n", 34, &e) < 0 &&
		   strstr(e.msg, "event larger than 20"), "sse: event limit enforced");
		sse_free(&p);
		buf_free(&out);
	}
	sse_init(&p, 64, 64, stop_at_second, &n);
	ok(sse_feed(&p, "data: 1\n\ndata: 2\n\ndata: 3\n\n", 27, &e) < 0 && n == 2 &&
	   strcmp(e.msg, "enough") == 0, "sse: a callback error stops the feed");
	sse_free(&p);
}

/* fake-eliza's message for the given messages array and tools (NULL: none), as JSON text. */
static char *eliza_tools(const char *messages, const char *tools)
{
	const char *why;
	struct json_object *m = gojson_parse(messages, strlen(messages), &why), *r, *c, *msg;
	struct json_object *t = tools ? gojson_parse(tools, strlen(tools), &why) : NULL;
	char *s, *enc;

	r = eliza_reply(m, t);
	json_object_put(t);
	c = json_object_array_get_idx(json_object_object_get(r, "choices"), 0);
	msg = json_object_object_get(c, "message");
	enc = gojson_encode(msg);
	s = xasprintf("%s %s", enc, json_object_get_string(json_object_object_get(c, "finish_reason")));
	free(enc);
	json_object_put(r);
	json_object_put(m);
	return s;
}

static char *eliza(const char *messages)
{
	return eliza_tools(messages, NULL);
}

static void eliza_rules(void)
{
	static const struct {
		const char *in, *out, *name;
	} cases[] = {
		{"[{\"role\":\"user\",\"content\":\"hi there\"}]",
		 "{\"role\":\"assistant\",\"content\":\"What do you think it means when you say 'hi there'?\"} stop",
		 "reflection"},
		{"[{\"role\":\"user\",\"content\":\"run:  ls -la && echo <x> \\n\"}]",
		 "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"eliza-run-1\",\"type\":\"function\",\"function\":"
		 "{\"name\":\"run_command\",\"arguments\":\"{\\\"command\\\":\\\"ls -la \\\\u0026\\\\u0026 echo "
		 "\\\\u003cx\\\\u003e\\\"}\"}}]} tool_calls",
		 "run: becomes a run_command call, trimmed, Go-escaped"},
		{"[{\"role\":\"user\",\"content\":\"run:\\u00a0\\u3000 uname\\u2003\"}]",
		 "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"eliza-run-1\",\"type\":\"function\",\"function\":"
		 "{\"name\":\"run_command\",\"arguments\":\"{\\\"command\\\":\\\"uname\\\"}\"}}]} tool_calls",
		 "run: trims Unicode space as Go's TrimSpace"},
		{"[{\"role\":\"user\",\"content\":\"Run: ls\"}]",
		 "{\"role\":\"assistant\",\"content\":\"What do you think it means when you say 'Run: ls'?\"} stop",
		 "Run: (capital) is not the trick"},
		{"[{\"role\":\"user\",\"content\":\"run:\"}]",
		 "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"eliza-run-1\",\"type\":\"function\",\"function\":"
		 "{\"name\":\"run_command\",\"arguments\":\"{\\\"command\\\":\\\"\\\"}\"}}]} tool_calls",
		 "bare run: asks for an empty command"},
		{"[{\"role\":\"user\",\"content\":\"run: ls\"},{\"role\":\"assistant\"},"
		 "{\"role\":\"tool\",\"tool_call_id\":\"eliza-run-1\",\"content\":\"a\\nb\"}]",
		 "{\"role\":\"assistant\",\"content\":\"The tool told me:\\na\\nb\"} stop", "tool result reported"},
		{"[{\"role\":\"tool\"}]", "{\"role\":\"assistant\",\"content\":\"The tool told me:\\n\"} stop",
		 "tool result without content"},
		{"[{\"role\":\"system\",\"content\":\"be nice\"}]",
		 "{\"role\":\"assistant\",\"content\":\"How does that make you feel?\"} stop", "no user text"},
		{"[{\"role\":\"user\",\"content\":\"old\"},{\"role\":\"user\",\"content\":\"\"}]",
		 "{\"role\":\"assistant\",\"content\":\"How does that make you feel?\"} stop",
		 "latest user content empty stops the search"},
		{"[{\"role\":\"user\",\"content\":\"old\"},{\"role\":\"user\"},{\"role\":\"assistant\",\"content\":\"x\"}]",
		 "{\"role\":\"assistant\",\"content\":\"What do you think it means when you say 'old'?\"} stop",
		 "user message without content is skipped"},
		{"[]", "{\"role\":\"assistant\",\"content\":\"How does that make you feel?\"} stop", "no messages"},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = eliza(cases[i].in);

		is_str(got, cases[i].out, "eliza: %s", cases[i].name);
		free(got);
	}
	/* the shell tool the request offers */
	char *got = eliza_tools("[{\"role\":\"user\",\"content\":\"run: ls\"}]",
				"[{\"type\":\"function\",\"function\":{\"name\":\"read_file\"}},"
				"{\"type\":\"function\",\"function\":{\"name\":\"run_shell_command\"}}]");
	is_str(got, "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"eliza-run-1\",\"type\":"
	       "\"function\",\"function\":{\"name\":\"run_shell_command\",\"arguments\":"
	       "\"{\\\"command\\\":\\\"ls\\\"}\"}}]} tool_calls",
	       "eliza: run: asks for run_shell_command when the tools have it (geminicli)");
	free(got);
	got = eliza_tools("[{\"role\":\"user\",\"content\":\"run: ls\"}]",
			  "[{\"type\":\"function\",\"function\":{\"name\":\"ls\"}}]");
	ok(strstr(got, "\"name\":\"run_command\"") != NULL, "eliza: else run_command");
	free(got);
}

static void retries(void)
{
	static const long yes[] = {408, 409, 429, 500, 501, 502, 503, 504, 520, 521, 522, 523, 524,
				   529, 599};
	static const long no[] = {200, 400, 401, 403, 404, 413, 422, 499, 600};
	size_t i;
	int64_t d;
	bool all;

	for (all = true, i = 0; i < sizeof yes / sizeof yes[0]; i++)
		all = all && llm_retryable_status(yes[i]);
	ok(all, "retry: 408 409 429 and every 5xx (Cloudflare's 520-524 included)");
	for (all = true, i = 0; i < sizeof no / sizeof no[0]; i++)
		all = all && !llm_retryable_status(no[i]);
	ok(all, "retry: not on other statuses");
	ok(llm_retryable_transport(CURLE_COULDNT_CONNECT) &&
	   llm_retryable_transport(CURLE_OPERATION_TIMEDOUT) &&
	   llm_retryable_transport(CURLE_RECV_ERROR) && llm_retryable_transport(CURLE_PARTIAL_FILE) &&
	   llm_retryable_transport(CURLE_GOT_NOTHING), "retry: transient transport failures");
	ok(!llm_retryable_transport(CURLE_ABORTED_BY_CALLBACK) &&
	   !llm_retryable_transport(CURLE_URL_MALFORMAT) &&
	   !llm_retryable_transport(CURLE_PEER_FAILED_VERIFICATION) &&
	   !llm_retryable_transport(CURLE_WRITE_ERROR), "retry: not on permanent failures");

	ok(llm_backoff_ns(0, DURATION_S, -1, 0) == DURATION_S / 2, "backoff: low jitter is half");
	ok(llm_backoff_ns(0, DURATION_S, -1, DURATION_S / 2) == DURATION_S, "backoff: high jitter is all");
	d = llm_backoff_ns(2, DURATION_S, -1, 12345);
	ok(d >= 2 * DURATION_S && d <= 4 * DURATION_S, "backoff: third retry in [2s,4s]");
	ok(llm_backoff_ns(20, DURATION_S, -1, UINT32_MAX) <= LLM_BACKOFF_MAX_NS &&
	   llm_backoff_ns(20, DURATION_S, -1, 0) >= LLM_BACKOFF_MAX_NS / 2, "backoff: capped");
	ok(llm_backoff_ns(0, 10 * DURATION_MS, 3 * DURATION_S, 99) == 3 * DURATION_S,
	   "backoff: Retry-After is a floor");
	ok(llm_backoff_ns(0, 10 * DURATION_MS, 3600 * DURATION_S, 0) == LLM_RETRY_AFTER_MAX_NS,
	   "backoff: Retry-After capped");
	ok(llm_backoff_ns(0, 0, -1, 77) == 0, "backoff: zero base waits nothing");

	ok(llm_retry_after_ns(" 7\r\n", 0) == 7 * DURATION_S, "Retry-After: seconds");
	ok(llm_retry_after_ns("0", 0) == 0, "Retry-After: zero");
	ok(llm_retry_after_ns("Wed, 21 Oct 2015 07:28:00 GMT", INT64_C(1445412470) * DURATION_S) ==
	   10 * DURATION_S, "Retry-After: HTTP-date");
	ok(llm_retry_after_ns("Wed, 21 Oct 2015 07:28:00 GMT", INT64_C(1445412490) * DURATION_S) == 0,
	   "Retry-After: a past date means now");
	ok(llm_retry_after_ns("soon", 0) < 0 && llm_retry_after_ns("5s", 0) < 0 &&
	   llm_retry_after_ns("-1", 0) < 0 && llm_retry_after_ns("99999999999999999999", 0) < 0,
	   "Retry-After: garbage refused");
}

static struct json_object *parse(const char *s)
{
	const char *why;

	return gojson_parse(s, strlen(s), &why);
}

static void deltas(void)
{
	static const char *const chunks[] = {
		"{\"role\":\"assistant\",\"content\":null}",
		"{\"role\":\"assistant\",\"content\":\"Hel\",\"refusal\":null}",
		"{\"content\":\"lo\",\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"type\":\"function\","
		"\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"p\"}}]}",
		"{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"type\":\"function\",\"function\":"
		"{\"name\":\"ls\",\"arguments\":\"\"},\"extra_content\":{\"google\":{\"thought_signature\":\"SIG\"}}}]}",
		"{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\":1}\"}},"
		"{\"index\":0,\"function\":{\"arguments\":\"{}\"},"
		"\"extra_content\":{\"google\":{\"thought_signature\":\"SIG\"}}}]}",
	};
	struct json_object *acc = json_object_new_object(), *d;
	char *s;
	size_t i;

	for (i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
		d = parse(chunks[i]);
		llmmsg_merge(acc, d);
		json_object_put(d);
	}
	s = gojson_encode(acc);
	is_str(s, "{\"role\":\"assistant\",\"content\":\"Hello\",\"refusal\":null,\"tool_calls\":["
	       "{\"index\":1,\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"read\","
	       "\"arguments\":\"{\\\"p\\\":1}\"}},"
	       "{\"index\":0,\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"ls\","
	       "\"arguments\":\"{}\"},\"extra_content\":{\"google\":{\"thought_signature\":\"SIG\"}}}]}",
	       "delta: text appended, calls merged by index, unknown fields kept, role not doubled");
	free(s);
	json_object_put(acc);
}

/* Folds the JSON deltas (NULL-terminated) and returns the result's encoding. */
static char *fold(const char *const *chunks)
{
	struct json_object *acc = json_object_new_object(), *d;
	char *s;

	for (; *chunks; chunks++) {
		d = parse(*chunks);
		llmmsg_flatten_content(d);
		llmmsg_merge(acc, d);
		json_object_put(d);
	}
	s = gojson_encode(acc);
	json_object_put(acc);
	return s;
}

static void merge_rules(void)
{
	/* DashScope (qwen3-max): later deltas repeat "id":"" for the same index. */
	static const char *const dashscope[] = {
		"{\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_eee1\",\"type\":\"function\","
		"\"function\":{\"name\":\"weather\",\"arguments\":\"\"}}],\"role\":\"assistant\"}",
		"{\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"\",\"type\":\"function\","
		"\"function\":{\"arguments\":\"{\\\"location\\\": \\\"SF\"}}]}",
		"{\"tool_calls\":[{\"function\":{\"arguments\":\"\\\"}\"},\"index\":0,\"id\":\"\",\"type\":\"function\"}]}",
		NULL};
	/* Mistral (zai-glm-5-2): "name":"" in a later delta, "index" at the delta's top. */
	static const char *const mistral[] = {
		"{\"tool_calls\":[{\"id\":\"chatcmpl-tool-9f\",\"type\":\"function\",\"function\":{\"name\":"
		"\"webSearchTool\",\"arguments\":\"\"},\"index\":0}],\"index\":0,\"content\":\"\"}",
		"{\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"\",\"arguments\":"
		"\"{\\\"query\\\": \\\"Berlin\\\"}\"},\"index\":0}],\"index\":0,\"content\":\"\"}",
		"{\"index\":0,\"content\":\"\"}", NULL};
	/* OpenRouter: reasoning_details by index; only text is a fragment. */
	static const char *const openrouter[] = {
		"{\"reasoning\":\"Let\",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"Let\","
		"\"format\":\"unknown\",\"index\":0}]}",
		"{\"reasoning\":\" me\",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\" me\","
		"\"format\":\"unknown\",\"index\":0}]}",
		"{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"\",\"signature\":\"c2ln\","
		"\"format\":\"unknown\",\"index\":0},{\"type\":\"reasoning.encrypted\",\"data\":\"ZW5j\","
		"\"format\":\"unknown\",\"index\":1}]}",
		NULL};
	/* Mistral magistral: content as parts, thinking and text. */
	static const char *const magistral[] = {
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\","
		"\"text\":\"The user\"}]}]}",
		"{\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\" asks.\"}]}]}",
		"{\"content\":[{\"type\":\"text\",\"text\":\"2 + 2 = 4\"}]}", "{\"content\":\"\"}", NULL};
	/* Gemini: a thought signature given whole, perhaps repeated; numbers replaced. */
	static const char *const gemini[] = {
		"{\"role\":\"assistant\",\"content\":\"I can\",\"extra_content\":{\"google\":"
		"{\"thought_signature\":\"CrIC\"}}}",
		"{\"content\":\" call it.\",\"extra_content\":{\"google\":{\"thought_signature\":\"CrIC\"}}}",
		NULL};
	char *s;

	s = fold(dashscope);
	is_str(s, "{\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_eee1\",\"type\":\"function\","
	       "\"function\":{\"name\":\"weather\",\"arguments\":\"{\\\"location\\\": \\\"SF\\\"}\"}}],"
	       "\"role\":\"assistant\"}", "merge: an empty id in a later delta keeps the first id");
	free(s);
	s = fold(mistral);
	is_str(s, "{\"tool_calls\":[{\"id\":\"chatcmpl-tool-9f\",\"type\":\"function\",\"function\":"
	       "{\"name\":\"webSearchTool\",\"arguments\":\"{\\\"query\\\": \\\"Berlin\\\"}\"},\"index\":0}],"
	       "\"index\":0,\"content\":\"\"}", "merge: an empty name in a later delta keeps the first name");
	free(s);
	s = fold(openrouter);
	is_str(s, "{\"reasoning\":\"Let me\",\"reasoning_details\":[{\"type\":\"reasoning.text\","
	       "\"text\":\"Let me\",\"format\":\"unknown\",\"index\":0,\"signature\":\"c2ln\"},"
	       "{\"type\":\"reasoning.encrypted\",\"data\":\"ZW5j\",\"format\":\"unknown\",\"index\":1}]}",
	       "merge: indexed fragments join only their text; format, type, signature stay whole");
	free(s);
	s = fold(magistral);
	is_str(s, "{\"role\":\"assistant\",\"content\":\"2 + 2 = 4\",\"reasoning_content\":\"The user asks.\"}",
	       "merge: streamed content parts become text and reasoning_content");
	free(s);
	s = fold(gemini);
	is_str(s, "{\"role\":\"assistant\",\"content\":\"I can call it.\",\"extra_content\":{\"google\":"
	       "{\"thought_signature\":\"CrIC\"}}}", "merge: a repeated thought signature is not doubled");
	free(s);
}

static void flatten(void)
{
	struct json_object *m;
	char *s;

	m = parse("{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\","
		  "\"text\":\"hmm\"}]},{\"type\":\"text\",\"text\":\"4\"},{\"type\":\"reference\","
		  "\"reference_ids\":[1]}],\"reasoning_content\":\"a \"}");
	ok(llmmsg_flatten_content(m) == 1, "flatten: parts are flattened");
	s = gojson_encode(m);
	is_str(s, "{\"role\":\"assistant\",\"content\":\"4\",\"reasoning_content\":\"a hmm\"}",
	       "flatten: text parts to content, thinking appended to reasoning_content");
	free(s);
	ok(llmmsg_flatten_content(m) == 0, "flatten: a string content is left alone");
	is_str(llmmsg_reasoning(m), "a hmm", "reasoning: reasoning_content first");
	json_object_put(m);
	m = parse("{\"reasoning\":\"r\",\"reasoning_content\":\"\"}");
	is_str(llmmsg_reasoning(m), "r", "reasoning: else reasoning");
	json_object_put(m);
}

static void error_texts(void)
{
	static const struct {
		const char *body, *want, *name;
	} cases[] = {
		{"{\"error\":{\"message\":\"Unsupported parameter: 'max_tokens' is not supported with this model.\","
		 "\"type\":\"invalid_request_error\",\"param\":\"max_tokens\",\"code\":\"unsupported_parameter\"}}",
		 "Unsupported parameter: 'max_tokens' is not supported with this model. (unsupported_parameter)",
		 "OpenAI: message and code"},
		{"[{\n  \"error\": {\n    \"code\": 400,\n    \"message\": \"Function call is missing a thought_signature.\",\n"
		 "    \"status\": \"INVALID_ARGUMENT\"\n  }\n}\n]\n",
		 "Function call is missing a thought_signature. (INVALID_ARGUMENT)", "Gemini: an array"},
		{"{\"error\":{\"message\":\"property 'reasoning' is unsupported\",\"type\":\"invalid_request_error\"}}",
		 "property 'reasoning' is unsupported", "Groq: type is not a code"},
		{"{\"object\":\"error\",\"message\":{\"detail\":[{\"type\":\"extra_forbidden\",\"loc\":[\"body\","
		 "\"messages\",2,\"assistant\",\"index\"],\"msg\":\"Extra inputs are not permitted\",\"input\":0}]},"
		 "\"type\":\"invalid_request_message_error\",\"param\":null,\"code\":null}",
		 "Extra inputs are not permitted (body.messages.2.assistant.index)", "Mistral: detail list"},
		{"{\"detail\":[{\"msg\":\"a\",\"loc\":[\"x\"]},{\"msg\":\"b\"},{\"msg\":\"c\"},{\"msg\":\"d\"},{\"msg\":\"e\"}]}",
		 "a (x); b; c; and 2 more", "FastAPI detail, capped"},
		{"{\"error\":\"model \\\"llama3\\\" not found, try pulling it first\"}",
		 "model \"llama3\" not found, try pulling it first", "Ollama native: error string"},
		{"{\"object\":\"error\",\"message\":\"This model's maximum context length is 4096 tokens.\","
		 "\"type\":\"BadRequestError\",\"param\":null,\"code\":400}",
		 "This model's maximum context length is 4096 tokens.", "vLLM: top-level message"},
		{"{\"success\":false,\"errors\":[{\"code\":5006,\"message\":\"Bad input\"}]}", "Bad input",
		 "Cloudflare API"},
		{"<!DOCTYPE html>\n<html><head>\n<title>api.example.com | 520: Web server is returning an unknown"
		 " error</title></head><body>…</body></html>",
		 "api.example.com | 520: Web server is returning an unknown error", "an HTML page's title"},
		{"upstream connect error\r\nor disconnect\tbefore headers", "upstream connect error or disconnect before headers",
		 "plain text on one line"},
		{"}\n", "}", "a lone brace"},
		{"{\"id\":\"x\"}", "{\"id\":\"x\"}", "JSON without a message: its start"},
	};
	char big[1000], *s;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		s = llmmsg_error_text(cases[i].body, strlen(cases[i].body));
		is_str(s, cases[i].want, "error text: %s", cases[i].name);
		free(s);
	}
	memset(big, 'x', sizeof big);
	memcpy(big + LLMMSG_ERROR_TEXT_MAX - 4, "\xc3\xa9", 2);
	s = llmmsg_error_text(big, sizeof big);
	ok(strlen(s) == LLMMSG_ERROR_TEXT_MAX - 1 && strcmp(s + strlen(s) - 4, "x…") == 0,
	   "error text: cut within the cap on a character boundary, marked");
	free(s);
	memset(big, ' ', sizeof big);
	big[0] = 'a', big[sizeof big - 1] = 'b';
	s = llmmsg_error_text(big, sizeof big);
	is_str(s, "a b", "error text: white space runs become one space");
	free(s);
}

/* What a sandbox sends as parts is checked: only text and inline data of media types, base64
 * data; a type that would put markup or a second data: URL parameter in a request is refused. */
static void parts_checked(void)
{
	static const struct {
		const char *parts;
		bool good;
	} cases[] = {
		{"[{\"text\":\"a\"},{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"iVBO\"}}]", true},
		{"[{\"inlineData\":{\"mimeType\":\"application/pdf\",\"data\":\"JVBERg==\",\"displayName\":\"/h/d.pdf\"}}]", true},
		{"[{\"inlineData\":{\"mimeType\":\"text/html\",\"data\":\"PGI+\"}}]", false},
		{"[{\"inlineData\":{\"mimeType\":\"image/png;x=1,<b>\",\"data\":\"iVBO\"}}]", false},
		{"[{\"inlineData\":{\"mimeType\":\"application/x-sh\",\"data\":\"iVBO\"}}]", false},
		{"[{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"iV\\\"BO\"}}]", false},
		{"[{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"iVB=O\"}}]", false},
		{"[{\"inlineData\":{\"mimeType\":\"image/png\"}}]", false},
		{"[{\"text\":1}]", false},
		{"{\"text\":\"a\"}", false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct json_object *in = parse(cases[i].parts), *out;
		struct sbx_err e;
		out = toolparts_check(in, &e);
		ok((out != NULL) == cases[i].good, "parts %s: %s", cases[i].good ? "taken" : "refused",
		   cases[i].parts);
		json_object_put(out);
		json_object_put(in);
	}
}

/* Tools' files in a request: per vendor the parts it takes, text lines for the rest, the
 * history's field never sent, files over the cap left in the tool text, the budget. */
static void media(void)
{
	static const char hist[] =
		"[{\"role\":\"user\",\"content\":\"q\"},"
		"{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"a\"},{\"id\":\"b\"}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"A\",\"inline_data\":["
		"{\"mime_type\":\"image/png\",\"data\":\"iVBO\",\"name\":\"/h/p.png\"},"
		"{\"mime_type\":\"audio/wav\",\"data\":\"UklG\",\"name\":\"/h/s.wav\"}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"b\",\"content\":\"B\",\"inline_data\":["
		"{\"mime_type\":\"application/pdf\",\"data\":\"JVBE\",\"name\":\"/h/d.pdf\"}]},"
		"{\"role\":\"assistant\",\"content\":\"seen\"}]";
	static const struct {
		const char *vendor, *want;
	} want[] = {
		{"openai", "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"File from tool call a: /h/p.png\"},"
		 "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBO\"}},"
		 "{\"type\":\"text\",\"text\":\"File from tool call a: /h/s.wav\"},"
		 "{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"UklG\",\"format\":\"wav\"}},"
		 "{\"type\":\"text\",\"text\":\"File from tool call b: /h/d.pdf\"},"
		 "{\"type\":\"file\",\"file\":{\"filename\":\"d.pdf\",\"file_data\":\"data:application/pdf;base64,JVBE\"}}]}"},
		{"deepseek", "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"File from tool call a: /h/p.png\"},"
		 "{\"type\":\"text\",\"text\":\"/h/p.png (image/png): not sent, the model gpt-4o-audio-preview at this endpoint (deepseek) is not known to take it\"},"
		 "{\"type\":\"text\",\"text\":\"File from tool call a: /h/s.wav\"},"
		 "{\"type\":\"text\",\"text\":\"/h/s.wav (audio/wav): not sent, the model gpt-4o-audio-preview at this endpoint (deepseek) is not known to take it\"},"
		 "{\"type\":\"text\",\"text\":\"File from tool call b: /h/d.pdf\"},"
		 "{\"type\":\"text\",\"text\":\"/h/d.pdf (application/pdf): not sent, the model gpt-4o-audio-preview at this endpoint (deepseek) is not known to take it\"}]}"},
	};
	struct json_object *h = parse(hist), *out, *m, *parts, *big;
	char *s, *data;

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		out = llmmedia_messages(h, vendor_by_name(want[i].vendor), "gpt-4o-audio-preview");
		ok(json_object_array_length(out) == 6, "media %s: one user message added", want[i].vendor);
		s = gojson_encode(json_object_array_get_idx(out, 4));
		is_str(s, want[i].want, "media %s: the user message after the tool messages", want[i].vendor);
		free(s);
		s = gojson_encode(json_object_array_get_idx(out, 2));
		is_str(s, "{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"A\"}",
		       "media %s: the tool message without inline_data", want[i].vendor);
		free(s);
		json_object_put(out);
	}
	out = llmmedia_messages(h, NULL, "qwen3-32b");
	s = gojson_encode(json_object_array_get_idx(out, 4));
	ok(strstr(s, "image_url") == NULL &&
	   strstr(s, "/h/p.png (image/png): not sent, the model qwen3-32b at this endpoint (generic) "
		  "is not known to take it") != NULL, "media: a model not known to see gets a line");
	free(s);
	json_object_put(out);
	json_object_put(h);
	/* over the per-file cap: kept out of the history, said in the tool text */
	data = malloc(LLMMEDIA_PART_MAX / 3 * 4 + 8);
	memset(data, 'A', LLMMEDIA_PART_MAX / 3 * 4 + 4);
	data[LLMMEDIA_PART_MAX / 3 * 4 + 4] = '\0';
	m = parse("{\"role\":\"tool\",\"content\":\"T\"}");
	parts = json_object_new_array();
	big = parse("{\"inlineData\":{\"mimeType\":\"image/png\",\"displayName\":\"/h/big.png\"}}");
	json_object_object_add(json_object_object_get(big, "inlineData"), "data", json_object_new_string(data));
	json_object_array_add(parts, big);
	json_object_array_add(parts, parse("{\"inlineData\":{\"mimeType\":\"image/gif\",\"data\":\"R0lG\",\"displayName\":\"/h/g.gif\"}}"));
	llmmedia_attach(m, parts, 0);
	s = gojson_encode(m);
	is_str(s, "{\"role\":\"tool\",\"content\":\"T\\n[/h/big.png: 4,194,306 bytes, over the 4,194,304-byte "
	       "limit of a file sent to the model: not sent]\",\"inline_data\":[{\"mime_type\":\"image/gif\","
	       "\"data\":\"R0lG\",\"name\":\"/h/g.gif\"}]}", "media: a file over the cap is named, not kept");
	free(s);
	json_object_put(m);
	/* a history near its limit keeps no more files */
	m = parse("{\"role\":\"tool\",\"content\":\"T\"}");
	llmmedia_attach(m, parts, LLMMEDIA_HISTORY_MAX - 3);
	s = gojson_encode(m);
	ok(strstr(s, "inline_data") == NULL &&
	   strstr(s, "[/h/g.gif: not sent, the session already holds 32 MiB of files]") != NULL,
	   "media: a history near its limit keeps no more files");
	free(s);
	json_object_put(parts);
	json_object_put(m);
	/* the request budget: the newest files first, older ones a line */
	h = json_object_new_array();
	for (int i = 0; i < 5; i++) {
		m = parse("{\"role\":\"tool\",\"tool_call_id\":\"t\",\"content\":\"T\"}");
		parts = parse("[{\"inlineData\":{\"mimeType\":\"image/png\",\"displayName\":\"/h/p.png\"}}]");
		data[LLMMEDIA_PART_MAX / 3 * 4] = '\0';
		json_object_object_add(json_object_object_get(json_object_array_get_idx(parts, 0), "inlineData"),
				       "data", json_object_new_string(data));
		llmmedia_attach(m, parts, 0);
		json_object_array_add(h, m);
		json_object_array_add(h, parse("{\"role\":\"assistant\",\"content\":\"x\"}"));
		json_object_put(parts);
	}
	out = llmmedia_messages(h, NULL, "gemini-2.5-pro");
	s = gojson_encode(out);
	ok(json_object_array_length(out) == 15, "media budget: a user message after each tool message");
	{
		int lines = 0, images = 0;
		for (const char *p = s; (p = strstr(p, "not sent again, newer files fill this request's "
						      "16 MiB for files")) != NULL; p++)
			lines++;
		for (const char *p = s; (p = strstr(p, "\"type\":\"image_url\"")) != NULL; p++)
			images++;
		ok(lines == 2 && images == 3 && strstr(s, "image_url") > strstr(s, "not sent again"),
		   "media budget: of five 5.3 MiB base64 files the newest three go, the oldest two are lines");
	}
	free(s);
	json_object_put(out);
	json_object_put(h);
	free(data);
}

/* The request messages v sends for the history hist (JSON), encoded. */
static char *sent(const char *vendor, const char *hist)
{
	struct json_object *h = parse(hist), *out = vendor_messages(vendor_by_name(vendor), h);
	char *s = gojson_encode(out);

	json_object_put(out);
	json_object_put(h);
	return s;
}

static void vendors(void)
{
	static const char hist[] =
		"[{\"role\":\"user\",\"content\":\"q\"},"
		"{\"role\":\"assistant\",\"content\":\"\",\"index\":0,\"reasoning\":\"r\",\"reasoning_content\":\"rc\","
		"\"refusal\":null,\"extra_content\":{\"google\":{\"thought_signature\":\"S\"}},"
		"\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"ls\","
		"\"arguments\":\"{}\",\"thought_signature\":\"F\"},\"extra_content\":{\"google\":"
		"{\"thought_signature\":\"T\"}}}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"a\"},"
		"{\"role\":\"assistant\",\"content\":\"done\",\"reasoning_content\":\"rc2\"},"
		"{\"role\":\"user\",\"content\":\"again\"},"
		"{\"role\":\"assistant\",\"content\":\"ok\",\"reasoning_content\":\"rc3\"}]";
	static const struct {
		const char *vendor, *assistant1, *assistant2, *assistant3;
	} want[] = {
		{"openai", "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null,\"tool_calls\":[{\"id\":\"c1\","
		 "\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}",
		 "{\"role\":\"assistant\",\"content\":\"done\"}", "{\"role\":\"assistant\",\"content\":\"ok\"}"},
		{"groq", "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
		 "\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}",
		 "{\"role\":\"assistant\",\"content\":\"done\"}", "{\"role\":\"assistant\",\"content\":\"ok\"}"},
		{"mistral", "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
		 "\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}",
		 "{\"role\":\"assistant\",\"content\":\"done\"}", "{\"role\":\"assistant\",\"content\":\"ok\"}"},
		{"deepseek", "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
		 "\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}],\"reasoning_content\":\"rc\"}",
		 "{\"role\":\"assistant\",\"content\":\"done\",\"reasoning_content\":\"rc2\"}",
		 "{\"role\":\"assistant\",\"content\":\"ok\"}"},
		{"gemini", "{\"role\":\"assistant\",\"content\":\"\",\"extra_content\":{\"google\":{\"thought_signature\":"
		 "\"S\"}},\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"ls\","
		 "\"arguments\":\"{}\",\"thought_signature\":\"F\"},\"extra_content\":{\"google\":{\"thought_signature\":"
		 "\"T\"}}}]}", "{\"role\":\"assistant\",\"content\":\"done\"}",
		 "{\"role\":\"assistant\",\"content\":\"ok\"}"},
		{"openrouter", "{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":\"r\",\"reasoning_content\":\"rc\","
		 "\"refusal\":null,\"extra_content\":{\"google\":{\"thought_signature\":\"S\"}},\"tool_calls\":[{\"id\":"
		 "\"c1\",\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\",\"thought_signature\":"
		 "\"F\"},\"extra_content\":{\"google\":{\"thought_signature\":\"T\"}}}]}",
		 "{\"role\":\"assistant\",\"content\":\"done\",\"reasoning_content\":\"rc2\"}",
		 "{\"role\":\"assistant\",\"content\":\"ok\",\"reasoning_content\":\"rc3\"}"},
	};
	struct json_object *out;
	size_t i;
	char *s;

	for (i = 0; i < sizeof want / sizeof want[0]; i++) {
		char *got = sent(want[i].vendor, hist);

		out = parse(got);
		s = gojson_encode(json_object_array_get_idx(out, 1));
		is_str(s, want[i].assistant1, "policy %s: the tool-calling answer", want[i].vendor);
		free(s);
		s = gojson_encode(json_object_array_get_idx(out, 3));
		is_str(s, want[i].assistant2, "policy %s: the answer after the tool", want[i].vendor);
		free(s);
		s = gojson_encode(json_object_array_get_idx(out, 5));
		is_str(s, want[i].assistant3, "policy %s: an answer in a turn without tools", want[i].vendor);
		free(s);
		s = gojson_encode(json_object_array_get_idx(out, 2));
		is_str(s, "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"a\"}",
		       "policy %s: the tool result untouched", want[i].vendor);
		free(s);
		json_object_put(out);
		free(got);
	}
	ok(vendor_by_name("GROQ") == vendor_by_name("groq") && vendor_by_name("nope") == NULL,
	   "vendor names: case-insensitive, unknown refused");
	{
		static const struct {
			const char *url, *vendor;
		} hosts[] = {
			{"https://api.openai.com/v1", "openai"},
			{"https://generativelanguage.googleapis.com/v1beta/openai", "gemini"},
			{"https://api.groq.com/openai/v1", "groq"},
			{"https://api.deepseek.com", "deepseek"},
			{"https://openrouter.ai/api/v1", "openrouter"},
			{"https://api.mistral.ai/v1", "mistral"},
			{"https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "dashscope"},
			{"https://token-plan.cn-beijing.maas.aliyuncs.com/compatible-mode/v1", "dashscope"},
			{"https://my-res.openai.azure.com/openai/deployments/gpt/?api-version=2024-10-21", "azure"},
			{"https://my-res.services.ai.azure.com/openai/v1", "azure"},
			{"https://API.GROQ.COM.:443/openai/v1", "groq"},
			{"https://user:pw@api.mistral.ai/v1", "mistral"},
			{"https://openai.azure.com.evil.example/v1", "generic"},
			{"https://evilapi.openai.com/v1", "generic"},
			{"http://127.0.0.1:11434/v1", "generic"},
			{"not a url", "generic"},
		};

		for (i = 0; i < sizeof hosts / sizeof hosts[0]; i++)
			is_str(vendor_name(vendor_for_url(hosts[i].url)), hosts[i].vendor, "vendor of %s",
			       hosts[i].url);
	}
	is_str(vendor_auth_header(vendor_by_name("azure")), "api-key", "azure sends its key as api-key");
	is_str(vendor_auth_header(vendor_by_name("openai")), "Authorization", "others as a Bearer token");
}

static void endpoints(void)
{
	static const struct {
		const char *base, *want;
	} cases[] = {
		{"http://h/v1", "http://h/v1/chat/completions"},
		{"https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
		 "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"},
		{"https://r.openai.azure.com/openai/deployments/d/?api-version=1&x=2#frag",
		 "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=1&x=2"},
		{"http://h/v1#x", "http://h/v1/chat/completions"},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = llm_endpoint(cases[i].base);

		is_str(s, cases[i].want, "endpoint of %s", cases[i].base);
		free(s);
	}
}

static void requests(void)
{
	static const struct {
		const char *doc, *why;
	} bad[] = {
		{"[]", "request must be a JSON object"},
		{"{}", "request has no \"messages\""},
		{"{\"messages\":null}", "request has no \"messages\""},
		{"{\"messages\":{}}", "request \"messages\" must be an array"},
		{"{\"messages\":[]}", "request has no messages"},
		{"{\"messages\":[1]}", "request messages[0] must be an object"},
		{"{\"messages\":[{\"role\":\"user\"},{\"content\":\"x\"}]}",
		 "request messages[1] has no \"role\" string"},
		{"{\"messages\":[{\"role\":7}]}", "request messages[0] has no \"role\" string"},
		{"{\"messages\":[{\"role\":\"user\"}],\"tools\":{}}", "request \"tools\" must be an array"},
		{"{\"messages\":[{\"role\":\"user\"}],\"tools\":[\"x\"]}", "request tools[0] must be an object"},
		{"{\"messages\":[{\"role\":\"user\"}],\"model\":3}", "request \"model\" must be a string"},
	};
	struct json_object *doc;
	struct sbx_err e;
	size_t i;
	char *s;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		doc = parse(bad[i].doc);
		ok(llm_check_request(doc, &e) < 0 && e.code == SBX_EINVAL && strcmp(e.msg, bad[i].why) == 0,
		   "request refused: %s", bad[i].doc);
		json_object_put(doc);
	}
	doc = parse("{\"tools\":[],\"temperature\":0.20,\"messages\":[{\"role\":\"user\",\"content\":\"a&b\","
		    "\"extra_content\":{\"x\":[1,2]}}],\"model\":\"m\",\"stream\":false}");
	ok(llm_check_request(doc, &e) == 0, "request accepted");
	s = llm_request_body(doc, "gem<1>", true, NULL);
	is_str(s, "{\"model\":\"gem\\u003c1\\u003e\",\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0026b\","
	       "\"extra_content\":{\"x\":[1,2]}}],\"temperature\":0.20,\"stream\":true}",
	       "request body: messages verbatim, empty tools dropped, other fields kept, stream set");
	free(s);
	json_object_put(doc);

	setenv("OPENAI_BASE_URL", "http://h/v1//", 1);
	s = llm_base_url(NULL);
	is_str(s, "http://h/v1/", "base URL: one trailing / trimmed");
	free(s);
	s = llm_base_url("http://flag/x/");
	is_str(s, "http://flag/x", "base URL: flag wins");
	free(s);
	unsetenv("OPENAI_BASE_URL");
	s = llm_base_url(NULL);
	is_str(s, LLM_DEFAULT_BASE_URL, "base URL: default");
	free(s);

	doc = parse("{\"model\":\"doc\",\"messages\":[]}");
	setenv("OPENAI_MODEL", "env1", 1);
	setenv("MODEL", "env2", 1);
	is_str(llm_pick_model("flag", doc), "flag", "model: flag first");
	is_str(llm_pick_model(NULL, doc), "doc", "model: then the document");
	json_object_put(doc);
	doc = parse("{\"model\":\"\"}");
	is_str(llm_pick_model(NULL, doc), "env1", "model: then OPENAI_MODEL");
	setenv("OPENAI_MODEL", "", 1);
	is_str(llm_pick_model(NULL, doc), "env2", "model: then MODEL");
	unsetenv("MODEL");
	is_str(llm_pick_model(NULL, doc), LLM_DEFAULT_MODEL, "model: then the default");
	json_object_put(doc);
	setenv("GEMINI_API_KEY", "", 1);
	setenv("OPENAI_API_KEY", "ok", 1);
	is_str(llm_env_key(), "ok", "key: empty GEMINI_API_KEY falls back to OPENAI_API_KEY");
	setenv("GEMINI_API_KEY", "gk", 1);
	is_str(llm_env_key(), "gk", "key: GEMINI_API_KEY first");
}

int main(void)
{
	sse();
	eliza_rules();
	retries();
	deltas();
	merge_rules();
	flatten();
	error_texts();
	vendors();
	media();
	parts_checked();
	endpoints();
	requests();
	return done_testing();
}
