/* acp_int.h — what the parts of the ACP agent share; not for other modules. The parts:
 * lib/acp/acp.c, the server and the method table; lib/acp/acplisten.c, its listener and connections;
 * lib/acp/acpsess.c, the session registry, ownership and attachment; lib/acp/acplifecycle.c,
 * session/new, load, resume, close and list; lib/acp/acpconfig.c, modes and config options;
 * lib/acp/acpprompt.c, a prompt's content; lib/acp/acpturn.c, a turn mapped onto session updates;
 * lib/acp/acpreplay.c, a stored conversation replayed; lib/acp/acpmcp.c, a session's mcpServers.
 * Locking: srv->mu guards the session list, every session's attachment and busy state, and
 * every connection's counters; fields marked "turn" belong to the thread running the session's
 * turn or replay (the one that set busy). */
#ifndef SBX_ACP_INT_H
#define SBX_ACP_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "acp.h"
#include "acpauth.h"
#include "acpreg.h"
#include "acptool.h"
#include "agent.h"
#include "name.h"
#include "net.h"

/* Tool names remembered per session for an "always" answer: a toolset has a handful. */
#define ACP_ALWAYS_MAX 64
/* A resource read for a prompt (resource_link via fs/read_text_file, embedded resource) is
 * cut here: context for the model, not a way to fill its window. */
#define ACP_RESOURCE_MAX ((size_t)1 << 20)
/* MCP servers one session may ask for (each is a process in its sandbox). */
#define ACP_MCP_SERVERS_MAX 16
/* Session titles: the first line of the first prompt, cut to this many bytes. */
#define ACP_TITLE_MAX 80

/* When the agent asks before running a tool. */
enum acp_mode {
	ACP_MODE_ASK,		/* before every tool */
	ACP_MODE_AUTO_READ,	/* before edits and commands; read and search tools just run */
	ACP_MODE_NEVER_ASK,	/* never */
	ACP_MODE_COUNT
};
struct acp_mode_info {
	const char *id, *name, *description;
};
extern const struct acp_mode_info acp_modes[ACP_MODE_COUNT];

struct acp_session {
	struct acp_session *next;
	char id[NAME_MAX_LEN + 1];
	char *principal;		/* its owner */
	struct acp_server *srv;
	struct agent_session *as;
	struct acp_mcp *mcp;		/* its mcpServers (lib/acp/acpmcp.c); NULL: none */
	char *cwd;			/* the client's working directory for it */
	char *workdir;			/* the sandbox directory cwd maps to */
	enum acp_mode mode;
	char *model;
	bool titled;			/* it has a title (session_info_update sent) */
	/* Guarded by srv->mu: */
	int refs;			/* threads holding it outside the lock */
	bool closed;			/* out of the list; the last holder frees it */
	struct acp_conn *conn;		/* the connection driving it; NULL: detached */
	bool busy;			/* a turn or a replay is running */
	struct acp_conn *turn_conn;	/* the connection whose prompt or replay is running */
	int cancel_pipe[2];		/* written to cancel the running turn */
	volatile int cancel;
	bool tool_ran;			/* a sandbox may exist for it */
	/* turn: */
	char *always[ACP_ALWAYS_MAX];	/* tool names answered "always" */
	bool always_allow[ACP_ALWAYS_MAX];
	size_t nalways;
	bool streamed;			/* the current assistant message was sent as deltas */
	char *open_call;		/* announced tool call not yet ended (calls are sequential) */
	struct peer *out;		/* where the running turn's updates go */
	bool thought_streamed;		/* the current message's reasoning was sent as deltas */
	size_t cur_msg;			/* history index of the assistant message whose calls run */
	struct json_object *cur_calls;	/* its tool_calls (borrowed from the history) */
	char finish[32];		/* the last model call's finish_reason */
	struct json_object *extra_decls;	/* the extra tools offered (acp_extra_tools_update) */
};

struct acp_conn {
	struct acp_server *srv;
	struct peer *p;
	bool initialized, authenticated;
	const char *principal;		/* who this is; NULL until authenticated (borrowed) */
	int auth_failures;
	/* Guarded by srv->mu: */
	size_t nsessions;		/* sessions attached to this connection */
	int making;			/* session/new in progress (counted for its principal) */
	int workers;
	int64_t deadline;		/* monotonic ns: closed unless authenticated by then; 0 none */
	bool guarded;			/* counted under source in srv->guard */
	bool admitted;			/* authenticated (initialized, without auth): keeps its slot */
	bool evicted;			/* closed to make room; no longer counted in srv->nlive */
	int slot;			/* its index in srv->conns; -1: none (stdio, acp_serve) */
	int64_t since;			/* monotonic ns it was accepted */
	bool notices;			/* the client takes `notice` session updates */
	bool fs_read;			/* the client serves fs/read_text_file */
	char remote[NET_ADDR_MAX];	/* "host:port" or "stdio" (logs) */
	char source[NET_ADDR_MAX];	/* what the per-source guard counts it under */
};

struct acp_server {
	struct acp_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* workers, connections or a session's busy state changed */
	struct acp_conn *conns[ACP_CONN_SLOTS];	/* open connections (acp_server_run) */
	int nconns;			/* connection threads running */
	int nlive;			/* connections counted against ACP_CONN_MAX (not evicted) */
	int stdio_done;			/* eventfd: the stdio connection ended */
	int wakefd;			/* eventfd: a connection deadline was set */
	struct acp_session *sessions;
	size_t nsessions;
	struct acp_session *retired;	/* closed to make room, sandboxes still to delete */
	int workers;			/* prompt/load threads running, all connections */
	bool draining;
	struct acpreg *reg;		/* issued sessions; NULL: only this process's */
	struct acp_guard *guard;
	int64_t refusal_logged;		/* when "refusing authentication" was last logged */
};

/* A request or notification being handled. */
struct req {
	struct acp_conn *c;
	struct json_object *id;		/* NULL for notifications */
	struct json_object *params;	/* an object (possibly empty) */
};

/* ---- lib/acp/acp.c ---- */
/* A connection of srv over p (remote: "host:port", NULL for stdio), and its life: runs it
 * until its peer ends, then stops what it started, detaches its sessions (they stay for a
 * later load) and frees the peer. */
struct acp_conn *acp_conn_new(struct acp_server *srv, struct peer *p, const char *remote);
int acp_conn_serve(struct acp_conn *c, struct sbx_err *e);
void acp_log(struct acp_server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void acp_reply(struct peer *p, struct json_object *id, struct json_object *result);
void acp_reply_error(struct peer *p, struct json_object *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* -32002 with data {sessionId}: the answer for a session that does not exist, is someone
 * else's, or is not open on this connection. */
void acp_reply_no_session(struct peer *p, struct json_object *id, const char *sid,
			  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Sends session/update {sessionId, update} (update taken). */
void acp_send_update(struct peer *p, const char *sid, struct json_object *update);
struct json_object *acp_text_block(const char *text, size_t len);
void acp_send_chunk(struct peer *p, const char *sid, const char *kind, const char *text,
		    size_t len);

/* ---- lib/acp/acpsess.c ---- */
/* The agent session of ACP session id (must_exist: loaded, not new). */
struct agent_session *acp_open_agent(struct acp_server *srv, const char *id, bool must_exist,
				     struct sbx_err *e);
/* A session for as; rec (may be NULL) its record: mode, model and title come back from it. */
struct acp_session *acp_session_make(struct acp_server *srv, const char *id,
				     struct agent_session *as, const char *principal,
				     struct json_object *rec);
/* Points the session's tools at the sandbox directory the client's cwd maps to. */
void acp_session_set_cwd(struct acp_session *s, const char *cwd);
/* Caller holds srv->mu: s attached to c, or detached from its connection (taken_over: told
 * so); a reference taken outside the lock dropped (true for the last one of a closed
 * session, which the caller frees once the lock is released); s marked busy for c. */
void acp_attach_locked(struct acp_session *s, struct acp_conn *c);
void acp_detach_locked(struct acp_session *s, bool taken_over);
bool acp_unref_locked(struct acp_session *s);
bool acp_claim_locked(struct acp_server *srv, struct acp_session *s, struct acp_conn *c,
		      const int pipefd[2], int *code, char *why, size_t whysz);
/* The release of a reference taken with the lock held (acp_session_of and the loads). */
void acp_session_put(struct acp_server *srv, struct acp_session *s);
/* Caller holds srv->mu. */
struct acp_session *acp_find_session(struct acp_server *srv, const char *id);
/* The session id of a prompt or cancel if it exists, is c's principal's and is open on c;
 * else answers (requests) why not and returns NULL. Caller does not hold srv->mu. */
struct acp_session *acp_session_of(const struct req *r, const char *id);
/* The release of acp_session_of. */
void acp_session_done(struct acp_server *srv, struct acp_session *s);
/* Marks s busy for c's turn (cancel pipe pipefd, may be NULL); the reason on failure. */
bool acp_claim(struct acp_server *srv, struct acp_session *s, struct acp_conn *c,
	       const int pipefd[2], int *code, char *why, size_t whysz);
void acp_release(struct acp_server *srv, struct acp_session *s);
/* Cancels the running turn of s. Caller holds srv->mu. */
void acp_cancel_locked(struct acp_session *s);
/* Detaches every session attached to c (its running turns cancelled). Caller holds srv->mu. */
void acp_detach_all(struct acp_conn *c);
void acp_session_free(struct acp_session *s);
void m_session_new(const struct req *r);
void m_session_load(const struct req *r);
void m_session_cancel(const struct req *r);

/* The pieces of a session/new, load or resume answer: modes and configOptions. */
void acp_session_setup_result(struct acp_server *srv, struct acp_session *s,
			      struct json_object *res);
/* Records fields (strings) of s in the issued-sessions file, updated_at added. */
void acp_session_record(struct acp_server *srv, struct acp_session *s, struct json_object *f);
/* The client ⇄ sandbox path mapping of s. */
struct acp_pathmap acp_session_paths(const struct acp_session *s);
void m_session_resume(const struct req *r);
void m_session_close(const struct req *r);
void m_session_list(const struct req *r);
/* ---- lib/acp/acpconfig.c ---- */
/* Whether model may be chosen (the default dflt or one of cfg.models); the mode with id (ask
 * when unknown). */
bool acp_model_allowed(const struct acp_server *srv, const char *model, const char *dflt);
enum acp_mode acp_mode_of(const char *id);
/* Sets the mode (config "mode", by id) or the model of s; NULL when done, else why not.
 * claimed: the caller's own turn holds s busy (a slash command). Caller holds a reference. */
const char *acp_set_option(struct acp_server *srv, struct acp_session *s, const char *config,
			   const char *value, bool claimed, bool *mode_changed, struct sbx_err *e);
/* current_mode_update and config_option_update of s, to p. */
void acp_send_mode(struct acp_session *s, struct peer *p);
void acp_send_options(struct acp_server *srv, struct acp_session *s, struct peer *p);
void m_session_set_mode(const struct req *r);
void m_session_set_config_option(const struct req *r);

/* ---- lib/acp/acpmcp.c ---- */
/* Takes the mcpServers of a session/new, load or resume (NULL: none): the servers running
 * for an earlier configuration are stopped. The session is busy or not yet shared. */
void acp_mcp_configure(struct acp_session *s, struct json_object *servers);
/* At a prompt (the session busy): starts the servers in the sandbox once per configuration
 * and offers their tools; what failed goes to report. -1 when cancelled. */
int acp_mcp_start(struct acp_session *s, struct buf *report);
/* Wakes calls waiting on the session's servers (caller holds srv->mu). */
void acp_mcp_wake_locked(struct acp_session *s);
void acp_mcp_free(struct acp_session *s);
/* The tools the started servers offer (borrowed; NULL: none), and a call to one of them. */
struct json_object *acp_mcp_decls(const struct acp_session *s);
char *acp_mcp_run(struct acp_session *s, const struct agent_tool_call *call, int cancel_fd,
		  bool *failed, struct sbx_err *e);

/* ---- lib/acp/acpplan.c ---- */
/* The plan tool: gemini-cli's write_todos, offered with -toolset geminicli and answered by
 * the server itself (no sandbox, never asked for): each call is sent as a `plan` update. */
#define ACP_PLAN_TOOL "write_todos"
bool acp_plan_offered(const struct acp_server *srv, const char *name);
/* At a prompt (the session busy): offers the session's extra tools, the plan tool and its
 * MCP servers' tools. */
void acp_extra_tools_update(struct acp_session *s);
/* The plan update of a write_todos call's arguments; NULL when they are not a valid list. */
struct json_object *acp_plan_update(const char *arguments);

/* ---- lib/acp/acpcmd.c ---- */
/* available_commands_update for s, to p: the slash commands acp-server answers itself. */
void acp_send_commands(struct acp_server *srv, struct acp_session *s, struct peer *p);
/* If the prompt (params.prompt) is one text block naming an offered command, runs it (the
 * session claimed by the caller's turn), its answer put in out, and returns true; else false
 * (the prompt goes to the model). */
bool acp_command_run(struct acp_session *s, struct json_object *params, struct buf *out);

/* ---- lib/acp/acpturn.c ---- */
void m_session_prompt(const struct req *r);
/* The agent's id of the call at position k of the assistant message at history index msg:
 * unique in the session, and the same when the conversation is replayed (new string). */
char *acp_call_id(size_t msg, size_t k);

/* ---- lib/acp/acpprompt.c ---- */
/* Whether the model takes image parts (cfg.images, else what its name says). */
bool acp_model_images(const struct acp_server *srv, const char *model);
/* The user message's content for a prompt's blocks (params.prompt): text blocks as
 * paragraphs, resources as context, images as OpenAI image parts (an array of parts then, else
 * one string). NULL with *code and why when the prompt cannot be taken. *title gets the first
 * text's first line. */
struct json_object *acp_prompt_content(struct acp_session *s, struct acp_conn *c,
				       struct json_object *params, char **title, int *code,
				       char *why, size_t whysz);

/* ---- lib/acp/acpreplay.c ---- */
/* session/load's replay of one history message (after index i, for tool results). Returns
 * false when the peer went away or the replay was cancelled. */
bool acp_replay_message(struct acp_session *s, struct peer *p, struct json_object *hist,
			size_t i);

#endif
