/* sbx-cp — copy files and directories between the host and a sandbox (as docker cp does). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"
#include "cancel.h"
#include "copy.h"
#include "flag.h"
#include "snapshot.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-cp [-backend local|kubernetes] [-namespace NS] [-max-size N] SRC NAME:PATH\n"
	"       sbx-cp [options] NAME:PATH DEST\n"
	"Copies a file or a directory (recursively) into sandbox NAME, or out of it. A relative\n"
	"PATH is in the sandbox's home. As docker cp: into an existing directory under the\n"
	"source's name, else as the destination; SRC ending in /. copies a directory's contents.\n"
	"SRC - reads a tar stream from standard input into the directory NAME:PATH; DEST -\n"
	"writes NAME:PATH as a tar stream to standard output. On the way to the host the archive\n"
	"passes sbx-restore's checks, whole, before anything is written; symlinks leading out of\n"
	"what is copied are left out and named. Prints {\"from\",\"to\",\"files\",\"bytes\",\n"
	"\"skipped_links\"} (nothing with DEST -). Needs sh and tar in the sandbox.\n"
	"\n"
	CLI_SBX_USAGE
	"  -max-size N     refuse what expands beyond N bytes on the way out (default 8G)\n"
	"  -h              show this help\n";

static void warn_links(const struct copy_result *r)
{
	char *w = snapshot_links_warning(r->links_out, r->nlinks_out,
					 "leading out of what was copied");

	if (w != NULL)
		cli_warn("%s", w);
	free(w);
}

static int print_result(const char *from, const char *name, const struct copy_result *r,
			bool out)
{
	struct json_object *o = copy_result_json(from, name, r, out);
	int rc = cli_print_json(o);

	json_object_put(o);
	return rc;
}

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const char *spath = NULL, *dpath = NULL, *src, *dst;
	long long max = (long long)ARCHIVE_MAX_EXPANDED;
	struct copy_opts o = {0};
	struct copy_result r;
	struct sbx_backend *b;
	struct sbx_err e;
	char *sname, *dname, *name;
	int i, rc;
	struct flag flags[] = {
		{"max-size", FLAG_SIZE, &max, NULL},
		{NULL, 0, NULL, NULL},
	};

	i = cli_parse(&(const struct cli){.usage = usage, .flags = flags, .sandbox = &sb,
					  .min = 2, .max = 2,
					  .missing = "want SRC and DEST"}, argc, argv);
	if (max <= 0)
		cli_usage_error(usage, "-max-size must be positive");
	src = argv[i];
	dst = argv[i + 1];
	sname = copy_operand(src, &spath);
	dname = copy_operand(dst, &dpath);
	if ((sname == NULL) == (dname == NULL))
		cli_usage_error(usage, sname ? "both are in sandboxes: copy through the host"
					     : "neither SRC nor DEST is NAME:PATH in a sandbox");
	if ((sname && *spath == '\0') || (dname && *dpath == '\0'))
		cli_usage_error(usage, "NAME:PATH needs a PATH (NAME:. is the home)");
	o.max_bytes = (uint64_t)max;
	if ((o.cancel_fd = cancel_install(&e)) < 0)
		cli_die_err("", &e);
	signal(SIGPIPE, SIG_IGN);	/* a closed reader is a write error, reported */
	b = cli_backend_open(&sb);
	name = sname ? sname : dname;
	if (dname && strcmp(src, "-") == 0)
		rc = copy_stream_in(b, dname, 0, dpath, &o, &r, &e);
	else if (dname)
		rc = copy_to_sandbox(b, dname, src, dpath, &o, &r, &e);
	else if (strcmp(dst, "-") == 0)
		rc = copy_stream_out(b, sname, spath, 1, &o, &r, &e);
	else
		rc = copy_from_sandbox(b, sname, spath, dst, &o, &r, &e);
	backend_close(b);
	if (rc < 0 && cancel_signal())
		cli_die(128 + cancel_signal(), "copy %s %s interrupted", src, dst);
	if (rc < 0)
		cli_die(cli_status(e.code), "unable to copy %s to %s: %s", src, dst, e.msg);
	warn_links(&r);
	rc = EXIT_OK;
	if (strcmp(dst, "-") != 0 && print_result(src, name, &r, sname != NULL) < 0)
		rc = EXIT_FAIL;
	copy_result_free(&r);
	free(sname);
	free(dname);
	return cli_finish(rc);
}
