/* strset.c — an open-addressing set of strings with a byte each (lib/util/strset.h). */
#include "strset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Slots at first: enough for a small archive without growing. */
#define STRSET_MIN_CAP 64

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* The slot of k, or of the empty place where it would go (cap is a power of two). */
static size_t slot(const struct strset *s, const char *k)
{
	size_t i;

	for (i = hash(k) & (s->cap - 1); s->key[i]; i = (i + 1) & (s->cap - 1))
		if (strcmp(s->key[i], k) == 0)
			break;
	return i;
}

int strset_get(const struct strset *s, const char *k)
{
	size_t i;

	if (s->cap == 0)
		return 0;
	i = slot(s, k);
	return s->key[i] ? s->val[i] : 0;
}

bool strset_has(const struct strset *s, const char *k)
{
	return strset_get(s, k) != 0;
}

/* Doubles the table (kept at most half full, so probes stay short). */
static void grow(struct strset *s)
{
	struct strset g = {0};

	g.cap = s->cap ? s->cap * 2 : STRSET_MIN_CAP;
	g.key = xcalloc(g.cap, sizeof *g.key);
	g.val = xcalloc(g.cap, 1);
	for (size_t i = 0; i < s->cap; i++) {
		if (s->key[i]) {
			size_t j = slot(&g, s->key[i]);
			g.key[j] = s->key[i];
			g.val[j] = s->val[i];
			g.n++;
		}
	}
	free(s->key);
	free(s->val);
	*s = g;
}

void strset_put(struct strset *s, const char *k, int val)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap)
		grow(s);
	i = slot(s, k);
	if (s->key[i] == NULL) {
		s->key[i] = xstrdup(k);
		s->n++;
	}
	s->val[i] = (unsigned char)val;
}

void strset_clear(struct strset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->key[i]);
	free(s->key);
	free(s->val);
	memset(s, 0, sizeof *s);
}
