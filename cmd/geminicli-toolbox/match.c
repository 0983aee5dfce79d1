/* match.c — glob patterns as the `glob`/minimatch npm packages read them (brace expansion,
 * `**` across directories, fnmatch segments with extglob, dotfiles matched), and the sorted,
 * bounded directory walk every searching tool uses. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

/* Brace expansion multiplies patterns; more alternatives than this is not a real request. */
#define GLOB_MAX_ALTERNATIVES 1024
/* Nesting of `{…}` we expand; minimatch handles more, models never need it. */
#define GLOB_MAX_BRACE_DEPTH 16

struct pat {
	char **seg;		/* segments; "**" is the globstar */
	size_t nseg;
};

struct tb_glob {
	struct pat *pats;
	size_t npats;
	int flags;		/* fnmatch flags */
};

/* Finds the `}` closing the `{` at s[open], honouring nesting and backslashes; -1 if none. */
static long brace_close(const char *s, size_t open)
{
	int depth = 0;
	for (size_t i = open; s[i]; i++) {
		if (s[i] == '\\' && s[i + 1]) {
			i++;
			continue;
		}
		if (s[i] == '{')
			depth++;
		else if (s[i] == '}' && --depth == 0)
			return (long)i;
	}
	return -1;
}

/* Expands the first brace group with a top-level comma, recursively. */
static int expand(const char *s, char ***out, size_t *n, int depth)
{
	for (size_t i = 0; s[i]; i++) {
		long close;
		size_t start;
		int d = 0;
		bool comma = false;
		if (s[i] == '\\' && s[i + 1]) {
			i++;
			continue;
		}
		if (s[i] != '{' || (close = brace_close(s, i)) < 0)
			continue;
		for (size_t j = i + 1; j < (size_t)close; j++) {
			if (s[j] == '\\' && s[j + 1]) {
				j++;
				continue;
			}
			if (s[j] == '{')
				d++;
			else if (s[j] == '}')
				d--;
			else if (s[j] == ',' && d == 0)
				comma = true;
		}
		if (!comma)
			continue;
		if (depth >= GLOB_MAX_BRACE_DEPTH)
			return -1;
		start = i + 1;
		d = 0;
		for (size_t j = i + 1; j <= (size_t)close; j++) {
			if (s[j] == '\\' && s[j + 1] && j + 1 < (size_t)close) {
				j++;
				continue;
			}
			if (s[j] == '{')
				d++;
			else if (s[j] == '}' && j < (size_t)close)
				d--;
			if ((s[j] == ',' && d == 0) || j == (size_t)close) {
				char *alt = tb_xasprintf("%.*s%.*s%s", (int)i, s, (int)(j - start),
							 s + start, s + close + 1);
				int r = expand(alt, out, n, depth + 1);
				free(alt);
				if (r < 0)
					return -1;
				start = j + 1;
			}
		}
		return 0;
	}
	if (*n >= GLOB_MAX_ALTERNATIVES)
		return -1;
	*out = tb_xrealloc(*out, (*n + 1) * sizeof **out);
	(*out)[(*n)++] = tb_xstrdup(s);
	return 0;
}

static void split(const char *s, struct pat *p)
{
	char *copy = tb_xstrdup(s), *save = NULL, *tok;
	p->seg = NULL;
	p->nseg = 0;
	for (tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		/* consecutive globstars are one */
		if (strcmp(tok, "**") == 0 && p->nseg && strcmp(p->seg[p->nseg - 1], "**") == 0)
			continue;
		p->seg = tb_xrealloc(p->seg, (p->nseg + 1) * sizeof *p->seg);
		p->seg[p->nseg++] = tb_xstrdup(tok);
	}
	free(copy);
}

struct tb_glob *tb_glob_compile(const char *pattern, bool nocase, char **why)
{
	struct tb_glob *g = tb_xmalloc(sizeof *g);
	char **alts = NULL;
	size_t n = 0;
	*why = NULL;
	if (expand(pattern, &alts, &n, 0) < 0) {
		for (size_t i = 0; i < n; i++)
			free(alts[i]);
		free(alts);
		free(g);
		*why = tb_xstrdup("pattern expands to too many alternatives");
		return NULL;
	}
	g->pats = tb_xmalloc((n ? n : 1) * sizeof *g->pats);
	g->npats = n;
	g->flags = FNM_EXTMATCH | (nocase ? FNM_CASEFOLD : 0);
	for (size_t i = 0; i < n; i++) {
		split(alts[i], &g->pats[i]);
		free(alts[i]);
	}
	free(alts);
	return g;
}

void tb_glob_free(struct tb_glob *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->npats; i++) {
		for (size_t j = 0; j < g->pats[i].nseg; j++)
			free(g->pats[i].seg[j]);
		free(g->pats[i].seg);
	}
	free(g->pats);
	free(g);
}

/* Matches segments against components; `**` takes zero or more components. When prefix is
 * set, only asks whether comps could be the leading directories of a match. */
static bool match_segs(char *const *seg, size_t nseg, char **comp, size_t ncomp, int flags,
		       bool prefix)
{
	while (nseg) {
		if (strcmp(seg[0], "**") == 0) {
			if (prefix)
				return true;
			for (size_t k = 0; k <= ncomp; k++)
				if (match_segs(seg + 1, nseg - 1, comp + k, ncomp - k, flags, false))
					return true;
			return false;
		}
		if (!ncomp)
			return prefix;
		if (fnmatch(seg[0], comp[0], flags) != 0)
			return false;
		seg++;
		nseg--;
		comp++;
		ncomp--;
	}
	return ncomp == 0 && !prefix ? true : false;
}

static size_t components(char *rel, char **comp, size_t max)
{
	size_t n = 0;
	char *save = NULL;
	for (char *t = strtok_r(rel, "/", &save); t && n < max; t = strtok_r(NULL, "/", &save))
		comp[n++] = t;
	return n;
}

static bool run(const struct tb_glob *g, const char *rel, bool prefix)
{
	char *copy = tb_xstrdup(rel);
	char *comp[TB_MAX_DEPTH + 1];
	size_t n = components(copy, comp, TB_MAX_DEPTH + 1);
	bool hit = false;
	for (size_t i = 0; i < g->npats && !hit; i++)
		hit = match_segs(g->pats[i].seg, g->pats[i].nseg, comp, n, g->flags, prefix);
	free(copy);
	return hit;
}

bool tb_glob_match(const struct tb_glob *g, const char *rel)
{
	return run(g, rel, false);
}

bool tb_glob_may_descend(const struct tb_glob *g, const char *reldir)
{
	return run(g, reldir, true);
}

char *tb_glob_escape(const char *s)
{
	struct tbuf b = {0};
	for (; *s; s++) {
		if (strchr("*?[]{}()!@+\\", *s)) {
			char one[4] = {'[', *s, ']', 0};
			if (*s == '\\' || *s == '[' || *s == ']') {
				one[0] = '\\';
				one[1] = *s;
				one[2] = 0;
			}
			tb_puts(&b, one);
		} else {
			tb_put(&b, s, 1);
		}
	}
	if (!b.data)
		tb_put(&b, "", 0);
	return b.data;
}

struct dent {
	char *name;
	unsigned char type;	/* d_type; DT_UNKNOWN when the filesystem does not say */
};

static int cmp_dents(const void *a, const void *b)
{
	return strcmp(((const struct dent *)a)->name, ((const struct dent *)b)->name);
}

static int walk_dir(const struct tb_walk *w, const char *abs, const char *rel, int depth)
{
	DIR *d;
	struct dirent *de;
	struct dent *ents = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	if (depth > TB_MAX_DEPTH || !(d = opendir(abs)))
		return 0;	/* unreadable directories are skipped, as the searches do */
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			ents = tb_xrealloc(ents, cap * sizeof *ents);
		}
		ents[n].name = tb_xstrdup(de->d_name);
		ents[n].type = de->d_type;
		n++;
	}
	closedir(d);
	tb_sort(ents, n, sizeof *ents, cmp_dents);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *name = ents[i].name;
		char *cabs = tb_xasprintf("%s/%s", strcmp(abs, "/") ? abs : "", name);
		char *crel = *rel ? tb_xasprintf("%s/%s", rel, name) : tb_xstrdup(name);
		unsigned char type = ents[i].type;
		struct stat st;
		if (type == DT_UNKNOWN) {
			if (lstat(cabs, &st) < 0)
				type = DT_UNKNOWN;
			else if (S_ISDIR(st.st_mode))
				type = DT_DIR;
			else if (S_ISLNK(st.st_mode))
				type = DT_LNK;
			else if (S_ISREG(st.st_mode))
				type = DT_REG;
		}
		if (type == DT_DIR) {
			if (!(w->skip_dir && w->skip_dir(name, crel, w->arg)) &&
			    !(w->descend && !w->descend(crel, w->arg)))
				rc = walk_dir(w, cabs, crel, depth + 1);
		} else if (type == DT_LNK) {
			/* symlinks to files count as files; directory links are not followed */
			if (stat(cabs, &st) == 0 && S_ISREG(st.st_mode) &&
			    !(w->skip_file && w->skip_file(name, w->arg)))
				rc = w->fn(cabs, crel, w->arg);
		} else if (type == DT_REG) {
			if (!(w->skip_file && w->skip_file(name, w->arg)))
				rc = w->fn(cabs, crel, w->arg);
		}
		free(cabs);
		free(crel);
	}
	for (size_t i = 0; i < n; i++)
		free(ents[i].name);
	free(ents);
	return rc;
}

int tb_walk(const struct tb_walk *w)
{
	return walk_dir(w, w->root, "", 0);
}
