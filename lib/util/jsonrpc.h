/* jsonrpc.h — JSON-RPC 2.0 over newline-delimited JSON (one message per line), as the Agent
 * Client Protocol frames it: line splitting with a bounded line length, message
 * classification with the standard error codes, message building, and the table of requests
 * this side sent and is waiting on (ids it chose, answers matched by id and JSON type).
 * Ownership: returned char * are newly allocated (caller frees); json_object pointers in a
 * struct jsonrpc_msg are borrowed from msg->doc, which jsonrpc_msg_free puts; objects passed to
 * the builders stay the caller's; objects handed out by jsonrpc_pending_wait are new
 * references the caller puts. */
#ifndef SBX_JSONRPC_H
#define SBX_JSONRPC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "err.h"
#include "xalloc.h"

/* The longest line accepted. A prompt with a pasted file or a tool result fits easily; the
 * reference SDK's own limit is 32 MiB, and a server must not let one peer make it buffer
 * more than this per connection. */
#define JSONRPC_LINE_MAX ((size_t)8 << 20)

enum {
	JSONRPC_PARSE_ERROR = -32700,
	JSONRPC_INVALID_REQUEST = -32600,
	JSONRPC_METHOD_NOT_FOUND = -32601,
	JSONRPC_INVALID_PARAMS = -32602,
	JSONRPC_INTERNAL_ERROR = -32603,
	JSONRPC_AUTH_REQUIRED = -32000,	/* ACP: authenticate first */
	JSONRPC_NOT_FOUND = -32002,	/* ACP: resource not found */
};

/* Splits a byte stream into lines: LF or CRLF, blank lines skipped, a line longer than
 * JSONRPC_LINE_MAX reported once and its remainder discarded up to the next newline. */
struct jsonrpc_reader {
	struct buf line;
	bool discarding;	/* inside an over-long line */
};

enum jsonrpc_event {
	JSONRPC_LINE,		/* a complete line (without its terminator) */
	JSONRPC_TOO_LONG,	/* a line exceeded JSONRPC_LINE_MAX */
};

/* Calls fn for every event in the n bytes at p; fn returning non-zero stops and is returned. */
int jsonrpc_reader_feed(struct jsonrpc_reader *r, const char *p, size_t n,
			int (*fn)(enum jsonrpc_event ev, const char *line, size_t len, void *arg),
			void *arg);
/* At end of input: a final line without a newline counts as a line. */
int jsonrpc_reader_finish(struct jsonrpc_reader *r,
			  int (*fn)(enum jsonrpc_event ev, const char *line, size_t len, void *arg),
			  void *arg);
void jsonrpc_reader_free(struct jsonrpc_reader *r);

enum jsonrpc_kind {
	JSONRPC_REQUEST,	/* id + method */
	JSONRPC_NOTIFICATION,	/* method, no id */
	JSONRPC_RESPONSE,	/* id + result or error */
};

struct jsonrpc_msg {
	enum jsonrpc_kind kind;
	struct json_object *doc;	/* the whole message (owned) */
	struct json_object *id;		/* borrowed; NULL for notifications */
	const char *method;		/* borrowed; NULL for responses */
	struct json_object *params;	/* borrowed; may be NULL */
	struct json_object *result;	/* borrowed; responses */
	struct json_object *error;	/* borrowed; error responses */
};

/* Classifies one line. On failure returns -1 with *code (-32700 or -32600), the reason in e,
 * and *bad_id set to a new reference to the request's id when one could be read (else NULL:
 * the error goes out with "id":null). */
int jsonrpc_parse(const char *line, size_t len, struct jsonrpc_msg *m, int *code,
		  struct json_object **bad_id, struct sbx_err *e);
void jsonrpc_msg_free(struct jsonrpc_msg *m);

/* Builders: each returns one encoded line ending in "\n". A NULL id is encoded as null. */
char *jsonrpc_result_line(struct json_object *id, struct json_object *result);
char *jsonrpc_error_line(struct json_object *id, int code, const char *message,
			 struct json_object *data);
char *jsonrpc_notification_line(const char *method, struct json_object *params);
char *jsonrpc_request_line(int64_t id, const char *method, struct json_object *params);

/* Requests this side sent and is waiting on. Ids are integers counted from 0. */
struct jsonrpc_pending_slot;
struct jsonrpc_pending {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t next_id;
	size_t count, max;
	bool closed;			/* the peer went away: every wait fails */
	struct jsonrpc_pending_slot *slots;
};

void jsonrpc_pending_init(struct jsonrpc_pending *p, size_t max);
void jsonrpc_pending_destroy(struct jsonrpc_pending *p);
/* Reserves an id. -1 when max requests are already outstanding or the peer is gone. */
int jsonrpc_pending_add(struct jsonrpc_pending *p, int64_t *id, struct sbx_err *e);
/* Delivers a response; takes no reference from m. Returns -1 when no request has this id
 * (with the same JSON type: an integer). */
int jsonrpc_pending_resolve(struct jsonrpc_pending *p, const struct jsonrpc_msg *m);
/* Waits for the answer to id and forgets the id. Returns 0 with *result (or *error) set to a
 * new reference, -1 with SBX_ECANCELED when *stop became non-zero (checked at every
 * jsonrpc_pending_wake), SBX_EIO when the peer went away. */
int jsonrpc_pending_wait(struct jsonrpc_pending *p, int64_t id, const volatile int *stop,
			 struct json_object **result, struct json_object **error, struct sbx_err *e);
/* jsonrpc_pending_wait that also gives up at deadline (CLOCK_REALTIME ns; 0: never) with
 * SBX_ETIMEDOUT. */
int jsonrpc_pending_wait_until(struct jsonrpc_pending *p, int64_t id, const volatile int *stop,
			       int64_t deadline, struct json_object **result,
			       struct json_object **error, struct sbx_err *e);
/* Forgets a reserved id whose request could not be sent. */
void jsonrpc_pending_drop(struct jsonrpc_pending *p, int64_t id);
/* Wakes every waiter so it rechecks its stop flag. */
void jsonrpc_pending_wake(struct jsonrpc_pending *p);
/* The peer is gone: every current and future wait fails. */
void jsonrpc_pending_close(struct jsonrpc_pending *p);

#endif
