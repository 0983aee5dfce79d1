/* acpview.h — ACP session updates as terminal text, for acp-client (every piece through
 * lib/util/termtext.h, so nothing the agent sends can drive the terminal): message and thought chunks
 * as they stream, tool calls (`[tool: kind] title (status)`, then `[tool] title → status`)
 * with their output collapsed to a few lines and edits as diffs, plans, the mode, token usage,
 * session titles, available commands and notices.
 * Ownership: updates are borrowed; the view keeps the titles of tool calls it has seen. */
#ifndef SBX_ACPVIEW_H
#define SBX_ACPVIEW_H

#include <json-c/json.h>

/* Lines of a tool's output shown before the rest is counted ("… N more lines"). */
#define ACPVIEW_OUTPUT_LINES 6
/* Lines of each side of a diff shown. */
#define ACPVIEW_DIFF_LINES 20
/* Tool call titles remembered (updates carry only the id). */
#define ACPVIEW_TITLES_MAX 256

struct acpview;

/* emit gets each piece of text (no newline added). */
struct acpview *acpview_new(void (*emit)(void *arg, const char *text), void *arg);
/* Renders one session/update's `update` object. */
void acpview_update(struct acpview *v, struct json_object *update);
/* Formatted text, as it is (the client's own messages go through here too, so the view
 * knows where lines end). */
void acpview_printf(struct acpview *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line of its own (a notification outside session/update), after whatever streamed. */
void acpview_line(struct acpview *v, const char *text);
void acpview_free(struct acpview *v);

#endif
