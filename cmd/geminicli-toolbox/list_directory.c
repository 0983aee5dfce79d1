/* list_directory.c — `list_directory`: the entries of one directory, directories first, then
 * in localeCompare order, with sizes; `ignore` globs match base names. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

static const struct tb_param params[] = {
	{"dir_path", TB_STRING, true, -1, false},
	{"ignore", TB_STRARRAY, false, -1, false},
	{"file_filtering_options", TB_FILTERING, false, -1, false},
	{NULL, TB_STRING, false, -1, false},
};

struct entry {
	char *name;
	bool dir;
	long long size;
};

/* What `.` in a JavaScript regular expression does not match. */
static bool line_terminator(uint16_t u)
{
	return u == '\n' || u == '\r' || u == 0x2028 || u == 0x2029;
}

/* One pattern of gemini-cli's shouldIgnore: the regular expression `^…$` where `*` is `.*`,
 * `?` is `.` and everything else literal, matched in UTF-16 units. */
static bool wild(const uint16_t *p, size_t np, const uint16_t *s, size_t ns)
{
	size_t i = 0, j = 0, star = (size_t)-1, mark = 0;
	while (j < ns) {
		if (i < np && p[i] == '*') {
			star = i++;
			mark = j;
		} else if (i < np && (p[i] == s[j] || p[i] == '?') && !(p[i] == '?' && line_terminator(s[j]))) {
			i++;
			j++;
		} else if (star != (size_t)-1 && !line_terminator(s[mark])) {
			i = star + 1;
			j = ++mark;
		} else {
			return false;
		}
	}
	while (i < np && p[i] == '*')
		i++;
	return i == np;
}

static bool ignored(const char *name, const char **pats, size_t n)
{
	uint16_t s[TB_NAME_MAX_UNITS], p[TB_NAME_MAX_UNITS];
	long ns = tb_utf16(name, strlen(name), s, TB_NAME_MAX_UNITS), np;
	for (size_t i = 0; ns >= 0 && i < n; i++)
		if ((np = tb_utf16(pats[i], strlen(pats[i]), p, TB_NAME_MAX_UNITS)) >= 0 &&
		    wild(p, (size_t)np, s, (size_t)ns))
			return true;
	return false;
}

/* Entries gemini-cli's workspace check refuses (`.git`, `node_modules`, `.env`): dropped. */
static bool blocked(const char *name)
{
	static const char *const segs[] = {".git", "node_modules", ".env"};
	size_t n = strlen(name);
	while (n > 0 && (name[n - 1] == '.' || name[n - 1] == ' '))
		n--;
	for (size_t i = 0; i < 3; i++)
		if (strlen(segs[i]) == n && strncasecmp(segs[i], name, n) == 0)
			return true;
	return false;
}

static int cmp_entries(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->dir != y->dir)
		return x->dir ? -1 : 1;
	return tb_collate(x->name, y->name);
}

/* Long: gemini-cli's list_directory execute() in its order (path, ignore files, entries, sort,
 * the listing), each message at byte parity. */
static int run(struct tb_call *c)
{
	char *abs = tb_resolve(c->workdir, tb_str(c, "dir_path"));
	const char **pats = NULL;
	struct entry *ents = NULL;
	size_t npats, n = 0, cap = 0, total = 0, nignored = 0;
	struct tb_ignore *ig = NULL;
	struct stat st;
	DIR *d = NULL;
	struct dirent *de;
	int rc = -1;

	if (tb_check_path(c, abs) < 0)
		goto out;
	if (stat(abs, &st) < 0) {
		char *e = tb_node_err(errno, "stat", abs);
		tb_fail(c, "Error listing directory: %s", e);
		free(e);
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		tb_fail(c, "Error: Path is not a directory: %s", abs);
		goto out;
	}
	if (!(d = opendir(abs))) {
		char *e = tb_node_err(errno, "scandir", abs);
		tb_fail(c, "Error listing directory: %s", e);
		free(e);
		goto out;
	}
	pats = tb_strs(c, "ignore", &npats);
	ig = tb_ignore_open(c->workdir, tb_filtering(c, "respect_git_ignore"),
			    tb_filtering(c, "respect_gemini_ignore"));
	while ((de = readdir(d))) {
		char *full, *rel;
		bool hit;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		total++;
		full = xasprintf("%s/%s", strcmp(abs, "/") ? abs : "", de->d_name);
		/* ignore files first (counted), as filterFilesWithReport sees the names */
		rel = tb_relative(c->workdir, full);
		hit = tb_ignore_path(ig, rel, false, -1);
		free(rel);
		if (hit) {
			nignored++;
			free(full);
			continue;
		}
		if (blocked(de->d_name) || ignored(de->d_name, pats, npats)) {
			free(full);
			continue;
		}
		if (stat(full, &st) == 0) {	/* broken entries are skipped silently */
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				ents = xrealloc(ents, cap * sizeof *ents);
			}
			ents[n].name = xstrdup(de->d_name);
			ents[n].dir = S_ISDIR(st.st_mode);
			ents[n].size = ents[n].dir ? 0 : (long long)st.st_size;
			n++;
		}
		free(full);
	}
	if (total == 0) {
		buf_printf(&c->out, "Directory %s is empty.", abs);
		rc = 0;
		goto out;
	}
	tb_sort(ents, n, sizeof *ents, cmp_entries);
	buf_printf(&c->out, "Directory listing for %s:\n", abs);
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_puts(&c->out, "\n");
		if (ents[i].dir)
			buf_printf(&c->out, "[DIR] %s", ents[i].name);
		else
			buf_printf(&c->out, "%s (%lld bytes)", ents[i].name, ents[i].size);
	}
	if (nignored)
		buf_printf(&c->out, "\n\n(%zu ignored)", nignored);
	rc = 0;
out:
	if (d)
		closedir(d);
	tb_ignore_close(ig);
	for (size_t i = 0; i < n; i++)
		free(ents[i].name);
	free(ents);
	free(pats);
	free(abs);
	return rc;
}

const struct tb_tool tb_tool_list_directory = {"list_directory", params, run};
