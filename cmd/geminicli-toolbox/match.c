/* match.c — glob patterns as the `glob`/minimatch npm packages read them (brace expansion,
 * `**` across directories, `*` `?` `[…]` and extglobs within a name, dotfiles matched), and
 * the sorted, bounded directory walk every searching tool uses. Names are matched as
 * minimatch's regular expressions match them: in UTF-16 code units, so `?` takes one
 * character of the Basic Multilingual Plane and half of any other. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"
#include "utf8.h"

/* Brace expansion multiplies patterns; more alternatives than this is not a real request. */
#define GLOB_MAX_ALTERNATIVES 1024
/* Nesting of `{…}` we expand; minimatch handles more, models never need it. */
#define GLOB_MAX_BRACE_DEPTH 16

/* Backtracking budget per name: a pathological pattern gives up instead of running away. */
#define MATCH_MAX_STEPS 100000

enum tok_type { T_LIT, T_ANY, T_STAR, T_CLASS, T_EXT };
/* minimatch writes [[:alpha:]], [[:upper:]], [[:lower:]], [[:alnum:]] as \p{…} classes. */
enum { P_LETTER = 1, P_UPPER = 2, P_LOWER = 4 };

struct range {
	uint16_t lo, hi;
};

struct seq;

struct tok {
	enum tok_type type;
	uint16_t unit;			/* T_LIT */
	struct range *ranges;		/* T_CLASS */
	size_t nranges;
	uint8_t props;			/* T_CLASS: Unicode properties (P_*) it holds too */
	bool negated;			/* T_CLASS */
	char ext;			/* T_EXT: one of @ ? * + ! */
	struct seq *alts;		/* T_EXT */
	size_t nalts;
};

struct seq {
	struct tok *t;
	size_t n;
};

struct seg {
	bool globstar;
	struct seq seq;
};

struct pat {
	struct seg *seg;
	size_t nseg;
};

struct tb_glob {
	struct pat *pats;
	size_t npats;
	bool nocase;
};

/* ---- names in UTF-16 ---- */

/* Simple case mapping for the scripts file names commonly use (what the `i` flag of a
 * JavaScript regular expression does there): to lower case, and back to upper. */
static uint16_t fold(uint16_t u)
{
	if ((u >= 'A' && u <= 'Z') || (u >= 0xc0 && u <= 0xde && u != 0xd7) ||
	    (u >= 0x391 && u <= 0x3ab && u != 0x3a2) || (u >= 0x410 && u <= 0x42f))
		return (uint16_t)(u + 0x20);
	if (u >= 0x400 && u <= 0x40f)
		return (uint16_t)(u + 0x50);
	if (u == 0x178)
		return 0xff;
	if (u == 0x1e9e)
		return 0xdf;	/* ẞ */
	/* Latin Extended-A pairs: upper case even below U+0138 and from U+014A, odd between */
	if (((u >= 0x100 && u <= 0x137) || (u >= 0x14a && u <= 0x177)) && !(u & 1))
		return (uint16_t)(u + 1);
	if (((u >= 0x139 && u <= 0x148) || (u >= 0x179 && u <= 0x17e)) && (u & 1))
		return (uint16_t)(u + 1);
	return u;
}

static uint16_t unfold(uint16_t u)
{
	if ((u >= 'a' && u <= 'z') || (u >= 0xe0 && u <= 0xfe && u != 0xf7) ||
	    (u >= 0x3b1 && u <= 0x3cb && u != 0x3c2) || (u >= 0x430 && u <= 0x44f))
		return (uint16_t)(u - 0x20);
	if (u >= 0x450 && u <= 0x45f)
		return (uint16_t)(u - 0x50);
	if (u == 0xff)
		return 0x178;
	if (u == 0xdf)
		return 0x1e9e;
	if (((u >= 0x101 && u <= 0x137) || (u >= 0x14b && u <= 0x177)) && (u & 1))
		return (uint16_t)(u - 1);
	if (((u >= 0x13a && u <= 0x148) || (u >= 0x17a && u <= 0x17e)) && !(u & 1))
		return (uint16_t)(u - 1);
	return u;
}

/* UTF-8 → UTF-16 units (invalid bytes become U+FFFD); -1 when longer than max. */
long tb_utf16(const char *s, size_t n, uint16_t *out, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0;
	while (i < n) {
		uint32_t cp;
		if (p[i] < 0x80) {	/* the common case, without the decoder */
			if (o + 1 > max)
				return -1;
			out[o++] = p[i++];
			continue;
		}
		i += utf8_decode(p + i, n - i, &cp);
		if (o + 2 > max)
			return -1;
		if (cp >= 0x10000) {
			out[o++] = (uint16_t)(0xd800 + ((cp - 0x10000) >> 10));
			out[o++] = (uint16_t)(0xdc00 + ((cp - 0x10000) & 0x3ff));
		} else {
			out[o++] = (uint16_t)cp;
		}
	}
	return (long)o;
}

/* ---- compiling one name pattern ---- */

static void push_tok(struct seq *q, struct tok t)
{
	q->t = xrealloc(q->t, (q->n + 1) * sizeof *q->t);
	q->t[q->n++] = t;
}

static void add_range(struct tok *t, uint32_t lo, uint32_t hi)
{
	t->ranges = xrealloc(t->ranges, (t->nranges + 1) * sizeof *t->ranges);
	t->ranges[t->nranges++] = (struct range){(uint16_t)lo, (uint16_t)hi};
}

/* The next character of the pattern as one UTF-16 unit (a character above U+FFFF is
 * pushed as its two units by the caller). */
static size_t next_char(const char *p, uint32_t *cp)
{
	return utf8_decode((const unsigned char *)p, strlen(p), cp);
}

static void push_literal(struct seq *q, uint32_t cp)
{
	if (cp >= 0x10000) {
		push_tok(q, (struct tok){.type = T_LIT, .unit = (uint16_t)(0xd800 + ((cp - 0x10000) >> 10))});
		push_tok(q, (struct tok){.type = T_LIT, .unit = (uint16_t)(0xdc00 + ((cp - 0x10000) & 0x3ff))});
	} else {
		push_tok(q, (struct tok){.type = T_LIT, .unit = (uint16_t)cp});
	}
}

/* A `[…]` class at p (after the `[`); returns the bytes it takes through `]`, 0 when it is
 * not closed (then `[` is a literal, as in minimatch). */
static size_t parse_class(const char *p, struct tok *t)
{
	static const struct { const char *name; const char *ranges; uint8_t props; } posix[] = {
		{"alnum", "09", P_LETTER}, {"alpha", "", P_LETTER}, {"ascii", "\x01\x7f", 0},
		{"blank", "\t\t  ", 0}, {"cntrl", "\x01\x1f\x7f\x7f", 0}, {"digit", "09", 0},
		{"graph", "!~", 0}, {"lower", "", P_LOWER}, {"print", " ~", 0},
		{"punct", "!/:@[`{~", 0}, {"space", "\t\r  ", 0}, {"upper", "", P_UPPER},
		{"word", "09AZ__az", 0}, {"xdigit", "09AFaf", 0},
	};
	size_t i = 0;
	bool first = true;
	*t = (struct tok){.type = T_CLASS};
	if (p[i] == '!' || p[i] == '^') {
		t->negated = true;
		i++;
	}
	while (p[i]) {
		uint32_t lo, hi;
		if (p[i] == ']' && !first)
			return i + 1;
		first = false;
		if (p[i] == '[' && p[i + 1] == ':') {
			size_t k;
			for (k = 0; k < sizeof posix / sizeof posix[0]; k++) {
				size_t len = strlen(posix[k].name);
				if (!strncmp(p + i + 2, posix[k].name, len) && !strncmp(p + i + 2 + len, ":]", 2)) {
					for (const char *r = posix[k].ranges; *r; r += 2)
						add_range(t, (unsigned char)r[0], (unsigned char)r[1]);
					t->props |= posix[k].props;
					i += len + 4;
					break;
				}
			}
			if (k < sizeof posix / sizeof posix[0])
				continue;
		}
		if (p[i] == '\\' && p[i + 1])
			i++;
		i += next_char(p + i, &lo);
		hi = lo;
		if (p[i] == '-' && p[i + 1] && p[i + 1] != ']') {
			i++;
			if (p[i] == '\\' && p[i + 1])
				i++;
			i += next_char(p + i, &hi);
		}
		if (lo > 0xffff || hi > 0xffff)
			lo = hi = 0xfffd;	/* no astral ranges in a non-unicode expression */
		if (lo <= hi)
			add_range(t, lo, hi);
	}
	free(t->ranges);
	t->ranges = NULL;
	t->nranges = 0;
	return 0;
}

static size_t parse_seq(const char *p, struct seq *q, bool in_ext, int depth);
static void free_tok(struct tok *t);

/* An extglob `X(a|b)` at p (X is p[0]); returns the bytes through `)`, 0 when not closed. */
static size_t parse_ext(const char *p, struct tok *t, int depth)
{
	size_t i = 2;
	*t = (struct tok){.type = T_EXT, .ext = p[0]};
	if (depth >= GLOB_MAX_BRACE_DEPTH)
		return 0;
	for (;;) {
		struct seq alt = {0};
		if (!p[i]) {
			free_tok(t);
			return 0;
		}
		i += parse_seq(p + i, &alt, true, depth + 1);
		t->alts = xrealloc(t->alts, (t->nalts + 1) * sizeof *t->alts);
		t->alts[t->nalts++] = alt;
		if (p[i] == '|') {
			i++;
			continue;
		}
		if (p[i] == ')')
			return i + 1;
		free_tok(t);	/* not closed: the caller reads a literal */
		return 0;
	}
}

static void free_seq(struct seq *q);

static void free_tok(struct tok *t)
{
	free(t->ranges);
	for (size_t i = 0; i < t->nalts; i++)
		free_seq(&t->alts[i]);
	free(t->alts);
}

static void free_seq(struct seq *q)
{
	for (size_t i = 0; i < q->n; i++)
		free_tok(&q->t[i]);
	free(q->t);
}

/* Parses until the end, or (in an extglob) an unescaped `|` or `)`; returns the bytes. */
static size_t parse_seq(const char *p, struct seq *q, bool in_ext, int depth)
{
	size_t i = 0;
	while (p[i]) {
		struct tok t;
		size_t k;
		uint32_t cp;
		if (in_ext && (p[i] == '|' || p[i] == ')'))
			break;
		if (strchr("@?*+!", p[i]) && p[i + 1] == '(' && (k = parse_ext(p + i, &t, depth))) {
			push_tok(q, t);
			i += k;
			continue;
		}
		if (p[i] == '*') {
			while (p[i] == '*')
				i++;
			push_tok(q, (struct tok){.type = T_STAR});
			continue;
		}
		if (p[i] == '?') {
			push_tok(q, (struct tok){.type = T_ANY});
			i++;
			continue;
		}
		if (p[i] == '[' && (k = parse_class(p + i + 1, &t))) {
			push_tok(q, t);
			i += k + 1;
			continue;
		}
		if (p[i] == '\\' && p[i + 1])
			i++;
		i += next_char(p + i, &cp);
		push_literal(q, cp);
	}
	return i;
}

/* ---- matching ---- */

struct mctx {
	const uint16_t *s;
	size_t n;
	bool nocase;
	long steps;
};

/* What remains after a sequence ends: the rest of the enclosing sequence (a stack). */
struct cont {
	const struct seq *q;
	size_t i;
	const struct cont *next;
	const struct tok *repeat;	/* `*(…)` / `+(…)`: try the extglob again first */
	size_t from;			/* where that repetition started (no empty loops) */
};

static bool m_seq(struct mctx *m, const struct seq *q, size_t i, size_t pos, const struct cont *k);

static bool m_cont(struct mctx *m, const struct cont *k, size_t pos)
{
	if (!k)
		return pos == m->n;
	if (k->repeat && pos > k->from) {
		for (size_t a = 0; a < k->repeat->nalts; a++) {
			struct cont again = {k->q, k->i, k->next, k->repeat, pos};
			if (m_seq(m, &k->repeat->alts[a], 0, pos, &again))
				return true;
		}
	}
	return m_seq(m, k->q, k->i, pos, k->next);
}

/* A letter, near enough for file names: ASCII letters and whatever lies above Latin-1's
 * symbols outside the punctuation, symbol and surrogate blocks. */
static bool letter(uint16_t u)
{
	if (u < 0x80)
		return ((u | 0x20) >= 'a' && (u | 0x20) <= 'z');
	return u >= 0xc0 && u != 0xd7 && u != 0xf7 && !(u >= 0x2000 && u <= 0x2bff) &&
	       !(u >= 0x3000 && u <= 0x303f) && !(u >= 0xd800 && u <= 0xdfff) &&
	       !(u >= 0xff00 && u <= 0xff20);
}

static bool has_props(uint8_t props, uint16_t u, bool nocase)
{
	bool cased = fold(u) != u || unfold(u) != u;
	if ((props & P_LETTER) && letter(u))
		return true;
	/* under the i flag \p{Lu} and \p{Ll} take every letter with a case */
	if ((props & (P_UPPER | P_LOWER)) && nocase && cased)
		return true;
	return ((props & P_UPPER) && fold(u) != u) || ((props & P_LOWER) && unfold(u) != u);
}

static bool class_has(const struct tok *t, uint16_t u, bool nocase)
{
	uint16_t alt[3] = {u, fold(u), unfold(u)};
	bool in = t->props && has_props(t->props, u, nocase);
	for (size_t r = 0; r < t->nranges && !in; r++)
		for (size_t k = 0; k < (nocase ? 3u : 1u) && !in; k++)
			in = alt[k] >= t->ranges[r].lo && alt[k] <= t->ranges[r].hi;
	return in != t->negated;
}

static bool m_seq(struct mctx *m, const struct seq *q, size_t i, size_t pos, const struct cont *k)
{
	if (++m->steps > MATCH_MAX_STEPS)
		return false;
	for (; i < q->n; i++) {
		const struct tok *t = &q->t[i];
		switch (t->type) {
		case T_LIT:
			if (pos >= m->n || !(m->s[pos] == t->unit ||
					     (m->nocase && fold(m->s[pos]) == fold(t->unit))))
				return false;
			pos++;
			break;
		case T_ANY:
			if (pos >= m->n)
				return false;
			pos++;
			break;
		case T_CLASS:
			if (pos >= m->n || !class_has(t, m->s[pos], m->nocase))
				return false;
			pos++;
			break;
		case T_STAR:
			for (size_t e = pos; e <= m->n; e++)
				if (m_seq(m, q, i + 1, e, k))
					return true;
			return false;
		case T_EXT: {
			if (t->ext == '!') {
				/* any span no alternative matches whole */
				for (size_t e = pos; e <= m->n; e++) {
					struct mctx sub = {m->s, e, m->nocase, 0};
					bool hit = false;
					for (size_t a = 0; a < t->nalts && !hit; a++)
						hit = m_seq(&sub, &t->alts[a], 0, pos, NULL);
					m->steps += sub.steps;
					if (!hit && m_seq(m, q, i + 1, e, k))
						return true;
				}
				return false;
			}
			if ((t->ext == '?' || t->ext == '*') && m_seq(m, q, i + 1, pos, k))
				return true;
			for (size_t a = 0; a < t->nalts; a++) {
				struct cont after = {q, i + 1, k, (t->ext == '*' || t->ext == '+') ? t : NULL, pos};
				if (m_seq(m, &t->alts[a], 0, pos, &after))
					return true;
			}
			return false;
		}
		}
	}
	return m_cont(m, k, pos);
}

static bool seg_match(const struct seg *g, const char *name, bool nocase)
{
	uint16_t units[TB_NAME_MAX_UNITS];
	long n = tb_utf16(name, strlen(name), units, TB_NAME_MAX_UNITS);
	struct mctx m = {units, n < 0 ? 0 : (size_t)n, nocase, 0};
	if (n < 0)
		return false;
	return m_seq(&m, &g->seq, 0, 0, NULL);
}

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
				char *alt = xasprintf("%.*s%.*s%s", (int)i, s, (int)(j - start),
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
	*out = xrealloc(*out, (*n + 1) * sizeof **out);
	(*out)[(*n)++] = xstrdup(s);
	return 0;
}

static void split(const char *s, struct pat *p)
{
	char *copy = xstrdup(s), *save = NULL, *tok;
	p->seg = NULL;
	p->nseg = 0;
	for (tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		struct seg g = {0};
		if (strcmp(tok, ".") == 0)
			continue;
		g.globstar = strcmp(tok, "**") == 0;
		/* consecutive globstars are one */
		if (g.globstar && p->nseg && p->seg[p->nseg - 1].globstar)
			continue;
		if (!g.globstar)
			parse_seq(tok, &g.seq, false, 0);
		p->seg = xrealloc(p->seg, (p->nseg + 1) * sizeof *p->seg);
		p->seg[p->nseg++] = g;
	}
	free(copy);
}

struct tb_glob *tb_glob_compile(const char *pattern, bool nocase, char **why)
{
	struct tb_glob *g = xmalloc(sizeof *g);
	char **alts = NULL;
	size_t n = 0;
	*why = NULL;
	if (expand(pattern, &alts, &n, 0) < 0) {
		for (size_t i = 0; i < n; i++)
			free(alts[i]);
		free(alts);
		free(g);
		*why = xstrdup("pattern expands to too many alternatives");
		return NULL;
	}
	g->pats = xmalloc((n ? n : 1) * sizeof *g->pats);
	g->npats = n;
	g->nocase = nocase;
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
			free_seq(&g->pats[i].seg[j].seq);
		free(g->pats[i].seg);
	}
	free(g->pats);
	free(g);
}

/* Matches segments against components; `**` takes zero or more components. When prefix is
 * set, only asks whether comps could be the leading directories of a match. */
static bool match_segs(const struct seg *seg, size_t nseg, char **comp, size_t ncomp, bool nocase,
		       bool prefix)
{
	while (nseg) {
		if (seg[0].globstar) {
			if (prefix)
				return true;
			for (size_t k = 0; k <= ncomp; k++)
				if (match_segs(seg + 1, nseg - 1, comp + k, ncomp - k, nocase, false))
					return true;
			return false;
		}
		if (!ncomp)
			return prefix;
		if (!seg_match(&seg[0], comp[0], nocase))
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
	char *copy = xstrdup(rel);
	char *comp[TB_MAX_DEPTH + 1];
	size_t n = components(copy, comp, TB_MAX_DEPTH + 1);
	bool hit = false;
	for (size_t i = 0; i < g->npats && !hit; i++)
		hit = match_segs(g->pats[i].seg, g->pats[i].nseg, comp, n, g->nocase, prefix);
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
	struct buf b = {0};
	for (; *s; s++) {
		if (strchr("*?[]{}()!@+\\", *s)) {
			char one[4] = {'[', *s, ']', 0};
			if (*s == '\\' || *s == '[' || *s == ']') {
				one[0] = '\\';
				one[1] = *s;
				one[2] = 0;
			}
			buf_puts(&b, one);
		} else {
			buf_append(&b, s, 1);
		}
	}
	if (!b.data)
		buf_append(&b, "", 0);
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
			ents = xrealloc(ents, cap * sizeof *ents);
		}
		ents[n].name = xstrdup(de->d_name);
		ents[n].type = de->d_type;
		n++;
	}
	closedir(d);
	tb_sort(ents, n, sizeof *ents, cmp_dents);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *name = ents[i].name;
		char *cabs = xasprintf("%s/%s", strcmp(abs, "/") ? abs : "", name);
		char *crel = *rel ? xasprintf("%s/%s", rel, name) : xstrdup(name);
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
			if (!w->no_links && stat(cabs, &st) == 0 && S_ISREG(st.st_mode) &&
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
