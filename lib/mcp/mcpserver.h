/* mcpserver.h — sbx's toolsets served over the Model Context Protocol, independent of the
 * transport: MCP sessions, each with one agent session (lib/agent/agent.h, tools only) and so one
 * sandbox with the agent-loop lifecycle; the method table (initialize, ping, tools/list,
 * tools/call, notifications/cancelled); calls on worker threads, one at a time per session,
 * with progress notifications while they run; snapshots after calls that may have changed the
 * home, once the session has been quiet for snapshot_delay_ns. stdio is served here over
 * lib/peer; Streamable HTTP in lib/mcphttp.
 * Threads: every function may be called from any thread; a session is used by its transport
 * and by the server's workers, never freed while either holds it.
 * Ownership: strings in mcp_server_config are borrowed for the server's lifetime; messages
 * handed to mcp_session_handle are taken; lines handed to a sink are the sink's. */
#ifndef SBX_MCPSERVER_H
#define SBX_MCPSERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "jsonrpc.h"
#include "mcp.h"

#define MCP_SERVER_NAME "sbx-mcp"
#define MCP_SERVER_TITLE "sbx sandboxed tools"
#define MCP_SERVER_VERSION "0.1.0"
/* Calls running or waiting in one session: a model asks for a few at a time; more is a
 * client gone wrong, and each waiting call holds a thread. */
#define MCP_CALLS_PER_SESSION_MAX 16
/* How often a running call with a progressToken reports progress (also the tick of the
 * server's timer: snapshots and idle sessions are checked at this pace). */
#define MCP_PROGRESS_INTERVAL_NS (INT64_C(1) * 1000000000)
/* Quiet time after the last call that may have changed the home before its snapshot (MCP has
 * no turn boundary; a model's burst of calls comes seconds apart, its thinking longer). */
#define MCP_DEFAULT_SNAPSHOT_DELAY_NS (INT64_C(2) * 1000000000)
/* A session that never goes quiet is still snapshotted after a call once its oldest unsaved
 * change is this old. */
#define MCP_SNAPSHOT_MAX_AGE_NS (INT64_C(60) * 1000000000)
/* The stack of a worker thread (calls and snapshots spawn children, parse JSON). */
#define MCP_THREAD_STACK ((size_t)512 << 10)

struct mcp_server_config {
	/* Passed to every session's agent session (lib/agent/agent.h). */
	const char *backend, *namespace, *image, *homedir, *toolset, *bindir;
	int64_t tool_timeout_ns, ttl_ns;
	char *const *create_args;
	/* < 0: MCP_DEFAULT_SNAPSHOT_DELAY_NS; 0: a snapshot right after each such call. */
	int64_t snapshot_delay_ns;
	/* Log lines for people (may be NULL), and -v's trace of each step (may be NULL). */
	void (*log)(void *arg, const char *msg);
	void (*trace)(void *arg, const char *label, const char *json);
	void *log_arg;
};

/* Where the answers to one incoming message go. send may be called from any thread and takes
 * the line; done (may be NULL) says no more lines will come for this message. */
struct mcp_sink {
	void (*send)(void *arg, char *line);
	void (*done)(void *arg);
	void *arg;
};

struct mcp_server;
struct mcp_session;

/* Checks the toolset and starts the server's timer thread. */
struct mcp_server *mcp_server_new(const struct mcp_server_config *cfg, struct sbx_err *e);
/* Stops the timer. Every session must be closed first. */
void mcp_server_free(struct mcp_server *srv);

/* A new session; name NULL: "mcp" + 16 random hex digits. The sandbox is made on the first
 * tool call. */
struct mcp_session *mcp_session_open(struct mcp_server *srv, const char *name, struct sbx_err *e);
/* The session's name, also its sandbox's and its MCP session id (borrowed). */
const char *mcp_session_name(const struct mcp_session *ss);
/* The revision initialize settled on, or NULL before it. */
const struct mcp_version *mcp_session_version(struct mcp_session *ss);
/* Nanoseconds (monotonic) of the last message or call end, and whether calls are in flight. */
int64_t mcp_session_last_used(struct mcp_session *ss);
bool mcp_session_busy(struct mcp_session *ss);
/* Handles one request or notification (taken): answered through sink before returning, or,
 * for tools/call, later from a worker. Requests answered later keep sink until its done. */
void mcp_session_handle(struct mcp_session *ss, struct jsonrpc_msg *m, const struct mcp_sink *sink);
/* Cancels what is running and refuses new calls, without waiting (a server shutting down). */
void mcp_session_cancel(struct mcp_session *ss);
/* Cancels what is running (no answers are sent for it), waits for the workers, snapshots a
 * dirty home, deletes the sandbox when delete_sandbox, frees. -1 with e when the delete failed. */
int mcp_session_close(struct mcp_session *ss, bool delete_sandbox, struct sbx_err *e);

/* Serves one session over a byte stream (stdio: in_fd 0, out_fd 1; both taken) until the
 * client closes it or stop_fd becomes readable. Does not close the session. */
int mcp_serve_stream(struct mcp_session *ss, int in_fd, int out_fd, int stop_fd, struct sbx_err *e);

#endif
