/* jsonfield.h — typed look-ups in parsed JSON: the member of an object if it has the type
 * asked for, else nothing. o may be NULL or not an object (then nothing is found), so a chain
 * of look-ups needs no checks in between. Ownership: every result is borrowed from o. */
#ifndef SBX_JSONFIELD_H
#define SBX_JSONFIELD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* The member key of o, whatever its type (a JSON null is NULL too). */
struct json_object *jsonfield(struct json_object *o, const char *key);
/* The member key of o if it is a string / an object / an array, else NULL. */
const char *jsonfield_str(struct json_object *o, const char *key);
struct json_object *jsonfield_obj(struct json_object *o, const char *key);
struct json_object *jsonfield_arr(struct json_object *o, const char *key);
/* jsonfield_str, or dflt when there is none. */
const char *jsonfield_str_or(struct json_object *o, const char *key, const char *dflt);
/* The member key of o if it is a boolean, else dflt. */
bool jsonfield_bool(struct json_object *o, const char *key, bool dflt);
/* Whether the member key of o is an integer; its value in *out. */
bool jsonfield_int(struct json_object *o, const char *key, int64_t *out);

/* The value at a path of member names (an array's element by its index: "0"), NULL-terminated
 * (write it JPATH("spec", "containers", "0")), or NULL when a step is missing. */
struct json_object *jsonfield_path(struct json_object *o, const char *const *keys);
/* jsonfield_path if that is a string, else NULL. */
const char *jsonfield_path_str(struct json_object *o, const char *const *keys);
#define JPATH(...) ((const char *const[]){__VA_ARGS__, NULL})

#endif
