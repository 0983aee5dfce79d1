/* replace.c — `replace`: replaces old_string with new_string in one file: an exact literal
 * match first, then gemini-cli's flexible, regex and fuzzy matches (replace_match.c); one
 * occurrence unless allow_multiple. An empty old_string creates a new file. CRLF files stay
 * CRLF. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

static const struct tb_param params[] = {
	{"file_path", TB_STRING, true, -1, false},
	{"instruction", TB_STRING, true, -1, false},
	{"old_string", TB_STRING, true, -1, false},
	{"new_string", TB_STRING, true, -1, false},
	{"allow_multiple", TB_BOOL, false, -1, false},
	{NULL, TB_STRING, false, -1, false},
};

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0, len = strlen(needle);
	for (const char *p = hay; (p = strstr(p, needle)); p += len)
		n++;
	return n;
}

static char *replace_all(const char *hay, const char *old, const char *new_text)
{
	struct buf b = {0};
	size_t len = strlen(old);
	const char *p = hay, *q;
	while ((q = strstr(p, old))) {
		buf_append(&b, p, (size_t)(q - p));
		buf_puts(&b, new_text);
		p = q + len;
	}
	buf_puts(&b, p);
	return b.data;
}

/* gemini-cli's correctPath search: breadth first from the working directory, at most this
 * many directories read, for regular files with the wanted name. */
#define CORRECT_MAX_DIRS 50

struct queue {
	char **dirs;
	size_t n, head;
};

/* The unique file (not ignored) named like rel's last component whose path ends with rel;
 * NULL when there is none or more than one. */
static char *find_unique(struct tb_call *c, const char *rel)
{
	struct tb_ignore *ig = tb_ignore_open(c->workdir, true, true);
	struct queue q = {0};
	char *found = NULL, *name = xstrdup(tb_basename(rel));
	size_t nfound = 0, scanned = 0, rl = strlen(rel);
	q.dirs = xmalloc(sizeof *q.dirs);
	q.dirs[q.n++] = xstrdup(c->workdir);
	while (q.head < q.n && scanned < CORRECT_MAX_DIRS) {
		char *dir = q.dirs[q.head++];
		DIR *d = opendir(dir);
		struct dirent *de;
		scanned++;
		while (d && (de = readdir(d))) {
			bool is_dir = de->d_type == DT_DIR, is_file = de->d_type == DT_REG;
			char *full;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (!is_dir && !(is_file && !strcmp(de->d_name, name)))
				continue;
			full = xasprintf("%s/%s", strcmp(dir, "/") ? dir : "", de->d_name);
			if (tb_ignore_path(ig, full, false, -1)) {
				free(full);
			} else if (is_dir) {
				q.dirs = xrealloc(q.dirs, (q.n + 1) * sizeof *q.dirs);
				q.dirs[q.n++] = full;
			} else if (strlen(full) >= rl && !strcmp(full + strlen(full) - rl, rel) && nfound++ == 0) {
				found = full;
			} else {
				free(full);
			}
		}
		if (d)
			closedir(d);
	}
	for (size_t i = 0; i < q.n; i++)
		free(q.dirs[i]);
	free(q.dirs);
	free(name);
	tb_ignore_close(ig);
	if (nfound != 1) {
		free(found);
		return NULL;
	}
	return found;
}

/* The file replace edits, as EditTool resolves it: an absolute path as given; a relative one
 * from the working directory when it exists there, else the one workspace file ending with
 * it, else from the working directory. Real paths; NULL with c->err where resolving throws. */
static char *edit_path(struct tb_call *c, const char *fp)
{
	char *lit, *abs, *corrected = NULL, *real, *err;
	struct stat st;
	if (fp[0] == '/') {
		abs = xstrdup(fp);
	} else {
		lit = tb_tool_literal(c, fp);
		abs = tb_resolve(c->workdir, lit);
		if (stat(abs, &st) < 0 && (corrected = find_unique(c, lit))) {
			free(abs);
			abs = corrected;
		}
		free(lit);
	}
	real = tb_realpath(abs, &err);
	free(abs);
	if (!real) {
		tb_fail(c, "%s", err);
		free(err);
	}
	return real;
}

/* The trailing-newline state of the original is kept. */
static char *restore_newline(const char *orig, char *mod)
{
	size_t ol = strlen(orig), ml = strlen(mod);
	bool had = ol && orig[ol - 1] == '\n', has = ml && mod[ml - 1] == '\n';
	if (had && !has) {
		char *r = xasprintf("%s\n", mod);
		free(mod);
		return r;
	}
	if (!had && has)
		mod[ml - 1] = '\0';
	return mod;
}

/* Long: gemini-cli's replace execute() in its order (checks, exact, flexible and fuzzy
 * matching, the answer), each message at byte parity. */
static int run(struct tb_call *c)
{
	const char *fp = tb_str(c, "file_path");
	bool multi = tb_bool(c, "allow_multiple", false);
	char *abs = NULL, *raw = NULL, *text = NULL, *code = NULL, *old = NULL, *new_text = NULL;
	char *mod = NULL, *final = NULL, *snip = NULL;
	size_t rawlen, n, occ;
	struct buf fuzzy = {0};
	struct stat st;
	int rc = -1;

	if (!*fp)
		return tb_fail(c, "The 'file_path' parameter must be non-empty.");
	if (!(abs = edit_path(c, fp)))
		return -1;
	if (tb_has_new_placeholder(tb_str(c, "new_string"), tb_str(c, "old_string"))) {
		tb_fail(c, "`new_string` contains an omission placeholder (for example 'rest of methods "
			   "...'). Provide exact literal replacement text.");
		goto out;
	}
	if (tb_check_path(c, abs) < 0)
		goto out;
	old = tb_to_lf(tb_str(c, "old_string"), NULL);
	new_text = tb_to_lf(tb_str(c, "new_string"), NULL);
	if (stat(abs, &st) < 0 && errno == ENOENT) {
		if (*old) {
			tb_fail(c, "File not found: %s", abs);
			goto out;
		}
		if (tb_write_file(c, abs, new_text, strlen(new_text)) < 0)
			goto out;
		buf_printf(&c->out, "Created new file: %s with provided content. Here is the updated code:\n%s",
			  abs, new_text);
		rc = 0;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		/* fs.readFile opens a directory and fails reading it */
		tb_fail(c, "EISDIR: illegal operation on a directory, read");
		goto out;
	}
	if (!(raw = tb_read_all(abs, TB_MAX_FILE_BYTES, &rawlen))) {
		if (errno == EACCES || errno == ELOOP || errno == ENOTDIR) {
			char *m = tb_node_err(errno, "open", abs);
			tb_fail(c, "%s", m);
			free(m);
		} else {
			tb_fail(c, "Failed to read content of existing file: %s", abs);
		}
		goto out;
	}
	if (!*old) {
		tb_fail(c, "File already exists, cannot create: %s", abs);
		goto out;
	}
	/* read as UTF-8 text, as fs.readFile(…, 'utf-8') does: a BOM stays, other encodings
	 * are not guessed */
	text = tb_utf8_text(raw, rawlen, &n);
	code = tb_to_lf(text, NULL);
	occ = count(code, old);
	if (occ > 0 && (occ == 1 || multi))
		mod = restore_newline(code, replace_all(code, old, new_text));
	else if (occ == 0 && ((occ = tb_replace_flexible(code, old, new_text, &mod)) > 0 ||
			      (occ = tb_replace_regex(code, old, new_text, &mod)) > 0 ||
			      (occ = tb_replace_fuzzy(code, old, new_text, &mod, &fuzzy)) > 0))
		mod = restore_newline(code, mod);
	if (occ == 0) {
		tb_fail(c, "Could not find an exact match for 'old_string' in '%s'. If previous edits "
			   "modified the file or you are modifying lines outside your recent read "
			   "window, please use ReadFile to inspect the target lines before retrying "
			   "with an exact 'old_string'.", fp);
		goto out;
	}
	if (!multi && occ != 1) {
		tb_fail(c, "Failed to edit, Expected 1 occurrence but found %zu for old_string in "
			   "file: %s. If you intended to replace multiple occurrences, set "
			   "'allow_multiple' to true.", occ, fp);
		goto out;
	}
	if (strcmp(old, new_text) == 0) {
		tb_fail(c, "No changes to apply. The old_string and new_string are identical in file: %s", fp);
		goto out;
	}
	final = strstr(text, "\r\n") ? tb_to_crlf(mod) : xstrdup(mod);
	if (tb_write_file(c, abs, final, strlen(final)) < 0)
		goto out;
	snip = tb_snippet(code, final);
	buf_printf(&c->out, "Successfully modified file: %s (%zu replacements). Here is the updated code:\n%s%s%s",
		  abs, occ, snip, fuzzy.len ? " " : "", fuzzy.len ? fuzzy.data : "");
	rc = 0;
out:
	buf_free(&fuzzy);
	free(snip);
	free(final);
	free(mod);
	free(new_text);
	free(old);
	free(code);
	free(text);
	free(raw);
	free(abs);
	return rc;
}

const struct tb_tool tb_tool_replace = {"replace", params, run};
