/* fileio.c — writing files as gemini-cli's write_file and replace do: parents created (0755),
 * the file replaced whole (0644), failures worded as Node reports them. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb.h"

static int mkparents(const char *abs)
{
	char *p = xstrdup(abs);
	int rc = 0;
	for (char *s = p + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			rc = -1;
			break;
		}
		*s = '/';
	}
	free(p);
	return rc;
}

char *tb_to_lf(const char *s, size_t *n)
{
	size_t len = strlen(s), o = 0;
	char *out = xmalloc(len + 1);
	for (size_t i = 0; i < len; i++)
		if (!(s[i] == '\r' && s[i + 1] == '\n'))
			out[o++] = s[i];
	out[o] = '\0';
	if (n)
		*n = o;
	return out;
}

char *tb_to_crlf(const char *s)
{
	struct buf b = {0};
	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
			buf_puts(&b, "\r");
		buf_append(&b, s + i, 1);
	}
	if (!b.data)
		buf_append(&b, "", 0);
	return b.data;
}

int tb_write_file(struct tb_call *c, const char *abs, const char *data, size_t len)
{
	int fd, e = 0;
	size_t off = 0;
	if (mkparents(abs) < 0)
		e = errno;
	if (!e && (fd = open(abs, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) >= 0) {
		while (off < len) {
			ssize_t w = write(fd, data + off, len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				e = errno;
				break;
			}
			off += (size_t)w;
		}
		if (close(fd) < 0 && !e)
			e = errno;
	} else if (!e) {
		e = errno;
	}
	if (!e)
		return 0;
	if (e == EACCES)
		return tb_fail(c, "Permission denied writing to file: %s (EACCES)", abs);
	if (e == ENOSPC)
		return tb_fail(c, "No space left on device: %s (ENOSPC)", abs);
	if (e == EISDIR)
		return tb_fail(c, "Target is a directory, not a file: %s (EISDIR)", abs);
	{
		char *m = tb_node_err(e, "open", abs);
		char *code = xstrdup(m);
		char *colon = strchr(code, ':');
		if (colon)
			*colon = '\0';
		tb_fail(c, "Error writing to file '%s': %s (%s)", abs, m, code);
		free(m);
		free(code);
	}
	return -1;
}
