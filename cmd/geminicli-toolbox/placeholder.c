/* placeholder.c — gemini-cli's omission-placeholder detector: lines such as
 * `// rest of methods ...` or `(unchanged code ...)` that stand for code a model left out. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

static const char *const omitted_prefixes[] = {
	"rest of", "rest of method", "rest of methods", "rest of code",
	"unchanged code", "unchanged method", "unchanged methods", NULL,
};

/* The normalised placeholder of one line ("rest of code ..."), or NULL. */
static char *normalize_line(const char *line, size_t n)
{
	const char *s = line, *e = line + n, *dots;
	struct buf pre = {0};
	bool space = false;
	char *out = NULL;
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	if (e - s >= 2 && s[0] == '/' && s[1] == '/') {
		s += 2;
		while (s < e && isspace((unsigned char)*s))
			s++;
	}
	if (e - s >= 2 && s[0] == '(' && e[-1] == ')') {
		s++;
		e--;
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
	}
	dots = memmem(s, (size_t)(e - s), "...", 3);
	if (!dots)
		return NULL;
	/* after the ellipsis: nothing, or only more dots */
	{
		const char *q = dots + 3;
		while (q < e && isspace((unsigned char)*q))
			q++;
		for (; q < e; q++)
			if (*q != '.')
				return NULL;
	}
	for (const char *q = s; q < dots; q++) {
		if (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') {
			space = pre.len > 0;
			continue;
		}
		if (space)
			buf_puts(&pre, " ");
		space = false;
		buf_append(&pre, &(char){(char)tolower((unsigned char)*q)}, 1);
	}
	if (!pre.data)
		return NULL;
	for (size_t i = 0; omitted_prefixes[i]; i++)
		if (!strcmp(pre.data, omitted_prefixes[i]))
			out = xasprintf("%s ...", pre.data);
	buf_free(&pre);
	return out;
}

bool tb_has_new_placeholder(const char *text, const char *old)
{
	bool found = false;
	for (const char *p = text; !found;) {
		size_t n = strcspn(p, "\n");
		char *ph = normalize_line(p, n);
		if (ph) {
			/* a placeholder already present in old is not new */
			bool in_old = false;
			for (const char *q = old; q && !in_old;) {
				size_t m = strcspn(q, "\n");
				char *o = normalize_line(q, m);
				in_old = o && !strcmp(o, ph);
				free(o);
				q += m;
				if (!*q)
					break;
				q++;
			}
			found = !in_old;
			free(ph);
		}
		p += n;
		if (!*p)
			break;
		p++;
	}
	return found;
}
