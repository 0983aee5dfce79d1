/* sbx-snapshot — archive a sandbox's home into a verified backup; or prune backups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cancel.h"
#include "flag.h"
#include "name.h"
#include "snapshot.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-snapshot [-backend local|kubernetes] [-namespace NS] [-keep N] [-homedir D]\n"
	"                    [-compress gzip|zstd] [-backup-budget SIZE] SESSION\n"
	"       sbx-snapshot -prune [-keep N] [-backup-budget SIZE] [-all | SESSION...]\n"
	"Archives the home directory of sandbox SESSION into\n"
	"~/.local/sandboxed-tools/SESSION/fs/backup-YYYYMMDDTHHMMSS_NANOSECS.tar.gz (a name no\n"
	"other backup has) with a SHA-256 sidecar, keeps the newest N backups within the budget and\n"
	"prints {\"path\",\"bytes\",\"files\",\"sha256\",\"pruned\"}. Refused while the home owes a\n"
	"restore (see sbx-restore). With -prune, only prunes (no sandbox needed) and prints\n"
	"{\"session\",\"pruned\"} per session.\n"
	"\n"
	CLI_SBX_USAGE
	"  -keep N         backups to keep (default 5)\n"
	"  -homedir D      archive directory D inside the sandbox (with tar) instead of its home\n"
	"  -compress C     gzip (default, upstream's format) or zstd (.tar.zst, faster)\n"
	"  -backup-budget SIZE  most the session's backups may take together, oldest pruned\n"
	"                  first (K/M/G; default 3 times the home's disk cap); env\n"
	"                  SANDBOX_BACKUP_BUDGET\n"
	"  -prune          prune only\n"
	"  -all            with -prune: every session under ~/.local/sandboxed-tools\n"
	"  -h              show this help\n";

/* More backups than this is a typo, not a retention policy (and -keep is an int inside). */
#define KEEP_MAX 100000
#define SBX_STR2(x) #x
#define SBX_STR(x) SBX_STR2(x)
/* Progress is redrawn at most this often (ns): often enough to look alive. */
#define PROGRESS_EVERY_NS 200000000LL

struct progress {
	struct timespec start, last;
	bool shown;
};

static int64_t ns_between(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

static void show_progress(uint64_t bytes, void *arg)
{
	struct progress *p = arg;
	struct timespec now;
	double secs;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (ns_between(&p->last, &now) < PROGRESS_EVERY_NS)
		return;
	p->last = now;
	secs = (double)ns_between(&p->start, &now) / 1e9;
	/* A terminal status line, redrawn in place: not a message, so not through cli_msg. */
	fprintf(stderr, "\r%s: %.1f MB written, %.1f MB/s   ", cli_prog, (double)bytes / 1e6,
		secs > 0 ? (double)bytes / 1e6 / secs : 0.0);
	p->shown = true;
}

/* Prunes one session's backups; prints its line. Returns the exit status. */
static int prune_one(const char *session, int keep, uint64_t budget)
{
	struct backup_prune_opts po = {keep, budget, NULL};
	struct backup_list pruned = {0};
	struct json_object *o;
	struct sbx_err e;
	char *dir;
	int rc = EXIT_OK;

	if ((dir = backup_dir(session, &e)) == NULL ||
	    backup_prune(dir, &po, &pruned, &e) < 0) {
		cli_msg("unable to prune backups of session %s: %s", session, e.msg);
		rc = cli_status(e.code);
	} else {
		o = snapshot_pruned_json(session, &pruned);
		if (cli_print_json(o) < 0)
			rc = EXIT_FAIL;
		json_object_put(o);
	}
	backup_list_free(&pruned);
	free(dir);
	return rc;
}

/* -prune -all: every session directory that already has backups. */
static int prune_all(int keep, uint64_t budget)
{
	struct backup_list sessions = {0};
	struct sbx_err e;
	int rc = EXIT_OK, r;

	if (backup_sessions(&sessions, &e) < 0)
		cli_die_err("unable to find the session directory", &e);
	for (size_t k = 0; k < sessions.n; k++)
		if ((r = prune_one(sessions.name[k], keep, budget)) != EXIT_OK)
			rc = r;
	backup_list_free(&sessions);
	return rc;
}

/* Long: a main's checks, then its three modes (-prune -all, -prune SESSION…, one snapshot) side
 * by side so their usage errors read together. */
/* -prune: of every session (-all) or of the n sessions named; the last failure's status. */
static int prune_main(bool all, char **names, int n, int keep, uint64_t budget)
{
	int rc = EXIT_OK;

	if (all == (n > 0))
		cli_usage_error(usage, "-prune needs either -all or SESSION names");
	if (all)
		return prune_all(keep, budget);
	for (int k = 0; k < n; k++) {
		int r1 = prune_one(names[k], keep, budget);
		if (r1 != EXIT_OK)
			rc = r1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const char *homedir = NULL, *compress = "gzip";
	long long keep = BACKUP_DEFAULT_KEEP, budget = 0;
	bool prune = false, all = false, budget_seen = false;
	struct snapshot_opts o = {0};
	struct snapshot_result r;
	struct progress pr = {0};
	struct sbx_backend *b;
	struct json_object *j;
	struct sbx_err e;
	int i, rc = EXIT_OK;
	struct flag flags[] = {
		{"keep", FLAG_INT, &keep, NULL},
		{"homedir", FLAG_STRING, &homedir, NULL},
		{"compress", FLAG_STRING, &compress, NULL},
		{"prune", FLAG_BOOL, &prune, NULL},
		{"all", FLAG_BOOL, &all, NULL},
		{"backup-budget", FLAG_SIZE, &budget, &budget_seen},
		{NULL, 0, NULL, NULL},
	};

	i = cli_parse(&(const struct cli){.usage = usage, .flags = flags, .sandbox = &sb,
					  .max = -1}, argc, argv);
	if (keep < 1 || keep > KEEP_MAX)
		cli_usage_error(usage, "-keep must be between 1 and " SBX_STR(KEEP_MAX));
	if (homedir && homedir[0] != '/')
		cli_usage_error(usage, "-homedir must be an absolute path");
	if (!budget_seen && backend_env_backup_budget(&budget) < 0)
		cli_usage_error(usage, "SANDBOX_BACKUP_BUDGET must be a size such as 30G");
	if (budget < 0 || (budget_seen && budget == 0))
		cli_usage_error(usage, "-backup-budget must be positive");
	if (archive_codec_parse(compress, &o.codec) < 0)
		cli_usage_error(usage, "-compress must be gzip or zstd");
	cli_names_check(NAME_SESSION, argv + i, argc - i);
	if (prune)
		return cli_finish(prune_main(all, argv + i, argc - i, (int)keep, (uint64_t)budget));
	if (all)
		cli_usage_error(usage, "-all goes with -prune");
	if (i != argc - 1)
		cli_usage_error(usage, i >= argc ? "missing SESSION" : "too many arguments");
	if ((o.cancel_fd = cancel_install(&e)) < 0)
		cli_die_err("", &e);
	o.keep = (int)keep;
	o.budget = (uint64_t)budget;
	o.homedir = homedir;
	if (isatty(2)) {
		clock_gettime(CLOCK_MONOTONIC, &pr.start);
		o.progress = show_progress;
		o.progress_arg = &pr;
	}
	b = cli_backend_open(&sb);
	rc = snapshot_take(b, argv[i], &o, &r, &e);
	if (pr.shown)
		fputc('\n', stderr);
	backend_close(b);
	if (rc < 0 && cancel_signal())
		cli_die(128 + cancel_signal(), "snapshot of sandbox %s interrupted; no backup written",
			argv[i]);
	if (rc < 0)
		cli_die(cli_status(e.code), "unable to snapshot sandbox %s: %s", argv[i], e.msg);
	if (r.skipped)
		cli_warn("%llu entries left out (sockets, fifos, device nodes, entries the sandbox "
			 "may not read, files that changed while being archived)",
			 (unsigned long long)r.skipped);
	if (r.prune_error)
		cli_warn("backup written, but pruning failed: %s", r.prune_error);
	j = snapshot_result_json(&r);
	rc = cli_print_json(j) < 0 ? EXIT_FAIL : EXIT_OK;
	json_object_put(j);
	snapshot_result_free(&r);
	return cli_finish(rc);
}
