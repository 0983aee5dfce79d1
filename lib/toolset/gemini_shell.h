/* gemini_shell.h — gemini-cli's rules for a `run_shell_command` call, as text functions: the
 * shell wrapper it strips, the command substitutions it blocks, the script that records
 * background jobs, ANSI stripping and the <untrusted_context> wrapper of the result
 * (gemini-cli-core 0.61.0, tools/shell.js).
 * Pure functions; returned strings are newly allocated and owned by the caller. */
#ifndef SBX_GCSHELL_H
#define SBX_GCSHELL_H

#include <stdbool.h>
#include <stddef.h>

#include "xalloc.h"

/* The text gemini-cli returns instead of running a command with a substitution. */
#define GEMINI_SHELL_BLOCKED_TEXT                                                                     \
	"Command injection detected: command substitution syntax ($(), backticks, <() or >()) "   \
	"found in command arguments. On PowerShell, @() array subexpressions and $() "             \
	"subexpressions are also blocked. This is a security risk and the command was blocked."

/* A leading `bash -c '…'` (sh, zsh, a path to one, cmd.exe /c, powershell -Command) removed,
 * with the quotes around the rest; otherwise the command trimmed. */
char *gemini_shell_strip_wrapper(const char *command);

/* True when the command has `$(`, a backtick, or `<(` / `>(` outside quotes, following bash's
 * quoting rules (nothing counts inside single quotes; `<(` `>(` not inside double quotes). */
bool gemini_shell_has_substitution(const char *command);

/* The script bash runs: options off, then the command in a subshell whose EXIT trap writes
 * `jobs -p` to the file named by $1 (shifted away, so the command sees no arguments), with
 * the command on line 4 as in gemini-cli. After the subshell the status is written to
 * "$1.code" (its absence tells a killed shell from an exit) and becomes the exit status. */
char *gemini_shell_script(const char *command);

/* Removes ANSI escape sequences from valid UTF-8 s[0..len) in place, as gemini-cli's
 * strip-ansi (ansi-regex 6.6) does: OSC, control strings, CSI, other escapes, their C1
 * forms. Returns the new length. */
size_t gemini_shell_strip_ansi(char *s, size_t len);

/* String#trim on valid UTF-8 s[0..len): returns the end, *start the start. */
size_t gemini_shell_trim(const char *s, size_t len, size_t *start);

/* Appends `<untrusted_context>\n` + text[0..len) (any `</untrusted_context>` escaped) +
 * `\n</untrusted_context>`. */
void gemini_shell_untrusted(struct buf *b, const char *text, size_t len);

#endif
