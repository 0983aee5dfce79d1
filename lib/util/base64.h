/* base64.h — base64 encoding as RFC 4648 section 4 defines it (the standard alphabet, '='
 * padding, no line breaks): what the Parts of an inline file carry. libc only, so the static
 * geminicli-toolbox links it without libresolv. */
#ifndef SBX_BASE64_H
#define SBX_BASE64_H

#include <stddef.h>

/* The length of the base64 text of n bytes, the NUL not counted. */
#define BASE64_LEN(n) (4 * (((n) + 2) / 3))

/* Writes the base64 of n bytes of in, NUL-terminated, to out (BASE64_LEN(n) + 1 bytes);
 * returns its length. */
size_t base64_encode(const void *in, size_t n, char *out);

#endif
