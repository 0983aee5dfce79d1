/* test_helptext.c — lib/util/helptext: an option row laid out at its column and wrapped at 80
 * columns, a long flag pushing its text to the next line, and the column read from -h's row. */
#include <stdlib.h>
#include <string.h>

#include "helptext.h"
#include "tap.h"

static void is_row(int col, const char *flag, const char *text, const char *want, const char *what)
{
	struct buf b = {0};

	helptext_row(&b, col, flag, text);
	buf_append(&b, "", 0);
	is_str(b.data, want, "%s", what);
	buf_free(&b);
}

/* No line of a row is longer than HELPTEXT_WIDTH unless one word is. */
static void test_width(void)
{
	struct buf b = {0};
	const char *line;
	int worst = 0;

	helptext_row(&b, 17, "-backend B", "local or kubernetes; env SANDBOX_BACKEND, default kubernetes "
		     "when a Kubernetes configuration exists, else local, and more words to wrap "
		     "around the eighty columns of a terminal twice over");
	buf_append(&b, "", 0);
	for (line = b.data; *line; line += strcspn(line, "\n") + 1) {
		int n = (int)strcspn(line, "\n");
		worst = n > worst ? n : worst;
		ok(line == b.data || strncmp(line, "                 ", 17) == 0,
		   "a later line starts at the column");
	}
	ok(worst <= HELPTEXT_WIDTH && worst > HELPTEXT_WIDTH - 12, "lines fill up to 80 columns (%d)",
	   worst);
	buf_free(&b);
}

int main(void)
{
	is_row(17, "-ttl D", "new lifetime", "  -ttl D         new lifetime\n", "text at the column");
	is_row(24, "-namespace NS", "namespace;  env   X", "  -namespace NS         namespace; env X\n",
	       "runs of spaces are one");
	is_row(10, "-max-conns N", "many", "  -max-conns N\n          many\n",
	       "a flag reaching the column puts the text on the next line");
	is_row(24, "-x", "", "  -x\n", "no text");
	is_row(60, "-a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbb",
	       "  -a                                                        "
	       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
	       "                                                            bbb\n",
	       "a word longer than the room stands alone");
	test_width();
	ok(helptext_column("usage: x\n\n  -a  A\n  -h             show this help\n", 24) == 17,
	   "the column of the -h row");
	ok(helptext_column("usage: x\n", 24) == 24, "no -h row: the default");
	return done_testing();
}
