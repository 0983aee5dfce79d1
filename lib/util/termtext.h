/* termtext.h — text that came from a sandbox, a model or an ACP peer, made fit to show a person
 * on a terminal: nothing in it can move the cursor, erase, set the clipboard or the title, or
 * reorder what is read. Every character that could is written as a visible escape instead:
 *   CR                                          \r
 *   other C0 controls but \n and \t, DEL,       \xHH (two lowercase hex digits, one per byte)
 *   a byte that is no part of valid UTF-8
 *   (raw C1 bytes 0x80-0x9f among them)
 *   C1 controls encoded as UTF-8 (U+0080-U+009F), \uHHHH (four lowercase hex digits)
 *   bidi embeddings, overrides and isolates
 *   (U+202A-U+202E, U+2066-U+2069)
 * Everything else (printable ASCII, valid UTF-8 beyond those) is copied as it is; so is a
 * backslash in TERMTEXT_TEXT, which keeps code and paths readable. TERMTEXT_LINE is for a text
 * that must be read exactly, on one line (the command of a permission prompt): newline and tab
 * become \n and \t and a backslash \\, so the shown line reads back to exactly one text.
 * Ownership: inputs are borrowed; termtext_str's result is the caller's to free. */
#ifndef SBX_TERMTEXT_H
#define SBX_TERMTEXT_H

#include <stddef.h>
#include <stdio.h>

#include "xalloc.h"

enum termtext_mode {
	TERMTEXT_TEXT,		/* lines kept: \n and \t pass */
	TERMTEXT_LINE,		/* one line, exact: \n \t \\ escaped too */
};

/* Appends the rendering of s[0..len) to b. */
void termtext_append(struct buf *b, const char *s, size_t len, enum termtext_mode mode);
/* The rendering of the string s (NULL renders as ""), newly allocated. */
char *termtext_str(const char *s, enum termtext_mode mode);
/* Writes the rendering of s[0..len) to f. Returns 0, or -1 when the write failed. */
int termtext_write(FILE *f, const char *s, size_t len, enum termtext_mode mode);

#endif
