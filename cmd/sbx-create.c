/* sbx-create — create a sandbox (or reuse a ready one with the same spec) and print its handle. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: sbx-create [-backend local|kubernetes] [-namespace NS] [-image I] [-homedir D]\n"
	"                  " SPECFLAGS_SYNOPSIS_WRAPPED("                  ") "\n"
	"                  [-ttl 5m] NAME\n"
	"Creates the sandbox NAME (^[a-z0-9]{1,40}$), or reuses a ready one with the same spec,\n"
	"waits until it is ready and prints its handle as one JSON line.\n"
	"\n"
	CLI_SBX_USAGE
	SPECFLAGS_USAGE
	"  -h                    show this help\n";

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND | CLI_SBX_IMAGE | CLI_SBX_HOMEDIR |
					 CLI_SBX_TTL | CLI_SBX_SPEC};
	const struct cli c = {.usage = usage, .sandbox = &sb, .min = 1, .max = 1,
			      .missing = "missing NAME"};
	struct sbx_spec spec;
	struct sbx_info info;
	struct sbx_backend *b;
	struct sbx_err e;
	struct json_object *o;
	int i, rc;

	backend_spec_init(&spec);
	sb.ttl_ns = spec.ttl_ns;
	i = cli_parse(&c, argc, argv);
	spec.ttl_ns = sb.ttl_ns;
	cli_names_check(NAME_SANDBOX, argv + i, 1);	/* also what keeps it within spec.name */
	strcpy(spec.name, argv[i]);
	cli_sandbox_spec(&sb, &spec);
	if (specflags_apply(&sb.sf, &spec, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	b = cli_backend_open(&sb);
	if (!specflags_given(&sb.sf, SPECF_MEMORY))
		spec.limits.memory = backend_default_memory_of(b);
	if (sbx_create(b, &spec, &info, &e) < 0)
		cli_die(cli_status(e.code), "unable to create sandbox %s: %s", spec.name, e.msg);
	if (info.broken[0])
		cli_warn("sandbox %s was broken (%s): replaced it with a new one (its home is a "
			 "new one too)", spec.name, info.broken);
	if (info.notice[0])
		cli_warn("%s", info.notice);
	o = sbx_info_json(&info);
	rc = cli_print_json(o) < 0 ? EXIT_FAIL : EXIT_OK;
	json_object_put(o);
	backend_close(b);
	return cli_finish(rc);
}
