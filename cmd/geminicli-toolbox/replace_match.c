/* replace_match.c — the fallbacks of gemini-cli's `replace` when old_string is not found
 * exactly: flexible (lines compared trimmed), regex (tokens joined by \s*, anchored at a line
 * start) and fuzzy (weighted Levenshtein over line windows). Each re-indents the replacement
 * to the first matched line and returns the number of occurrences (0: no match). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

/* gemini-cli's fuzzy limits: a match may differ by 10% (whitespace counts a tenth), only
 * old strings of 10+ characters are tried, and not when lines × length² exceeds 4e8. */
#define FUZZY_THRESHOLD 0.1
#define WHITESPACE_PENALTY 0.1
#define FUZZY_MIN_OLD 10
#define FUZZY_MAX_WORK 400000000.0

struct strs {
	char **v;
	size_t n;
};

static void strs_free(struct strs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

/* Lines keeping their `\n` (JS /.*(?:\n|$)/g minus the final empty match). */
static struct strs source_lines(const char *s)
{
	struct strs r = {0};
	size_t len = strlen(s), start = 0;
	r.v = xmalloc((len + 2) * sizeof *r.v);
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\n') {
			r.v[r.n++] = xasprintf("%.*s", (int)(i + 1 - start), s + start);
			start = i + 1;
		}
	if (start < len)
		r.v[r.n++] = xstrdup(s + start);
	return r;
}

/* split('\n') */
static struct strs split_lines(const char *s)
{
	struct strs r = {0};
	size_t len = strlen(s), start = 0;
	r.v = xmalloc((len + 2) * sizeof *r.v);
	for (size_t i = 0; i <= len; i++)
		if (i == len || s[i] == '\n') {
			r.v[r.n++] = xasprintf("%.*s", (int)(i - start), s + start);
			start = i + 1;
		}
	return r;
}

static bool blank(const char *s)
{
	for (; *s; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

static size_t indent_len(const char *s)
{
	size_t i = 0;
	while (s[i] == ' ' || s[i] == '\t')
		i++;
	return i;
}

/* applyIndentation(lines, indent).join('\n') */
static void indented(struct buf *b, const struct strs *lines, const char *indent, size_t ilen)
{
	size_t ref = lines->n ? indent_len(lines->v[0]) : 0;
	for (size_t k = 0; k < lines->n; k++) {
		const char *l = lines->v[k];
		if (k)
			buf_puts(b, "\n");
		if (blank(l))
			continue;
		buf_append(b, indent, ilen);
		if (strncmp(l, lines->v[0], ref) == 0)
			buf_puts(b, l + ref);
		else
			buf_puts(b, l + indent_len(l));
	}
	if (!b->data)
		buf_append(b, "", 0);
}

static char *trimmed(const char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return xasprintf("%.*s", (int)n, s);
}

static char *join(const struct strs *s)
{
	struct buf b = {0};
	for (size_t i = 0; i < s->n; i++)
		buf_puts(&b, s->v[i]);
	if (!b.data)
		buf_append(&b, "", 0);
	return b.data;
}

/* Replaces lines [i, i+n) of src by text. */
static void splice(struct strs *src, size_t i, size_t n, char *text)
{
	for (size_t k = 0; k < n; k++)
		free(src->v[i + k]);
	src->v[i] = text;
	memmove(src->v + i + 1, src->v + i + n, (src->n - i - n) * sizeof *src->v);
	src->n -= n - 1;
}

size_t tb_replace_flexible(const char *code, const char *old, const char *new_text, char **out)
{
	struct strs src = source_lines(code), search = split_lines(old), repl = split_lines(new_text);
	size_t occ = 0;
	for (size_t k = 0; k < search.n; k++) {
		char *t = trimmed(search.v[k]);
		free(search.v[k]);
		search.v[k] = t;
	}
	for (size_t i = 0; src.n >= search.n && i <= src.n - search.n; i++) {
		bool hit = true;
		for (size_t k = 0; k < search.n && hit; k++) {
			char *t = trimmed(src.v[i + k]);
			hit = strcmp(t, search.v[k]) == 0;
			free(t);
		}
		if (hit) {
			struct buf b = {0};
			const char *last = src.v[i + search.n - 1];
			occ++;
			indented(&b, &repl, src.v[i], indent_len(src.v[i]));
			if (*new_text && last[strlen(last) - 1] == '\n' &&
			    (b.len == 0 || b.data[b.len - 1] != '\n'))
				buf_puts(&b, "\n");
			splice(&src, i, search.n, b.data);
		}
	}
	if (occ)
		*out = join(&src);
	strs_free(&src);
	strs_free(&search);
	strs_free(&repl);
	return occ;
}

size_t tb_replace_regex(const char *code, const char *old, const char *new_text, char **out)
{
	static const char delims[] = "():[]{}><=";
	struct buf pat = {0}, res = {0};
	struct strs repl = split_lines(new_text);
	pcre2_code *re = NULL;
	pcre2_match_data *md = NULL;
	size_t occ = 0, pos = 0, len = strlen(code), ntok = 0;
	int ec;
	PCRE2_SIZE eo;

	buf_puts(&pat, "^([ \\t]*)");
	for (const char *p = old; *p;) {
		size_t n;
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		if (strchr(delims, *p))
			n = 1;
		else
			for (n = 0; p[n] && !isspace((unsigned char)p[n]) && !strchr(delims, p[n]); n++)
				;
		if (ntok++)
			buf_puts(&pat, "\\s*");
		for (size_t k = 0; k < n; k++) {
			if (strchr(".*+?^${}()|[]\\", p[k]))
				buf_puts(&pat, "\\");
			buf_append(&pat, p + k, 1);
		}
		p += n;
	}
	if (ntok == 0)
		goto out;
	re = pcre2_compile((PCRE2_SPTR)pat.data, pat.len,
			   PCRE2_MULTILINE | PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &ec, &eo,
			   NULL);
	if (!re)
		goto out;
	md = pcre2_match_data_create_from_pattern(re, NULL);
	while (pos <= len && pcre2_match(re, (PCRE2_SPTR)code, len, pos, 0, md, NULL) >= 0) {
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		buf_append(&res, code + pos, ov[0] - pos);
		indented(&res, &repl, code + ov[2], ov[3] - ov[2]);
		occ++;
		pos = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
		if (ov[1] == ov[0] && ov[0] < len)
			buf_append(&res, code + ov[0], 1);
	}
	if (occ) {
		if (pos < len)
			buf_puts(&res, code + pos);
		*out = res.data;
		res.data = NULL;
	}
out:
	pcre2_match_data_free(md);
	pcre2_code_free(re);
	buf_free(&pat);
	buf_free(&res);
	strs_free(&repl);
	return occ;
}

static size_t levenshtein(const char *a, size_t n, const char *b, size_t m)
{
	size_t *row = xmalloc((m + 1) * sizeof *row), d;
	for (size_t j = 0; j <= m; j++)
		row[j] = j;
	for (size_t i = 1; i <= n; i++) {
		size_t prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= m; j++) {
			size_t cur = row[j], best = prev + (a[i - 1] != b[j - 1]);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	d = row[m];
	free(row);
	return d;
}

static char *strip_ws(const char *s)
{
	struct buf b = {0};
	for (; *s; s++)
		if (!isspace((unsigned char)*s))
			buf_append(&b, s, 1);
	if (!b.data)
		buf_append(&b, "", 0);
	return b.data;
}

static char *rtrim_join(char *const *lines, size_t n)
{
	struct buf b = {0};
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(lines[i]);
		while (l && isspace((unsigned char)lines[i][l - 1]))
			l--;
		if (i)
			buf_puts(&b, "\n");
		buf_append(&b, lines[i], l);
	}
	if (!b.data)
		buf_append(&b, "", 0);
	return b.data;
}

struct cand {
	size_t index;
	double score;
};

static int cmp_cand(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;
	if (a->score != b->score)
		return a->score < b->score ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

static int cmp_index_desc(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;
	return a->index < b->index ? 1 : a->index > b->index ? -1 : 0;
}

/* Long: gemini-cli's fuzzy replacement algorithm as it is written there (candidates, scores,
 * non-overlapping picks, feedback), kept in one piece to be compared with it. */
size_t tb_replace_fuzzy(const char *code, const char *old, const char *new_text, char **out,
			struct buf *feedback)
{
	struct strs src, search, repl;
	struct cand *cands, *sel;
	size_t nc = 0, ns = 0, n, occ = 0;
	char *block, *block_ws;
	if (strlen(old) < FUZZY_MIN_OLD)
		return 0;
	src = source_lines(code);
	search = source_lines(old);
	if (search.n == 0 || (double)src.n * (double)strlen(old) * (double)strlen(old) > FUZZY_MAX_WORK) {
		strs_free(&src);
		strs_free(&search);
		return 0;
	}
	n = search.n;
	block = rtrim_join(search.v, n);
	block_ws = strip_ws(block);
	cands = xmalloc((src.n + 1) * sizeof *cands);
	for (size_t i = 0; src.n >= n && i <= src.n - n; i++) {
		char *win = rtrim_join(src.v + i, n), *win_ws;
		size_t bl = strlen(block), wl = strlen(win), raw, norm;
		double diff = wl > bl ? (double)(wl - bl) : (double)(bl - wl);
		if (bl == 0 || diff / (double)bl > FUZZY_THRESHOLD / WHITESPACE_PENALTY) {
			free(win);
			continue;
		}
		win_ws = strip_ws(win);
		raw = levenshtein(win, wl, block, bl);
		norm = levenshtein(win_ws, strlen(win_ws), block_ws, strlen(block_ws));
		{
			double score = ((double)norm + ((double)raw - (double)norm) * WHITESPACE_PENALTY) /
				       (double)bl;
			if (score <= FUZZY_THRESHOLD)
				cands[nc++] = (struct cand){i, score};
		}
		free(win);
		free(win_ws);
	}
	tb_sort(cands, nc, sizeof *cands, cmp_cand);
	sel = xmalloc((nc + 1) * sizeof *sel);
	for (size_t k = 0; k < nc; k++) {
		bool overlaps = false;
		for (size_t j = 0; j < ns && !overlaps; j++)
			overlaps = (cands[k].index > sel[j].index ? cands[k].index - sel[j].index
								  : sel[j].index - cands[k].index) < n;
		if (!overlaps)
			sel[ns++] = cands[k];
	}
	if (ns) {
		/* the feedback lists the line ranges in ascending order */
		size_t *starts = xmalloc(ns * sizeof *starts);
		for (size_t k = 0; k < ns; k++)
			starts[k] = sel[k].index;
		for (size_t a = 1; a < ns; a++)
			for (size_t b = a; b > 0 && starts[b - 1] > starts[b]; b--) {
				size_t t = starts[b];
				starts[b] = starts[b - 1];
				starts[b - 1] = t;
			}
		buf_printf(feedback, "Applied fuzzy match at line%s ", ns > 1 ? "s" : "");
		for (size_t k = 0; k < ns; k++) {
			if (k)
				buf_puts(feedback, ", ");
			if (n == 1)
				buf_printf(feedback, "%zu", starts[k] + 1);
			else
				buf_printf(feedback, "%zu-%zu", starts[k] + 1, starts[k] + n);
		}
		buf_puts(feedback, ".");
		free(starts);
		tb_sort(sel, ns, sizeof *sel, cmp_index_desc);
		repl = split_lines(new_text);
		for (size_t k = 0; k < ns; k++) {
			struct buf b = {0};
			const char *first = src.v[sel[k].index], *last = src.v[sel[k].index + n - 1];
			indented(&b, &repl, first, indent_len(first));
			if (last[strlen(last) - 1] == '\n')
				buf_puts(&b, "\n");
			splice(&src, sel[k].index, n, b.data);
		}
		strs_free(&repl);
		*out = join(&src);
		occ = ns;
	}
	free(sel);
	free(cands);
	free(block);
	free(block_ws);
	strs_free(&src);
	strs_free(&search);
	return occ;
}
