/* snippet.c — gemini-cli's "Here is the updated code" snippet: the changed lines of the new
 * text with 5 lines of context, merged ranges, `...` for what is left out (a line diff). */
#include <stdlib.h>
#include <string.h>

#include "tb.h"

#define SNIPPET_CONTEXT 5

struct lines {
	const char **p;
	size_t *n, count;
	size_t tokens;		/* jsdiff's line tokens: a final newline adds no empty token */
};

/* split on \r?\n, a trailing newline giving an empty last line */
static void split(const char *s, struct lines *l)
{
	size_t len = strlen(s), start = 0;
	l->p = xmalloc((len + 2) * sizeof *l->p);
	l->n = xmalloc((len + 2) * sizeof *l->n);
	l->count = 0;
	for (size_t i = 0; i <= len; i++)
		if (i == len || s[i] == '\n') {
			size_t e = i;
			if (i < len && e > start && s[e - 1] == '\r')
				e--;
			l->p[l->count] = s + start;
			l->n[l->count++] = e - start;
			start = i + 1;
		}
	l->tokens = len && s[len - 1] == '\n' ? l->count - 1 : l->count;
}

/* Tokens are equal when their text and whether a newline ends them are. */
static bool same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
	return a->n[i] == b->n[j] && memcmp(a->p[i], b->p[j], a->n[i]) == 0 &&
	       (i + 1 < a->count) == (j + 1 < b->count);
}

struct range {
	size_t start, end;
};

struct ranges {
	struct range *r;
	size_t n;
};

static void add_range(struct ranges *rs, size_t s, size_t e)
{
	rs->r = xrealloc(rs->r, (rs->n + 1) * sizeof *rs->r);
	rs->r[rs->n].start = s;
	rs->r[rs->n].end = e;
	rs->n++;
}

/* jsdiff's Myers diff (diff 8, base.js), so equal-length alternatives are chosen the same
 * way: components (common / added / removed runs) chained backwards from the end. */
enum { C_COMMON, C_ADDED, C_REMOVED };
/* Myers costs O(D^2) in time and components for D edits; past this many the snippet is
 * computed from the common head and tail instead (one range around all changes). */
#define MYERS_MAX_EDIT 500

struct comp {
	size_t count;
	int kind;
	struct comp *prev;
};

struct path {
	long old_pos;
	struct comp *last;
	bool set;
};

struct arena {
	struct comp **v;
	size_t n, cap;
};

static struct comp *new_comp(struct arena *a, size_t count, int kind, struct comp *prev)
{
	struct comp *c = xmalloc(sizeof *c);
	c->count = count;
	c->kind = kind;
	c->prev = prev;
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 256;
		a->v = xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = c;
	return c;
}

static struct path add_to_path(struct arena *a, const struct path *p, int kind, long inc)
{
	struct path r = {p->old_pos + inc, NULL, true};
	if (p->last && p->last->kind == kind)
		r.last = new_comp(a, p->last->count + 1, kind, p->last->prev);
	else
		r.last = new_comp(a, 1, kind, p->last);
	return r;
}

/* Follows the common diagonal; returns the new position in b. */
static long extract_common(struct arena *ar, struct path *p, const struct lines *a,
			   const struct lines *b, long diag)
{
	long old_pos = p->old_pos, new_pos = old_pos - diag, common = 0;
	while (new_pos + 1 < (long)b->tokens && old_pos + 1 < (long)a->tokens &&
	       same(a, (size_t)old_pos + 1, b, (size_t)new_pos + 1)) {
		new_pos++;
		old_pos++;
		common++;
	}
	if (common)
		p->last = new_comp(ar, (size_t)common, C_COMMON, p->last);
	p->old_pos = old_pos;
	return new_pos;
}

static struct comp *myers(struct arena *ar, const struct lines *a, const struct lines *b,
			  bool *gave_up)
{
	long n = (long)b->tokens, o = (long)a->tokens, max = n + o, edit = 1;
	long min_diag = -max - 1, max_diag = max + 1, new_pos;
	struct path *best = calloc((size_t)(2 * max + 5), sizeof *best);
	struct comp *result = NULL;
#define BP(d) best[(d) + max + 2]
	if (!best)
		abort();
	BP(0) = (struct path){-1, NULL, true};
	new_pos = extract_common(ar, &BP(0), a, b, 0);
	if (BP(0).old_pos + 1 >= o && new_pos + 1 >= n) {
		result = BP(0).last;
		goto out;
	}
	*gave_up = false;
	for (; edit <= max; edit++) {
		if (edit > MYERS_MAX_EDIT) {
			*gave_up = true;
			break;
		}
		long lo = min_diag > -edit ? min_diag : -edit, hi = max_diag < edit ? max_diag : edit;
		for (long d = lo; d <= hi; d += 2) {
			struct path rem = {0}, add = {0}, base;
			bool can_add = false, can_remove;
			if (d - 1 >= -max - 1)
				rem = BP(d - 1);
			if (d + 1 <= max + 1)
				add = BP(d + 1);
			if (rem.set && d - 1 >= -max - 1)
				BP(d - 1).set = false;
			if (add.set) {
				long add_new = add.old_pos - d;
				can_add = 0 <= add_new && add_new < n;
			}
			can_remove = rem.set && rem.old_pos + 1 < o;
			if (!can_add && !can_remove) {
				BP(d).set = false;
				continue;
			}
			if (!can_remove || (can_add && rem.old_pos < add.old_pos))
				base = add_to_path(ar, &add, C_ADDED, 0);
			else
				base = add_to_path(ar, &rem, C_REMOVED, 1);
			new_pos = extract_common(ar, &base, a, b, d);
			if (base.old_pos + 1 >= o && new_pos + 1 >= n) {
				result = base.last;
				goto out;
			}
			BP(d) = base;
			if (base.old_pos + 1 >= o && d - 1 < max_diag)
				max_diag = d - 1;
			if (new_pos + 1 >= n && d + 1 > min_diag)
				min_diag = d + 1;
		}
	}
out:
#undef BP
	free(best);
	return result;
}

/* The ranges of b's lines a line diff against a reports: added runs [j, j+k), and an empty
 * range [j, j) where lines of a were removed (as getDiffContextSnippet builds them). */
static void diff_ranges(const struct lines *a, const struct lines *b, struct ranges *rs)
{
	struct arena ar = {0};
	bool gave_up = false;
	struct comp *c = myers(&ar, a, b, &gave_up), **seq = NULL;
	size_t n = 0, j = 0;
	if (gave_up) {
		size_t pre = 0, suf = 0;
		while (pre < a->tokens && pre < b->tokens && same(a, pre, b, pre))
			pre++;
		while (suf < a->tokens - pre && suf < b->tokens - pre &&
		       same(a, a->tokens - 1 - suf, b, b->tokens - 1 - suf))
			suf++;
		if (a->tokens - pre - suf)
			add_range(rs, pre, pre);
		if (b->tokens - pre - suf)
			add_range(rs, pre, b->tokens - suf);
		c = NULL;
	}
	for (struct comp *k = c; k; k = k->prev)
		n++;
	seq = xmalloc((n ? n : 1) * sizeof *seq);
	for (size_t i = n; c; c = c->prev)
		seq[--i] = c;
	for (size_t i = 0; i < n; i++) {
		if (seq[i]->kind == C_ADDED) {
			add_range(rs, j, j + seq[i]->count);
			j += seq[i]->count;
		} else if (seq[i]->kind == C_REMOVED) {
			add_range(rs, j, j);
		} else {
			j += seq[i]->count;
		}
	}
	free(seq);
	for (size_t i = 0; i < ar.n; i++)
		free(ar.v[i]);
	free(ar.v);
}

static int cmp_range(const void *x, const void *y)
{
	const struct range *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

char *tb_snippet(const char *old, const char *new)
{
	struct lines a, b;
	struct ranges rs = {0};
	struct buf o = {0};
	size_t last = 0, merged = 0;
	bool first = true;
	if (!old || !*old)
		return xstrdup(new);
	split(old, &a);
	split(new, &b);
	diff_ranges(&a, &b, &rs);
	free(a.p);
	free(a.n);
	if (rs.n == 0) {
		free(b.p);
		free(b.n);
		return xstrdup(new);
	}
	for (size_t k = 0; k < rs.n; k++) {
		rs.r[k].start = rs.r[k].start > SNIPPET_CONTEXT ? rs.r[k].start - SNIPPET_CONTEXT : 0;
		rs.r[k].end = rs.r[k].end + SNIPPET_CONTEXT < b.count ? rs.r[k].end + SNIPPET_CONTEXT
								      : b.count;
	}
	tb_sort(rs.r, rs.n, sizeof *rs.r, cmp_range);
	for (size_t k = 1; k < rs.n; k++) {
		if (rs.r[k].start <= rs.r[merged].end) {
			if (rs.r[k].end > rs.r[merged].end)
				rs.r[merged].end = rs.r[k].end;
		} else {
			rs.r[++merged] = rs.r[k];
		}
	}
	for (size_t k = 0; k <= merged; k++) {
		if (rs.r[k].start > last) {
			buf_puts(&o, first ? "..." : "\n...");
			first = false;
		}
		if (!first)
			buf_puts(&o, "\n");
		first = false;
		for (size_t l = rs.r[k].start; l < rs.r[k].end; l++) {
			if (l > rs.r[k].start)
				buf_puts(&o, "\n");
			buf_append(&o, b.p[l], b.n[l]);
		}
		last = rs.r[k].end;
	}
	if (last < b.count)
		buf_puts(&o, first ? "..." : "\n...");
	free(rs.r);
	free(b.p);
	free(b.n);
	if (!o.data)
		buf_append(&o, "", 0);
	return o.data;
}
