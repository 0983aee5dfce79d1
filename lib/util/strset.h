/* strset.h — a set of strings it owns, each with a small value (0: not in the set), by open
 * addressing: the paths an archive or an image layer has written, looked up per entry.
 * Zero-initialise, put, get, then strset_clear. Ownership: keys are copied on put. */
#ifndef SBX_STRSET_H
#define SBX_STRSET_H

#include <stdbool.h>
#include <stddef.h>

struct strset {
	char **key;
	unsigned char *val;
	size_t cap, n;
};

/* The value k was put with, or 0 when it is not in the set. */
int strset_get(const struct strset *s, const char *k);
/* Whether k is in the set. */
bool strset_has(const struct strset *s, const char *k);
/* Puts k with val (1-255; a later put of k replaces its value). */
void strset_put(struct strset *s, const char *k, int val);
void strset_clear(struct strset *s);

#endif
