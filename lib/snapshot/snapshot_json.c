/* snapshot_json.c — the documents sbx-snapshot and sbx-restore print for a result (part of
 * snapshot.h). */
#include "snapshot.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "xalloc.h"

/* The n names as a JSON array. New reference. */
static struct json_object *names_json(char *const *names, size_t n)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(names[i]));
	return a;
}

struct json_object *snapshot_result_json(const struct snapshot_result *r)
{
	struct json_object *j = json_object_new_object();

	json_object_object_add(j, "path", json_object_new_string(r->path));
	json_object_object_add(j, "bytes", json_object_new_int64((int64_t)r->bytes));
	json_object_object_add(j, "files", json_object_new_int64((int64_t)r->files));
	json_object_object_add(j, "sha256", json_object_new_string(r->sha256));
	json_object_object_add(j, "pruned", names_json(r->pruned.name, r->pruned.n));
	return j;
}

struct json_object *snapshot_pruned_json(const char *session, const struct backup_list *pruned)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "session", json_object_new_string(session));
	json_object_object_add(o, "pruned", names_json(pruned->name, pruned->n));
	return o;
}

struct json_object *snapshot_restore_json(const struct snapshot_restore_result *r)
{
	struct json_object *j = json_object_new_object();

	json_object_object_add(j, "restored", r->restored ? json_object_new_string(r->restored) : NULL);
	json_object_object_add(j, "files", json_object_new_int64((int64_t)r->files));
	json_object_object_add(j, "bytes", json_object_new_int64((int64_t)r->bytes));
	json_object_object_add(j, "skipped_corrupt", names_json(r->skipped.name, r->skipped.n));
	json_object_object_add(j, "skipped_links", names_json(r->links_out, r->nlinks_out));
	return j;
}

char *snapshot_links_warning(char *const *links, size_t n, const char *where)
{
	char list[1024] = "";

	if (n == 0)
		return NULL;
	for (size_t k = 0; k < n && k < SNAPSHOT_LINKS_WARNED; k++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
			 links[k]);
	if (n > SNAPSHOT_LINKS_WARNED)
		snprintf(list + strlen(list), sizeof list - strlen(list), " and %zu more",
			 n - SNAPSHOT_LINKS_WARNED);
	return xasprintf("left out %zu symlink%s %s: %s", n, n == 1 ? "" : "s", where, list);
}
