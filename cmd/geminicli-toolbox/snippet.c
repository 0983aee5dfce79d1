/* snippet.c — gemini-cli's "Here is the updated code" snippet: the changed lines of the new
 * text with 5 lines of context, merged ranges, `...` for what is left out (a line diff). */
#include <stdlib.h>
#include <string.h>

#include "tb.h"

/* Above this many line pairs the LCS table is too big; the diff falls back to trimming the
 * common head and tail, which gives one range around every change. */
#define SNIPPET_MAX_CELLS (4u * 1024 * 1024)
#define SNIPPET_CONTEXT 5

struct lines {
	const char **p;
	size_t *n, count;
};

/* split on \r?\n, a trailing newline giving an empty last line */
static void split(const char *s, struct lines *l)
{
	size_t len = strlen(s), start = 0;
	l->p = tb_xmalloc((len + 2) * sizeof *l->p);
	l->n = tb_xmalloc((len + 2) * sizeof *l->n);
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
}

static bool same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
	return a->n[i] == b->n[j] && memcmp(a->p[i], b->p[j], a->n[i]) == 0;
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
	rs->r = tb_xrealloc(rs->r, (rs->n + 1) * sizeof *rs->r);
	rs->r[rs->n].start = s;
	rs->r[rs->n].end = e;
	rs->n++;
}

/* The ranges of b's lines that a line diff against a reports: added runs [j, j+k), and an
 * empty range [j, j) where lines of a were removed (as jsdiff's diffLines walk gives them). */
static void diff_ranges(const struct lines *a, const struct lines *b, struct ranges *rs)
{
	size_t pre = 0, suf = 0, n, m, i, j;
	unsigned *t;
	while (pre < a->count && pre < b->count && same(a, pre, b, pre))
		pre++;
	while (suf < a->count - pre && suf < b->count - pre &&
	       same(a, a->count - 1 - suf, b, b->count - 1 - suf))
		suf++;
	n = a->count - pre - suf;
	m = b->count - pre - suf;
	if (n == 0 && m == 0)
		return;
	if (n == 0 || m == 0 || (n + 1) * (m + 1) > SNIPPET_MAX_CELLS) {
		if (n)
			add_range(rs, pre, pre);
		if (m)
			add_range(rs, pre, pre + m);
		return;
	}
	t = tb_xmalloc((n + 1) * (m + 1) * sizeof *t);
#define T(x, y) t[(x) * (m + 1) + (y)]
	for (i = n + 1; i-- > 0;)
		for (j = m + 1; j-- > 0;) {
			if (i == n || j == m)
				T(i, j) = 0;
			else if (same(a, pre + i, b, pre + j))
				T(i, j) = T(i + 1, j + 1) + 1;
			else
				T(i, j) = T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
		}
	i = j = 0;
	{
		int prev = 0;	/* 0 same, 1 removed, 2 added */
		size_t run = 0;
		while (i < n || j < m) {
			int op;
			if (i < n && j < m && same(a, pre + i, b, pre + j))
				op = 0;
			else if (j == m || (i < n && T(i + 1, j) >= T(i, j + 1)))
				op = 1;
			else
				op = 2;
			if (op != prev) {
				if (prev == 2)
					add_range(rs, pre + run, pre + j);
				if (op == 1)
					add_range(rs, pre + j, pre + j);
				run = j;
				prev = op;
			}
			if (op != 2)
				i++;
			if (op != 1)
				j++;
		}
		if (prev == 2)
			add_range(rs, pre + run, pre + j);
	}
#undef T
	free(t);
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
	struct tbuf o = {0};
	size_t last = 0, merged = 0;
	bool first = true;
	if (!old || !*old)
		return tb_xstrdup(new);
	split(old, &a);
	split(new, &b);
	diff_ranges(&a, &b, &rs);
	free(a.p);
	free(a.n);
	if (rs.n == 0) {
		free(b.p);
		free(b.n);
		return tb_xstrdup(new);
	}
	for (size_t k = 0; k < rs.n; k++) {
		rs.r[k].start = rs.r[k].start > SNIPPET_CONTEXT ? rs.r[k].start - SNIPPET_CONTEXT : 0;
		rs.r[k].end = rs.r[k].end + SNIPPET_CONTEXT < b.count ? rs.r[k].end + SNIPPET_CONTEXT
								      : b.count;
	}
	qsort(rs.r, rs.n, sizeof *rs.r, cmp_range);
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
			tb_puts(&o, first ? "..." : "\n...");
			first = false;
		}
		if (!first)
			tb_puts(&o, "\n");
		first = false;
		for (size_t l = rs.r[k].start; l < rs.r[k].end; l++) {
			if (l > rs.r[k].start)
				tb_puts(&o, "\n");
			tb_put(&o, b.p[l], b.n[l]);
		}
		last = rs.r[k].end;
	}
	if (last < b.count)
		tb_puts(&o, first ? "..." : "\n...");
	free(rs.r);
	free(b.p);
	free(b.n);
	if (!o.data)
		tb_put(&o, "", 0);
	return o.data;
}
