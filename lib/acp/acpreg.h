/* acpreg.h — the sessions acp-server issued, and to whom: an append-only JSON Lines file
 * (`<state>/.acp-server/sessions.jsonl`), one object per line, later lines adding to or
 * overriding earlier ones for the same id:
 *
 *   {"id":"acp…","principal":"alice","cwd":"/home/alice/proj","title":"…","updated_at":"…"}
 *
 * A session id absent from the file was not issued by acp-server (agent-loop's `default`, say)
 * and cannot be loaded through it until the operator imports it (a line with its id and
 * principal, or acp-server -import-session). Several servers may share the file: a lookup
 * that misses reads what others appended since.
 * Thread-safe (one lock). Ownership: returned char * and json objects are new (caller frees,
 * puts); strings passed in are copied. */
#ifndef SBX_ACPREG_H
#define SBX_ACPREG_H

#include <json-c/json.h>

#include "err.h"

/* The file is read whole at start: past this size it is refused (prune it by hand). */
#define ACPREG_FILE_MAX ((size_t)64 << 20)
/* One record line; titles are cut to fit well inside. */
#define ACPREG_LINE_MAX 8192
#define ACPREG_TITLE_MAX 256

struct acpreg;

/* Opens (creating it 0600, and its directory 0700) and reads the file. */
struct acpreg *acpreg_open(const char *path, struct sbx_err *e);
void acpreg_free(struct acpreg *r);
/* The principal that owns id, or NULL when the session was never issued (or imported). */
char *acpreg_owner(struct acpreg *r, const char *id);
/* The record of id (a copy), or NULL. */
struct json_object *acpreg_get(struct acpreg *r, const char *id);
/* Merges fields (an object of strings; "id" is set from id) into id's record and appends them
 * as one line, flushed to disk. */
int acpreg_put(struct acpreg *r, const char *id, struct json_object *fields, struct sbx_err *e);
/* The records owned by principal (copies), most recently updated first. */
struct json_object *acpreg_list(struct acpreg *r, const char *principal);

#endif
