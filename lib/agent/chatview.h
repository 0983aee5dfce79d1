/* chatview.h — how a chat looks on a terminal, byte for byte as upstream's CLI: the welcome
 * banner or the resumed-session replay, `Agent> ` answers (here streamed as they arrive). The
 * model's and the history's text is shown as lib/util/termtext.h renders it (controls visible).
 * Writes only to the FILE it is given (standard output in agent-loop); never to stderr.
 * Ownership: messages and sessions passed in stay the caller's. */
#ifndef SBX_CHATVIEW_H
#define SBX_CHATVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <json-c/json.h>

#include "agent.h"

struct chatview {
	FILE *out;
	bool line_open;			/* "Agent> " printed, text streaming */
};

/* The welcome banner for a new session (naming the backend and why), else the replay:
 * rule, `Resumed session "<name>" with <N> messages in history:`, rule, then `User> …` and
 * non-empty `Agent> …` lines. Returns true for a replay. */
bool chatview_banner(FILE *out, struct agent_session *s, const char *backend_why);
/* agent_callbacks.on_delta / on_assistant with a struct chatview * as arg. */
void chatview_delta(void *view, const char *text, size_t len);
void chatview_assistant(void *view, struct json_object *msg, bool final);
/* Ends a line left open by an interrupted answer. */
void chatview_end_turn(struct chatview *v);
/* Trims ASCII white space at both ends, in place (Go's strings.TrimSpace for ASCII). */
char *chatview_trim(char *s);
/* A tool call's arguments as people read them: the JSON without Go's \u003c \u003e \u0026
 * escapes (`echo v1 > f`, not `echo v1 \u003e f`), on one line; the text itself when it is
 * not JSON. Newly allocated. */
char *chatview_args(const char *arguments);

#endif
