/* utf8.h — UTF-8 text as JavaScript sees it: bytes decoded the WHATWG way (each maximal
 * invalid subpart becomes U+FFFD, as Node's Buffer#toString and TextDecoder do) and lengths
 * counted in UTF-16 code units (String#length). Shared by libsbx and the static
 * geminicli-toolbox: no allocation, no dependency beyond libc.
 * Ownership: callers own every buffer. */
#ifndef SBX_UTF8_H
#define SBX_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes utf8_repair can write for n input bytes (every byte may become U+FFFD). */
#define UTF8_REPAIR_MAX(n) ((n) * 3)

/* Decodes one character at s[0..n) (n > 0): returns the bytes it takes, *cp its code point
 * (U+FFFD for an invalid subpart, which takes at least one byte). */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Encodes cp (a lone surrogate or out-of-range value becomes U+FFFD) into out[0..4);
 * returns the bytes written. */
size_t utf8_encode(uint32_t cp, char *out);
/* Copies s[0..n) to out with every invalid subpart replaced by U+FFFD (EF BF BD); out holds
 * UTF8_REPAIR_MAX(n) bytes and may not overlap s. Returns the bytes written. */
size_t utf8_repair(const char *s, size_t n, char *out);
/* Whether s[0..n) is valid UTF-8 (utf8_repair would copy it unchanged). */
bool utf8_valid(const char *s, size_t n);
/* The room utf8_repair needs for s[0..n): n when it is valid, else UTF8_REPAIR_MAX(n). */
size_t utf8_repair_room(const char *s, size_t n);
/* UTF-16 code units of valid UTF-8 s[0..n) (characters above U+FFFF count two). */
size_t utf8_utf16_len(const char *s, size_t n);
/* Byte length of the first `units` UTF-16 code units of valid UTF-8 s[0..n). When the cut
 * falls inside a character above U+FFFF, *split is set and the length stops before it (the
 * caller writes U+FFFD for the lone surrogate JavaScript would keep). */
size_t utf8_utf16_prefix(const char *s, size_t n, size_t units, bool *split);

/* Byte offset where the last `units` UTF-16 code units of valid UTF-8 s[0..n) begin; *split
 * as above when that falls inside a character (the offset is then after it). */
size_t utf8_utf16_suffix(const char *s, size_t n, size_t units, bool *split);

#endif
