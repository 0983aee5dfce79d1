/* name.h — the session/sandbox name rule shared with upstream: ^[a-z0-9]{1,40}$. */
#ifndef SBX_NAME_H
#define SBX_NAME_H

#include "err.h"

#define NAME_MAX_LEN 40

/* Returns 0 if name is valid, else -1 with upstream's reason in e (code SBX_EINVAL):
 * "session name must be lowercase alphanumeric", "... no more than 40 characters long". */
int name_check(const char *name, struct sbx_err *e);
/* The same rule for a sandbox name, the reason saying "sandbox name". */
int sandbox_name_check(const char *name, struct sbx_err *e);
/* What a name given by a person names, for name_given_check's message. */
enum name_kind { NAME_SESSION, NAME_SANDBOX };
/* The rule for a name given on a command line, the one check every program makes of it:
 * e (SBX_EINVAL) says 'invalid sandbox name "NAME": sandbox name must be …'. */
int name_given_check(enum name_kind kind, const char *name, struct sbx_err *e);
/* Kubernetes namespace rule (RFC 1123 label, at most 63 bytes). */
int namespace_check(const char *ns, struct sbx_err *e);

#endif
