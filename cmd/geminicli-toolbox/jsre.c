/* jsre.c — whether a pattern compiles as a JavaScript RegExp without flags (Annex B syntax),
 * and V8's message when it does not. gemini-cli validates grep_search's patterns with
 * `new RegExp(p)` before searching, so the model sees V8's words; the search itself runs on
 * PCRE2. The pattern is read in UTF-16 code units, as V8 reads a non-unicode pattern; errors
 * are reported in the order V8's parser meets them, named references last (V8 resolves them
 * after parsing). */
#include <stdlib.h>
#include <string.h>

#include "tb.h"

/* Patterns longer than this many UTF-16 units are not checked (grep's own limits apply). */
#define JSRE_MAX_UNITS 65536
/* Group nesting deeper than this is refused, as V8 runs out of stack. */
#define JSRE_MAX_DEPTH 1000

struct jsre {
	const uint16_t *u;
	size_t i, n;
	const char *err;
	int depth;
	bool has_named;		/* a (?<name>…) anywhere: \k must then be a reference */
	size_t ncaptures;	/* capturing groups in the whole pattern */
	struct buf names;	/* NUL-separated group names seen so far */
	struct buf refs;	/* NUL-separated \k<name> references */
};

static bool is_digit(uint16_t c)
{
	return c >= '0' && c <= '9';
}

static int hexval(uint16_t c)
{
	if (is_digit(c))
		return c - '0';
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
		return (c | 0x20) - 'a' + 10;
	return -1;
}

static bool id_start(uint16_t c)
{
	return c == '$' || c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c >= 0x80;
}

static bool id_part(uint16_t c)
{
	return id_start(c) || is_digit(c) || c == 0x200c || c == 0x200d;
}

static int fail(struct jsre *r, const char *msg)
{
	if (!r->err)
		r->err = msg;
	return -1;
}

static bool at(struct jsre *r, size_t off, uint16_t c)
{
	return r->i + off < r->n && r->u[r->i + off] == c;
}

/* A group name after `<`, through `>`, appended to b (NUL-terminated); -1 when invalid. */
static int group_name(struct jsre *r, struct buf *b)
{
	size_t s = r->i;
	if (r->i >= r->n || !id_start(r->u[r->i]))
		return -1;
	while (r->i < r->n && id_part(r->u[r->i]))
		r->i++;
	if (!at(r, 0, '>'))
		return -1;
	for (size_t k = s; k < r->i; k++) {
		char ch[2] = {(char)(r->u[k] & 0xff), (char)(r->u[k] >> 8)};
		buf_append(b, ch, 2);
	}
	buf_append(b, "\0", 2);
	r->i++;
	return 0;
}

static bool name_in(const struct buf *set, const char *name, size_t len)
{
	for (size_t k = 0; k + 1 < set->len;) {
		size_t l = 0;
		while (set->data[k + l] || set->data[k + l + 1])
			l += 2;
		if (l == len && !memcmp(set->data + k, name, len))
			return true;
		k += l + 2;
	}
	return false;
}

/* {n}, {n,}, {n,m} at r->i (on the `{`): its length, or 0 when the `{` is a literal. */
static size_t interval(struct jsre *r, unsigned long long *lo, unsigned long long *hi)
{
	size_t i = r->i + 1;
	*lo = 0;
	if (i >= r->n || !is_digit(r->u[i]))
		return 0;
	for (; i < r->n && is_digit(r->u[i]); i++)
		if (*lo < (1ULL << 40))
			*lo = *lo * 10 + (unsigned)(r->u[i] - '0');
	*hi = *lo;
	if (i < r->n && r->u[i] == ',') {
		i++;
		*hi = ~0ULL;
		if (i < r->n && is_digit(r->u[i]))
			for (*hi = 0; i < r->n && is_digit(r->u[i]); i++)
				if (*hi < (1ULL << 40))
					*hi = *hi * 10 + (unsigned)(r->u[i] - '0');
	}
	if (i >= r->n || r->u[i] != '}')
		return 0;
	return i + 1 - r->i;
}

/* One atom of a class: its code unit in *v, -1 for a class escape (\d, \w, …). */
static int class_atom(struct jsre *r, long *v)
{
	uint16_t c = r->u[r->i++];
	int h[4];
	if (c != '\\') {
		*v = c;
		return 0;
	}
	if (r->i >= r->n)
		return fail(r, "\\ at end of pattern");
	c = r->u[r->i++];
	switch (c) {
	case 'd': case 'D': case 's': case 'S': case 'w': case 'W': *v = -1; return 0;
	case 'b': *v = 8; return 0;
	case 'f': *v = 12; return 0;
	case 'n': *v = 10; return 0;
	case 'r': *v = 13; return 0;
	case 't': *v = 9; return 0;
	case 'v': *v = 11; return 0;
	case 'c':
		if (r->i < r->n && (((r->u[r->i] | 0x20) >= 'a' && (r->u[r->i] | 0x20) <= 'z') ||
				    is_digit(r->u[r->i]) || r->u[r->i] == '_')) {
			*v = r->u[r->i++] & 0x1f;
		} else {
			r->i--;	/* a literal `\`; the `c` is the next atom */
			*v = '\\';
		}
		return 0;
	case 'x':
		if (r->i + 1 < r->n && (h[0] = hexval(r->u[r->i])) >= 0 && (h[1] = hexval(r->u[r->i + 1])) >= 0) {
			*v = h[0] * 16 + h[1];
			r->i += 2;
		} else {
			*v = 'x';
		}
		return 0;
	case 'u':
		if (r->i + 3 < r->n && (h[0] = hexval(r->u[r->i])) >= 0 && (h[1] = hexval(r->u[r->i + 1])) >= 0 &&
		    (h[2] = hexval(r->u[r->i + 2])) >= 0 && (h[3] = hexval(r->u[r->i + 3])) >= 0) {
			*v = ((h[0] * 16 + h[1]) * 16 + h[2]) * 16 + h[3];
			r->i += 4;
		} else {
			*v = 'u';
		}
		return 0;
	default:
		if (c >= '0' && c <= '7') {
			/* legacy octal: up to three digits, at most \377 */
			long o = c - '0';
			if (r->i < r->n && r->u[r->i] >= '0' && r->u[r->i] <= '7') {
				o = o * 8 + (r->u[r->i++] - '0');
				if (c <= '3' && r->i < r->n && r->u[r->i] >= '0' && r->u[r->i] <= '7')
					o = o * 8 + (r->u[r->i++] - '0');
			}
			*v = o;
		} else {
			*v = c;	/* identity escape */
		}
		return 0;
	}
}

static int parse_class(struct jsre *r)
{
	r->i++;	/* the `[` */
	if (at(r, 0, '^'))
		r->i++;
	for (;;) {
		long lo, hi;
		if (r->i >= r->n)
			return fail(r, "Unterminated character class");
		if (r->u[r->i] == ']') {
			r->i++;
			return 0;
		}
		if (class_atom(r, &lo) < 0)
			return -1;
		if (at(r, 0, '-') && r->i + 1 < r->n && r->u[r->i + 1] != ']') {
			r->i++;
			if (class_atom(r, &hi) < 0)
				return -1;
			if (lo >= 0 && hi >= 0 && lo > hi)
				return fail(r, "Range out of order in character class");
		}
	}
}

/* An escape outside a class; *assertion is set for \b and \B (not quantifiable). */
static int atom_escape(struct jsre *r, bool *assertion)
{
	uint16_t c;
	r->i++;	/* the `\` */
	if (r->i >= r->n)
		return fail(r, "\\ at end of pattern");
	c = r->u[r->i++];
	if (c == 'b' || c == 'B') {
		*assertion = true;
		return 0;
	}
	if (c == 'k' && r->has_named) {
		if (!at(r, 0, '<'))
			return fail(r, "Invalid named reference");
		r->i++;
		if (group_name(r, &r->refs) < 0)
			return fail(r, "Invalid named reference");
		return 0;
	}
	if (c == 'c') {
		if (r->i < r->n && (r->u[r->i] | 0x20) >= 'a' && (r->u[r->i] | 0x20) <= 'z')
			r->i++;
		else
			r->i--;	/* a literal `\`, then `c` */
	}
	/* everything else (\d, \1, \x41, \u0041, \p, identity escapes) is valid in Annex B */
	return 0;
}

static int parse_disjunction(struct jsre *r, bool in_group);

/* A group after its `(`; *quantifiable is cleared for lookbehinds. */
static int parse_group(struct jsre *r, bool *quantifiable)
{
	r->i++;	/* the `(` */
	if (at(r, 0, '?')) {
		if (at(r, 1, ':') || at(r, 1, '=') || at(r, 1, '!')) {
			r->i += 2;
		} else if (at(r, 1, '<') && (at(r, 2, '=') || at(r, 2, '!'))) {
			r->i += 3;
			*quantifiable = false;
		} else if (at(r, 1, '<')) {
			size_t start;
			r->i += 2;
			start = r->names.len;
			if (group_name(r, &r->names) < 0)
				return fail(r, "Invalid capture group name");
			if (name_in(&(struct buf){r->names.data, start, start}, r->names.data + start,
				    r->names.len - start - 2))
				return fail(r, "Duplicate capture group name");
		} else {
			return fail(r, "Invalid group");
		}
	}
	if (++r->depth > JSRE_MAX_DEPTH)
		return fail(r, "Maximum call stack size exceeded");
	if (parse_disjunction(r, true) < 0)
		return -1;
	r->depth--;
	if (r->i >= r->n)
		return fail(r, "Unterminated group");
	r->i++;	/* the `)` */
	return 0;
}

static int parse_disjunction(struct jsre *r, bool in_group)
{
	while (r->i < r->n) {
		uint16_t c = r->u[r->i];
		bool quantifiable = true, assertion = false;
		unsigned long long lo, hi;
		size_t len;
		switch (c) {
		case '|':
			r->i++;
			continue;
		case ')':
			if (!in_group)
				return fail(r, "Unmatched ')'");
			return 0;
		case '^':
		case '$':
			r->i++;
			assertion = true;
			break;
		case '(':
			if (parse_group(r, &quantifiable) < 0)
				return -1;
			break;
		case '[':
			if (parse_class(r) < 0)
				return -1;
			break;
		case '\\':
			if (atom_escape(r, &assertion) < 0)
				return -1;
			break;
		case '*':
		case '+':
		case '?':
			return fail(r, "Nothing to repeat");
		case '{':
			if (interval(r, &lo, &hi))
				return fail(r, "Nothing to repeat");
			r->i++;
			break;
		default:
			r->i++;
			break;
		}
		/* a quantifier after the atom */
		if (r->i < r->n && (r->u[r->i] == '*' || r->u[r->i] == '+' || r->u[r->i] == '?' ||
				    (r->u[r->i] == '{' && (len = interval(r, &lo, &hi))))) {
			if (assertion)
				return fail(r, "Nothing to repeat");
			if (!quantifiable)
				return fail(r, "Invalid quantifier");
			if (r->u[r->i] == '{') {
				if (hi < lo)
					return fail(r, "numbers out of order in {} quantifier");
				r->i += len;
			} else {
				r->i++;
			}
			if (at(r, 0, '?'))
				r->i++;
		}
	}
	return 0;
}

/* Counts the named groups first, as V8's capture scan does, so \k is read right. */
static void scan_names(struct jsre *r)
{
	bool in_class = false;
	for (size_t i = 0; i < r->n; i++) {
		if (r->u[i] == '\\') {
			i++;
		} else if (in_class) {
			in_class = r->u[i] != ']';
		} else if (r->u[i] == '[') {
			in_class = true;
		} else if (r->u[i] == '(' && i + 2 < r->n && r->u[i + 1] == '?' && r->u[i + 2] == '<' &&
			   !(i + 3 < r->n && (r->u[i + 3] == '=' || r->u[i + 3] == '!'))) {
			r->has_named = true;
		}
	}
}

const char *tb_jsre_error(const char *pattern)
{
	static uint16_t units[JSRE_MAX_UNITS];
	long n = tb_utf16(pattern, strlen(pattern), units, JSRE_MAX_UNITS);
	struct jsre r = {.u = units, .n = n < 0 ? 0 : (size_t)n};
	if (n < 0)
		return NULL;
	scan_names(&r);
	if (parse_disjunction(&r, false) == 0 && r.i < r.n)
		fail(&r, "Unmatched ')'");
	if (!r.err) {
		/* every \k<name> must name a group */
		for (size_t k = 0; k + 1 < r.refs.len;) {
			size_t l = 0;
			while (r.refs.data[k + l] || r.refs.data[k + l + 1])
				l += 2;
			if (!name_in(&r.names, r.refs.data + k, l)) {
				r.err = "Invalid named capture referenced";
				break;
			}
			k += l + 2;
		}
	}
	buf_free(&r.names);
	buf_free(&r.refs);
	return r.err;
}
