/* termtext.c — hostile text shown on a terminal with its controls visible (see termtext.h). */
#include "termtext.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "utf8.h"

/* Code points that change how a terminal shows what follows: C1 controls (a terminal may take
 * U+009B as CSI) and the bidi embeddings, overrides and isolates of Trojan Source
 * (CVE-2021-42574), which reorder the characters a person reads. */
static bool hostile_cp(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

/* The escape of one ASCII byte, or NULL when it stays as it is. */
static const char *ascii_escape(unsigned char c, enum termtext_mode mode, char tmp[16])
{
	if (c == '\r')
		return "\\r";
	if (mode == TERMTEXT_LINE && (c == '\n' || c == '\t' || c == '\\'))
		return c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\\\";
	if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
		snprintf(tmp, 16, "\\x%02x", c);
		return tmp;
	}
	return NULL;
}

void termtext_append(struct buf *b, const char *s, size_t len, enum termtext_mode mode)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0, n, k;
	char tmp[16];
	uint32_t cp;

	/* run: bytes from i - run on that are copied as they are, appended in one piece */
	while (i < len) {
		const char *esc = NULL;

		if (p[i] < 0x80) {
			n = 1;
			esc = ascii_escape(p[i], mode, tmp);
		} else {
			n = utf8_decode(p + i, len - i, &cp);
			/* U+FFFD from the decoder is an invalid subpart unless the bytes spell it */
			if (cp == 0xfffd && !(n == 3 && memcmp(p + i, "\xef\xbf\xbd", 3) == 0)) {
				buf_append(b, p + i - run, run);
				run = 0;
				for (k = 0; k < n; k++) {
					snprintf(tmp, sizeof tmp, "\\x%02x", p[i + k]);
					buf_append(b, tmp, 4);
				}
				i += n;
				continue;
			}
			if (hostile_cp(cp)) {
				snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)cp);
				esc = tmp;
			}
		}
		if (esc) {
			buf_append(b, p + i - run, run);
			run = 0;
			buf_puts(b, esc);
		} else {
			run += n;
		}
		i += n;
	}
	buf_append(b, p + i - run, run);
}

char *termtext_str(const char *s, enum termtext_mode mode)
{
	struct buf b = {0};

	if (s)
		termtext_append(&b, s, strlen(s), mode);
	buf_append(&b, "", 0);
	return buf_steal(&b);
}

int termtext_write(FILE *f, const char *s, size_t len, enum termtext_mode mode)
{
	struct buf b = {0};
	int rc = 0;

	termtext_append(&b, s, len, mode);
	if (b.len && fwrite(b.data, 1, b.len, f) != b.len)
		rc = -1;
	buf_free(&b);
	return rc;
}
