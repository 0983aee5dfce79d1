/* sbx-touch — move a sandbox's shutdown time to now + ttl. */
#include "cli.h"

static const char usage[] =
	"usage: sbx-touch [-backend local|kubernetes] [-namespace NS] [-ttl 5m] NAME\n"
	"Moves the shutdown time of sandbox NAME to now + ttl and prints its handle.\n"
	"Exits 101 when the sandbox no longer exists (expired or deleted): create it again.\n"
	"\n"
	CLI_SBX_USAGE
	"  -h             show this help\n";

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND | CLI_SBX_TTL, .ttl_ns = SBX_DEFAULT_TTL_NS};
	const struct cli c = {.usage = usage, .sandbox = &sb, .min = 1, .max = 1,
			      .missing = "missing NAME"};
	struct sbx_info info;
	struct sbx_backend *b;
	struct sbx_err e;
	int i = cli_parse(&c, argc, argv), rc;

	b = cli_backend_open(&sb);
	if (sbx_touch(b, argv[i], sb.ttl_ns, &info, &e) < 0)
		cli_die(cli_status(e.code), "unable to touch sandbox %s: %s", argv[i], e.msg);
	rc = cli_print_handle(&info) < 0 ? EXIT_FAIL : EXIT_OK;
	backend_close(b);
	return cli_finish(rc);
}
