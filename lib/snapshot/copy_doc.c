/* copy_doc.c — sbx-cp's operands and the document it prints (part of copy.h). */
#include "copy.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "name.h"
#include "xalloc.h"

char *copy_operand(const char *arg, const char **path)
{
	const char *colon = strchr(arg, ':');
	char *name;

	if (colon == NULL || colon == arg)
		return NULL;
	name = xstrndup(arg, (size_t)(colon - arg));
	if (sandbox_name_check(name, NULL) < 0) {
		free(name);
		return NULL;
	}
	*path = colon + 1;
	return name;
}

struct json_object *copy_result_json(const char *from, const char *sandbox,
				     const struct copy_result *r, bool out)
{
	struct json_object *o = json_object_new_object(), *l = json_object_new_array();
	char *to = out ? xstrdup(r->to) : xasprintf("%s:%s", sandbox, r->to);

	json_object_object_add(o, "from", json_object_new_string(from));
	json_object_object_add(o, "to", json_object_new_string(to));
	json_object_object_add(o, "files", json_object_new_int64((int64_t)r->files));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)r->bytes));
	for (size_t k = 0; k < r->nlinks_out; k++)
		json_object_array_add(l, json_object_new_string(r->links_out[k]));
	json_object_object_add(o, "skipped_links", l);
	free(to);
	return o;
}
