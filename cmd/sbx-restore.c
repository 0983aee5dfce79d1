/* sbx-restore — restore the newest good backup of a session into its sandbox. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "flag.h"
#include "name.h"
#include "snapshot.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-restore [-backend local|kubernetes] [-namespace NS] [-from FILE] [-homedir D]\n"
	"                   [-max-size N] [-optional] SESSION\n"
	"       sbx-restore -fresh [-backend local|kubernetes] [-namespace NS] SESSION\n"
	"Restores the newest good backup in ~/.local/sandboxed-tools/SESSION/fs (or FILE) into the\n"
	"home of sandbox SESSION, after checking its SHA-256 and every entry; a corrupt newest\n"
	"backup, or one that fails to extract (the home is then emptied), falls back to the\n"
	"previous one. A backup whose sidecar is wrong is checked by the archive's own checksums.\n"
	"A sandbox made new for a session with backups owes a restore: sbx-snapshot refuses it\n"
	"until a restore completes, or until -fresh empties the home to start afresh on purpose.\n"
	"Symlinks whose target leaves the home (a python venv's bin/python) are not\n"
	"created: they are named in \"skipped_links\". Prints\n"
	"{\"restored\",\"files\",\"bytes\",\"skipped_corrupt\",\"skipped_links\"}. A session\n"
	"without backups is an error (exit 101), unless -optional: then \"restored\" is null.\n"
	"\n"
	CLI_SBX_USAGE
	"  -from FILE      restore this backup (.tar.gz or .tar.zst) and nothing else\n"
	"  -homedir D      restore into directory D inside the sandbox (with tar) instead of its home\n"
	"  -max-size N     refuse archives expanding beyond N bytes (K/M/G suffixes; default 8G)\n"
	"  -optional       no backup at all is not an error (agent-loop: a fresh start)\n"
	"  -fresh          restore nothing: empty the home, and the restore owed is settled\n"
	"  -h              show this help\n";

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	long long max = (long long)ARCHIVE_MAX_EXPANDED;
	struct snapshot_restore_opts o = {0};
	struct snapshot_restore_result r;
	struct sbx_backend *b;
	struct json_object *j;
	char *links;
	struct sbx_err e;
	int i, rc;
	struct flag flags[] = {
		{"from", FLAG_STRING, &o.from, NULL},
		{"homedir", FLAG_STRING, &o.homedir, NULL},
		{"max-size", FLAG_SIZE, &max, NULL},
		{"optional", FLAG_BOOL, &o.optional, NULL},
		{"fresh", FLAG_BOOL, &o.fresh, NULL},
		{NULL, 0, NULL, NULL},
	};

	i = cli_parse(&(const struct cli){.usage = usage, .flags = flags, .sandbox = &sb,
					  .min = 1, .max = 1,
					  .missing = "missing SESSION"}, argc, argv);
	if (max <= 0)
		cli_usage_error(usage, "-max-size must be positive");
	if (o.from && *o.from == '\0')
		cli_usage_error(usage, "-from needs a file name");
	if (o.homedir && o.homedir[0] != '/')
		cli_usage_error(usage, "-homedir must be an absolute path");
	if (o.fresh && (o.from || o.homedir || o.optional))
		cli_usage_error(usage, "-fresh goes alone (no -from, -homedir or -optional)");
	cli_names_check(NAME_SESSION, argv + i, 1);
	o.max_bytes = (uint64_t)max;
	if ((o.cancel_fd = cancel_install(&e)) < 0)
		cli_die_err("", &e);
	b = cli_backend_open(&sb);
	rc = snapshot_restore(b, argv[i], &o, &r, &e);
	backend_close(b);
	for (size_t k = 0; k < r.skipped.n; k++)
		cli_warn("skipping backup %s: %s", r.skipped.name[k], r.skipped.why[k]);
	for (size_t k = 0; k < r.sidecar_wrong.n; k++)
		cli_warn("the sidecar of %s is wrong; its archive checked out by its own checksums",
			 r.sidecar_wrong.name[k]);
	if (rc < 0 && cancel_signal())
		cli_die(128 + cancel_signal(), "restore into sandbox %s interrupted", argv[i]);
	if (rc < 0)
		cli_die(cli_status(e.code), "unable to restore sandbox %s: %s", argv[i], e.msg);
	links = snapshot_links_warning(r.links_out, r.nlinks_out, "pointing outside the home");
	if (links != NULL)
		cli_warn("%s", links);
	free(links);
	j = snapshot_restore_json(&r);
	rc = cli_print_json(j) < 0 ? EXIT_FAIL : EXIT_OK;
	json_object_put(j);
	snapshot_restore_free(&r);
	return cli_finish(rc);
}
