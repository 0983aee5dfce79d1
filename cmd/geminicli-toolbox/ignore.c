/* ignore.c — gemini-cli's ignore files: in a git repository `.git`, `.git/info/exclude` and
 * every `.gitignore` from the working directory down (GitIgnoreParser), and `.geminiignore`
 * at the working directory in any case; gitignore rules as the `ignore` npm package applies
 * them (last matching rule wins, `!` re-includes, a trailing `/` means directories only,
 * nothing under an ignored directory comes back). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

/* An ignore file larger than this is not a list of patterns; it is read no further. */
#define IGNORE_FILE_MAX (1u << 20)

struct rule {
	struct tb_glob *g;
	bool neg, dir_only;
};

struct ruleset {
	struct rule *r;
	size_t n;
};

struct dircache {
	char *rel;		/* "" for the root */
	struct ruleset rs;
};

struct tb_ignore {
	char *root;
	bool git;		/* the root is inside a git repository and .gitignore counts */
	struct ruleset global;	/* `.git` and .git/info/exclude */
	struct ruleset extra;	/* .geminiignore */
	struct dircache **dirs;	/* pointers: rule sets handed out must not move */
	size_t ndirs;
};

/* Adds one line of an ignore file whose directory is base ("" = the root), rewritten as
 * GitIgnoreParser.processPatterns does. */
static void add_pattern(struct ruleset *rs, const char *line, const char *base)
{
	char *p, *pat, *why = NULL, *e;
	bool neg = false, anchored, dir_only = false;
	struct tb_glob *g;
	while (*line == ' ' || *line == '\t')
		line++;
	if (!*line || *line == '#')
		return;
	p = xstrdup(line);
	/* unescaped trailing spaces are not part of a pattern */
	for (e = p + strlen(p); e > p && e[-1] == ' ' && !(e - 1 > p && e[-2] == '\\'); e--)
		e[-1] = '\0';
	pat = p;
	if (*pat == '!') {
		neg = true;
		pat++;
	}
	anchored = *pat == '/';
	if (anchored)
		pat++;
	if (*pat && pat[strlen(pat) - 1] == '/') {
		dir_only = true;
		pat[strlen(pat) - 1] = '\0';
	}
	if (!*pat) {
		free(p);
		return;
	}
	{
		/* a pattern with no inner slash matches a name at any depth below its file */
		bool has_slash = anchored || strchr(pat, '/');
		char *full = xasprintf("%s%s%s%s", base, *base ? "/" : "", has_slash ? "" : "**/", pat);
		g = tb_glob_compile(full, false, &why);
		free(full);
	}
	free(why);
	if (g) {
		rs->r = xrealloc(rs->r, (rs->n + 1) * sizeof *rs->r);
		rs->r[rs->n++] = (struct rule){g, neg, dir_only};
	}
	free(p);
}

static void load_file(struct ruleset *rs, const char *path, const char *base)
{
	size_t len;
	char *text = tb_read_all(path, IGNORE_FILE_MAX, &len), *save = NULL;
	if (!text)
		return;
	for (char *line = strtok_r(text, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save))
		add_pattern(rs, line, base);
	free(text);
}

static void free_rules(struct ruleset *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		tb_glob_free(rs->r[i].g);
	free(rs->r);
}

struct tb_ignore *tb_ignore_open(const char *root, bool respect_git, bool respect_gemini)
{
	struct tb_ignore *ig = calloc(1, sizeof *ig);
	char *dir = xstrdup(root), *f;
	struct stat st;
	if (!ig)
		abort();
	ig->root = xstrdup(root);
	/* isGitRepository: a .git entry here or in any parent */
	for (;;) {
		char *g = xasprintf("%s/.git", strcmp(dir, "/") ? dir : "");
		bool found = lstat(g, &st) == 0;
		char *slash = strrchr(dir, '/');
		free(g);
		if (found) {
			ig->git = respect_git;
			break;
		}
		if (!slash || slash == dir)
			break;
		*slash = '\0';
	}
	free(dir);
	if (ig->git) {
		add_pattern(&ig->global, ".git", "");
		f = xasprintf("%s/.git/info/exclude", root);
		load_file(&ig->global, f, "");
		free(f);
	}
	if (respect_gemini) {
		f = xasprintf("%s/.geminiignore", root);
		load_file(&ig->extra, f, "");
		free(f);
	}
	return ig;
}

bool tb_ignore_active(const struct tb_ignore *ig)
{
	return ig && (ig->git || ig->extra.n > 0);
}

void tb_ignore_close(struct tb_ignore *ig)
{
	if (!ig)
		return;
	free_rules(&ig->global);
	free_rules(&ig->extra);
	for (size_t i = 0; i < ig->ndirs; i++) {
		free(ig->dirs[i]->rel);
		free_rules(&ig->dirs[i]->rs);
		free(ig->dirs[i]);
	}
	free(ig->dirs);
	free(ig->root);
	free(ig);
}

/* The .gitignore rules of one directory (relative), loaded once. */
static const struct ruleset *dir_rules(struct tb_ignore *ig, const char *rel)
{
	struct dircache *d;
	char *f;
	for (size_t i = 0; i < ig->ndirs; i++)
		if (!strcmp(ig->dirs[i]->rel, rel))
			return &ig->dirs[i]->rs;
	d = xmalloc(sizeof *d);
	d->rel = xstrdup(rel);
	d->rs = (struct ruleset){NULL, 0};
	f = xasprintf("%s%s%s/.gitignore", ig->root, *rel ? "/" : "", rel);
	load_file(&d->rs, f, rel);
	free(f);
	ig->dirs = xrealloc(ig->dirs, (ig->ndirs + 1) * sizeof *ig->dirs);
	ig->dirs[ig->ndirs++] = d;
	return &d->rs;
}

/* The verdict of rule sets in order on one path: the last matching rule decides. */
static int verdict(const struct ruleset *const *sets, size_t nsets, const char *path, bool is_dir,
		   int state)
{
	for (size_t s = 0; s < nsets; s++)
		for (size_t i = 0; i < sets[s]->n; i++) {
			const struct rule *r = &sets[s]->r[i];
			if ((r->neg ? state == 1 : state != 1) && (!r->dir_only || is_dir) &&
			    tb_glob_match(r->g, path))
				state = r->neg ? 0 : 1;
		}
	return state;
}

/* node-ignore's ignores(): a path is ignored when a parent directory is, or by its own
 * verdict. */
static bool ignores(const struct ruleset *const *sets, size_t nsets, const char *rel, bool is_dir)
{
	char *copy = xstrdup(rel);
	bool out = false;
	for (char *s = copy; (s = strchr(s, '/')) && !out; s++) {
		*s = '\0';
		out = verdict(sets, nsets, copy, true, 0) == 1;
		*s = '/';
	}
	if (!out)
		out = verdict(sets, nsets, rel, is_dir, 0) == 1;
	free(copy);
	return out;
}

bool tb_ignore_match(struct tb_ignore *ig, const char *rel, bool is_dir)
{
	const struct ruleset **sets;
	size_t nsets = 0, depth = 1;
	char *dir;
	bool out;
	if (!ig || !*rel || !strncmp(rel, "../", 3) || !strcmp(rel, "..") || rel[0] == '/')
		return false;
	if (!ig->git)
		return ig->extra.n && ignores((const struct ruleset *const[]){&ig->extra}, 1, rel, is_dir);
	for (const char *p = rel; *p; p++)
		depth += *p == '/';
	sets = xmalloc((depth + 3) * sizeof *sets);
	sets[nsets++] = &ig->global;
	sets[nsets++] = dir_rules(ig, "");
	/* each .gitignore on the way down, unless its directory is already ignored */
	dir = xstrdup(rel);
	for (char *s = dir; (s = strchr(s, '/')); s++) {
		*s = '\0';
		sets[nsets] = &ig->extra;
		if (ignores(sets, nsets + 1, dir, true)) {
			*s = '/';
			break;
		}
		sets[nsets++] = dir_rules(ig, dir);
		*s = '/';
	}
	sets[nsets++] = &ig->extra;
	out = ignores(sets, nsets, rel, is_dir);
	free(dir);
	free(sets);
	return out;
}

/* Whether abs is root or below it (isWithinRoot / isSubpath, lexical). */
static bool within(const char *root, const char *abs)
{
	size_t n = strlen(root);
	if (!strcmp(root, "/"))
		return true;
	return !strncmp(abs, root, n) && (abs[n] == '\0' || abs[n] == '/');
}

/* FileDiscoveryService._shouldIgnore on a path relative to the root (or absolute). */
bool tb_ignore_path(struct tb_ignore *ig, const char *path, bool is_dir, int is_link)
{
	char *abs = tb_resolve(ig->root, path), *rel = NULL, *real = NULL, *rroot = NULL, *err = NULL;
	struct stat st;
	bool out = false;
	if (within(ig->root, abs)) {
		rel = tb_relative(ig->root, abs);
		out = *rel && tb_ignore_match(ig, rel, is_dir);
	}
	/* a link counts where it points: outside the real root is ignored, inside as its target */
	if (!out && is_link < 0)
		is_link = lstat(abs, &st) == 0 && S_ISLNK(st.st_mode);
	if (!out && is_link && (real = tb_realpath(abs, &err))) {
		rroot = tb_real_or_same(ig->root);
		if (!within(rroot, real)) {
			out = true;
		} else if (within(ig->root, real)) {
			bool dir = stat(real, &st) == 0 ? S_ISDIR(st.st_mode) : is_dir;
			free(rel);
			rel = tb_relative(ig->root, real);
			out = *rel && tb_ignore_match(ig, rel, dir);
		}
	}
	free(abs);
	free(rel);
	free(real);
	free(rroot);
	free(err);
	return out;
}
