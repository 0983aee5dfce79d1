/* sbx-sessions — list the sessions on this host (history, backups, who uses them); remove them. */
#include <stdlib.h>

#include "sessions.h"
#include "timeutil.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-sessions\n"
	"       sbx-sessions -delete SESSION...\n"
	"Prints one JSON line per session kept under ~/.local/sandboxed-tools (by agent-loop,\n"
	"acp-server, sbx-snapshot): name, messages, backups, bytes, updated and in_use_by (the\n"
	"process using it, or null). With -delete, removes each SESSION's history and backups and\n"
	"prints {\"name\",\"deleted\":true}; a session in use is refused, one that does not\n"
	"exist is exit 101. A running sandbox of the same name is not touched: sbx-delete\n"
	"removes it.\n"
	"\n"
	"  -delete    remove the named sessions\n"
	"  -h         show this help\n";

static int print_one(const struct session_info *si, void *arg)
{
	struct json_object *o = json_object_new_object();
	char t[TIME_BUFSZ];
	int *failed = arg;

	json_object_object_add(o, "name", json_object_new_string(si->name));
	json_object_object_add(o, "messages", json_object_new_int64((int64_t)si->messages));
	json_object_object_add(o, "backups", json_object_new_int64((int64_t)si->backups));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)si->bytes));
	json_object_object_add(o, "updated", json_object_new_string(
		si->updated_ns ? time_rfc3339(si->updated_ns, t, sizeof t) : ""));
	json_object_object_add(o, "in_use_by", si->holder ? json_object_new_string(si->holder) : NULL);
	if (cli_print_json(o) < 0)
		*failed = 1;
	json_object_put(o);
	return *failed;
}

/* Removes each named session; every name is checked before any is removed. */
static int delete_all(int n, char **names)
{
	struct sbx_err e;
	int i, rc = EXIT_OK;

	cli_names_check(NAME_SESSION, names, n);
	for (i = 0; i < n; i++) {
		if (sessions_remove(names[i], &e) < 0) {
			cli_msg("unable to delete session %s: %s", names[i], e.msg);
			rc = cli_status(e.code);
		} else if (cli_print_deleted(names[i]) < 0) {
			rc = EXIT_FAIL;
		}
	}
	return rc;
}

int main(int argc, char **argv)
{
	bool delete = false;
	const struct flag flags[] = {
		{"delete", FLAG_BOOL, &delete, NULL},
		{NULL, 0, NULL, NULL},
	};
	const struct cli c = {.usage = usage, .flags = flags, .max = -1};
	struct sbx_err e;
	int i = cli_parse(&c, argc, argv), failed = 0;

	if (delete) {
		if (i >= argc)
			cli_usage_error(usage, "-delete needs SESSION names");
		return cli_finish(delete_all(argc - i, argv + i));
	}
	if (i < argc)
		cli_usage_error(usage, "too many arguments (to remove sessions: -delete SESSION...)");
	if (sessions_list(print_one, &failed, &e) < 0)
		cli_die(cli_status(e.code), "unable to list sessions: %s", e.msg);
	return cli_finish(failed ? EXIT_FAIL : EXIT_OK);
}
