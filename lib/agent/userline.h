/* userline.h — read the user's lines: with libedit (line editing, history) when input is a
 * terminal, else byte by byte up to '\n' as upstream does (so nothing past the line is
 * consumed). Either way a read can be interrupted through a descriptor (a signal's self-pipe).
 * The prompt text is written to stdout; nothing else is printed.
 * Ownership: userline_read's *line is newly allocated (caller frees). One prompt per process
 * (libedit keeps global state). */
#ifndef SBX_USERLINE_H
#define SBX_USERLINE_H

#include <stdbool.h>

/* A longer input line is refused: nobody types a megabyte, and the whole history goes to the
 * LLM on every request. */
#define USERLINE_LINE_MAX ((size_t)1 << 20)

enum userline_result {
	USERLINE_LINE = 0,	/* *line holds the line, '\r' removed, no '\n' */
	USERLINE_EOF = 1,		/* end of input (a partial last line is dropped, as upstream) */
	USERLINE_INTERRUPTED = 2,	/* interrupt_fd became readable */
	USERLINE_ERROR = -1,	/* read error or a line over USERLINE_LINE_MAX (errno set) */
};

/* Whether libedit is used (stdin and stdout are terminals). */
bool userline_init(int interrupt_fd);
enum userline_result userline_read(const char *text, char **line);
/* Adds a line to the in-memory editing history (terminal mode only). */
void userline_remember(const char *line);

#endif
