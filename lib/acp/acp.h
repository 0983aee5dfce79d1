/* acp.h — the agent side of the Agent Client Protocol v1 over JSON-RPC peers (lib/util/peer.h):
 * a method table (initialize, authenticate, session/new, session/load, session/prompt,
 * session/cancel), a process-wide session registry shared by every connection, and the
 * mapping of agent turns (lib/agent/agent.h) onto session/update notifications and
 * session/request_permission requests. Upstream: cmd/acp-server; wire shapes: ACP v1 schema.
 * Who may do what: a connection authenticates as a principal (lib/util/acpauth.h) unless the
 * server runs without authentication; a session belongs to the principal that created it
 * (recorded in lib/acp/acpreg.h's file) and is driven by one connection at a time.
 * Threads: acp_serve runs one connection on the calling thread; prompts and loads run on
 * worker threads of their own, so a slow turn never holds up another session or connection.
 * Ownership: strings and objects in acp_config are borrowed for the server's lifetime;
 * acp_serve takes the peer; returned char * are newly allocated (caller frees). */
#ifndef SBX_ACP_H
#define SBX_ACP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "acpauth.h"
#include "err.h"
#include "peer.h"

#define ACP_PROTOCOL_VERSION 1
#define ACP_AGENT_NAME "sandboxed-tools"
#define ACP_AGENT_VERSION "0.1.0"
/* The one authentication method advertised when a token is configured. */
#define ACP_AUTH_METHOD "bearer-token"
/* Sessions open on one connection at once (created or loaded there and not yet closed, taken
 * over or ended with it): each keeps its history in memory, so one client must not be able to
 * fill the server. */
#define ACP_SESSIONS_PER_CONN_MAX 64
/* Prompts and loads in progress on one connection (one per session is the normal most). */
#define ACP_WORKERS_PER_CONN_MAX 64
/* Sessions in the whole registry (never evicted, as upstream). */
#define ACP_SESSIONS_MAX 10000
/* Wrong tokens accepted on one connection before it is closed (slows guessing down; the
 * per-source guard bounds guesses across connections). */
#define ACP_AUTH_FAILURES_MAX 3
/* Defaults of the connection hygiene flags: an unauthenticated connection is closed after
 * ACP_AUTH_TIMEOUT_NS; one source address may hold ACP_CONNS_PER_SOURCE connections and fail
 * ACP_AUTH_FAILS_PER_MIN authentications a minute before it is blocked (see acpauth.h). */
#define ACP_AUTH_TIMEOUT_NS (INT64_C(10) * 1000000000)
#define ACP_CONNS_PER_SOURCE 64
#define ACP_AUTH_FAILS_PER_MIN 10
/* Failed authentications a second, server-wide, once its bucket is empty; and the live
 * sessions (each with its sandbox) one principal may hold. */
#define ACP_AUTH_FAILS_PER_S 5
#define ACP_SESSIONS_PER_PRINCIPAL 64
/* "acp" + 32 hex digits: 128 random bits, so ids cannot be guessed. */
#define ACP_SESSION_ID_LEN 35
/* How long a session/load waits for the turn it takes over to stop. */
#define ACP_TAKEOVER_WAIT_NS (INT64_C(30) * 1000000000)
/* The stack of a worker or connection thread: turns spawn children and parse JSON with
 * json-c, which needs little stack; the default 8 MiB reservation per thread is waste. */
#define ACP_THREAD_STACK ((size_t)512 << 10)

struct acp_config {
	/* Passed to every agent session (lib/agent/agent.h). */
	const char *backend, *namespace, *image, *homedir, *toolset, *model, *bindir;
	int64_t tool_timeout_ns;
	int max_tool_rounds;		/* <= 0: AGENT_DEFAULT_MAX_TOOL_ROUNDS */
	/* Models a client may pick (the "model" config option; NULL-terminated); the default
	 * model is always among them. May be NULL. */
	char *const *models;
	int images;			/* image prompts: 1 yes, 0 no, -1 by the model's name */
	long long context_window;	/* tokens, for usage_update; <= 0: by the model's name */
	char *const *create_args;	/* extra sbx-create words (agent_config.create_args) */
	const struct acp_auth *auth;	/* the principals; NULL: no authentication */
	const char *anon_principal;	/* who connections are without auth (NULL: "anonymous") */
	/* The issued-sessions file lives here (<state_dir>/sessions.jsonl); NULL: none, so only
	 * sessions made by this process can be loaded. */
	const char *state_dir;
	int64_t auth_timeout_ns;	/* TCP connections not authenticated by then are closed; 0 never */
	int conns_per_source;		/* <= 0: no cap */
	int auth_fails_per_min;		/* per source; <= 0: no blocking */
	int auth_fails_per_s;		/* server-wide bucket (acp_guard_set_rate); <= 0: none */
	int max_sessions;		/* live sessions per principal; <= 0: ACP_SESSIONS_MAX */
	/* Log lines for people (may be NULL). */
	void (*log)(void *arg, const char *msg);
	void *log_arg;
};

struct acp_server;

/* Opens the issued-sessions file when cfg->state_dir is set. */
struct acp_server *acp_server_new(const struct acp_config *cfg, struct sbx_err *e);
/* Records session id (made by another tool, e.g. agent-loop) as issued to principal, so it can
 * be loaded. */
int acp_server_import(struct acp_server *srv, const char *id, const char *principal,
		      struct sbx_err *e);
/* Serves one connection until it ends; its running turns are then cancelled (the sessions
 * stay). Takes p (freed before returning). */
int acp_serve(struct acp_server *srv, struct peer *p, struct sbx_err *e);
/* Simultaneous connections acp_server_run serves: each holds a thread; beyond this new ones
 * are closed at once. */
#define ACP_CONN_MAX 1024
/* Of these, unauthenticated ones hold at most ACP_UNAUTH_MAX: the rest is kept for principals
 * who authenticated, so a flood of connections that never log in cannot take every slot.
 * Beyond it (or beyond the per-source cap) a new connection closes the oldest unauthenticated
 * one (of its source, for the per-source cap) instead of being refused, so a real client can
 * always get in and log in. */
#define ACP_UNAUTH_MAX (ACP_CONN_MAX * 3 / 4)
/* Slots for connections being closed to make room, until their threads end. */
#define ACP_CONN_SLOTS (ACP_CONN_MAX + 256)

/* Serves until stop_fd becomes readable: connections accepted on lfd (TLS when tls is not
 * NULL), each on a thread of its own, or, when lfd < 0, one connection on standard input and
 * output (its end also stops). Then refuses new prompts, gives running turns drain_ns, cancels
 * the rest and closes every connection. Logs "client connected remote=…" and the like. */
int acp_server_run(struct acp_server *srv, int lfd, SSL_CTX *tls, int stop_fd, int64_t drain_ns,
		   struct sbx_err *e);
/* Refuses new prompts, waits up to drain_ns for running turns, cancels the rest and waits for
 * them to stop. */
void acp_server_drain(struct acp_server *srv, int64_t drain_ns);
/* Deletes the sandboxes the server's sessions created. Returns how many deletions failed. */
int acp_server_delete_sandboxes(struct acp_server *srv);
void acp_server_free(struct acp_server *srv);

/* The ACP ToolKind for a tool name (upstream's mapping; "other" for unknown names). */
const char *acp_tool_kind(const char *name);
/* A new session id: "acp" + 32 lowercase hex digits from 16 random bytes. */
int acp_new_session_id(char out[ACP_SESSION_ID_LEN + 1], struct sbx_err *e);

#endif
