/* acp.h — the agent side of the Agent Client Protocol v1 over JSON-RPC peers (lib/peer.h):
 * a method table (initialize, authenticate, session/new, session/load, session/prompt,
 * session/cancel), a process-wide session registry shared by every connection, and the
 * mapping of agent turns (lib/agent.h) onto session/update notifications and
 * session/request_permission requests. Upstream: cmd/acp-server; wire shapes: ACP v1 schema.
 * Threads: acp_serve runs one connection on the calling thread; prompts and loads run on
 * worker threads of their own, so a slow turn never holds up another session or connection.
 * Ownership: strings in acp_config are borrowed for the server's lifetime; acp_serve takes the
 * peer; returned char * are newly allocated (caller frees). */
#ifndef SBX_ACP_H
#define SBX_ACP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "err.h"
#include "peer.h"

#define ACP_PROTOCOL_VERSION 1
#define ACP_AGENT_NAME "sandboxed-tools"
#define ACP_AGENT_VERSION "0.1.0"
/* The one authentication method advertised when a token is configured. */
#define ACP_AUTH_METHOD "bearer-token"
/* Sessions one connection may create or load: each keeps its history in memory for the life of
 * the process, so one client must not be able to fill the server. */
#define ACP_SESSIONS_PER_CONN_MAX 64
/* Prompts and loads in progress on one connection (one per session is the normal most). */
#define ACP_WORKERS_PER_CONN_MAX 64
/* Sessions in the whole registry (never evicted, as upstream). */
#define ACP_SESSIONS_MAX 10000
/* Wrong tokens accepted on one connection before it is closed (slows guessing down). */
#define ACP_AUTH_FAILURES_MAX 3
/* A bearer token is a few dozen bytes; a longer file is a mistake. */
#define ACP_TOKEN_MAX 4096
/* The stack of a worker or connection thread: turns spawn children and parse JSON with
 * json-c, which needs little stack; the default 8 MiB reservation per thread is waste. */
#define ACP_THREAD_STACK ((size_t)512 << 10)

struct acp_config {
	/* Passed to every agent session (lib/agent.h). */
	const char *backend, *namespace, *image, *homedir, *toolset, *model, *bindir;
	int64_t tool_timeout_ns;
	char *const *create_args;	/* extra sbx-create words (agent_config.create_args) */
	const char *auth_token;		/* NULL: no authentication */
	/* Log lines for people (may be NULL). */
	void (*log)(void *arg, const char *msg);
	void *log_arg;
};

struct acp_server;

struct acp_server *acp_server_new(const struct acp_config *cfg);
/* Serves one connection until it ends; its running turns are then cancelled (the sessions
 * stay). Takes p (freed before returning). */
int acp_serve(struct acp_server *srv, struct peer *p, struct sbx_err *e);
/* Simultaneous connections acp_server_run serves: each holds a thread; beyond this new ones
 * are closed at once. */
#define ACP_CONN_MAX 1024

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
/* A new session id: "acp" + 16 lowercase hex digits from 8 random bytes. */
int acp_new_session_id(char out[20], struct sbx_err *e);
/* Reads a token file: surrounding white space trimmed, empty or over ACP_TOKEN_MAX refused. */
char *acp_read_token(const char *path, struct sbx_err *e);
/* Constant-time token comparison (the lengths leak nothing either). */
bool acp_token_equal(const char *a, const char *b);

#endif
