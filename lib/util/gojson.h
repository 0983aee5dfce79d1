/* gojson.h — JSON text exactly as Go's encoding/json writes it, for byte parity with upstream
 * files (history lines, tool arguments): '<' '>' '&' U+2028 U+2029 escaped, invalid UTF-8
 * replaced by U+FFFD, keys in insertion order, no spaces, '/' not escaped. */
#ifndef SBX_GOJSON_H
#define SBX_GOJSON_H

#include <json-c/json.h>

#include "xalloc.h"

/* Appends the encoding of obj (NULL encodes as null) to b. */
void gojson_append(struct buf *b, struct json_object *obj);
/* Appends a JSON string literal for the n bytes at s. */
void gojson_append_string(struct buf *b, const char *s, size_t n);
/* Returns a newly allocated encoding of obj; the caller frees it. */
char *gojson_encode(struct json_object *obj);

/* Parses exactly one JSON document from the n bytes at s (trailing white space allowed).
 * Returns a new reference, or NULL with a reason in why (static text or json-c's). */
struct json_object *gojson_parse(const char *s, size_t n, const char **why);

/* The first key of object o not in the NULL-terminated list known (borrowed), or NULL when
 * every key is known: request documents refuse what they do not define, so a misspelt field
 * ("timout") is an error instead of a silent default. */
const char *gojson_unknown_field(struct json_object *o, const char *const *known);

#endif
