/* specflags.h — the flags that shape a new sandbox (its struct sbx_spec beyond name, image,
 * homedir and ttl), defined once for every program that creates sandboxes. sbx-create turns
 * them into the spec; agent-loop, acp-server and sbx-mcp take the same flags and hand what was
 * given to sbx-create unchanged, so a new sandbox flag is one row in lib/specflags.c and
 * reaches every program without touching them. Each flag may have an environment variable
 * (SANDBOX_*) that sbx-create reads when the flag is not given; children inherit it.
 * Ownership: values point into argv (or the environment); specflags_argv's vector is newly
 * allocated and freed with specflags_argv_free. */
#ifndef SBX_SPECFLAGS_H
#define SBX_SPECFLAGS_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "err.h"
#include "flag.h"

/* One per row of the table in specflags.c, in the order help texts list them. */
enum specflag_id {
	SPECF_NETWORK,
	SPECF_RUN_AS_ROOT,
	SPECF_RUNTIME_CLASS,
	SPECF_COUNT
};

/* Help lines for the flags, in the table's order, for a program's usage constant. */
#define SPECFLAGS_USAGE \
	"  -network              give the sandbox network access (local backend; default: none)\n" \
	"  -run-as-root          kubernetes: run the pod as root, Pod Security baseline\n" \
	"                        (default: uid 1000, restricted; env SANDBOX_RUN_AS_ROOT)\n" \
	"  -runtime-class NAME   kubernetes: the pod's RuntimeClass, e.g. gvisor or kata\n" \
	"                        (env SANDBOX_RUNTIME_CLASS)\n"

/* The one-line synopsis fragment of the same flags. */
#define SPECFLAGS_SYNOPSIS "[-network] [-run-as-root] [-runtime-class NAME]"

struct specflags {
	const char *val[SPECF_COUNT];	/* text given for a value flag; NULL: not given */
	bool on[SPECF_COUNT];		/* a boolean flag's value */
	bool seen[SPECF_COUNT];		/* given on the command line */
};

/* Writes the SPECF_COUNT flag entries bound to sf into tbl (which must have room for them);
 * returns the number written. sf must outlive the parse. */
size_t specflags_table(struct specflags *sf, struct flag *tbl);
/* Fills spec's fields from the flags given, else their environment variables, else the
 * defaults; a bad value is SBX_EINVAL naming the flag (or variable). */
int specflags_apply(const struct specflags *sf, struct sbx_spec *spec, struct sbx_err *e);
/* Checks the flags given (and their variables) as sbx-create would, so a program that hands
 * them on can refuse a bad value at start rather than at its first sandbox. */
int specflags_check(const struct specflags *sf, struct sbx_err *e);
/* The flags given, as "-name=value" words for sbx-create (NULL-terminated; never NULL). */
char **specflags_argv(const struct specflags *sf);
void specflags_argv_free(char **v);

#endif
