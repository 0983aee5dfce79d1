/* acpclient.h — the client side of the Agent Client Protocol v1, as upstream's example client
 * (examples/agentclientprotocol): initialize with file-system capabilities, authenticate when
 * the agent asks for it, session/new or session/load, prompts, and the client methods an agent
 * may call (session/update, session/request_permission, fs/read_text_file and
 * fs/write_text_file confined to the session directory).
 * The conversation is rendered as text through the emit callback and choices are read through
 * read_line, so the library itself never touches a terminal.
 * Ownership: strings in acpclient_config are borrowed; acpclient_open takes the peer. */
#ifndef SBX_ACPCLIENT_H
#define SBX_ACPCLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "peer.h"

#define ACPCLIENT_NAME "simple-acp-client"
#define ACPCLIENT_VERSION "0.1.0"
/* The largest file served to the agent by fs/read_text_file: a text file an agent reads whole
 * fits; more would have to go through one JSON line anyway (JSONRPC_LINE_MAX). */
#define ACPCLIENT_READ_MAX ((size_t)4 << 20)

struct acpclient_config {
	const char *cwd;		/* absolute; the session directory */
	const char *session_id;		/* resume with session/load; NULL: session/new */
	const char *auth_method;	/* NULL: the first one advertised */
	const char *token;		/* sent as _meta.token in authenticate (may be NULL) */
	bool yolo;			/* approve the first allow option without asking */
	int64_t setup_timeout_ns;	/* initialize + session setup; 0: none */
	/* Conversation output (text as is, no newline added). */
	void (*emit)(void *arg, const char *text);
	/* Reads one line without its newline (newly allocated), NULL at end of input. */
	char *(*read_line)(void *arg);
	/* -debug: each line sent (">") and received ("<"). May be NULL. */
	void (*debug)(void *arg, const char *dir, const char *line);
	void *arg;
};

struct acpclient;

/* Starts the peer's I/O thread, initializes and sets up the session. Prints
 * "Connected to ACP agent (protocol vN)" and, when the agent has modes, "Mode: …". Updates are
 * rendered by lib/acp/acpview.h. */
struct acpclient *acpclient_open(const struct acpclient_config *cfg, struct peer *p,
				 struct sbx_err *e);
/* The session id in use (borrowed). */
const char *acpclient_session(const struct acpclient *c);
/* Whether standard input ended at a permission prompt (the call was then cancelled): nobody
 * was there to answer, which the program reports as a failure. */
bool acpclient_input_ended(const struct acpclient *c);
/* Sends one prompt and renders the turn until its stop reason ("[turn ended: …]"). A
 * JSON-RPC error answer is returned as -1 with the agent's message and code SBX_EINVAL;
 * a broken connection as SBX_EIO. */
int acpclient_prompt(struct acpclient *c, const char *text, struct sbx_err *e);
/* session/set_mode on the session (the agent reports the change as current_mode_update). */
int acpclient_set_mode(struct acpclient *c, const char *mode, struct sbx_err *e);
/* The interactive chat: reads lines through read_line (showing "\n> " through emit first when
 * show_prompt), each one a prompt, "/mode ID" a mode switch, "/exit" or "/quit" the end. A
 * refused mode or prompt is told through note ("mode not changed: …", "prompt failed: …") and
 * the chat goes on, unless the link is gone: then -1. 0 at the end of input or /exit. */
int acpclient_chat(struct acpclient *c, bool show_prompt,
		   void (*note)(void *arg, const char *text), void *arg);
/* The agent command cmd, split at white space into at most ACPCLIENT_CMD_ARGS words, spawned
 * as peer_spawn does (its standard error to log_fd, -1: ours; *pid, *errnum as there). An
 * empty cmd is SBX_EINVAL "-cmd is empty" with *errnum 0. */
#define ACPCLIENT_CMD_ARGS 64
struct peer *acpclient_spawn(const char *cmd, const char *cwd, int log_fd, pid_t *pid,
			     int *errnum, struct sbx_err *e);
/* What a spawned agent's log (path) shows of why the agent went away: its last lines that this
 * run wrote (from offset from on), told through say as "the agent's last messages (<path>):"
 * then one "agent: <line>" each. Nothing when there are none. */
#define ACPCLIENT_LOG_TAIL_LINES 10
#define ACPCLIENT_LOG_TAIL_BYTES 8192
void acpclient_log_tail(const char *path, long long from,
			void (*say)(void *arg, const char *text), void *arg);
/* Sends session/cancel for the running prompt (any thread). */
void acpclient_cancel(struct acpclient *c);
/* Closes the connection and frees everything. */
void acpclient_close(struct acpclient *c);

#endif
