/* toolcap.h — what a tool result may be when it reaches the model: valid UTF-8 (invalid
 * bytes become U+FFFD, NUL bytes stay and travel as \u0000), and at most TOOLCAP_MAX UTF-16
 * code units. A longer result is cut as gemini-cli's scheduler cuts run_shell_command's
 * (truncateToolOutputThreshold): its first fifth and last four fifths kept around a notice,
 * the whole text saved in a file in the sandbox the notice names.
 * Ownership: returned strings are newly allocated; the caller frees them. */
#ifndef SBX_TOOLCAP_H
#define SBX_TOOLCAP_H

#include <stddef.h>

#include "toolset.h"

/* gemini-cli's DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD (characters, JavaScript's count). */
#define TOOLCAP_MAX 40000
/* Where the whole text of a cut result is kept inside the sandbox: /tmp, not the home,
 * so that outputs are not carried into every snapshot. */
#define TOOLCAP_DIR "/tmp/sbx/tool-outputs"

/* raw[0..n) as valid UTF-8 (WHATWG replacement); *len its length. */
char *toolcap_utf8(const char *raw, size_t n, size_t *len);
/* text[0..*len) (valid UTF-8, owned: consumed) capped for the model; *len updated. Over
 * TOOLCAP_MAX, the whole text goes to TOOLCAP_DIR/session-<sandbox>/<tool>_<call id>.txt in
 * the sandbox first (a note replaces the file's name when it cannot be written). */
char *toolcap_apply(const struct tool_ctx *ctx, const char *tool, char *text, size_t *len);
/* The cut alone: text[0..*len) (owned: consumed) over TOOLCAP_MAX becomes the notice naming
 * `where`, the head and the tail; *len updated. */
char *toolcap_cut(char *text, size_t *len, const char *where);
/* n with thousands separators, as JavaScript's toLocaleString gives it ("40,000"). */
void toolcap_thousands(unsigned long long n, char *out, size_t size);

#endif
