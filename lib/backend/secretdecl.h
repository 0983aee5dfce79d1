/* secretdecl.h — the -secret declarations of a sandbox: "NAME@HOSTS" (the value is the
 * caller's environment variable NAME) or "NAME=@FILE@HOSTS" (the value is FILE's contents),
 * HOSTS a comma-separated -allow-host list the value may be sent to. A list of declarations
 * is separated by spaces (SANDBOX_SECRETS, and the spec's normalised form). Only names,
 * files and hosts live here; a value is read by secretdecl_value when it is needed and is
 * the caller's to wipe. Shared by sbx-create (checks, the sandbox's plan) and the local
 * backend (which hands the values to sbx-proxy, never to the sandbox).
 * Ownership: a struct secretdecls owns its strings; secretdecls_free releases them. */
#ifndef SBX_SECRETDECL_H
#define SBX_SECRETDECL_H

#include <stddef.h>

#include "err.h"

/* Secrets per sandbox: each is a placeholder the proxy looks for in every request. */
#define SECRETDECL_MAX 16
/* An environment variable's name, as the sandbox sees it. */
#define SECRETDECL_NAME_MAX 64
/* A credential is a token or a password, not a document: 8 KiB holds any API token. */
#define SECRETDECL_VALUE_MAX 8192

struct secretdecl {
	char name[SECRETDECL_NAME_MAX + 1];
	char *file;		/* NULL: the environment variable name */
	char *hosts;		/* the normalised -allow-host list */
};

struct secretdecls {
	struct secretdecl v[SECRETDECL_MAX];
	size_t n;
};

/* Parses a space-separated list of declarations; SBX_EINVAL naming the bad one (a name
 * that is not an environment variable's or one the sandbox's own environment sets, a bad
 * host list, a name given twice). d is zeroed first. */
int secretdecls_parse(const char *text, struct secretdecls *d, struct sbx_err *e);
void secretdecls_free(struct secretdecls *d);
/* Writes the normalised list to out; -1 if it does not fit. */
int secretdecls_format(const struct secretdecls *d, char *out, size_t size);
/* Reads one declaration's value (a trailing newline of a file dropped) into a new buffer of
 * *len bytes; SBX_EINVAL when it is unset, empty, too long or holds control characters
 * (it must fit in an HTTP header field). The caller wipes (explicit_bzero) and frees it. */
unsigned char *secretdecl_value(const struct secretdecl *s, size_t *len, struct sbx_err *e);

#endif
