/* sbx-touch — move a sandbox's shutdown time to now + ttl. */
#include "../lib/backend.h"
#include "../lib/flag.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-touch [-backend local|kubernetes] [-namespace NS] [-ttl 5m] NAME\n"
	"Moves the shutdown time of sandbox NAME to now + ttl and prints its handle.\n"
	"Exits 101 when the sandbox no longer exists (expired or deleted): create it again.\n"
	"\n"
	"  -backend B     local (default) or kubernetes; env SANDBOX_BACKEND\n"
	"  -namespace NS  namespace; env SANDBOX_NAMESPACE, default \"default\"\n"
	"  -ttl D         new lifetime from now (Go duration, default 5m)\n"
	"  -h             show this help\n";

int main(int argc, char **argv)
{
	const char *backend = NULL, *ns = NULL;
	int64_t ttl = SBX_DEFAULT_TTL_NS;
	struct sbx_info info;
	struct sbx_backend *b;
	struct sbx_err e;
	struct json_object *o;
	int i, rc;
	struct flag flags[] = {
		{"backend", FLAG_STRING, &backend, NULL},
		{"namespace", FLAG_STRING, &ns, NULL},
		{"ttl", FLAG_DURATION, &ttl, NULL},
		{NULL, 0, NULL, NULL},
	};

	cli_init(argc, argv);
	i = flag_parse(flags, argc, argv, &e);
	if (i == FLAG_HELP)
		cli_help(usage);
	if (i < 0)
		cli_usage_error(usage, e.msg);
	if (argc - i != 1)
		cli_usage_error(usage, argc - i < 1 ? "missing NAME" : "too many arguments");
	if ((b = backend_open(backend, ns, &e)) == NULL)
		cli_die_err("", &e);
	if (sbx_touch(b, argv[i], ttl, &info, &e) < 0)
		cli_die(cli_status(e.code), "unable to touch sandbox %s: %s", argv[i], e.msg);
	o = sbx_info_json(&info);
	json_object_object_del(o, "reused");
	rc = cli_print_json(o) < 0 ? EXIT_FAIL : EXIT_OK;
	json_object_put(o);
	backend_close(b);
	return cli_finish(rc);
}
