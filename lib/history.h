/* history.h — a session's chat history, upstream-compatible:
 * ~/.local/sandboxed-tools/<session>/sessions/latest.jsonl, one LLM message per line in Go's
 * JSON encoding (fields in upstream's Message order: role, content, tool_calls, tool_call_id,
 * thought_signature, extra_content; other fields kept after them), directory 0700, file 0600,
 * append-only, each append a single write.
 * A crash in the middle of an append leaves a torn last line: loading skips it with a warning
 * (never an error) and the next append cuts it off first, so no good line is ever lost and the
 * file stays loadable. A bad line anywhere else is an error, as upstream.
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
 * another process holds it), creates the sessions directory (0700) and loads the file
 * (missing = empty). Errors: `failed to decode message from session file: …`. */
struct history *history_open(const char *session, struct sbx_err *e);
/* The messages loaded and appended so far (borrowed json array). */
struct json_object *history_messages(struct history *h);
/* The file's path (borrowed). */
const char *history_path(const struct history *h);
/* A warning about a skipped torn last line, or NULL. */
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
