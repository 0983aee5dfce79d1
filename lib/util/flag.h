/* flag.h — command-line flags the way Go's flag package reads them, so sbx tools accept what
 * the upstream tools accept: -name value, -name=value, --name, boolean -name / -name=false,
 * parsing stops at the first non-flag argument or at "--". */
#ifndef SBX_FLAG_H
#define SBX_FLAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum flag_type {
	FLAG_BOOL,	/* bool * */
	FLAG_STRING,	/* const char ** (points into argv) */
	FLAG_DURATION,	/* int64_t * nanoseconds */
	FLAG_INT,	/* long long * */
	FLAG_SIZE,	/* long long *: bytes, with optional K/M/G suffix (powers of 1024) */
	FLAG_LIST,	/* struct flag_list *: a flag that may be repeated, each value kept */
};

/* A repeatable flag's values, in the order given (pointing into argv). */
#define FLAG_LIST_MAX 16
struct flag_list {
	const char *v[FLAG_LIST_MAX];
	size_t n;
};

struct flag {
	const char *name;
	enum flag_type type;
	void *ptr;
	bool *seen;	/* optional: set when the flag was given */
};

/* flag_parse returns the index of the first operand, FLAG_HELP for -h/-help/--help, or -1 with
 * the cause in e ("flag provided but not defined: -x", as Go says it). The table ends with a
 * {NULL} entry. */
#define FLAG_HELP (-2)
int flag_parse(const struct flag *flags, int argc, char **argv, struct sbx_err *e);

/* Parses "8M", "1024", "2G", "1T" (powers of 1024, an optional "i"/"iB"/"B" after the
 * suffix) into bytes. Returns 0, or -1 on bad text or a size that does not fit. */
int flag_parse_size(const char *s, long long *out);

#endif
