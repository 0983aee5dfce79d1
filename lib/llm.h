/* llm.h — one OpenAI-compatible chat completion: the request document checked and encoded, the
 * POST to <base>/chat/completions over libcurl with retries (exponential backoff with jitter,
 * Retry-After honoured), the answer's first choice, and streamed answers (Server-Sent Events)
 * assembled into the very message a plain request would have returned. The model "fake-eliza"
 * is answered in-process (lib/eliza.h) without loading libcurl.
 * Every field a server sends is kept: unknown message fields (extra_content, thought_signature)
 * go back to the caller verbatim, since Gemini wants its thought signatures on the next turn.
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

struct llm_config {
	const char *base_url;		/* ".../v1"; "/chat/completions" is appended */
	const char *api_key;		/* sent as a Bearer token, never logged; unused for fake-eliza */
	const char *model;
	int64_t timeout_ns;		/* per attempt: the whole exchange, or silence while streaming */
	int retries;			/* attempts after the first */
	int64_t backoff_ns;		/* wait before the first retry */
	bool stream;			/* ask for Server-Sent Events and report them as they come */
	const volatile sig_atomic_t *cancel;	/* non-zero: stop as soon as possible (or NULL) */
	/* With stream: each event ({"delta":"…"} or {"tool_call_delta":{…}}) as it arrives. The
	 * object is only valid during the call. Returning -1 abandons the request. */
	int (*on_event)(struct json_object *ev, void *arg);
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
/* The base URL: flag, else $OPENAI_BASE_URL, else the default; one trailing '/' trimmed. */
char *llm_base_url(const char *flag);
/* The request body: model, the document's messages and tools (omitted when empty) and any
 * other top-level field, as given; "stream":true when asked. */
char *llm_request_body(struct json_object *doc, const char *model, bool stream);

/* One chat completion with retries. Errors carry upstream's texts ("llm: api error (status
 * 400): <body>", "llm: http request failed: …"); code SBX_EINVAL for a bad configuration,
 * SBX_ECANCELED when canceled, SBX_EIO otherwise. */
int llm_chat(const struct llm_config *c, struct json_object *doc, struct llm_result *r,
	     struct sbx_err *e);
void llm_result_free(struct llm_result *r);

/* Retry policy, exposed for tests. HTTP statuses worth another attempt (408, 429, 5xx
 * gateway/overload); libcurl results that are transient network failures. */
bool llm_retryable_status(long status);
bool llm_retryable_transport(int curl_code);
/* Wait before retry number attempt (0 = the first retry): base doubled per attempt, capped at
 * LLM_BACKOFF_MAX_NS, jittered into [d/2, d] by rnd; never less than retry_after_ns (capped at
 * LLM_RETRY_AFTER_MAX_NS; < 0 = none). */
int64_t llm_backoff_ns(int attempt, int64_t base_ns, int64_t retry_after_ns, uint32_t rnd);
/* A Retry-After value (delta-seconds or an HTTP-date, against now_ns wall time) in ns; -1 if
 * unreadable. */
int64_t llm_retry_after_ns(const char *value, int64_t now_ns);

/* Folds one streamed delta into acc: strings are appended (role, id, type, name, index and
 * thought_signature are replaced), objects merged, arrays of {"index":…} objects merged by
 * index, other values replaced; null never overwrites. */
void llm_delta_merge(struct json_object *acc, struct json_object *delta);
/* choices[0].message of a response (borrowed), or NULL with e set. */
struct json_object *llm_response_message(struct json_object *resp, struct sbx_err *e);

#endif
