/* test_termtext.c — lib/termtext: every class of hostile text (C0 but \n \t, CR, DEL, raw C1
 * bytes, C1 as UTF-8, bidi overrides and isolates, invalid UTF-8) shown as a visible escape,
 * good text untouched, the one-line mode exact and reversible, and rounds of random bytes out
 * of which no control byte but \n \t and no ESC ever comes. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "termtext.h"
#include "utf8.h"
#include "tap.h"

/* The TERMTEXT_TEXT rendering of n bytes, NUL-terminated (the test's to free). */
static char *text(const char *s, size_t n, enum termtext_mode mode)
{
	struct buf b = {0};

	termtext_append(&b, s, n, mode);
	buf_append(&b, "", 0);
	return buf_steal(&b);
}

static void is_rendered(const char *in, size_t n, enum termtext_mode mode, const char *want,
			const char *what)
{
	char *got = text(in, n, mode);

	is_str(got, want, "%s", what);
	free(got);
}

#define T(in, want, what) is_rendered(in, sizeof in - 1, TERMTEXT_TEXT, want, what)
#define L(in, want, what) is_rendered(in, sizeof in - 1, TERMTEXT_LINE, want, what)

static void test_classes(void)
{
	T("plain text, 100% ok: {\"a\": [1]} ~", "plain text, 100% ok: {\"a\": [1]} ~",
	  "printable ASCII passes");
	T("two\nlines\tand a tab", "two\nlines\tand a tab", "newline and tab pass in text");
	T("C:\\dir \\x1b", "C:\\dir \\x1b", "a backslash passes in text");
	T("h\xc3\xa9llo \xe2\x86\x92 \xe4\xb8\xad \xf0\x9f\x98\x80 \xef\xbf\xbd",
	  "h\xc3\xa9llo \xe2\x86\x92 \xe4\xb8\xad \xf0\x9f\x98\x80 \xef\xbf\xbd",
	  "valid UTF-8 (2, 3, 4 bytes, a real U+FFFD) passes");
	T("a\x1b]52;c;ZXZpbA==\x07z", "a\\x1b]52;c;ZXZpbA==\\x07z", "OSC 52 (ESC ... BEL)");
	T("\x1b[2K\x1b[1A", "\\x1b[2K\\x1b[1A", "CSI erase line and cursor up");
	T("safe\rrewritten", "safe\\rrewritten", "CR cannot rewind a line");
	T("\x00\x01\x08\x0b\x0c\x0e\x1f", "\\x00\\x01\\x08\\x0b\\x0c\\x0e\\x1f",
	  "every other C0 control, NUL and backspace too");
	T("del\x7f", "del\\x7f", "DEL");
	T("\x9b" "31m \x9d" "52;c;x\x9c \x80\x9f", "\\x9b31m \\x9d52;c;x\\x9c \\x80\\x9f",
	  "raw C1 bytes (8-bit CSI, OSC, ST)");
	T("\xc2\x9b" "31m \xc2\x80 \xc2\x85 \xc2\x9f \xc2\xa0", "\\u009b31m \\u0080 \\u0085 \\u009f \xc2\xa0",
	  "C1 controls as UTF-8 (U+0080-U+009F); U+00A0 is no control");
	T("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad\xe2\x80\xae",
	  "\\u202a\\u202b\\u202c\\u202d\\u202e", "bidi embeddings and overrides U+202A-U+202E");
	T("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9", "\\u2066\\u2067\\u2068\\u2069",
	  "bidi isolates U+2066-U+2069");
	T("\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa", "\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa",
	  "the neighbours of the bidi ranges pass");
	T("\xff\xfe", "\\xff\\xfe", "bytes never in UTF-8");
	T("\xc3", "\\xc3", "a sequence cut at the end");
	T("\xe2\x86" "a", "\\xe2\\x86a", "a sequence cut short before ASCII");
	T("\xc0\xaf \xe0\x80\xaf", "\\xc0\\xaf \\xe0\\x80\\xaf", "overlong forms");
	T("\xed\xa0\x80", "\\xed\\xa0\\x80", "an encoded surrogate");
	T("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", "a code point above U+10FFFF");
	T("\xe2\x80\xae\x1b" "x\xc2\x9b", "\\u202e\\x1bx\\u009b", "classes side by side");
	is_rendered("a\0b", 3, TERMTEXT_TEXT, "a\\x00b", "a NUL inside the text");
	is_rendered("", 0, TERMTEXT_TEXT, "", "empty text");
}

static void test_line(void)
{
	char *s;

	L("id; echo INJECTED #\r\x1b[2K\x1b[1A" "echo harmless",
	  "id; echo INJECTED #\\r\\x1b[2K\\x1b[1Aecho harmless",
	  "the injected command of the attack, whole on one line");
	L("a\nb\tc", "a\\nb\\tc", "newline and tab escaped on one line");
	L("printf 'x\\n'", "printf 'x\\\\n'", "a backslash doubled: the shown line reads back exactly");
	L("\\x1b", "\\\\x1b", "the text \\x1b is not taken for ESC");
	L("\xe2\x80\xae" "cba", "\\u202ecba", "bidi override escaped on one line");
	s = termtext_str(NULL, TERMTEXT_LINE);
	is_str(s, "", "NULL renders as nothing");
	free(s);
	s = termtext_str("ok\x1b", TERMTEXT_TEXT);
	is_str(s, "ok\\x1b", "termtext_str renders a string");
	free(s);
}

/* Whether the rendering holds a byte a terminal acts on: a control byte but \n and \t (none at
 * all in line mode), DEL, a C1 byte that starts no character, or a hostile code point. */
static const char *bad_byte(const char *r, enum termtext_mode mode)
{
	const unsigned char *p = (const unsigned char *)r;

	for (; *p; p++) {
		if (*p == 0x1b)
			return "ESC";
		if ((*p < 0x20 && !(mode == TERMTEXT_TEXT && (*p == '\n' || *p == '\t'))) ||
		    *p == 0x7f)
			return "a control byte";
		if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			return "a C1 character";
		if (*p == 0xe2 && ((p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae) ||
				   (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)))
			return "a bidi control";
	}
	return NULL;
}

/* The text a TERMTEXT_LINE rendering stands for, read back (len in *n; the test's to free). */
static char *read_back(const char *r, size_t *n)
{
	char *out = malloc(strlen(r) + 1), hex[5] = {0};
	size_t k = 0;

	for (; *r; r++) {
		if (*r != '\\') {
			out[k++] = *r;
			continue;
		}
		switch (*++r) {
		case 'n': out[k++] = '\n'; break;
		case 't': out[k++] = '\t'; break;
		case 'r': out[k++] = '\r'; break;
		case 'x':
			memcpy(hex, r + 1, 2);
			hex[2] = '\0';
			out[k++] = (char)strtoul(hex, NULL, 16);
			r += 2;
			break;
		case 'u':
			memcpy(hex, r + 1, 4);
			k += utf8_encode((uint32_t)strtoul(hex, NULL, 16), out + k);
			r += 4;
			break;
		default: out[k++] = *r; break;	/* \\ */
		}
	}
	*n = k;
	return out;
}

/* Random bytes, biased towards the dangerous ones, rendered in both modes; deterministic. */
static void test_random(void)
{
	static const unsigned char pick[] = {0x1b, '\r', '\n', '\t', 0x07, 0x7f, 0x9b, 0x9d, 0xc2,
					     0xe2, 0x80, 0x81, 0xae, 0xa6, 0xed, 0xf4, '\\', '['};
	unsigned seed = 20261207;
	int rounds = 20000, bad = 0, bytes_ok = 1, valid = 1, exact = 1;
	char in[64];

	for (int r = 0; r < rounds; r++) {
		size_t n = (size_t)(rand_r(&seed) % (int)sizeof in);
		for (size_t i = 0; i < n; i++) {
			int x = rand_r(&seed);
			in[i] = (char)(x % 3 == 0 ? pick[(x >> 4) % (int)sizeof pick] : (x >> 8) & 0xff);
		}
		for (int m = 0; m < 2; m++) {
			enum termtext_mode mode = m ? TERMTEXT_LINE : TERMTEXT_TEXT;
			struct buf b = {0};
			const char *why;
			termtext_append(&b, in, n, mode);
			buf_append(&b, "", 0);
			if (strlen(b.data) != b.len)
				bytes_ok = 0;	/* a NUL came out */
			if ((why = bad_byte(b.data, mode)) != NULL && bad++ == 0)
				printf("# round %d (%s mode): %s came out\n", r, m ? "line" : "text", why);
			if (!utf8_valid(b.data, b.len))
				valid = 0;
			if (mode == TERMTEXT_LINE) {
				size_t back_n;
				char *back = read_back(b.data, &back_n);
				if (back_n != n || memcmp(back, in, n) != 0)
					exact = 0;
				free(back);
			}
			buf_free(&b);
		}
	}
	ok(bad == 0, "%d rounds of random bytes: no control byte but \\n \\t, no ESC, no C1 or bidi "
	   "character ever comes out (%d did)", rounds, bad);
	ok(bytes_ok, "no NUL ever comes out");
	ok(valid, "what comes out is always valid UTF-8 (no stray C1 byte)");
	ok(exact, "a line rendering always reads back to exactly the bytes it shows");
}

int main(void)
{
	test_classes();
	test_line();
	test_random();
	return done_testing();
}
