/* helptext.h — the option rows of a usage text, laid out the way every sbx program's -h is: two
 * spaces, the flag with its argument, its text from a column, wrapped to HELPTEXT_WIDTH.
 * Ownership: the caller owns the buffer appended to. */
#ifndef SBX_HELPTEXT_H
#define SBX_HELPTEXT_H

#include "xalloc.h"

/* Usage texts are read in 80-column terminals. */
#define HELPTEXT_WIDTH 80

/* Appends "  FLAG" and text from column col (0-based), words wrapped so no line passes
 * HELPTEXT_WIDTH columns (a longer word stands alone), later lines indented to col; a flag
 * that leaves no room puts the text on the next line. Ends with a newline. */
void helptext_row(struct buf *b, int col, const char *flag, const char *text);
/* The column a usage text's rows start their text at, read from its "  -h ... show this help"
 * row; def when it has none. */
int helptext_column(const char *usage, int def);

#endif
