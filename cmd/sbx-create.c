/* sbx-create — create a sandbox (or reuse a ready one with the same spec) and print its handle. */
#include <stdlib.h>
#include <string.h>

#include "../lib/backend.h"
#include "../lib/flag.h"
#include "../lib/specflags.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-create [-backend local|kubernetes] [-namespace NS] [-image I] [-homedir D]\n"
	"                  " SPECFLAGS_SYNOPSIS_WRAPPED("                  ") "\n"
	"                  [-ttl 5m] NAME\n"
	"Creates the sandbox NAME (^[a-z0-9]{1,40}$), or reuses a ready one with the same spec,\n"
	"waits until it is ready and prints its handle as one JSON line.\n"
	"\n"
	"  -backend B            local (default) or kubernetes; env SANDBOX_BACKEND\n"
	"  -namespace NS         namespace; env SANDBOX_NAMESPACE, default \"default\"\n"
	"  -image I              local: \"host\" (default), a root filesystem directory, or\n"
	"                        an OCI image oci-archive:PATH[:TAG] / oci:DIR[:TAG] (see\n"
	"                        sbx-image); kubernetes: a container image (default\n"
	"                        debian:bookworm-slim); env SANDBOX_IMAGE\n"
	"  -homedir D            home directory inside, the only persistent place;\n"
	"                        env SANDBOX_HOME_DIR, default /home/clawtainer\n"
	"  -ttl D                shutdown time = now + D (Go duration, default 5m)\n"
	SPECFLAGS_USAGE
	"  -h                    show this help\n";

int main(int argc, char **argv)
{
	const char *backend = NULL, *ns = NULL, *image = NULL, *homedir = NULL;
	struct sbx_spec spec;
	struct sbx_info info;
	struct sbx_backend *b;
	struct sbx_err e;
	struct json_object *o;
	struct specflags sf = {0};
	int i, rc;

	cli_init(argc, argv);
	backend_spec_init(&spec);
	{
		struct flag flags[5 + SPECF_COUNT + 1] = {
			{"backend", FLAG_STRING, &backend, NULL},
			{"namespace", FLAG_STRING, &ns, NULL},
			{"image", FLAG_STRING, &image, NULL},
			{"homedir", FLAG_STRING, &homedir, NULL},
			{"ttl", FLAG_DURATION, &spec.ttl_ns, NULL},
		};
		specflags_table(&sf, flags + 5);
		i = flag_parse(flags, argc, argv, &e);
	}
	if (i == FLAG_HELP)
		cli_help(usage);
	if (i < 0)
		cli_usage_error(usage, e.msg);
	if (argc - i != 1)
		cli_usage_error(usage, argc - i < 1 ? "missing NAME" : "too many arguments");
	if (sandbox_name_check(argv[i], &e) < 0)	/* also what keeps it within spec.name */
		cli_die(EXIT_USAGE, "invalid sandbox name \"%s\": %s", argv[i], e.msg);
	strcpy(spec.name, argv[i]);
	if (image == NULL)
		image = getenv("SANDBOX_IMAGE");
	if (image && strlen(image) >= sizeof spec.image)
		cli_die(EXIT_USAGE, "invalid image: longer than %zu bytes", sizeof spec.image - 1);
	if (image)
		strcpy(spec.image, image);
	if (homedir) {
		if (strlen(homedir) >= sizeof spec.homedir)
			cli_die(EXIT_USAGE, "invalid homedir: longer than %zu bytes", sizeof spec.homedir - 1);
		strcpy(spec.homedir, homedir);
	}
	if (specflags_apply(&sf, &spec, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	if ((b = backend_open(backend, ns, &e)) == NULL)
		cli_die_err("", &e);
	if (!specflags_given(&sf, SPECF_MEMORY))
		spec.limits.memory = backend_default_memory_of(b);
	if (sbx_create(b, &spec, &info, &e) < 0)
		cli_die(cli_status(e.code), "unable to create sandbox %s: %s", spec.name, e.msg);
	o = sbx_info_json(&info);
	rc = cli_print_json(o) < 0 ? EXIT_FAIL : EXIT_OK;
	json_object_put(o);
	backend_close(b);
	return cli_finish(rc);
}
