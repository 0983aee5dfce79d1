/* read_file.c — `read_file`: one file, optionally a 1-based inclusive line window, with
 * gemini-cli's truncation notice when the window is not the whole file. */
#include <stdlib.h>
#include <string.h>

#include "tb.h"

static const struct tb_param params[] = {
	{"file_path", TB_STRING, true, -1, false},
	{"start_line", TB_INT, false, 1, false},
	{"end_line", TB_INT, false, 1, false},
	{NULL, TB_STRING, false, -1, false},
};

/* gemini-cli's FileDiscoveryService refuses paths its ignore files name (as given and as
 * resolved). */
static bool ignored(struct tb_call *c, const char *given, const char *abs)
{
	struct tb_ignore *ig = tb_ignore_open(c->workdir, true, true);
	char *lit = tb_tool_literal(c, given);
	bool out = tb_ignore_path(ig, lit, false, -1) || tb_ignore_path(ig, abs, false, -1);
	tb_ignore_close(ig);
	free(lit);
	return out;
}

static int run(struct tb_call *c)
{
	const char *fp = tb_str(c, "file_path");
	int64_t start = 0, end = 0;
	struct tb_read r = {0};
	char *abs = NULL;
	const char *q;
	int rc = -1;

	for (q = fp; *q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'; q++)
		;
	if (!*q)
		return tb_fail(c, "The 'file_path' parameter must be non-empty.");
	tb_int(c, "start_line", &start);
	tb_int(c, "end_line", &end);
	{
		/* the path must resolve (a link loop does not) */
		char *lit = tb_tool_literal(c, fp), *full = tb_resolve(c->workdir, lit), *err;
		char *real = tb_realpath(full, &err);
		free(lit);
		free(full);
		if (!real) {
			tb_fail(c, "Failed to resolve path: %s", err);
			free(err);
			return -1;
		}
		free(real);
	}
	if (!(abs = tb_tool_path(c, fp)))
		return -1;
	if (start > 0 && end > 0 && start > end) {
		tb_fail(c, "start_line cannot be greater than end_line");
		goto out;
	}
	if (ignored(c, fp, abs)) {
		tb_fail(c, "File path '%s' is ignored by configured ignore patterns.", abs);
		goto out;
	}
	if (tb_read_file(c, abs, start, end, &r) < 0)
		goto out;
	if (r.mime) {
		tb_inline_part(c, abs, r.mime, r.text.data, r.text.len);
		rc = 0;
		goto out;
	}
	if (r.truncated)
		buf_printf(&c->out,
			  "\nIMPORTANT: The file content has been truncated.\n"
			  "Status: Showing lines %lld-%lld of %lld total lines.\n"
			  "Action: To read more of the file, you can use the 'start_line' and "
			  "'end_line' parameters in a subsequent 'read_file' call. For example, to "
			  "read the next section of the file, use start_line: %lld.\n\n"
			  "--- FILE CONTENT (truncated) ---\n",
			  (long long)r.shown_start, (long long)r.shown_end, (long long)r.total,
			  (long long)r.shown_end + 1);
	buf_append(&c->out, r.text.data, r.text.len);
	rc = 0;
out:
	buf_free(&r.text);
	free(abs);
	return rc;
}

const struct tb_tool tb_tool_read_file = {"read_file", params, run};
