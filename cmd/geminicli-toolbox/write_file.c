/* write_file.c — `write_file`: the whole content of one file (parents created); a file that
 * used CRLF keeps CRLF; the result shows the new text or the changed part of it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

static const struct tb_param params[] = {
	{"file_path", TB_STRING, true, -1, false},
	{"content", TB_STRING, true, -1, false},
	{NULL, TB_STRING, false, -1, false},
};

static int run(struct tb_call *c)
{
	const char *fp = tb_str(c, "file_path"), *content = tb_str(c, "content");
	char *abs = NULL, *old = NULL, *final = NULL, *snip = NULL, *oldtext = NULL;
	size_t oldlen = 0, n;
	struct stat st;
	bool is_new;
	int errno_at_stat;
	int rc = -1;

	if (!*fp)
		return tb_fail(c, "Missing or empty \"file_path\"");
	if (!(abs = tb_tool_path(c, fp)))
		return -1;
	is_new = stat(abs, &st) < 0;
	errno_at_stat = errno;
	if (!is_new && S_ISDIR(st.st_mode)) {
		tb_fail(c, "Path is a directory, not a file: %s", abs);
		goto out;
	}
	if (tb_has_new_placeholder(content, NULL)) {
		tb_fail(c, "`content` contains an omission placeholder (for example 'rest of methods ...'). "
			   "Provide complete file content.");
		goto out;
	}
	if (is_new && errno_at_stat != ENOENT && errno_at_stat != ENOTDIR) {
		char *m = tb_node_err(errno_at_stat, "stat", abs);
		tb_fail(c, "Error checking existing file '%s': %s (%.*s)", abs, m,
			(int)strcspn(m, ":"), m);
		free(m);
		goto out;
	}
	if (!is_new) {
		if (!(old = tb_read_all(abs, TB_MAX_FILE_BYTES, &oldlen))) {
			char *m = tb_node_err(errno, "open", abs);
			tb_fail(c, "Error checking existing file '%s': %s (%.*s)", abs, m,
				(int)strcspn(m, ":"), m);
			free(m);
			goto out;
		}
		oldtext = tb_utf8_text(old, oldlen, &n);
	}
	final = oldtext && strstr(oldtext, "\r\n") ? tb_to_crlf(content) : xstrdup(content);
	if (tb_write_file(c, abs, final, strlen(final)) < 0)
		goto out;
	snip = tb_snippet(is_new ? "" : oldtext, final);
	buf_printf(&c->out, "%s %s. Here is the updated code:\n%s",
		  is_new ? "Successfully created and wrote to new file:" : "Successfully overwrote file:",
		  abs, snip);
	rc = 0;
out:
	free(snip);
	free(final);
	free(oldtext);
	free(old);
	free(abs);
	return rc;
}

const struct tb_tool tb_tool_write_file = {"write_file", params, run};
