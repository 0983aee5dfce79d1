/* jsonfield.c — typed look-ups in parsed JSON (lib/util/jsonfield.h). */
#include "jsonfield.h"

#include <stdlib.h>

struct json_object *jsonfield(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static struct json_object *typed(struct json_object *o, const char *key, enum json_type t)
{
	struct json_object *v = jsonfield(o, key);

	return v && json_object_is_type(v, t) ? v : NULL;
}

const char *jsonfield_str(struct json_object *o, const char *key)
{
	struct json_object *v = typed(o, key, json_type_string);

	return v ? json_object_get_string(v) : NULL;
}

const char *jsonfield_str_or(struct json_object *o, const char *key, const char *dflt)
{
	const char *s = jsonfield_str(o, key);

	return s ? s : dflt;
}

struct json_object *jsonfield_obj(struct json_object *o, const char *key)
{
	return typed(o, key, json_type_object);
}

struct json_object *jsonfield_arr(struct json_object *o, const char *key)
{
	return typed(o, key, json_type_array);
}

bool jsonfield_bool(struct json_object *o, const char *key, bool dflt)
{
	struct json_object *v = typed(o, key, json_type_boolean);

	return v ? json_object_get_boolean(v) : dflt;
}

bool jsonfield_int(struct json_object *o, const char *key, int64_t *out)
{
	struct json_object *v = typed(o, key, json_type_int);

	if (v == NULL)
		return false;
	*out = json_object_get_int64(v);
	return true;
}

struct json_object *jsonfield_path(struct json_object *o, const char *const *keys)
{
	for (; o && *keys; keys++) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(*keys));
		else
			o = jsonfield(o, *keys);
	}
	return o;
}

const char *jsonfield_path_str(struct json_object *o, const char *const *keys)
{
	o = jsonfield_path(o, keys);
	return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}
