/* randhex.h — unguessable identifiers and bearer tokens: random bytes from OpenSSL's
 * generator written as lowercase hex (ACP session ids, acp-server's and sbx-mcp's tokens). */
#ifndef SBX_RANDHEX_H
#define SBX_RANDHEX_H

#include <stddef.h>

#include "err.h"

/* Writes nbytes random bytes as 2 * nbytes lowercase hex digits and a NUL into out (which
 * holds 2 * nbytes + 1). 0, or -1 with e (SBX_EIO) when the generator fails. */
int randhex(char *out, size_t nbytes, struct sbx_err *e);

#endif
