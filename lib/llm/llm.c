/* llm.c — one OpenAI-compatible chat completion over libcurl: the exchange, its streamed
 * answer assembled (lib/llm/llmmsg.h), retries (lib/llm/llmretry.c), the fake model. The request and
 * answer documents: lib/llm/llmreq.c. */
#include "llm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "curlso.h"
#include "eliza.h"
#include "gojson.h"
#include "llmmsg.h"
#include "sse.h"
#include "timeutil.h"
#include "vendor.h"
#include "xalloc.h"

/* A Retry-After value longer than this is not one (an HTTP-date is 29 bytes). */
#define RETRY_AFTER_TEXT_MAX 128
/* Trace labels: a URL plus a few words. */
#define TRACE_LABEL_MAX (LLM_URL_MAX + 64)

static struct json_object *copy(struct json_object *v)
{
	struct json_object *out = NULL;

	if (v == NULL || json_object_deep_copy(v, &out, NULL) != 0)
		return NULL;
	return out;
}

/* ---- one exchange ---- */

/* The answer being assembled from stream chunks. */
struct assembly {
	struct json_object *top;	/* the chunks' top-level fields, merged */
	struct json_object *message;	/* choice 0's deltas, merged */
	struct json_object *finish;	/* the last finish_reason given */
	bool done;			/* "[DONE]" seen */
	bool emitted;			/* an event went out: a retry would repeat it */
};

struct xfer {
	const struct llm_config *cfg;
	CURL *h;
	long status;
	bool started, sse, timed_out, failed;
	struct buf body;
	size_t sse_bytes;	/* event stream bytes so far, bounded like a body */
	struct sse_parser parser;
	struct assembly as;
	int64_t retry_after_ns;
	int should_retry;	/* x-should-retry: 1 true, 0 false, -1 not given */
	int64_t last_rx_ns;
	struct sbx_err err;	/* why a callback stopped the transfer (failed) */
};

/* Copies s with every occurrence of the API key replaced, for messages and traces; the
 * copy's length goes to *len when len is not NULL. */
static char *redact(const char *key, const char *s, size_t n, size_t *len)
{
	struct buf b = {0};
	size_t kl = key ? strlen(key) : 0, i = 0, start = 0;

	while (kl > 0 && i + kl <= n) {
		if (memcmp(s + i, key, kl) == 0) {
			buf_append(&b, s + start, i - start);
			buf_puts(&b, "[REDACTED]");
			i += kl;
			start = i;
		} else {
			i++;
		}
	}
	buf_append(&b, s + start, n - start);
	if (len)
		*len = b.len;
	return buf_steal(&b);
}

static void trace(const struct llm_config *c, const char *what, const char *data, size_t n)
{
	char *r;

	if (c->trace == NULL)
		return;
	if (data == NULL) {
		c->trace(what, NULL, 0, c->arg);
		return;
	}
	r = redact(c->api_key, data, n, &n);
	c->trace(what, r, n, c->arg);
	free(r);
}

static int emit(const struct llm_config *c, struct assembly *as, const char *key,
		struct json_object *val, struct sbx_err *e)
{
	struct json_object *ev;
	int rc = 0;

	if (c->on_event == NULL || !c->stream) {
		json_object_put(val);
		return 0;
	}
	ev = json_object_new_object();
	json_object_object_add(ev, key, val);
	as->emitted = true;
	if (c->on_event(ev, c->arg) < 0)
		rc = err_set(e, SBX_EIO, "llm: cannot pass on a stream event");
	json_object_put(ev);
	return rc;
}

/* The events for one delta (or for a whole message when the answer did not stream). */
static int emit_delta(const struct llm_config *c, struct assembly *as, struct json_object *delta,
		      bool number_calls, struct sbx_err *e)
{
	/* The model's reasoning, as servers that show it send it (reasoning_content; OpenRouter
	 * and vLLM: reasoning): one event per delta. */
	const char *r = llmmsg_reasoning(delta);
	struct json_object *v;
	size_t i;

	if (r && emit(c, as, "reasoning_delta", json_object_new_string(r), e) < 0)
		return -1;
	if (json_object_object_get_ex(delta, "content", &v) && json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > 0 && emit(c, as, "delta", json_object_get(v), e) < 0)
		return -1;
	if (!json_object_object_get_ex(delta, "tool_calls", &v) || !json_object_is_type(v, json_type_array))
		return 0;
	for (i = 0; i < json_object_array_length(v); i++) {
		struct json_object *call = json_object_array_get_idx(v, i), *out;

		if (number_calls && json_object_is_type(call, json_type_object)) {
			out = json_object_new_object();
			json_object_object_add(out, "index", json_object_new_int((int)i));
			json_object_object_foreach(call, k, cv)
				if (strcmp(k, "index") != 0)
					json_object_object_add(out, k, json_object_get(cv));
		} else {
			out = json_object_get(call);
		}
		if (emit(c, as, "tool_call_delta", out, e) < 0)
			return -1;
	}
	return 0;
}

/* An error body as the one line people see: the vendor's message, the key redacted. */
static char *error_line(const struct llm_config *c, const char *body, size_t n)
{
	char *line = llmmsg_error_text(body, n), *r = redact(c->api_key, line, strlen(line), NULL);

	free(line);
	return r;
}

static int stream_error(const struct llm_config *c, const char *data, size_t n, struct sbx_err *e)
{
	char *line = error_line(c, data, n);

	err_set(e, SBX_EIO, "llm: api error in event stream: %s", line);
	free(line);
	return -1;
}

/* One parsed stream chunk: top-level fields merged, choice 0's delta reported and merged. */
static int on_chunk(struct xfer *x, struct json_object *chunk, const char *raw, struct sbx_err *e)
{
	struct json_object *choices, *choice = NULL, *v;
	size_t i, n;

	if (!json_object_is_type(chunk, json_type_object))
		return err_set(e, SBX_EIO, "llm: failed to decode stream event: not an object");
	if (json_object_object_get_ex(chunk, "error", &v) && v != NULL)
		return stream_error(x->cfg, raw, strlen(raw), e);
	if (x->as.top == NULL)
		x->as.top = json_object_new_object();
	json_object_object_foreach(chunk, key, val) {
		struct json_object *old;

		if (strcmp(key, "choices") == 0) {
			if (!json_object_object_get_ex(x->as.top, key, &old))
				json_object_object_add(x->as.top, key, NULL);	/* keeps its place */
		} else if (val != NULL || !json_object_object_get_ex(x->as.top, key, &old)) {
			json_object_object_add(x->as.top, key, copy(val));
		}
	}
	if (!json_object_object_get_ex(chunk, "choices", &choices) ||
	    !json_object_is_type(choices, json_type_array))
		return 0;
	n = json_object_array_length(choices);
	for (i = 0; i < n && choice == NULL; i++) {
		struct json_object *c = json_object_array_get_idx(choices, i), *ix;

		if (!json_object_object_get_ex(c, "index", &ix) || json_object_get_int64(ix) == 0)
			choice = c;
	}
	if (choice == NULL)
		return 0;
	if (json_object_object_get_ex(choice, "finish_reason", &v) && v != NULL) {
		json_object_put(x->as.finish);
		x->as.finish = json_object_get(v);
	}
	if (!json_object_object_get_ex(choice, "delta", &v) || !json_object_is_type(v, json_type_object))
		return 0;
	llmmsg_flatten_content(v);	/* the chunk is ours: parts become text and reasoning */
	if (emit_delta(x->cfg, &x->as, v, false, e) < 0)
		return -1;
	if (x->as.message == NULL)
		x->as.message = json_object_new_object();
	llmmsg_merge(x->as.message, v);
	return 0;
}

static int on_event(const struct sse_event *ev, void *arg, struct sbx_err *e)
{
	struct xfer *x = arg;
	struct json_object *chunk;
	const char *why;
	int rc;

	trace(x->cfg, "stream event", ev->data, ev->len);
	if (x->as.done)
		return 0;
	if (strcmp(ev->type, "error") == 0)
		return stream_error(x->cfg, ev->data, ev->len, e);
	if (strcmp(ev->data, "[DONE]") == 0) {
		x->as.done = true;
		return 0;
	}
	chunk = gojson_parse(ev->data, ev->len, &why);
	if (chunk == NULL)
		return err_set(e, SBX_EIO, "llm: failed to decode stream event: %s", why);
	rc = on_chunk(x, chunk, ev->data, e);
	json_object_put(chunk);
	return rc;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	static const char name[] = "retry-after:", should[] = "x-should-retry:";
	char val[RETRY_AFTER_TEXT_MAX];

	x->last_rx_ns = time_mono_ns();
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		x->retry_after_ns = -1;	/* a new response (after a 1xx) starts */
		x->should_retry = -1;
	}
	/* The server's own verdict, which the official clients follow before any status rule. */
	if (len > sizeof should - 1 && strncasecmp(p, should, sizeof should - 1) == 0) {
		const char *v = p + sizeof should - 1, *end = p + len;

		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		if (end - v >= 4 && strncasecmp(v, "true", 4) == 0)
			x->should_retry = 1;
		else if (end - v >= 5 && strncasecmp(v, "false", 5) == 0)
			x->should_retry = 0;
	}
	if (len > sizeof name - 1 && len - (sizeof name - 1) < sizeof val &&
	    strncasecmp(p, name, sizeof name - 1) == 0) {
		memcpy(val, p + sizeof name - 1, len - (sizeof name - 1));
		val[len - (sizeof name - 1)] = '\0';
		x->retry_after_ns = llm_retry_after_ns(val, time_now_ns());
	}
	return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n, room;

	x->last_rx_ns = time_mono_ns();
	if (!x->started) {
		char *ct = NULL;

		x->started = true;
		curlso.easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
		/* An event stream is read as one even when not asked for: some servers always
		 * stream. Events are then assembled but not reported. */
		if (x->status == 200 &&
		    curlso.easy_getinfo(x->h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct &&
		    strncasecmp(ct, "text/event-stream", 17) == 0)
			x->sse = true;
	}
	if (x->sse) {
		x->sse_bytes += len;
		if (x->sse_bytes > LLM_RESPONSE_MAX) {
			err_set(&x->err, SBX_EIO, "llm: failed to read response body: "
				"event stream larger than %zu bytes", LLM_RESPONSE_MAX);
			x->failed = true;
			return 0;
		}
		if (sse_feed(&x->parser, p, len, &x->err) < 0) {
			x->failed = true;
			return 0;
		}
		return len;
	}
	if (x->status != 200) {	/* an error body: keep its start for the message */
		room = LLM_ERROR_BODY_MAX - x->body.len;
		buf_append(&x->body, p, len < room ? len : room);
		return len;
	}
	if (x->body.len + len > LLM_RESPONSE_MAX) {
		err_set(&x->err, SBX_EIO, "llm: failed to read response body: larger than %zu bytes",
			LLM_RESPONSE_MAX);
		x->failed = true;
		return 0;
	}
	buf_append(&x->body, p, len);
	return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct xfer *x = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	if (x->cfg->cancel && *x->cfg->cancel)
		return 1;
	if (x->cfg->stream && time_mono_ns() - x->last_rx_ns > x->cfg->timeout_ns) {
		x->timed_out = true;
		return 1;
	}
	return 0;
}

/* The assembled stream as a whole response, shaped like a non-streamed one. */
static struct json_object *assembled(struct assembly *as)
{
	struct json_object *resp = as->top ? as->top : json_object_new_object();
	struct json_object *msg = as->message ? as->message : json_object_new_object();
	struct json_object *choices = json_object_new_array(), *choice = json_object_new_object();
	struct json_object *v, *full;

	as->top = as->message = NULL;
	json_object_object_del(msg, "index");	/* the choice's index, repeated in deltas (Mistral) */
	if (json_object_object_get_ex(msg, "tool_calls", &v) && json_object_is_type(v, json_type_array)) {
		size_t i;

		for (i = 0; i < json_object_array_length(v); i++)
			json_object_object_del(json_object_array_get_idx(v, i), "index");
	}
	if (!json_object_object_get_ex(msg, "role", &v)) {	/* role first, as servers send it */
		full = json_object_new_object();
		json_object_object_add(full, "role", json_object_new_string("assistant"));
		json_object_object_foreach(msg, k, mv)
			json_object_object_add(full, k, json_object_get(mv));
		json_object_put(msg);
		msg = full;
	}
	json_object_object_add(choice, "index", json_object_new_int(0));
	json_object_object_add(choice, "message", msg);
	json_object_object_add(choice, "finish_reason", json_object_get(as->finish));
	json_object_array_add(choices, choice);
	json_object_object_add(resp, "choices", choices);
	if (json_object_object_get_ex(resp, "object", &v) && json_object_is_type(v, json_type_string) &&
	    strcmp(json_object_get_string(v), "chat.completion.chunk") == 0)
		json_object_object_add(resp, "object", json_object_new_string("chat.completion"));
	return resp;
}

static void assembly_reset(struct assembly *as)
{
	json_object_put(as->top);
	json_object_put(as->message);
	json_object_put(as->finish);
	memset(as, 0, sizeof *as);
}

/* One POST. Returns 0 with *resp set, or -1 with e set and *retry telling whether another
 * attempt may help. */
static int attempt(struct xfer *x, struct json_object **resp, bool *retry, struct sbx_err *e)
{
	const struct llm_config *c = x->cfg;
	char errbuf[CURL_ERROR_SIZE] = "";
	const char *why;
	CURLcode rc;
	char *r;

	x->status = 0;
	x->started = x->sse = x->timed_out = x->failed = false;
	x->body.len = 0;
	x->sse_bytes = 0;
	x->retry_after_ns = -1;
	x->should_retry = -1;
	err_clear(&x->err);
	assembly_reset(&x->as);
	sse_free(&x->parser);
	sse_init(&x->parser, LLM_SSE_LINE_MAX, LLM_SSE_EVENT_MAX, on_event, x);
	*retry = false;
	*resp = NULL;
	curlso.easy_setopt(x->h, CURLOPT_ERRORBUFFER, errbuf);
	x->last_rx_ns = time_mono_ns();
	rc = curlso.easy_perform(x->h);
	curlso.easy_setopt(x->h, CURLOPT_ERRORBUFFER, NULL);
	if (x->status == 0)
		curlso.easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
	if (c->cancel && *c->cancel)
		return err_set(e, SBX_ECANCELED, "llm: request canceled");
	if (x->failed) {
		*e = x->err;
		return -1;
	}
	if (x->timed_out) {
		char d[DURATION_BUFSZ];

		*retry = !x->as.emitted;
		return err_set(e, SBX_EIO, "llm: http request failed: no data for %s",
			       duration_format(c->timeout_ns, d, sizeof d));
	}
	if (rc != CURLE_OK) {
		*retry = llm_retryable_transport(rc) && !x->as.emitted;
		return err_set(e, SBX_EIO, "llm: http request failed: %s",
			       *errbuf ? errbuf : curlso.easy_strerror(rc));
	}
	{
		char st[32];

		snprintf(st, sizeof st, "response status %ld", x->status);
		trace(c, st, NULL, 0);
	}
	if (x->status != 200) {
		trace(c, "response body", x->body.data ? x->body.data : "", x->body.len);
		r = error_line(c, x->body.data ? x->body.data : "", x->body.len);
		*retry = x->should_retry >= 0 ? x->should_retry == 1 : llm_retryable_status(x->status);
		err_set(e, SBX_EIO, "llm: api error (status %ld): %s", x->status, r);
		free(r);
		return -1;
	}
	if (x->sse) {
		if (!x->as.done && x->as.finish == NULL) {
			*retry = !x->as.emitted;
			return err_set(e, SBX_EIO, "llm: failed to read response body: "
				       "the event stream ended before [DONE]");
		}
		*resp = assembled(&x->as);
		return 0;
	}
	trace(c, "response body", x->body.data ? x->body.data : "", x->body.len);
	*resp = gojson_parse(x->body.data ? x->body.data : "", x->body.len, &why);
	if (*resp == NULL)
		return err_set(e, SBX_EIO, "llm: failed to decode response: %s", why);
	return 0;
}

/* Sleeps ns unless canceled first (-1). */
static int pause_ns(int64_t ns, const volatile sig_atomic_t *cancel)
{
	int64_t end = time_mono_ns() + ns, left;

	while ((left = end - time_mono_ns()) > 0) {
		struct timespec ts;

		if (cancel && *cancel)
			return -1;
		if (left > 50 * DURATION_MS)	/* wake up now and then to notice a signal */
			left = 50 * DURATION_MS;
		ts.tv_sec = (time_t)(left / DURATION_S);
		ts.tv_nsec = (long)(left % DURATION_S);
		nanosleep(&ts, NULL);
	}
	return cancel && *cancel ? -1 : 0;
}

static int check_config(const struct llm_config *c, struct sbx_err *e)
{
	const char *k;

	if (strncmp(c->base_url, "http://", 7) != 0 && strncmp(c->base_url, "https://", 8) != 0)
		return err_set(e, SBX_EINVAL, "llm: base URL must start with http:// or https://: %s",
			       c->base_url);
	if (strlen(c->base_url) > LLM_URL_MAX)
		return err_set(e, SBX_EINVAL, "llm: base URL longer than %d bytes", LLM_URL_MAX);
	if (strpbrk(c->base_url, " \t\r\n"))
		return err_set(e, SBX_EINVAL, "llm: base URL contains white space");
	if (c->auth_header && *c->auth_header) {
		if (strlen(c->auth_header) > LLM_AUTH_HEADER_MAX)
			return err_set(e, SBX_EINVAL, "llm: auth header name longer than %d bytes",
				       LLM_AUTH_HEADER_MAX);
		/* RFC 9110 token characters only: anything else would let it split the header. */
		if (c->auth_header[strspn(c->auth_header, "!#$%&'*+-.^_`|~0123456789"
					  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")])
			return err_set(e, SBX_EINVAL, "llm: auth header name is not a header name: %s",
				       c->auth_header);
	}
	if (c->api_key == NULL || *c->api_key == '\0')
		return err_set(e, SBX_EINVAL, "llm: api key is required");
	if (strlen(c->api_key) > LLM_KEY_MAX)
		return err_set(e, SBX_EINVAL, "llm: api key longer than %d bytes", LLM_KEY_MAX);
	/* A control byte would let the key split the request header. */
	for (k = c->api_key; *k; k++)
		if ((unsigned char)*k < 0x20 || *k == 0x7f)
			return err_set(e, SBX_EINVAL, "llm: api key contains control characters");
	return 0;
}

/* The fake model: the same result and events as a real one, without a network. */
static int chat_eliza(const struct llm_config *c, struct json_object *doc, struct llm_result *r,
		      struct sbx_err *e)
{
	struct json_object *messages = NULL, *tools = NULL;
	struct assembly as = {0};

	if (c->trace) {
		char *body = llm_request_body(doc, c->model, c->stream, c->vendor);

		trace(c, "request body (answered by fake-eliza)", body, strlen(body));
		free(body);
	}
	json_object_object_get_ex(doc, "messages", &messages);
	json_object_object_get_ex(doc, "tools", &tools);
	r->response = eliza_reply(messages, tools);
	r->message = llm_response_message(r->response, e);
	r->finish_reason = llm_finish_reason(r->response);
	if (c->stream && emit_delta(c, &as, r->message, true, e) < 0)
		return -1;
	return 0;
}

/* The transfer's handle: POST body to url with hdrs, every callback and timeout set. */
static int setup_handle(struct xfer *x, const char *url, const char *body,
			struct curl_slist *hdrs, struct sbx_err *e)
{
	const struct llm_config *c = x->cfg;

	if ((x->h = curlso.easy_init()) == NULL || hdrs == NULL)
		return err_set(e, SBX_EIO, "llm: cannot set up libcurl");
	curlso.easy_setopt(x->h, CURLOPT_URL, url);
	curlso.easy_setopt(x->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curlso.easy_setopt(x->h, CURLOPT_FOLLOWLOCATION, 0L);	/* never resend the key elsewhere */
	curlso.easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	curlso.easy_setopt(x->h, CURLOPT_USERAGENT, "sbx-llm-chat/1");
	curlso.easy_setopt(x->h, CURLOPT_HTTPHEADER, hdrs);
	curlso.easy_setopt(x->h, CURLOPT_POSTFIELDS, body);
	curlso.easy_setopt(x->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curlso.easy_setopt(x->h, CURLOPT_ACCEPT_ENCODING, "");
	curlso.easy_setopt(x->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curlso.easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
	curlso.easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	curlso.easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
	curlso.easy_setopt(x->h, CURLOPT_HEADERDATA, x);
	curlso.easy_setopt(x->h, CURLOPT_NOPROGRESS, 0L);
	curlso.easy_setopt(x->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curlso.easy_setopt(x->h, CURLOPT_XFERINFODATA, x);
	curlso.easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->timeout_ns / DURATION_MS));
	if (!c->stream)	/* a stream may run long; there the timeout bounds silence */
		curlso.easy_setopt(x->h, CURLOPT_TIMEOUT_MS, (long)(c->timeout_ns / DURATION_MS));
	return 0;
}

/* -v: the request as sent, the key left out. */
static void trace_request(const struct llm_config *c, const struct vendor *v, const char *url,
			  const char *hname, bool bearer, const char *body)
{
	char tbuf[TRACE_LABEL_MAX];

	if (c->trace == NULL)
		return;
	snprintf(tbuf, sizeof tbuf, "request: POST %s", url);
	trace(c, tbuf, NULL, 0);
	snprintf(tbuf, sizeof tbuf, "request headers: Content-Type: application/json, %s: %s[REDACTED]",
		 hname, bearer ? "Bearer " : "");
	trace(c, tbuf, NULL, 0);
	snprintf(tbuf, sizeof tbuf, "request policy: %s", vendor_name(v));
	trace(c, tbuf, NULL, 0);
	trace(c, "request body", body, strlen(body));
}

/* Attempts until one succeeds, one fails for good or the retries are used up. */
static int attempts(struct xfer *x, struct json_object **resp, struct sbx_err *e)
{
	const struct llm_config *c = x->cfg;
	char tbuf[TRACE_LABEL_MAX], d[DURATION_BUFSZ];
	bool retry;

	for (int i = 0;; i++) {
		uint32_t rnd = 0;
		int64_t wait;

		if (attempt(x, resp, &retry, e) == 0)
			return 0;
		if (!retry || i >= c->retries)
			return -1;
		if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd)
			rnd = (uint32_t)time_mono_ns();
		wait = llm_backoff_ns(i, c->backoff_ns, x->retry_after_ns, rnd);
		snprintf(tbuf, sizeof tbuf, "retrying in %s (attempt %d of %d) after",
			 duration_format(wait, d, sizeof d), i + 2, c->retries + 1);
		trace(c, tbuf, e->msg, strlen(e->msg));
		if (c->on_retry)
			c->on_retry(e->msg, wait, i + 2, c->retries + 1, c->arg);
		if (pause_ns(duration_test_scaled(wait), c->cancel) < 0)
			return err_set(e, SBX_ECANCELED, "llm: request canceled");
	}
}

int llm_chat(const struct llm_config *c, struct json_object *doc, struct llm_result *r,
	     struct sbx_err *e)
{
	struct xfer x = {.cfg = c};
	struct curl_slist *hdrs = NULL;
	struct json_object *resp = NULL;
	const struct vendor *v;
	const char *hname;
	char *url = NULL, *body = NULL, *auth = NULL;
	int rc = -1;
	bool bearer;

	memset(r, 0, sizeof *r);
	if (strcmp(c->model, ELIZA_MODEL) == 0)
		return chat_eliza(c, doc, r, e);
	if (check_config(c, e) < 0 || curlso_load(e) < 0)
		return -1;
	v = c->vendor ? c->vendor : vendor_for_url(c->base_url);
	hname = c->auth_header && *c->auth_header ? c->auth_header : vendor_auth_header(v);
	bearer = strcasecmp(hname, "Authorization") == 0;
	url = llm_endpoint(c->base_url);
	body = llm_request_body(doc, c->model, c->stream, v);
	auth = xasprintf("%s: %s%s", hname, bearer ? "Bearer " : "", c->api_key);
	hdrs = curlso.slist_append(hdrs, "Content-Type: application/json");
	hdrs = curlso.slist_append(hdrs, c->stream ? "Accept: text/event-stream" : "Accept: application/json");
	hdrs = curlso.slist_append(hdrs, "Expect:");	/* no 100-continue round trip */
	hdrs = curlso.slist_append(hdrs, auth);
	if (setup_handle(&x, url, body, hdrs, e) < 0)
		goto out;
	trace_request(c, v, url, hname, bearer, body);
	if (attempts(&x, &resp, e) < 0)
		goto out;
	r->response = resp;
	r->message = llm_response_message(resp, e);
	if (r->message == NULL)
		goto out;
	r->finish_reason = llm_finish_reason(resp);
	llmmsg_flatten_content(r->message);
	if (c->stream && !x.sse && emit_delta(c, &x.as, r->message, true, e) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		llm_result_free(r);
	if (x.h)
		curlso.easy_cleanup(x.h);
	curlso.slist_free_all(hdrs);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	assembly_reset(&x.as);
	sse_free(&x.parser);
	buf_free(&x.body);
	free(url);
	free(body);
	return rc;
}

void llm_result_free(struct llm_result *r)
{
	json_object_put(r->response);
	memset(r, 0, sizeof *r);
}
