/* glob.c — `glob`: files under a directory matching a glob pattern, recently modified ones
 * (last 24 h) first, newest first, the rest in localeCompare order of their paths. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tb.h"

/* gemini-cli sorts files touched within this window by mtime, older ones by path. */
#define RECENT_NS (24LL * 60 * 60 * 1000000000)

static const struct tb_param params[] = {
	{"pattern", TB_STRING, true, -1, false},
	{"dir_path", TB_STRING, false, -1, false},
	{"case_sensitive", TB_BOOL, false, -1, false},
	{"respect_git_ignore", TB_BOOL, false, -1, false},
	{"respect_gemini_ignore", TB_BOOL, false, -1, false},
	{NULL, TB_STRING, false, -1, false},
};

struct hit {
	char *path;
	uint32_t *key;		/* collation key, for the hits sorted by path */
	long long mtime_ms;
	size_t order;		/* walk order: ties keep it */
	bool link;		/* a symbolic link (the walk enters no linked directory) */
};

struct state {
	struct tb_glob *g;
	struct hit *hits;
	size_t n, cap;
	long long now_ms;
};

/* gemini-cli's glob excludes: these directories are never entered (case-insensitive when
 * the search is). */
static bool skip_dir(const char *name, const char *rel, void *arg)
{
	static const char *const dirs[] = {"node_modules", ".git", "bower_components", ".svn", ".hg"};
	(void)rel;
	(void)arg;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (strcasecmp(name, dirs[i]) == 0)
			return true;
	return false;
}

static bool descend(const char *rel, void *arg)
{
	struct state *s = arg;
	return tb_glob_may_descend(s->g, rel);
}

static int add(const char *abs, const char *rel, void *arg)
{
	struct state *s = arg;
	struct stat st;
	bool link;
	if (!tb_glob_match(s->g, rel) || lstat(abs, &st) < 0)
		return 0;
	if ((link = S_ISLNK(st.st_mode)) && stat(abs, &st) < 0)
		return 0;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->hits = xrealloc(s->hits, s->cap * sizeof *s->hits);
	}
	s->hits[s->n].path = xstrdup(abs);
	s->hits[s->n].order = s->n;
	s->hits[s->n].key = NULL;
	s->hits[s->n].link = link;
	s->hits[s->n].mtime_ms = (long long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	s->n++;
	return 0;
}

/* gemini-cli's filtering of the hits: each is judged by the ignore files at its real path
 * relative to the real working directory (counted when ignored), then kept only when that
 * path, resolved from the working directory, is the hit itself, which drops every symbolic
 * link (and anything reached through one). Returns the number ignored. */
static size_t filter_hits(struct tb_call *c, struct state *s)
{
	struct tb_ignore *ig = tb_ignore_open(c->workdir, tb_bool(c, "respect_git_ignore", true),
					      tb_bool(c, "respect_gemini_ignore", true));
	char *root = tb_real_or_same(c->workdir);
	size_t kept = 0, ignored = 0;
	for (size_t i = 0; i < s->n; i++) {
		/* the walk starts at a real directory and enters no link: only a link's own path
		 * is not real */
		char *real = s->hits[i].link ? tb_real_or_same(s->hits[i].path) : xstrdup(s->hits[i].path);
		char *rel = tb_relative(root, real), *back = tb_resolve(c->workdir, rel);
		bool ign = tb_ignore_path(ig, rel, false, 0);
		ignored += ign;
		if (!ign && !strcmp(back, s->hits[i].path))
			s->hits[kept++] = s->hits[i];
		else
			free(s->hits[i].path);
		free(real);
		free(rel);
		free(back);
	}
	s->n = kept;
	free(root);
	tb_ignore_close(ig);
	return ignored;
}

static long long g_now_ms;

static int cmp_hits(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	bool xr = g_now_ms - x->mtime_ms < RECENT_NS / 1000000;
	bool yr = g_now_ms - y->mtime_ms < RECENT_NS / 1000000;
	int r;
	if (xr && yr && x->mtime_ms != y->mtime_ms)
		return y->mtime_ms > x->mtime_ms ? 1 : -1;
	if (xr != yr)
		return xr ? -1 : 1;
	if (!xr && (r = tb_collate_cmp(x->key, y->key)) != 0)
		return r;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Long: gemini-cli's glob execute() in its order (path, pattern, walk, ignore files, recent-
 * first sort, the answer), each message at byte parity. */
static int run(struct tb_call *c)
{
	const char *pattern = tb_str(c, "pattern"), *dp = tb_str(c, "dir_path");
	struct state s = {0};
	struct tb_walk w = {0};
	struct stat st;
	struct timespec now;
	char *dir, *resolved = tb_resolve(c->workdir, dp && *dp ? dp : ".");
	char *full = NULL, *esc = NULL, *why = NULL, *root = NULL;
	const char *pat = pattern, *q;
	size_t nignored;
	int rc = -1;

	dir = tb_real_or_same(resolved);
	free(resolved);
	if (tb_check_path(c, dir) < 0)
		goto out;
	if (stat(dir, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			tb_fail(c, "Search path does not exist %s", dir);
		else
			tb_fail(c, "Error accessing search path: Error: %s", strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		tb_fail(c, "Search path is not a directory: %s", dir);
		goto out;
	}
	for (q = pattern; *q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'; q++)
		;
	if (!*q) {
		tb_fail(c, "The 'pattern' parameter cannot be empty.");
		goto out;
	}
	/* a pattern naming an existing path literally is matched literally */
	full = tb_resolve(dir, pattern);
	if (lstat(full, &st) == 0)
		pat = esc = tb_glob_escape(pattern);
	/* absolute patterns are walked from the root */
	root = xstrdup(pat[0] == '/' ? "/" : dir);
	while (*pat == '/')
		pat++;
	if (!(s.g = tb_glob_compile(pat, !tb_bool(c, "case_sensitive", false), &why))) {
		tb_fail(c, "Error during glob search operation: %s", why);
		goto out;
	}
	w.root = root;
	w.skip_dir = skip_dir;
	w.descend = descend;
	w.fn = add;
	w.arg = &s;
	tb_walk(&w);
	nignored = filter_hits(c, &s);
	if (s.n == 0) {
		buf_printf(&c->out, "No files found matching pattern \"%s\" within %s", pattern, dir);
		if (nignored)
			buf_printf(&c->out, " (%zu files were ignored)", nignored);
		rc = 0;
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	g_now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	for (size_t i = 0; i < s.n; i++)
		s.hits[i].key = tb_collate_key(s.hits[i].path);
	tb_sort(s.hits, s.n, sizeof *s.hits, cmp_hits);
	buf_printf(&c->out, "Found %zu file(s) matching \"%s\" within %s", s.n, pattern, dir);
	if (nignored)
		buf_printf(&c->out, " (%zu additional files were ignored)", nignored);
	buf_puts(&c->out, ", sorted by modification time (newest first):\n");
	for (size_t i = 0; i < s.n; i++) {
		if (i)
			buf_puts(&c->out, "\n");
		buf_puts(&c->out, s.hits[i].path);
	}
	rc = 0;
out:
	for (size_t i = 0; i < s.n; i++) {
		free(s.hits[i].path);
		free(s.hits[i].key);
	}
	free(s.hits);
	tb_glob_free(s.g);
	free(root);
	free(why);
	free(esc);
	free(full);
	free(dir);
	return rc;
}

const struct tb_tool tb_tool_glob = {"glob", params, run};
