/* sbx-delete — delete sandboxes; deleting one that does not exist succeeds. */
#include "../lib/backend.h"
#include "../lib/flag.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-delete [-backend local|kubernetes] [-namespace NS] NAME...\n"
	"Deletes each sandbox NAME with its processes and home directory. A sandbox that does\n"
	"not exist counts as deleted. Prints {\"name\":…,\"deleted\":true} per sandbox.\n"
	"\n"
	"  -backend B     local (default) or kubernetes; env SANDBOX_BACKEND\n"
	"  -namespace NS  namespace; env SANDBOX_NAMESPACE, default \"default\"\n"
	"  -h             show this help\n";

int main(int argc, char **argv)
{
	const char *backend = NULL, *ns = NULL;
	struct sbx_backend *b;
	struct sbx_err e;
	int i, rc = EXIT_OK;
	struct flag flags[] = {
		{"backend", FLAG_STRING, &backend, NULL},
		{"namespace", FLAG_STRING, &ns, NULL},
		{NULL, 0, NULL, NULL},
	};

	cli_init(argc, argv);
	i = flag_parse(flags, argc, argv, &e);
	if (i == FLAG_HELP)
		cli_help(usage);
	if (i < 0)
		cli_usage_error(usage, e.msg);
	if (argc - i < 1)
		cli_usage_error(usage, "missing NAME");
	for (int j = i; j < argc; j++)
		if (sandbox_name_check(argv[j], &e) < 0)
			cli_die(EXIT_USAGE, "invalid sandbox name \"%s\": %s", argv[j], e.msg);
	if ((b = backend_open(backend, ns, &e)) == NULL)
		cli_die_err("", &e);
	for (; i < argc; i++) {
		if (sbx_remove(b, argv[i], &e) < 0) {
			cli_msg("unable to delete sandbox %s: %s", argv[i], e.msg);
			rc = cli_status(e.code);
		} else if (cli_print_deleted(argv[i]) < 0) {
			rc = EXIT_FAIL;
		}
	}
	backend_close(b);
	return cli_finish(rc);
}
