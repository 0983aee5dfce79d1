/* mcpserver_int.h — what the two parts of sbx-mcp's server share (lib/mcp/mcpserver.c: the
 * server, sessions, timer and stdio; lib/mcp/mcpmethods.c: the method table and tools/call).
 * Not for other modules. Locking: srv->mu guards what is marked so. */
#ifndef SBX_MCPSERVER_INT_H
#define SBX_MCPSERVER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent.h"
#include "mcpserver.h"
#include "name.h"
#include "toolset.h"

struct mcp_call {
	struct mcp_call *next;
	struct mcp_session *ss;
	struct json_object *id, *token;	/* token: NULL when no progress was asked for */
	char *name, *arguments;
	int cancel_pipe[2];		/* written to cancel */
	/* Guarded by srv->mu: */
	bool cancelled;
	const char *phase;		/* what the progress messages say */
	int64_t started_ns, last_progress_ns, progress;
	struct mcp_sink sink;
};

struct mcp_session {
	struct mcp_session *next;
	struct mcp_server *srv;
	char name[NAME_MAX_LEN + 1];
	struct agent_session *as;
	pthread_mutex_t run_mu;		/* held while as runs a call or a snapshot */
	/* Guarded by srv->mu: */
	const struct mcp_version *version;
	struct mcp_call *calls;		/* running or waiting for run_mu */
	int ncalls, workers;		/* workers: threads holding the session */
	bool snapshotting, snapshot_failed, closing, dirty;
	int64_t last_used_ns, dirty_since_ns;
};

struct mcp_server {
	struct mcp_server_config cfg;
	const struct toolset *ts;
	char *instructions;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* workers ended; the timer's sleep */
	struct mcp_session *sessions;
	pthread_t timer;
	bool stop;
};

/* mcpserver.c: a message for the log; a result or an error to a sink (result taken); a
 * detached worker thread with a small stack (0 or -1); the quiet time before a snapshot; a
 * running call's cancellation (caller holds srv->mu). */
void mcp_srv_log(struct mcp_server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mcp_reply(const struct mcp_sink *k, struct json_object *id, struct json_object *result);
void mcp_reply_error(const struct mcp_sink *k, struct json_object *id, int code,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int mcp_start_thread(void *(*fn)(void *), void *arg);
int64_t mcp_snapshot_delay(const struct mcp_server *srv);
void mcp_cancel_call_locked(struct mcp_call *c);
/* Under ss->run_mu: the snapshot, then the session's state. */
void mcp_snapshot_locked(struct mcp_session *ss);
/* Cancels every call of ss and waits until no worker holds it. */
void mcp_session_quiesce(struct mcp_session *ss);

#endif
