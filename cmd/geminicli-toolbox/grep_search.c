/* grep_search.c — `grep_search`: regular-expression search in file contents with PCRE2,
 * shaped like gemini-cli's ripgrep variant: rg's walk rules (hidden files and binary files
 * skipped, gemini-cli's directory excludes), include globs, context lines, match caps, the
 * automatic context for 1–3 matches, and the `File:` / `L<n>:` result format. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tb.h"

/* gemini-cli's defaults: 100 matches in all, a 30 s search deadline. */
#define DEFAULT_TOTAL_MAX 100
#define SEARCH_TIMEOUT_MS 30000
/* Context asked for automatically when a search finds 1 (50 lines) or 2–3 matches (15). */
#define AUTO_CONTEXT_ONE 50
#define AUTO_CONTEXT_FEW 15
/* Files up to this size are read into one reused buffer; larger ones are mapped. */
#define GREP_READ_MAX (16u << 20)

static const struct tb_param params[] = {
	{"pattern", TB_STRING, true, -1, false},
	{"dir_path", TB_STRING, false, -1, false},
	{"include_pattern", TB_STRING, false, -1, false},
	{"exclude_pattern", TB_STRING, false, -1, false},
	{"names_only", TB_BOOL, false, -1, false},
	{"case_sensitive", TB_BOOL, false, -1, false},
	{"fixed_strings", TB_BOOL, false, -1, false},
	{"context", TB_INT, false, 0, false},
	{"after", TB_INT, false, 0, false},
	{"before", TB_INT, false, 0, false},
	{"no_ignore", TB_BOOL, false, -1, false},
	{"max_matches_per_file", TB_INT, false, 1, false},
	{"total_max_matches", TB_INT, false, 1, false},
	{NULL, TB_STRING, false, -1, false},
};

struct rec {
	size_t file;		/* index into files */
	int64_t line;
	char *text;
	bool context;
};

struct search {
	pcre2_code *re, *exclude;
	pcre2_match_data *md;
	struct tb_glob *include;
	bool include_path;	/* the include glob has a `/`: match the relative path */
	bool include_negated;	/* `!glob`: everything but what it matches */
	const char *cwd;	/* rg's globs are relative to its working directory */
	bool no_ignore;
	int64_t before, after, per_file, total;
	int64_t found;		/* matches so far (context lines not counted) */
	const char *base;	/* paths are shown relative to this */
	char **files;		/* display path of each file with records */
	char **abs;
	size_t nfiles;
	struct rec *recs;
	size_t nrecs, cap;
	struct timespec deadline;
	bool timed_out;
	struct tb_ignore *ig;	/* NULL with no_ignore */
	char *root;		/* the real working directory ignore rules are relative to */
	char *buf;		/* the read buffer, reused from file to file */
	size_t bufcap;
};

static pcre2_code *compile(const char *pat, bool caseless, bool literal, bool multiline,
			   char *why, size_t whylen)
{
	int code;
	PCRE2_SIZE off;
	uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
	pcre2_code *re;
	if (caseless)
		opts |= PCRE2_CASELESS;
	if (literal)
		opts |= PCRE2_LITERAL;	/* allows neither UCP nor MULTILINE (not needed) */
	else
		opts |= PCRE2_UCP | (multiline ? PCRE2_MULTILINE : 0);
	re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, opts, &code, &off, NULL);
	if (!re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(code, msg, sizeof msg);
		snprintf(why, whylen, "regex parse error: %s (in /%s/)", (char *)msg, pat);
		return NULL;
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);	/* falls back to the interpreter */
	return re;
}

static bool past_deadline(struct search *s)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec > s->deadline.tv_sec ||
	    (now.tv_sec == s->deadline.tv_sec && now.tv_nsec >= s->deadline.tv_nsec))
		s->timed_out = true;
	return s->timed_out;
}

/* rg's walk with gemini-cli's excludes: hidden entries are never searched; unless
 * no_ignore, the usual dependency/build directories and the .log and .tmp files are not either. */
/* Whether the ignore files exclude abs (judged relative to the working directory). */
static bool ignored_abs(struct search *s, const char *abs, bool is_dir)
{
	char *rel;
	bool hit;
	if (!s->ig)
		return false;
	rel = tb_relative(s->root, abs);
	hit = tb_ignore_match(s->ig, rel, is_dir);
	free(rel);
	return hit;
}

static bool skip_dir(const char *name, const char *rel, void *arg)
{
	static const char *const dirs[] = {"node_modules", ".git", "bower_components", ".svn",
					   ".hg", ".vscode", ".idea", "dist", "build",
					   "coverage", "__pycache__"};
	struct search *s = arg;
	char *abs;
	bool hit;
	if (name[0] == '.')
		return true;
	if (s->no_ignore)
		return false;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (!strcmp(name, dirs[i]))
			return true;
	abs = xasprintf("%s/%s", s->base, rel);
	hit = ignored_abs(s, abs, true);
	free(abs);
	return hit;
}

static bool skip_file(const char *name, void *arg)
{
	struct search *s = arg;
	size_t n = strlen(name);
	if (name[0] == '.')
		return true;
	if (s->no_ignore)
		return false;
	return (n >= 4 && !strcmp(name + n - 4, ".log")) || (n >= 4 && !strcmp(name + n - 4, ".tmp"));
}

static void add_rec(struct search *s, size_t file, int64_t line, const char *p, size_t n,
		    bool context)
{
	while (n > 0 && strchr(" \t\r\n\v\f", p[n - 1]))
		n--;
	if (s->nrecs == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->recs = xrealloc(s->recs, s->cap * sizeof *s->recs);
	}
	s->recs[s->nrecs].file = file;
	s->recs[s->nrecs].line = line;
	s->recs[s->nrecs].text = xasprintf("%.*s", (int)n, p);
	s->recs[s->nrecs].context = context;
	s->nrecs++;
}

static bool excluded(struct search *s, const char *p, size_t n)
{
	pcre2_match_data *md;
	int r;
	if (!s->exclude)
		return false;
	md = pcre2_match_data_create_from_pattern(s->exclude, NULL);
	r = pcre2_match(s->exclude, (PCRE2_SPTR)p, n, 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return r >= 0;
}

/* Line boundaries: lines[i] is the offset of line i+1's first byte. */
struct lines {
	size_t *start;
	size_t n;
};

static void index_lines(const char *buf, size_t len, struct lines *l)
{
	size_t cap = 1024;
	l->start = xmalloc(cap * sizeof *l->start);
	l->n = 0;
	l->start[l->n++] = 0;
	for (const char *p = buf; (p = memchr(p, '\n', len - (size_t)(p - buf))); p++) {
		if ((size_t)(p + 1 - buf) >= len)
			break;
		if (l->n == cap) {
			cap *= 2;
			l->start = xrealloc(l->start, cap * sizeof *l->start);
		}
		l->start[l->n++] = (size_t)(p + 1 - buf);
	}
}

static size_t line_end(const char *buf, size_t len, size_t from)
{
	const char *nl = memchr(buf + from, '\n', len - from);
	return nl ? (size_t)(nl - buf) : len;
}

/* Searches one file's bytes; appends its match and context records in line order. Returns
 * true when the total cap was reached.
 * Long: one pass over a file's lines that keeps match and context records in order with the
 * caps; split, its running state would need a struct of its own. */
static bool search_buf(struct search *s, const char *buf, size_t len, const char *abs)
{
	size_t fileidx = s->nfiles, first = s->nrecs, pos = 0, lineno0 = 0;
	int64_t in_file = 0, last_emitted = 0;	/* last line number written (1-based) */
	int64_t pending_after = 0, after_from = 0;
	struct lines li = {0};
	bool have_lines = false, stop = false;

	while (pos <= len) {
		int r = pcre2_match(s->re, (PCRE2_SPTR)buf, len, pos, 0, s->md, NULL);
		PCRE2_SIZE *ov;
		size_t ls, le, ln;
		if (r < 0)
			break;
		ov = pcre2_get_ovector_pointer(s->md);
		ls = ov[0];
		while (ls > 0 && buf[ls - 1] != '\n')
			ls--;
		le = line_end(buf, len, ls);
		if (ls == len && len > 0)
			break;	/* rg does not report the empty line after a final newline */
		if (ov[1] > le) {
			/* the match crosses a newline: rg matches lines, so retry within this one */
			int r2 = pcre2_match(s->re, (PCRE2_SPTR)buf + ls, le - ls, 0, 0, s->md, NULL);
			if (r2 < 0) {
				pos = le + 1;
				continue;
			}
		}
		if (!have_lines) {
			index_lines(buf, len, &li);
			have_lines = true;
		}
		/* the line number of ls: binary search from the last known line */
		{
			size_t lo = lineno0, hi = li.n;
			while (hi - lo > 1) {
				size_t mid = lo + (hi - lo) / 2;
				if (li.start[mid] <= ls)
					lo = mid;
				else
					hi = mid;
			}
			ln = lo;
			lineno0 = lo;
		}
		if (fileidx == s->nfiles) {
			s->files = xrealloc(s->files, (s->nfiles + 1) * sizeof *s->files);
			s->abs = xrealloc(s->abs, (s->nfiles + 1) * sizeof *s->abs);
			{
				char *rel = tb_relative(s->base, abs);
				if (!*rel) {
					free(rel);
					rel = xstrdup(tb_basename(abs));
				}
				s->files[s->nfiles] = rel;
			}
			s->abs[s->nfiles] = xstrdup(abs);
			s->nfiles++;
		}
		/* after-context of the previous match, up to this line */
		for (int64_t k = after_from; pending_after > 0 && k < (int64_t)ln; k++, pending_after--) {
			if (k + 1 <= last_emitted)
				continue;
			size_t a = li.start[k], b = line_end(buf, len, a);
			if (!excluded(s, buf + a, b - a))
				add_rec(s, fileidx, k + 1, buf + a, b - a, true);
			last_emitted = k + 1;
		}
		pending_after = 0;
		/* before-context */
		for (int64_t k = (int64_t)ln - s->before; k < (int64_t)ln; k++) {
			if (k < 0 || k + 1 <= last_emitted)
				continue;
			size_t a = li.start[k], b = line_end(buf, len, a);
			if (!excluded(s, buf + a, b - a))
				add_rec(s, fileidx, k + 1, buf + a, b - a, true);
			last_emitted = k + 1;
		}
		last_emitted = (int64_t)ln + 1;
		if (!excluded(s, buf + ls, le - ls)) {
			add_rec(s, fileidx, (int64_t)ln + 1, buf + ls, le - ls, false);
			in_file++;
			if (++s->found >= s->total) {
				stop = true;
				break;
			}
		}
		pending_after = s->after;
		after_from = (int64_t)ln + 1;
		pos = le + 1;
		if (s->per_file > 0 && in_file >= s->per_file)
			break;
	}
	/* after-context of the last match */
	for (int64_t k = after_from; !stop && pending_after > 0 && k < (int64_t)li.n; k++, pending_after--) {
		size_t a = li.start[k], b = line_end(buf, len, a);
		if (a == len)
			break;
		if (!excluded(s, buf + a, b - a))
			add_rec(s, fileidx, k + 1, buf + a, b - a, true);
	}
	/* a file whose only records were excluded context has no matches to show */
	if (fileidx < s->nfiles && in_file == 0) {
		for (size_t i = first; i < s->nrecs; i++)
			free(s->recs[i].text);
		s->nrecs = first;
		free(s->files[fileidx]);
		free(s->abs[fileidx]);
		s->nfiles--;
	}
	free(li.start);
	return stop;
}

static int search_file(struct search *s, const char *abs)
{
	struct stat st;
	void *map = MAP_FAILED;
	const char *data;
	size_t len, got = 0;
	bool stop;
	int fd = open(abs, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;	/* unreadable files are skipped, as rg does */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return 0;
	}
	len = (size_t)st.st_size;
	if (len > GREP_READ_MAX) {
		map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (map == MAP_FAILED)
			return 0;
		data = map;
	} else {
		if (len > s->bufcap) {
			s->buf = xrealloc(s->buf, len);
			s->bufcap = len;
		}
		while (got < len) {
			ssize_t r = read(fd, s->buf + got, len - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		close(fd);
		len = got;
		data = s->buf;
	}
	/* rg's binary detection: a NUL byte means the file is not searched */
	stop = len > 0 && !memchr(data, '\0', len) && search_buf(s, data, len, abs);
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	return stop ? 1 : 0;
}

static int walk_fn(const char *abs, const char *rel, void *arg)
{
	struct search *s = arg;
	if (s->include) {
		/* rg --glob: a glob with a slash is matched against the path from rg's working
		 * directory (gemini-cli's), not from the searched directory; `!` excludes */
		char *from_cwd = tb_relative(s->cwd, abs);
		bool hit = tb_glob_match(s->include, s->include_path ? from_cwd : tb_basename(rel));
		free(from_cwd);
		if (hit == s->include_negated)
			return 0;
	}
	if (ignored_abs(s, abs, false))
		return 0;
	if (past_deadline(s))
		return 1;
	return search_file(s, abs);
}

static void reset(struct search *s)
{
	for (size_t i = 0; i < s->nrecs; i++)
		free(s->recs[i].text);
	for (size_t i = 0; i < s->nfiles; i++) {
		free(s->files[i]);
		free(s->abs[i]);
	}
	free(s->recs);
	free(s->files);
	free(s->abs);
	s->recs = NULL;
	s->files = s->abs = NULL;
	s->nrecs = s->cap = s->nfiles = 0;
	s->found = 0;
}

static void run_search(struct search *s, const char *target, bool is_file)
{
	if (is_file) {
		search_file(s, target);
	} else {
		struct tb_walk w = {0};
		w.root = target;
		w.no_links = true;
		w.skip_dir = skip_dir;
		w.skip_file = skip_file;
		w.fn = walk_fn;
		w.arg = s;
		tb_walk(&w);
	}
}

static int cmp_recs(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void format(struct tb_call *c, struct search *s, const char *pattern, const char *loc,
		   const char *include, bool names_only)
{
	struct buf o = {0};
	size_t a, b;
	char *filter = include ? xasprintf(" (filter: \"%s\")", include) : xstrdup("");
	if (s->nrecs == 0) {
		buf_printf(&c->out, "No matches found for pattern \"%s\" %s%s.", pattern, loc, filter);
		free(filter);
		return;
	}
	if (names_only) {
		char **names = xmalloc(s->nfiles * sizeof *names);
		memcpy(names, s->files, s->nfiles * sizeof *names);
		tb_sort(names, s->nfiles, sizeof *names, cmp_str);
		buf_printf(&o, "Found %zu files with matches for pattern \"%s\" %s%s", s->nfiles,
			  pattern, loc, filter);
		if (s->found >= s->total)
			buf_printf(&o, " (results limited to %lld matches for performance)",
				  (long long)s->total);
		buf_puts(&o, ":\n");
		for (size_t i = 0; i < s->nfiles; i++) {
			if (i)
				buf_puts(&o, "\n");
			buf_puts(&o, names[i]);
		}
		free(names);
	} else {
		tb_sort(s->recs, s->nrecs, sizeof *s->recs, cmp_recs);
		buf_printf(&o, "Found %lld %s for pattern \"%s\" %s%s", (long long)s->found,
			  s->found == 1 ? "match" : "matches", pattern, loc, filter);
		if (s->found >= s->total)
			buf_printf(&o, " (results limited to %lld matches for performance)",
				  (long long)s->total);
		buf_puts(&o, ":\n---\n");
		for (a = 0; a < s->nrecs; a = b) {
			buf_printf(&o, "File: %s\n", s->files[s->recs[a].file]);
			for (b = a; b < s->nrecs && s->recs[b].file == s->recs[a].file; b++) {
				const char *t = s->recs[b].text;
				size_t n = strlen(t), cut = tb_utf8_prefix(t, n, TB_MAX_LINE_CHARS);
				buf_printf(&o, "L%lld%c %.*s%s\n", (long long)s->recs[b].line,
					  s->recs[b].context ? '-' : ':', (int)cut, t,
					  cut < n ? "... [truncated]" : "");
			}
			buf_puts(&o, "---\n");
		}
	}
	/* the result is trimmed as a whole (so it ends with `---`) */
	a = 0;
	b = o.len;
	while (a < b && strchr(" \t\r\n", o.data[a]))
		a++;
	while (b > a && strchr(" \t\r\n", o.data[b - 1]))
		b--;
	buf_append(&c->out, o.data + a, b - a);
	buf_free(&o);
	free(filter);
}

/* Long: gemini-cli's grep_search execute() in its order (pattern checks, path, the search, the
 * summary line), each message at byte parity (tests/geminicli-parity.bats). */
static int run(struct tb_call *c)
{
	const char *pattern = tb_str(c, "pattern"), *dp = tb_str(c, "dir_path");
	const char *include = tb_str(c, "include_pattern"), *exclude = tb_str(c, "exclude_pattern");
	bool cs = tb_bool(c, "case_sensitive", false), fixed = tb_bool(c, "fixed_strings", false);
	bool names_only = tb_bool(c, "names_only", false);
	int64_t ctx = 0, before = 0, after = 0;
	bool has_ctx = tb_int(c, "context", &ctx), has_b = tb_int(c, "before", &before);
	bool has_a = tb_int(c, "after", &after);
	struct search s = {0};
	char why[1024], *target = NULL, *loc = NULL;
	const char *q;
	struct stat st;
	struct timespec now;
	int rc = -1;

	if (include && !*include)
		include = NULL;
	if (exclude && !*exclude)
		exclude = NULL;
	/* gemini-cli's validation: both patterns must compile as JavaScript regular expressions */
	if (!fixed && (q = tb_jsre_error(pattern)))
		return tb_fail(c, "Invalid regular expression pattern provided: %s. Error: Invalid "
			       "regular expression: /%s/: %s", pattern, pattern, q);
	if (exclude && (q = tb_jsre_error(exclude)))
		return tb_fail(c, "Invalid exclude regular expression pattern provided: %s. Error: "
			       "Invalid regular expression: /%s/: %s", exclude, exclude, q);
	{
		char *r = tb_resolve(c->workdir, dp && *dp ? dp : "."), *err;
		target = tb_realpath(r, &err);
		free(r);
		if (!target) {
			tb_fail(c, "%s", err);
			free(err);
			goto out;
		}
	}
	if (tb_check_path(c, target) < 0)
		goto out;
	if (stat(target, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			tb_fail(c, "Path does not exist: %s", target);
		else
			tb_fail(c, "Failed to access path stats for %s: %s", target, strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		/* an error when dir_path was given (validation), plain output otherwise */
		if (dp && *dp)
			tb_fail(c, "Path is not a valid directory or file: %s", target);
		else
			buf_printf(&c->out, "Path is not a valid directory or file: %s", target);
		rc = dp && *dp ? -1 : 0;
		goto out;
	}
	/* valid JavaScript the search engine cannot take fails as gemini-cli's rg run fails: as
	 * output, not as an error */
	if (!(s.re = compile(pattern, !cs, fixed, true, why, sizeof why)) ||
	    (exclude && !(s.exclude = compile(exclude, !cs, false, false, why, sizeof why)))) {
		buf_printf(&c->out, "Error during grep search operation: %s", why);
		rc = 0;
		goto out;
	}
	loc = xasprintf("in path \"%s\"", dp && *dp ? dp : ".");
	s.md = pcre2_match_data_create_from_pattern(s.re, NULL);
	s.no_ignore = tb_bool(c, "no_ignore", false);
	s.before = has_b ? before : (has_ctx ? ctx : 0);
	s.after = has_a ? after : (has_ctx ? ctx : 0);
	if (!tb_int(c, "max_matches_per_file", &s.per_file))
		s.per_file = 0;
	if (!tb_int(c, "total_max_matches", &s.total))
		s.total = DEFAULT_TOTAL_MAX;
	s.base = target;
	if (!s.no_ignore) {
		s.ig = tb_ignore_open(c->workdir, true, true);
		s.root = tb_real_or_same(c->workdir);
		if (!tb_ignore_active(s.ig)) {
			tb_ignore_close(s.ig);
			s.ig = NULL;
		}
	}
	if (include) {
		char *w2 = NULL;
		const char *g = include;
		if ((s.include_negated = g[0] == '!'))
			g++;
		s.include_path = strchr(g, '/') != NULL;
		s.include = tb_glob_compile(g[0] == '/' ? g + 1 : g, false, &w2);
		s.cwd = c->workdir;
		free(w2);
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	s.deadline.tv_sec = now.tv_sec + SEARCH_TIMEOUT_MS / 1000;
	s.deadline.tv_nsec = now.tv_nsec;
	run_search(&s, target, S_ISREG(st.st_mode));
	if (s.timed_out) {
		buf_printf(&c->out,
			  "Error during grep search operation: Operation timed out after %dms. In "
			  "large repositories, consider narrowing your search scope by specifying a "
			  "'dir_path' or an 'include_pattern'.", SEARCH_TIMEOUT_MS);
		rc = 0;
		goto out;
	}
	/* 1–3 matches and no context asked for: search those files again with context */
	if (s.found >= 1 && s.found <= 3 && !names_only && !has_ctx && !has_a && !has_b) {
		size_t n = s.nfiles;
		char **files = xmalloc((n ? n : 1) * sizeof *files);
		for (size_t i = 0; i < n; i++)
			files[i] = xstrdup(s.abs[i]);
		s.before = s.after = s.found == 1 ? AUTO_CONTEXT_ONE : AUTO_CONTEXT_FEW;
		reset(&s);
		for (size_t i = 0; i < n; i++)
			if (search_file(&s, files[i]))
				break;
		for (size_t i = 0; i < n; i++)
			free(files[i]);
		free(files);
	}
	format(c, &s, pattern, loc, include, names_only);
	rc = 0;
out:
	reset(&s);
	free(s.buf);
	tb_ignore_close(s.ig);
	free(s.root);
	pcre2_match_data_free(s.md);
	pcre2_code_free(s.re);
	pcre2_code_free(s.exclude);
	tb_glob_free(s.include);
	free(target);
	free(loc);
	return rc;
}

const struct tb_tool tb_tool_grep_search = {"grep_search", params, run};
