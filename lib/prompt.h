/* prompt.h — read the user's lines: with libedit (line editing, history) when input is a
 * terminal, else byte by byte up to '\n' as upstream does (so nothing past the line is
 * consumed). Either way a read can be interrupted through a descriptor (a signal's self-pipe).
 * The prompt text is written to stdout; nothing else is printed.
 * Ownership: prompt_read's *line is newly allocated (caller frees). One prompt per process
 * (libedit keeps global state). */
#ifndef SBX_PROMPT_H
#define SBX_PROMPT_H

#include <stdbool.h>

/* A longer input line is refused: nobody types a megabyte, and the whole history goes to the
 * LLM on every request. */
#define PROMPT_LINE_MAX ((size_t)1 << 20)

enum prompt_result {
	PROMPT_LINE = 0,	/* *line holds the line, '\r' removed, no '\n' */
	PROMPT_EOF = 1,		/* end of input (a partial last line is dropped, as upstream) */
	PROMPT_INTERRUPTED = 2,	/* interrupt_fd became readable */
	PROMPT_ERROR = -1,	/* read error or a line over PROMPT_LINE_MAX (errno set) */
};

/* Whether libedit is used (stdin and stdout are terminals). */
bool prompt_init(int interrupt_fd);
enum prompt_result prompt_read(const char *text, char **line);
/* Adds a line to the in-memory editing history (terminal mode only). */
void prompt_remember(const char *line);

#endif
