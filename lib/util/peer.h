/* peer.h — one JSON-RPC connection over a byte stream (a TCP socket, optionally TLS, or a pair
 * of pipes): an I/O loop that reads NDJSON lines and writes a queue of outgoing lines, so
 * any thread may send while one thread owns the descriptors (an OpenSSL connection must not be
 * used by two threads at once). Malformed lines are answered here (-32700 / -32600, the
 * connection stays open); answers to our own requests go to the pending table; requests and
 * notifications go to the handler.
 * Ownership: peer_new takes the descriptors and the SSL object (peer_free closes them);
 * peer_send takes the line; the handler owns each message it is given. */
#ifndef SBX_PEER_H
#define SBX_PEER_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "jsonrpc.h"

/* Bytes queued for a peer that does not read. A turn streams text and tool output as it
 * comes; a client that stops reading must not make the server buffer without end, so past
 * this the connection is dropped. */
#define PEER_OUTQ_MAX ((size_t)32 << 20)
/* Outgoing requests waiting for an answer per connection (one per running turn is normal). */
#define PEER_PENDING_MAX 64

struct peer;

/* Called on the I/O thread for each request or notification; must not block for long. */
typedef void (*peer_handler)(struct peer *p, struct jsonrpc_msg *m, void *arg);

/* rfd and wfd may be the same socket; ssl is NULL for plain streams. */
struct peer *peer_new(int rfd, int wfd, SSL *ssl);
/* Connects to "host:port" within timeout_ms; with tls, verifies the server against ca (PEM
 * file; NULL: the system store) unless insecure. */
struct peer *peer_dial(const char *addr, int timeout_ms, bool tls, const char *ca,
		       bool insecure, struct sbx_err *e);
/* Spawns argv (looked up on PATH) in directory cwd, in a process group of its own (a
 * terminal's Ctrl-C reaches the caller only), talking over its standard input and output; its
 * standard error goes to err_fd (-1: ours). *pid gets its process id. On failure *errnum is
 * posix_spawn's error. */
struct peer *peer_spawn(char *const argv[], const char *cwd, int err_fd, pid_t *pid,
			int *errnum, struct sbx_err *e);
void peer_free(struct peer *p);
/* Runs the I/O loop until the peer closes, an I/O error, or peer_close. Returns 0 on a clean
 * end of input, -1 with the cause in e otherwise. Pending waits fail afterwards. */
int peer_run(struct peer *p, peer_handler fn, void *arg, struct sbx_err *e);
/* Queues one encoded line (taken). False when the peer is gone (the line is freed). */
bool peer_send(struct peer *p, char *line);
/* Waits until at most `below` bytes are queued (so a long replay does not overrun
 * PEER_OUTQ_MAX). False when the peer is gone. */
bool peer_wait_room(struct peer *p, size_t below);
/* Sends a request and waits for its answer; see jsonrpc_pending_wait for stop and results. */
int peer_call(struct peer *p, const char *method, struct json_object *params,
	      const volatile int *stop, struct json_object **result, struct json_object **error,
	      struct sbx_err *e);
/* peer_call giving up at deadline (CLOCK_REALTIME ns; 0: never) with SBX_ETIMEDOUT. */
int peer_call_until(struct peer *p, const char *method, struct json_object *params,
		    const volatile int *stop, int64_t deadline, struct json_object **result,
		    struct json_object **error, struct sbx_err *e);
/* peer_call_until telling the request's id (*id, set once it was sent; -1 before) so a caller
 * that gave up can say so to the peer (MCP notifications/cancelled). */
int peer_call_id(struct peer *p, const char *method, struct json_object *params,
		 const volatile int *stop, int64_t deadline, int64_t *id,
		 struct json_object **result, struct json_object **error, struct sbx_err *e);
/* Wakes every peer_call waiting on this peer so it rechecks its stop flag. */
void peer_wake_calls(struct peer *p);
/* Calls fn with ">" and each line sent, "<" and each line received (debugging). Set before
 * peer_run. */
void peer_set_trace(struct peer *p, void (*fn)(void *arg, const char *dir, const char *line),
		    void *arg);
/* Waits up to wait_ms for a spawned agent to exit (its input closed), then sends SIGTERM and
 * waits for it. */
void peer_reap(pid_t pid, int wait_ms);
/* Counts answers still to come (delta +1 when a request is taken on, -1 when its answer is
 * queued): at end of input the loop goes on until the count is back to 0 and every queued
 * line is written, so a client that closes its input after its last request still gets the
 * answers (stdio MCP clients pipe requests this way). */
void peer_hold(struct peer *p, int delta);
/* Asks the I/O loop to end (any thread). */
void peer_close(struct peer *p);
bool peer_closed(struct peer *p);

#endif
