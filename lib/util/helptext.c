/* helptext.c — lays out the option rows of a usage text. */
#include "helptext.h"

#include <string.h>

void helptext_row(struct buf *b, int col, const char *flag, const char *text)
{
	int at = 2 + (int)strlen(flag);

	buf_printf(b, "  %s", flag);
	if (at + 1 > col) {	/* no room for a space: the text starts on the next line */
		buf_puts(b, "\n");
		at = 0;
	}
	while (*text) {
		size_t w = strcspn(text, " ");

		/* the first word of a line goes on it whatever its length */
		if (at > col && at + 1 + (int)w > HELPTEXT_WIDTH) {
			buf_puts(b, "\n");
			at = 0;
		}
		if (at < col) {
			buf_printf(b, "%*s", col - at, "");
			at = col;
		} else {
			buf_puts(b, " ");
			at++;
		}
		buf_append(b, text, w);
		at += (int)w;
		text += w;
		text += strspn(text, " ");
	}
	buf_puts(b, "\n");
}

int helptext_column(const char *usage, int def)
{
	const char *h = strstr(usage, "\n  -h ");
	size_t pad;

	if (h == NULL)
		return def;
	h += 1 + 4;
	pad = strspn(h, " ");
	return h[pad] && h[pad] != '\n' ? (int)(4 + pad) : def;
}
