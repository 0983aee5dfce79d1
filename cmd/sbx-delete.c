/* sbx-delete — delete sandboxes; deleting one that does not exist succeeds. */
#include "cli.h"

static const char usage[] =
	"usage: sbx-delete [-backend local|kubernetes] [-namespace NS] NAME...\n"
	"Deletes each sandbox NAME with its processes and home directory. A sandbox that does\n"
	"not exist counts as deleted. Prints {\"name\":…,\"deleted\":true} per sandbox.\n"
	"\n"
	CLI_SBX_USAGE
	"  -h             show this help\n";

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const struct cli c = {.usage = usage, .sandbox = &sb, .min = 1, .max = -1,
			      .missing = "missing NAME"};
	struct sbx_backend *b;
	struct sbx_err e;
	int i = cli_parse(&c, argc, argv), rc = EXIT_OK;

	cli_names_check(NAME_SANDBOX, argv + i, argc - i);
	b = cli_backend_open(&sb);
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
