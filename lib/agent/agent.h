/* agent.h — the turn machinery shared by agent-loop and acp-server (upstream
 * pkg/agent Harness.RunTurn), and its tool-call half for sbx-mcp (agent_tool_run: the same
 * sandbox lifecycle, no LLM), composed from the sbx programs by posix_spawn:
 *
 *   user message ─▶ llm-chat -stream ─▶ assistant message ─┬─ no tool calls: turn ends
 *                        ▲                                   └─ per call: approve, ensure sandbox
 *                        └──────── tool messages ◀── sbx-tool ◀─ (sbx-create+sbx-restore / sbx-touch)
 *   a tool ran this turn ─▶ sbx-snapshot at turn end;   agent_session_close ─▶ sbx-delete
 *
 * Every message is appended to the session history (lib/agent/history.h) as soon as it exists.
 * Programs are looked up next to the running executable first, then on PATH.
 *
 * Threads: a session has no hidden global state; different sessions may run turns in different
 * threads at once. One session must not be used by two threads at the same time (the caller
 * holds a per-session lock). Callbacks run on the thread that called agent_turn.
 *
 * Cancellation: when cancel_fd becomes readable the running child (llm-chat, sbx-tool, …) gets
 * SIGTERM (SIGKILL after AGENT_KILL_GRACE_NS) and agent_turn returns AGENT_CANCELED. History
 * stays valid for the next request: if the assistant message asking for tool calls was already
 * stored, every call of it without a result gets a synthetic tool message
 * `Tool "<name>" was not run to completion: the user cancelled the turn.`; a cancelled LLM call
 * stores nothing (the user message stays). No snapshot is taken for a cancelled turn.
 *
 * Ownership: strings in agent_config are borrowed for the session's lifetime; agent_turn's
 * *reply is newly allocated (caller frees); json objects handed to callbacks are borrowed and
 * valid only during the callback; agent_session_history's array is borrowed from the session. */
#ifndef SBX_AGENT_H
#define SBX_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "err.h"

/* Iterations of LLM ↔ tools in one turn before the turn is stopped (upstream has no limit). */
#define AGENT_DEFAULT_MAX_TOOL_ROUNDS 50
/* Upstream's DefaultToolTimeout. */
#define AGENT_DEFAULT_TOOL_TIMEOUT_NS (INT64_C(120) * 1000000000)
/* How long a child may take to exit after SIGTERM before it gets SIGKILL. */
#define AGENT_KILL_GRACE_NS (INT64_C(5) * 1000000000)

/* The texts the model gets instead of a tool's result (denied, cancelled, failed): toolmsg.h. */

enum agent_log_level {
	AGENT_LOG_INFO,		/* upstream's klog Info lines (launching sandbox, backups, …) */
	AGENT_LOG_WARN,		/* something failed but the turn goes on (restore, snapshot, touch) */
};

struct agent_config {
	const char *session;		/* ^[a-z0-9]{1,40}$: history dir and sandbox name */
	const char *backend;		/* "local" or "kubernetes"; NULL: backend_default() */
	const char *namespace;		/* NULL: $SANDBOX_NAMESPACE, else "default" */
	const char *image;		/* NULL/"": kubernetes → toolset default or the backend's;
					 * local → not passed (the host root) */
	const char *homedir;		/* NULL: $SANDBOX_HOME_DIR, else /home/clawtainer */
	const char *toolset;		/* NULL/"": $TOOLSET, else "basic" */
	const char *model;		/* NULL: llm-chat decides ($OPENAI_MODEL, $MODEL, default) */
	int64_t tool_timeout_ns;	/* <= 0: no deadline (set AGENT_DEFAULT_TOOL_TIMEOUT_NS) */
	int64_t ttl_ns;			/* sandbox inactivity lifetime; 0: the tools' default (5m) */
	int max_tool_rounds;		/* <= 0: AGENT_DEFAULT_MAX_TOOL_ROUNDS */
	bool must_exist;		/* open fails with SBX_ENOTFOUND when there is no history */
	/* No LLM (sbx-mcp): no model or API key checked, no history kept; tool calls come
	 * through agent_tool_run, agent_turn refuses. The caller touches the sandbox after each
	 * answer (agent_session_touch), so the client never waits for it; agent_tool_run
	 * touches before a call only when less than half the lifetime is left. */
	bool tools_only;
	/* The per-call steps (touch, the tool itself) run in this process through lib/backend
	 * and lib/toolset instead of as sbx-touch and sbx-tool children; -v traces the same
	 * command lines and documents. Creating, restoring, snapshotting and deleting still
	 * run the programs. */
	bool in_process;
	/* Extra sbx-create words (NULL-terminated, e.g. specflags_argv's "-network=true"),
	 * passed unchanged when the session makes its sandbox. May be NULL. */
	char *const *create_args;
	const char *backup_budget;	/* NULL, or sbx-snapshot's -backup-budget SIZE */
	const char *bindir;		/* NULL: the running executable's directory, then PATH */
	/* The tools' working directory inside the sandbox (absolute), made (mkdir -p) when the
	 * sandbox is; NULL: the backend's default. */
	const char *workdir;
	/* Ask the model server for token usage of streamed answers (stream_options), reported
	 * through agent_callbacks.on_llm_done. */
	bool want_usage;
	/* Log lines (what upstream logs with klog). May be NULL. */
	void (*log)(void *arg, enum agent_log_level level, const char *msg);
	/* -v: each JSON document exchanged with a child, labelled like "llm-chat <" (sent) or
	 * "sbx-tool >" (received), and before each child its command line (shell-quoted) with
	 * the label "$". May be NULL. Neither ever contains an API key. */
	void (*trace)(void *arg, const char *label, const char *json);
	void *log_arg;
};

/* One tool call, as the assistant message asked for it. Strings borrowed. */
struct agent_tool_call {
	const char *id;
	const char *name;
	const char *arguments;		/* raw JSON text, possibly invalid */
	struct json_object *raw;	/* the whole tool_calls[] entry */
};

struct agent_callbacks {
	void *arg;
	/* Assistant text as it streams from llm-chat. May be NULL. */
	void (*on_delta)(void *arg, const char *text, size_t len);
	/* The model's reasoning (reasoning_content) as it streams. May be NULL. */
	void (*on_thought)(void *arg, const char *text, size_t len);
	/* After each model call: its finish_reason ("" when none was given) and usage object
	 * (NULL when none; borrowed). May be NULL. */
	void (*on_llm_done)(void *arg, const char *finish_reason, struct json_object *usage);
	/* A model call failed and is tried again after wait_ns: why, the attempt to come and
	 * the attempts in all (llm-chat's retry event). May be NULL. */
	void (*on_llm_retry)(void *arg, const char *why, int64_t wait_ns, int attempt,
			     int attempts);
	/* An assistant message was stored; final: it has no tool calls (the turn's answer). */
	void (*on_assistant)(void *arg, struct json_object *msg, bool final);
	/* Before each tool call: 1 allow, 0 deny, -1 error (turn aborts with
	 * `requesting tool call approval: <e>`; e->code SBX_ECANCELED counts as cancellation).
	 * NULL: every call allowed (the CLI). */
	int (*approve)(void *arg, const struct agent_tool_call *call, struct sbx_err *e);
	/* An approved call starts running in the sandbox (after the sandbox is ready). */
	void (*on_tool_start)(void *arg, const struct agent_tool_call *call);
	/* It finished: failed when the registry or the tool reported an error (unknown tool, bad
	 * arguments, timeout, a command that exited non-zero, a file that could not be read:
	 * toolset_call's flag); content is the tool message's text. Not called for denied calls;
	 * called with failed and the cancellation text when cancelled. */
	void (*on_tool_end)(void *arg, const struct agent_tool_call *call, bool failed,
			    const char *content);
};

enum agent_status {
	AGENT_DONE = 0,		/* *reply = the final assistant text ("" if none) */
	AGENT_ERROR = -1,	/* e = upstream's text, e.g. `failed to call LLM: <why>` */
	AGENT_CANCELED = -2,	/* cancel_fd fired; history consistent (see above) */
	AGENT_LIMIT = -3,	/* max_tool_rounds reached; e = a sentence for the user */
};

struct agent_session;

/* Validates the configuration with upstream's startup checks in upstream's order and texts
 * (`homeDir must not be empty`, `sessionName is required`, `invalid sessionName "<n>":
 * <reason>`, the API key unless the model is fake-eliza, `failed to get kubernetes
 * configuration: …` for the kubernetes backend; then namespace and toolset),
 * loads the history (a torn last line is logged as a warning and skipped) and, for a session
 * without history, stores the toolset's system prompt. */
struct agent_session *agent_session_open(const struct agent_config *cfg, struct sbx_err *e);
/* The stored messages (borrowed json array; system and tool messages included). */
struct json_object *agent_session_history(struct agent_session *s);
/* Whether the history was empty when the session was opened (before the system prompt). */
bool agent_session_is_new(const struct agent_session *s);
/* The resolved backend ("local"/"kubernetes"), session name and model (borrowed). */
const char *agent_session_backend(const struct agent_session *s);
const char *agent_session_name(const struct agent_session *s);
const char *agent_session_model(const struct agent_session *s);
const char *agent_session_homedir(const struct agent_session *s);

/* Runs one turn for user_text. cancel_fd: -1 or a descriptor that becomes readable to cancel
 * (it is only polled, never read). */
enum agent_status agent_turn(struct agent_session *s, const char *user_text,
			     const struct agent_callbacks *cb, int cancel_fd, char **reply,
			     struct sbx_err *e);

/* agent_turn with the user message's content given whole: a string, or an array of OpenAI
 * content parts ({"type":"text"}, {"type":"image_url"}); borrowed. */
enum agent_status agent_turn_content(struct agent_session *s, struct json_object *content,
				     const struct agent_callbacks *cb, int cancel_fd, char **reply,
				     struct sbx_err *e);
/* Tools beyond the toolset's (an MCP server's, say): decls (chat-request declarations,
 * borrowed until replaced) are offered to the model with the toolset's, and a call to one of
 * them goes to run instead of sbx-tool, approved and with the sandbox ensured like any other.
 * run returns the tool message's text with *failed, or NULL with e only when cancelled. */
struct agent_extra_tools {
	struct json_object *decls;
	char *(*run)(void *arg, const struct agent_tool_call *call, int cancel_fd, bool *failed,
		     struct sbx_err *e);
	/* Whether run answers this one by itself, never touching the sandbox (acp-server's
	 * plan): no sandbox is made or touched for it, and it is not a change to snapshot.
	 * NULL: every extra tool runs in the sandbox. */
	bool (*local)(void *arg, const char *name);
	void *arg;
};
/* Sets (NULL: clears) the session's extra tools. */
void agent_session_set_extra_tools(struct agent_session *s, const struct agent_extra_tools *x);
/* Makes sure the session's sandbox exists (touched, or made and restored) and its tools'
 * working directory too, as before a tool call. */
int agent_session_ensure_sandbox(struct agent_session *s, int cancel_fd, struct sbx_err *e);
const char *agent_session_namespace(const struct agent_session *s);
/* Switches the session's model for its next calls; a real model needs an API key. */
int agent_session_set_model(struct agent_session *s, const char *model, struct sbx_err *e);
/* Changes the tools' working directory (made before the next tool runs); NULL: the default. */
void agent_session_set_workdir(struct agent_session *s, const char *workdir);
/* The tools' working directory (borrowed; NULL: the backend's default). */
const char *agent_session_workdir(const struct agent_session *s);
/* One tool call's outcome (agent_tool_run). */
struct agent_tool_result {
	char *content;			/* the tool message's text (newly allocated) */
	size_t content_len;		/* its length: it may hold NUL bytes */
	bool failed;			/* the registry or the tool reported an error (ACP "failed",
					 * MCP isError, sbx-tool's exit status 1) */
	struct json_object *structured;	/* the tool's structured result, or NULL (new reference) */
	struct json_object *parts;	/* the result as Parts when it holds inline data (an image,
					 * PDF, audio or video file: toolparts.h), or NULL (new
					 * reference) */
};

/* Runs one tool call in the session's sandbox with the same lifecycle as a turn's calls, no
 * LLM involved: the sandbox is touched, or made (sbx-create, then sbx-restore of the latest
 * backup) on the first call and after it expired; the call runs (once more after remaking a
 * sandbox that vanished meanwhile); the sandbox is touched again. cb's on_tool_start and
 * on_tool_end are called (approve is not: the caller decided). Returns 0 with *out, or -1
 * with e: SBX_ECANCELED when cancel_fd fired, else why the sandbox could not be made. */
int agent_tool_run(struct agent_session *s, const struct agent_tool_call *call,
		   const struct agent_callbacks *cb, int cancel_fd, struct agent_tool_result *out,
		   struct sbx_err *e);
void agent_tool_result_free(struct agent_tool_result *r);
/* Moves the shutdown time of the session's sandbox, if it has one (failures logged); for a
 * tools-only session not again within a second of the last move (shutdown times are kept to
 * the second). */
void agent_session_touch(struct agent_session *s, int cancel_fd);
/* Whether a call that may have changed the sandbox's home (any tool but read and search
 * ones) ran since the last snapshot. */
bool agent_session_dirty(const struct agent_session *s);
/* Snapshots the home (sbx-snapshot) if the session is dirty and its sandbox alive. Returns 0
 * (done or nothing to do) or -1 when the snapshot failed (logged; the session stays dirty). */
int agent_session_snapshot(struct agent_session *s, int cancel_fd);

/* Deletes the sandbox this session created (sbx-delete; a missing one is success). */
int agent_session_delete_sandbox(struct agent_session *s, struct sbx_err *e);
/* Frees the session without touching its sandbox (ACP: the sandbox expires by itself). */
void agent_session_free(struct agent_session *s);
/* agent_session_delete_sandbox, then agent_session_free. Returns the delete's result. */
int agent_session_close(struct agent_session *s, struct sbx_err *e);

#endif
