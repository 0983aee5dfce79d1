/* llm.h — one OpenAI-compatible chat completion: the request document checked and encoded, the
 * POST to <base>/chat/completions over libcurl with retries (exponential backoff with jitter,
 * Retry-After honoured), the answer's first choice, and streamed answers (Server-Sent Events)
 * assembled into the very message a plain request would have returned. The model "fake-eliza"
 * is answered in-process (lib/llm/eliza.h) without loading libcurl.
 * Every field a server sends is kept in the answer (content given as parts is flattened to
 * text and reasoning, lib/llm/llmmsg.h); the request sent back holds what the vendor accepts
 * (lib/llm/vendor.h): Gemini wants its thought signatures, Groq refuses "reasoning".
 * The first real request loads and initialises libcurl: make it from one thread at a time.
 * Ownership: documents passed in stay the caller's; returned json_object pointers are new
 * references (llm_result_free puts them); returned char * are the caller's to free. */
#ifndef SBX_LLM_H
#define SBX_LLM_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "duration.h"
#include "err.h"
#include "vendor.h"

#define LLM_DEFAULT_BASE_URL "https://generativelanguage.googleapis.com/v1beta/openai"
#define LLM_DEFAULT_MODEL "gemini-3.5-flash"
/* Upstream's HTTP client timeout. */
#define LLM_DEFAULT_TIMEOUT_NS (60 * DURATION_S)
#define LLM_DEFAULT_RETRIES 4
/* The first wait before a retry; it doubles with each further retry. */
#define LLM_DEFAULT_BACKOFF_NS (1 * DURATION_S)
/* Doubling stops here: beyond half a minute a wait stops helping an overloaded server. */
#define LLM_BACKOFF_MAX_NS (30 * DURATION_S)
/* A server asking for a longer pause (Retry-After) is waited for this long at most, so one
 * request cannot hang for hours; the retry may then fail again and count as an attempt. */
#define LLM_RETRY_AFTER_MAX_NS (120 * DURATION_S)
/* More attempts than this is a typo, not a policy. */
#define LLM_RETRIES_MAX 100
/* A whole conversation with tool outputs fits easily; more is a runaway input. */
#define LLM_REQUEST_MAX ((size_t)64 << 20)
/* The biggest answer accepted; real answers are a few kilobytes. */
#define LLM_RESPONSE_MAX ((size_t)64 << 20)
/* How much of an error response's body is kept for the message. */
#define LLM_ERROR_BODY_MAX ((size_t)64 << 10)
/* One Server-Sent Events line / event: a streamed chunk carries a few tokens; a server that
 * sends a whole answer in one event still fits. */
#define LLM_SSE_LINE_MAX ((size_t)16 << 20)
#define LLM_SSE_EVENT_MAX ((size_t)16 << 20)
/* API keys are tens of bytes; a longer one is not a key. */
#define LLM_KEY_MAX 4096
/* Base URLs are short; this bounds what goes into the request line. */
#define LLM_URL_MAX 2048
/* Header names in use are a few bytes ("Authorization", "api-key"). */
#define LLM_AUTH_HEADER_MAX 64

struct llm_config {
	const char *base_url;		/* ".../v1[?query]"; "/chat/completions" goes before the query */
	const char *api_key;		/* never logged; unused for fake-eliza */
	/* The header carrying the key: "Authorization" sends "Bearer <key>", any other name the
	 * bare key (Azure's "api-key"). NULL: the vendor's. */
	const char *auth_header;
	/* What the request may hold (lib/llm/vendor.h). NULL: the vendor of base_url's host. */
	const struct vendor *vendor;
	const char *model;
	int64_t timeout_ns;		/* per attempt: the whole exchange, or silence while streaming */
	int retries;			/* attempts after the first */
	int64_t backoff_ns;		/* wait before the first retry */
	bool stream;			/* ask for Server-Sent Events and report them as they come */
	const volatile sig_atomic_t *cancel;	/* non-zero: stop as soon as possible (or NULL) */
	/* With stream: each event ({"delta":"…"}, {"reasoning_delta":"…"} or
	 * {"tool_call_delta":{…}}) as it arrives. The object is only valid during the call.
	 * Returning -1 abandons the request. */
	int (*on_event)(struct json_object *ev, void *arg);
	/* Optional: before each retry's wait, why the last attempt failed, the wait, the number of
	 * the attempt to come (2 for the first retry) and of attempts in all. */
	void (*on_retry)(const char *why, int64_t wait_ns, int attempt, int attempts, void *arg);
	/* Optional trace (-v): a label and, for bodies, the text. Keys are redacted. */
	void (*trace)(const char *what, const char *data, size_t len, void *arg);
	void *arg;
};

struct llm_result {
	struct json_object *response;	/* the whole response (assembled when streamed) */
	struct json_object *message;	/* choices[0].message, borrowed from response */
	const char *finish_reason;	/* borrowed; "" when the server gave none */
};

/* Reads one request document from fd (at most LLM_REQUEST_MAX bytes) and checks it with
 * llm_check_request. SBX_EINVAL for bad input, SBX_ECANCELED when *cancel became non-zero. */
struct json_object *llm_read_request(int fd, const volatile sig_atomic_t *cancel,
				     struct sbx_err *e);
/* Checks {"model"?: string, "messages": [object with "role", …], "tools"?: [object, …]}. */
int llm_check_request(struct json_object *doc, struct sbx_err *e);
/* The model: flag, else the document's "model", else $OPENAI_MODEL, $MODEL, the default.
 * Borrowed from its source. */
const char *llm_pick_model(const char *flag, struct json_object *doc);
/* $GEMINI_API_KEY, else $OPENAI_API_KEY, else NULL (empty counts as unset). */
const char *llm_env_key(void);
/* The one refusal of a model that needs an API key when none is set. */
#define LLM_KEY_REQUIRED "GEMINI_API_KEY or OPENAI_API_KEY environment variable is required"
/* 0 when model can be called (the fake-eliza model needs no key, any other llm_env_key), else
 * -1 with e (SBX_EINVAL, LLM_KEY_REQUIRED). */
int llm_key_check(const char *model, struct sbx_err *e);
/* The base URL: flag, else $OPENAI_BASE_URL, else the default; one trailing '/' trimmed. */
char *llm_base_url(const char *flag);
/* The vendor: flag, else $LLM_VENDOR (*v NULL when neither names one); an unknown name is
 * SBX_EINVAL 'unknown vendor "NAME" (known: …)'. */
int llm_pick_vendor(const char *flag, const struct vendor **v, struct sbx_err *e);
/* The key's header: flag, else $LLM_AUTH_HEADER; NULL: the vendor's. */
const char *llm_auth_header(const char *flag);
/* The request body: model, the document's messages as vendor accepts them (NULL: generic),
 * its tools (omitted when empty) and any other top-level field as given; "stream":true when
 * asked. */
char *llm_request_body(struct json_object *doc, const char *model, bool stream,
		       const struct vendor *vendor);
/* The URL posted to: the base's path with one trailing '/' trimmed, "/chat/completions", then
 * the base's query (Azure's "?api-version=…"); a fragment is dropped. */
char *llm_endpoint(const char *base);

/* One chat completion with retries. Errors carry upstream's texts ("llm: api error (status
 * 400): <body>", "llm: http request failed: …"); code SBX_EINVAL for a bad configuration,
 * SBX_ECANCELED when canceled, SBX_EIO otherwise. */
int llm_chat(const struct llm_config *c, struct json_object *doc, struct llm_result *r,
	     struct sbx_err *e);
void llm_result_free(struct llm_result *r);

/* Retry policy, exposed for tests. HTTP statuses worth another attempt (as the official
 * OpenAI clients: 408, 409, 429, every 5xx), unless the server's x-should-retry header says
 * otherwise; libcurl results that are transient network failures. */
bool llm_retryable_status(long status);
bool llm_retryable_transport(int curl_code);
/* Wait before retry number attempt (0 = the first retry): base doubled per attempt, capped at
 * LLM_BACKOFF_MAX_NS, jittered into [d/2, d] by rnd; never less than retry_after_ns (capped at
 * LLM_RETRY_AFTER_MAX_NS; < 0 = none). */
int64_t llm_backoff_ns(int attempt, int64_t base_ns, int64_t retry_after_ns, uint32_t rnd);
/* A Retry-After value (delta-seconds or an HTTP-date, against now_ns wall time) in ns; -1 if
 * unreadable. */
int64_t llm_retry_after_ns(const char *value, int64_t now_ns);

/* choices[0].message of a response (borrowed), or NULL with e set. */
struct json_object *llm_response_message(struct json_object *resp, struct sbx_err *e);
/* choices[0].finish_reason of a response, or "" (borrowed). */
const char *llm_finish_reason(struct json_object *resp);

#endif
