/* userline.c — the user's line: interruptible line input, libedit on terminals. */
#include "userline.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#include "xalloc.h"

/* Process-wide by nature: libedit's readline interface is a singleton. */
static int intr_fd = -1;
static bool use_edit;
static bool interrupted;

/* Waits until stdin or the interrupt descriptor is readable: 1 stdin, 0 interrupted, -1 error. */
static int wait_input(void)
{
	struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = intr_fd, .events = POLLIN}};

	for (;;) {
		if (poll(p, intr_fd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (intr_fd >= 0 && p[1].revents)
			return 0;
		if (p[0].revents)
			return 1;
	}
}

/* libedit's character source: stops the edit (as EOF) when interrupted. */
static int edit_getc(FILE *f)
{
	unsigned char c;
	ssize_t n;

	(void)f;
	for (;;) {
		int w = wait_input();
		if (w <= 0) {
			interrupted = w == 0;
			return EOF;
		}
		n = read(0, &c, 1);
		if (n == 1)
			return c;
		if (n == 0 || errno != EINTR)
			return EOF;
	}
}

bool userline_init(int interrupt_fd)
{
	intr_fd = interrupt_fd;
	use_edit = isatty(0) && isatty(1);
	if (use_edit) {
		rl_readline_name = "agent-loop";
		rl_getc_function = edit_getc;
		rl_inhibit_completion = 1;
	}
	return use_edit;
}

static enum userline_result read_plain(const char *text, char **line)
{
	struct buf b = {0};
	unsigned char c;
	ssize_t n;

	fputs(text, stdout);
	fflush(stdout);
	for (;;) {
		int w = wait_input();
		if (w <= 0) {
			buf_free(&b);
			return w == 0 ? USERLINE_INTERRUPTED : USERLINE_ERROR;
		}
		n = read(0, &c, 1);	/* one byte at a time: what follows the line stays unread */
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			buf_free(&b);
			return n == 0 ? USERLINE_EOF : USERLINE_ERROR;
		}
		if (c == '\n')
			break;
		if (c == '\r')
			continue;
		if (b.len >= USERLINE_LINE_MAX) {
			buf_free(&b);
			errno = EMSGSIZE;
			return USERLINE_ERROR;
		}
		buf_append(&b, &c, 1);
	}
	*line = b.data ? buf_steal(&b) : xstrdup("");
	return USERLINE_LINE;
}

enum userline_result userline_read(const char *text, char **line)
{
	char *l, *r, *w;

	*line = NULL;
	if (!use_edit)
		return read_plain(text, line);
	interrupted = false;
	while (*text == '\n') {	/* libedit redraws a prompt line; leading newlines go first */
		fputc('\n', stdout);
		text++;
	}
	fflush(stdout);
	l = readline(text);
	if (l == NULL)
		return interrupted ? USERLINE_INTERRUPTED : USERLINE_EOF;
	for (r = w = l; *r; r++)	/* '\r' dropped, as in plain mode */
		if (*r != '\r')
			*w++ = *r;
	*w = '\0';
	if (strlen(l) > USERLINE_LINE_MAX) {
		free(l);
		errno = EMSGSIZE;
		return USERLINE_ERROR;
	}
	*line = l;
	return USERLINE_LINE;
}

void userline_remember(const char *line)
{
	if (use_edit && *line)
		add_history(line);
}
