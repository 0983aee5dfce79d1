/* mcphttp.h — MCP's Streamable HTTP transport (2025-11-25 "Transports") for lib/mcpserver,
 * served by libmicrohttpd (one thread per connection, bounded): one endpoint, MCPHTTP_PATH;
 * POST carries one JSON-RPC message (a request is answered as text/event-stream when the
 * client accepts it, so progress can precede the result; application/json otherwise; a
 * notification or response gets 202); GET (no server-initiated stream) gets 405; DELETE ends
 * the session. Every request needs "Authorization: Bearer <token>" (401 otherwise); an Origin
 * that is not a loopback one gets 403 (DNS rebinding). initialize opens a session whose id goes
 * out in Mcp-Session-Id; later requests must carry it (400 without, 404 for one unknown or
 * ended) and, after initialize, MCP-Protocol-Version (400 when unsupported).
 * The decisions about one request are in mcphttp_decide, apart from the sockets, so they can
 * be tested and fuzzed alone.
 * Ownership: strings in mcphttp_config are borrowed for the server's lifetime. */
#ifndef SBX_MCPHTTP_H
#define SBX_MCPHTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "mcpserver.h"

#define MCPHTTP_PATH "/mcp"
/* The largest POST body: the same bound as one stdio line (a file written by a tool). */
#define MCPHTTP_BODY_MAX JSONRPC_LINE_MAX
/* Connections served at once (each holds a thread). Of these, connections that have not yet
 * sent a request with the right token hold at most MCPHTTP_UNAUTH_MAX, and one source (all of
 * loopback is one per local user) MCPHTTP_CONNS_PER_SOURCE; past a cap a newcomer closes the
 * oldest such connection (lib/mcp/mcphttp_conns.c), so slow or silent clients cannot keep the real
 * one out. The library's own limit leaves room for connections being closed. */
#define MCPHTTP_CONN_MAX 64
#define MCPHTTP_UNAUTH_MAX 48
#define MCPHTTP_CONNS_PER_SOURCE 32
#define MCPHTTP_CONN_SLOTS (MCPHTTP_CONN_MAX + 32)
/* A connection with no request carrying the right token this long after it was accepted is
 * closed, however slowly it trickles its headers. */
#define MCPHTTP_AUTH_NS (INT64_C(5) * 1000000000)
/* Wrong tokens a second on the whole server, past a bucket of two seconds' worth: beyond it a
 * source that sent a wrong one lately gets 429 without a comparison (lib/util/acpauth.h). */
#define MCPHTTP_AUTH_FAILS_PER_S 5
/* Seconds a connection may sit without a byte moving (slow or stuck clients). Streams of
 * running calls send a comment line every MCPHTTP_KEEPALIVE_NS, so they never sit that long. */
#define MCPHTTP_IDLE_S 60
#define MCPHTTP_KEEPALIVE_NS (INT64_C(15) * 1000000000)
/* Request headers and the request line together: MCP needs a few short ones. */
#define MCPHTTP_HEADERS_MAX ((size_t)32 << 10)
/* Sessions kept at once: a client that never sends DELETE (the Inspector CLI, one per run)
 * must not grow the server; past this the least recently used idle one is ended. */
#define MCPHTTP_SESSIONS_MAX 64
/* A session nobody used for this long is ended (its sandbox expired long before). */
#define MCPHTTP_SESSION_IDLE_NS (INT64_C(24) * 3600 * 1000000000)
/* A generated token: 32 random bytes as 64 hex digits. */
#define MCPHTTP_TOKEN_LEN 64

struct mcphttp_config {
	const char *token;		/* the bearer token every request must carry */
	void (*log)(void *arg, const char *msg);
	void *log_arg;
};

/* What one request is, as read from its line and headers. Strings borrowed (may be NULL). */
struct mcphttp_req {
	const char *method, *path;
	const char *authorization, *origin, *accept, *content_type;
	const char *session_id, *protocol_version;
	bool session_known;		/* session_id names a live session */
	const char *session_version;	/* that session's negotiated revision (NULL: none yet) */
	const char *token;		/* the server's token */
};

enum mcphttp_verdict {
	MCPHTTP_OK,			/* go on: read the body, handle it */
	MCPHTTP_REFUSE,			/* answer status with message (and the headers below) */
};

struct mcphttp_decision {
	enum mcphttp_verdict verdict;
	int status;			/* HTTP status when refused */
	const char *message;		/* JSON-RPC error message for the body (static) */
	const char *www_authenticate;	/* 401: the header's value (static) */
	const char *allow;		/* 405: the Allow header (static) */
	bool authorized;		/* the token was compared and right */
};

/* Checks one request before its body: path, method, token, Origin, Accept, Content-Type,
 * session and protocol headers (in that order). */
void mcphttp_decide(const struct mcphttp_req *r, struct mcphttp_decision *d);
/* Whether an Origin header value names a loopback host (http or https, any port). */
bool mcphttp_origin_ok(const char *origin);
/* Whether an Accept value takes the media type ("text/event-stream"), counting * / * and
 * type/ *; an absent header takes everything. */
bool mcphttp_accepts(const char *accept, const char *type);

/* A new token: randhex(out, MCPHTTP_TOKEN_LEN / 2) (lib/util/randhex.h). */
/* Written to its file with paths_token_write (lib/util/paths.h). */

/* Serves on the listening socket lfd (taken) until stop_fd becomes readable; then ends every
 * session (snapshot, sandbox deleted). */
int mcphttp_run(struct mcp_server *srv, const struct mcphttp_config *cfg, int lfd, int stop_fd,
		struct sbx_err *e);

#endif
