/* test_backup.c — backup names, listing, atomic commit with sidecar, verify, prune. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/backup.h"
#include "../../lib/xalloc.h"
#include "tap.h"

static char base[256], dir[300], home[300];

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int rc;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	rc = system(cmd);
	free(cmd);
	return rc;
}

static bool exists(const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	bool r = access(p, F_OK) == 0;

	free(p);
	return r;
}

/* Writes a real backup of home and renames it (and its sidecar) to name. */
static void make_backup(const char *name)
{
	struct backup_tmp t;
	struct archive_stats st;
	struct sbx_err e = {0};
	char hex[BACKUP_SHA256_HEX + 1];
	char *a, *b;

	if (backup_begin(&t, dir, ARCHIVE_CODEC_GZIP, &e) < 0 ||
	    archive_pack_dir(home, ARCHIVE_CODEC_GZIP, backup_tap, &t, &st, &e) < 0 ||
	    backup_commit(&t, hex, &e) < 0) {
		printf("# make_backup: %s\n", e.msg);
		abort();
	}
	a = xasprintf("%s/%s", dir, t.name), b = xasprintf("%s/%s", dir, name);
	rename(a, b);
	free(a), free(b);
	a = xasprintf("%s/%s.sha256", dir, t.name), b = xasprintf("%s/%s.sha256", dir, name);
	rename(a, b);
	free(a), free(b);
	backup_end(&t);
}

static int verify(const char *name, uint64_t max, int cancel, struct archive_stats *st,
		  struct sbx_err *e)
{
	int fd = backup_open(dir, name, e), rc;

	if (fd < 0)
		return -1;
	rc = backup_verify(fd, dir, name, max, cancel, st, e);
	close(fd);
	return rc;
}

static void corrupt(const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	int fd = open(p, O_WRONLY);

	pwrite(fd, "garbage", 7, 40);
	close(fd);
	free(p);
}

static void names(void)
{
	enum archive_codec c;

	ok(backup_name_valid("backup-20261130T061500.tar.gz", &c) && c == ARCHIVE_CODEC_GZIP,
	   "upstream name is a backup");
	ok(backup_name_valid("backup-20261130T061500.tar.zst", &c) && c == ARCHIVE_CODEC_ZSTD,
	   "zstd name is a backup");
	ok(!backup_name_valid("backup-20261130T061500.tar.gz.tmp", NULL) &&
	   !backup_name_valid("backup-20261130T061500.tar.gz.abc123.tmp", NULL) &&
	   !backup_name_valid("backup-20261130T061500.tar.gz.sha256", NULL) &&
	   !backup_name_valid("backup-2026113T0615000.tar.gz", NULL) &&
	   !backup_name_valid("backup-x.tar.gz", NULL) && !backup_name_valid("backup-", NULL),
	   "temporaries, sidecars and look-alikes are not");
}

static void commit(void)
{
	struct backup_tmp t;
	struct archive_stats st;
	struct sbx_err e = {0};
	char hex[BACKUP_SHA256_HEX + 1], want[BACKUP_SHA256_HEX + 1], stamp[32], *p;
	time_t now = time(NULL);
	struct tm tm;
	struct stat sb;
	struct backup_list l;

	is_str(archive_codec_ext(ARCHIVE_CODEC_GZIP), ".tar.gz", "gzip extension");
	ok(backup_begin(&t, dir, ARCHIVE_CODEC_GZIP, &e) == 0, "begin (%s)", e.msg);
	strftime(stamp, sizeof stamp, "backup-%Y%m%dT%H%M", localtime_r(&now, &tm));
	ok(strncmp(t.name, stamp, strlen(stamp)) == 0, "named for the local time: %s", t.name);
	ok(stat(t.tmp, &sb) == 0 && (sb.st_mode & 0777) == 0600 && strstr(t.tmp, ".tmp"),
	   "temporary file is 0600 and ends in .tmp");
	ok(archive_pack_dir(home, ARCHIVE_CODEC_GZIP, backup_tap, &t, &st, &e) == 0, "pack");
	ok(backup_list_dir(dir, &l, &e) == 0 && l.n == 0, "an unfinished backup is not listed");
	backup_list_free(&l);
	ok(backup_commit(&t, hex, &e) == 0 && strlen(hex) == 64, "commit (%s)", e.msg);
	p = xasprintf("%s/%s", dir, t.name);
	ok(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0600 && (uint64_t)sb.st_size == t.bytes,
	   "final file is 0600 with every byte");
	free(p);
	ok(backup_read_sidecar(dir, t.name, want, &e) == 1 && strcmp(want, hex) == 0,
	   "sidecar holds the checksum");
	ok(sh("cd '%s' && sha256sum -c --quiet *.sha256", dir) == 0, "sha256sum -c agrees");
	ok(backup_list_dir(dir, &l, &e) == 0 && l.n == 1 && strcmp(l.name[0], t.name) == 0,
	   "listed once committed");
	backup_list_free(&l);
	ok(sh("ls -a '%s' | grep -c tmp | grep -qx 0", dir) == 0, "no temporary left");
	ok(verify(t.name, ARCHIVE_MAX_EXPANDED, -1, &st, &e) == 0 && st.files == 2,
	   "verify passes (%s)", e.msg);
	corrupt(t.name);
	ok(verify(t.name, ARCHIVE_MAX_EXPANDED, -1, &st, &e) < 0,
	   "a corrupt backup fails verify (%s)", e.msg);
	backup_end(&t);
	sh("rm -f '%s'/backup-*", dir);

	/* An abandoned backup leaves nothing. */
	ok(backup_begin(&t, dir, ARCHIVE_CODEC_ZSTD, &e) == 0 && strstr(t.name, ".tar.zst"),
	   "zstd backup begins");
	backup_tap("x", 1, &t, &e);
	backup_end(&t);
	ok(sh("ls -A '%s' | grep -v '^.lock$' | wc -l | grep -qx 0", dir) == 0,
	   "an abandoned backup leaves no file");

	/* cancel_fd stops the writer. */
	{
		int pfd[2];
		if (pipe(pfd) < 0)
			abort();
		backup_begin(&t, dir, ARCHIVE_CODEC_GZIP, &e);
		t.cancel_fd = pfd[0];
		if (write(pfd[1], "x", 1) != 1)
			abort();
		ok(archive_pack_dir(home, ARCHIVE_CODEC_GZIP, backup_tap, &t, &st, &e) < 0 &&
		   e.code == SBX_ECANCELED, "cancel stops a pack (%s)", e.msg);
		backup_end(&t);
		close(pfd[0]), close(pfd[1]);
	}
}

static void upstream_sidecarless(void)
{
	char *cmd = xasprintf("tar -zcf '%s/backup-20200101T000000.tar.gz' -C '%s' .", dir, home);
	struct archive_stats st;
	struct sbx_err e = {0};
	char hex[BACKUP_SHA256_HEX + 1];

	ok(system(cmd) == 0, "an upstream-style backup");
	ok(backup_read_sidecar(dir, "backup-20200101T000000.tar.gz", hex, &e) == 0, "has no sidecar");
	ok(verify("backup-20200101T000000.tar.gz", ARCHIVE_MAX_EXPANDED, -1, &st, &e) == 0,
	   "and verifies by structure (%s)", e.msg);
	free(cmd);
	cmd = xasprintf("%s/backup-20200101T000000.tar.gz.sha256", dir);
	{
		FILE *f = fopen(cmd, "w");
		fputs("not a checksum\n", f);
		fclose(f);
	}
	ok(verify("backup-20200101T000000.tar.gz", ARCHIVE_MAX_EXPANDED, -1, &st, &e) < 0 &&
	   strstr(e.msg, "not a SHA-256"), "a garbage sidecar fails (%s)", e.msg);
	free(cmd);
	sh("rm -f '%s'/backup-*", dir);
}

static void prune(void)
{
	static const char *const n[] = {
		"backup-20260101T000001.tar.gz", "backup-20260101T000002.tar.gz",
		"backup-20260101T000003.tar.zst", "backup-20260101T000004.tar.gz",
		"backup-20260101T000005.tar.gz", "backup-20260101T000006.tar.gz",
		"backup-20260101T000007.tar.gz",
	};
	struct backup_list pruned = {0};
	struct sbx_err e = {0};
	char *p;
	int fd;

	for (size_t i = 0; i < 7; i++)
		make_backup(n[i]);
	ok(backup_prune(dir, 0, NULL, NULL, &e) < 0 && e.code == SBX_EINVAL, "keep 0 is refused");
	ok(backup_prune(dir, 5, NULL, &pruned, &e) == 0 && pruned.n == 2, "prune to 5 (%s)", e.msg);
	ok(!exists(n[0]) && !exists(n[1]) && !exists("backup-20260101T000001.tar.gz.sha256") &&
	   exists(n[2]) && exists(n[6]) && exists("backup-20260101T000007.tar.gz.sha256"),
	   "the two oldest went, with their sidecars");
	backup_list_free(&pruned);
	ok(backup_prune(dir, 5, NULL, &pruned, &e) == 0 && pruned.n == 0, "pruning again: nothing");
	backup_list_free(&pruned);
	/* The two newest are corrupt: keep 2 must still keep the newest good one. */
	corrupt(n[5]);
	corrupt(n[6]);
	ok(backup_prune(dir, 2, NULL, &pruned, &e) == 0 && pruned.n == 2, "prune to 2 (%s)", e.msg);
	ok(exists(n[4]) && exists(n[5]) && exists(n[6]) && !exists(n[2]) && !exists(n[3]),
	   "the newest good backup survives beside the 2 newest");
	backup_list_free(&pruned);

	/* Temporaries: a live (locked) one stays, a dead old one goes, a dead new one stays. */
	p = xasprintf("%s/backup-20260101T000009.tar.gz.AAAAAA.tmp", dir);
	fd = open(p, O_RDWR | O_CREAT, 0600);
	flock(fd, LOCK_EX);
	free(p);
	sh("touch -d '1 hour ago' '%s/backup-20260101T000009.tar.gz.AAAAAA.tmp'", dir);
	sh("touch -d '1 hour ago' '%s/backup-20260101T000008.tar.gz.BBBBBB.tmp'", dir);
	sh("touch '%s/backup-20260101T000008.tar.gz.CCCCCC.tmp'", dir);
	sh("touch '%s/backup-20260101T000001.tar.gz.sha256'", dir);
	ok(backup_prune(dir, 2, NULL, NULL, &e) == 0, "prune with temporaries around");
	ok(exists("backup-20260101T000009.tar.gz.AAAAAA.tmp"), "a locked temporary stays");
	ok(!exists("backup-20260101T000008.tar.gz.BBBBBB.tmp"), "an old unlocked one goes");
	ok(exists("backup-20260101T000008.tar.gz.CCCCCC.tmp"), "a fresh unlocked one stays");
	ok(!exists("backup-20260101T000001.tar.gz.sha256"), "an orphan sidecar goes");
	close(fd);
}

int main(void)
{
	char *p;

	snprintf(base, sizeof base, "%s/test_backup.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(base) == NULL)
		return 1;
	snprintf(dir, sizeof dir, "%s/fs", base);
	snprintf(home, sizeof home, "%s/home", base);
	mkdir(dir, 0700);
	mkdir(home, 0755);
	p = xasprintf("%s/file", home);
	{
		FILE *f = fopen(p, "w");
		for (int i = 0; i < 2000; i++)
			fprintf(f, "line %d of a file that compresses\n", i);
		fclose(f);
	}
	free(p);
	p = xasprintf("%s/sub", home), mkdir(p, 0755), free(p);
	names();
	commit();
	upstream_sidecarless();
	prune();
	sh("rm -rf '%s'", base);
	return done_testing();
}
