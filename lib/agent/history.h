/* history.h — a session's chat history, upstream-compatible:
 * ~/.local/sandboxed-tools/<session>/sessions/latest.jsonl, one LLM message per line in Go's
 * JSON encoding (fields in upstream's Message order: role, content, tool_calls, tool_call_id,
 * thought_signature, extra_content; other fields kept after them), directory 0700, file 0600,
 * each append a single write, fsynced (and the directory when the append made the file).
 * Loading always leaves a history a model accepts, and says what it set right (the warning):
 * - a bad line (garbage, or torn: a crash or a full disk in the middle of an append) is moved
 *   aside to latest.jsonl.corrupt (appended, fsynced) and the session goes on from the good
 *   lines: bad lines at the end are cut off, ones in the middle make an atomic rewrite of the
 *   good lines (their own bytes);
 * - an assistant's tool call with no tool message (the process died during the call) gets one
 *   saying it was interrupted (toolmsg_interrupted), right after its turn's tool messages;
 *   it is never run again and never sent to a model unanswered.
 * An append that fails half-way (a full disk) is cut off again, so no later append glues onto
 * a torn line.
 * One process at a time holds a session: history_open takes an exclusive flock on
 * sessions/HISTORY_LOCK (recording "PID PROGRAM" in it for the message a second one gets),
 * released by history_close or by the holder's death.
 * Ownership: history_open's result is freed with history_close; history_messages returns a
 * borrowed array; messages passed to history_append stay the caller's (copies are stored). */
#ifndef SBX_HISTORY_H
#define SBX_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "err.h"

/* Upper bound on a history file: the whole conversation goes to the LLM on every request, and
 * llm-chat refuses requests beyond 64 MiB anyway. */
#define HISTORY_MAX ((size_t)64 << 20)

struct history;

/* The lock file beside the history (ours; upstream ignores it). */
#define HISTORY_LOCK ".lock"

/* Takes the session's lock without loading anything (name already checked): the open fd,
 * which holds it until closed, or -1 with e (SBX_EBUSY: `session "<s>" is in use by
 * agent-loop (pid 123): …`). */
int history_lock(const char *session, struct sbx_err *e);
/* Who holds the session now ("agent-loop (pid 123)", newly allocated), or NULL when nobody
 * does. Creates nothing. */
char *history_holder(const char *session);
/* Validates the session name (upstream's texts), takes the session's lock (SBX_EBUSY when
 * another process holds it), creates the sessions directory (0700), loads the file (missing =
 * empty) and sets it right as above. Errors: the file cannot be read or set right (e.g. a
 * full disk: `cannot move the bad lines of … aside to …: No space left on device`). */
struct history *history_open(const char *session, struct sbx_err *e);
/* The messages loaded and appended so far (borrowed json array). */
struct json_object *history_messages(struct history *h);
/* The file's path (borrowed). */
const char *history_path(const struct history *h);
/* The bytes of the history file's good lines. */
size_t history_size(const struct history *h);
/* What loading set right (bad lines moved aside, interrupted calls answered), or NULL. */
const char *history_warning(const struct history *h);
/* Appends n messages as one write and adds them to the loaded array. */
int history_append(struct history *h, struct json_object *const *msgs, size_t n,
		   struct sbx_err *e);
void history_close(struct history *h);

/* A copy of msg with upstream's field order (known fields first, omitempty fields dropped:
 * null content (an empty string content is kept, as upstream's *string), empty tool_calls,
 * empty tool_call_id / thought_signature, null extra_content; streaming's "index" removed from
 * tool calls). New reference. */
struct json_object *history_normalize(struct json_object *msg);

#endif
