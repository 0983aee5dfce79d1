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

#include "backup.h"
#include "xalloc.h"
#include "tap.h"

static char base[256], dir[300], home[300];
static enum backup_vouch last_how;

static int prune_to(int keep, uint64_t budget, struct backup_list *pruned, struct sbx_err *e)
{
	struct backup_prune_opts o = {keep, budget, NULL};

	return backup_prune(dir, &o, pruned, e);
}

/* Writes text into dir/name. */
static void put(const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");

	fputs(text, f);
	fclose(f);
	free(p);
}

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
	rc = backup_verify(fd, dir, name, max, cancel, st, &last_how, e);
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
	ok(backup_name_valid("backup-20261130T061500_000000001.tar.gz", &c) && c == ARCHIVE_CODEC_GZIP &&
	   backup_name_valid("backup-20261130T061500_999999999.tar.zst", &c) && c == ARCHIVE_CODEC_ZSTD,
	   "sub-second names are backups");
	ok(!backup_name_valid("backup-20261130T061500_12345678.tar.gz", NULL) &&
	   !backup_name_valid("backup-20261130T061500_1234567890.tar.gz", NULL) &&
	   !backup_name_valid("backup-20261130T061500_12345678x.tar.gz", NULL),
	   "only 9 digits of nanoseconds");
	/* the order a listing (and upstream's sort) gives */
	ok(strcmp("backup-20261130T061500.tar.gz", "backup-20261130T061500_000000000.tar.gz") < 0 &&
	   strcmp("backup-20261130T061500_999999999.tar.zst", "backup-20261130T061501.tar.gz") < 0,
	   "a sub-second name sorts after upstream's same second, before the next second");
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
	ok(verify("backup-20200101T000000.tar.gz", ARCHIVE_MAX_EXPANDED, -1, &st, &e) == 0 &&
	   last_how == BACKUP_SIDECAR_WRONG, "a garbage sidecar does not condemn an intact archive");
	put("backup-20200101T000000.tar.gz.sha256",
	    "0000000000000000000000000000000000000000000000000000000000000000  x\n");
	ok(verify("backup-20200101T000000.tar.gz", ARCHIVE_MAX_EXPANDED, -1, &st, &e) == 0 &&
	   last_how == BACKUP_SIDECAR_WRONG, "nor does a wrong checksum in it");
	/* the gzip trailer (CRC-32) damaged: libarchive alone reads past it */
	sh("f='%s/backup-20200101T000000.tar.gz'; s=$(stat -c %%s \"$f\"); "
	   "printf '\\377\\377' | dd of=\"$f\" bs=1 seek=$((s - 8)) conv=notrunc 2>/dev/null", dir);
	ok(verify("backup-20200101T000000.tar.gz", ARCHIVE_MAX_EXPANDED, -1, &st, &e) < 0 &&
	   strstr(e.msg, "checksum mismatch") && strstr(e.msg, "gzip"),
	   "a wrong sidecar and a bad CRC: refused (%s)", e.msg);
	unlink(cmd);
	ok(verify("backup-20200101T000000.tar.gz", ARCHIVE_MAX_EXPANDED, -1, &st, &e) < 0,
	   "no sidecar and a bad CRC: refused (%s)", e.msg);
	/* the trailer cut off (a copy that stopped 8 bytes short), and trailing junk */
	sh("cd '%s' && tar -zcf t.tar.gz -C '%s' . && head -c -8 t.tar.gz >backup-20200102T000000.tar.gz"
	   " && cp t.tar.gz backup-20200103T000000.tar.gz && printf 'junk' >>backup-20200103T000000.tar.gz"
	   " && rm t.tar.gz", dir, home);
	ok(verify("backup-20200102T000000.tar.gz", ARCHIVE_MAX_EXPANDED, -1, &st, &e) < 0,
	   "no trailer: refused (%s)", e.msg);
	/* a second member cut short after the tar's end: only the read-through sees it */
	sh("cd '%s' && tar -zcf t.tar.gz -C '%s' . && cat t.tar.gz t.tar.gz | head -c -100 >cut.gz"
	   " && rm t.tar.gz", dir, home);
	{
		char *c = xasprintf("%s/cut.gz", dir);
		int cfd = open(c, O_RDONLY);
		ok(backup_check_stream(cfd, -1, &e) < 0 && strstr(e.msg, "cut short"),
		   "a gzip member cut short is found (%s)", e.msg);
		close(cfd);
		unlink(c);
		free(c);
	}
	ok(verify("backup-20200103T000000.tar.gz", ARCHIVE_MAX_EXPANDED, -1, &st, &e) == 0 &&
	   last_how == BACKUP_BY_ITSELF, "bytes after the last member are ignored, as gzip -t does (%s)",
	   e.msg);
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
	ok(prune_to(0, 0, NULL, &e) < 0 && e.code == SBX_EINVAL, "keep 0 is refused");
	ok(prune_to(5, 0, &pruned, &e) == 0 && pruned.n == 2, "prune to 5 (%s)", e.msg);
	ok(!exists(n[0]) && !exists(n[1]) && !exists("backup-20260101T000001.tar.gz.sha256") &&
	   exists(n[2]) && exists(n[6]) && exists("backup-20260101T000007.tar.gz.sha256"),
	   "the two oldest went, with their sidecars");
	backup_list_free(&pruned);
	ok(prune_to(5, 0, &pruned, &e) == 0 && pruned.n == 0, "pruning again: nothing");
	backup_list_free(&pruned);
	/* The two newest are corrupt: keep 2 must still keep the newest good one. */
	corrupt(n[5]);
	corrupt(n[6]);
	ok(prune_to(2, 0, &pruned, &e) == 0 && pruned.n == 3, "prune to 2 (%s)", e.msg);
	ok(exists(n[4]) && exists(n[6]) && !exists(n[5]) && !exists(n[2]) && !exists(n[3]),
	   "the newest good backup holds one of the 2 slots, the newest the other");
	backup_list_free(&pruned);

	/* Temporaries: a live (locked) one stays, a dead one of sbx's goes at once, upstream's
	 * (no lock to tell) only when old. */
	p = xasprintf("%s/backup-20260101T000009.tar.gz.AAAAAA.tmp", dir);
	fd = open(p, O_RDWR | O_CREAT, 0600);
	flock(fd, LOCK_EX);
	free(p);
	sh("touch -d '1 hour ago' '%s/backup-20260101T000009.tar.gz.AAAAAA.tmp'", dir);
	sh("touch -d '1 hour ago' '%s/backup-20260101T000008.tar.gz.BBBBBB.tmp'", dir);
	sh("touch '%s/backup-20260101T000008.tar.gz.CCCCCC.tmp'", dir);
	sh("touch '%s/backup-20260101T000008.tar.gz.tmp'", dir);
	sh("touch '%s/backup-20260101T000001.tar.gz.sha256'", dir);
	ok(prune_to(2, 0, NULL, &e) == 0, "prune with temporaries around");
	ok(exists("backup-20260101T000009.tar.gz.AAAAAA.tmp"), "a locked temporary stays");
	ok(!exists("backup-20260101T000008.tar.gz.BBBBBB.tmp"), "an old unlocked one goes");
	ok(!exists("backup-20260101T000008.tar.gz.CCCCCC.tmp"), "a fresh unlocked one of sbx's goes");
	ok(exists("backup-20260101T000008.tar.gz.tmp"), "a fresh upstream one stays");
	ok(!exists("backup-20260101T000001.tar.gz.sha256"), "an orphan sidecar goes");
	close(fd);
	sh("rm -f '%s'/backup-*", dir);
}

/* Junk with a backup's name takes no slot; the budget prunes oldest first, never the newest
 * good one; two commits in one second never share a name. */
static void slots_and_budget(void)
{
	static const char *const n[] = {
		"backup-20260101T000001.tar.gz", "backup-20260101T000002.tar.gz",
		"backup-20260101T000003.tar.gz", "backup-20260101T000004.tar.gz",
	};
	struct backup_list pruned = {0}, l;
	struct backup_tmp t1, t2;
	struct archive_stats st;
	struct sbx_err e = {0};
	char hex[BACKUP_SHA256_HEX + 1], *p;
	struct stat sb;
	uint64_t one;
	int rc;

	for (size_t i = 0; i < 4; i++)
		make_backup(n[i]);
	for (int i = 0; i < 50; i++) {
		char name[64];
		snprintf(name, sizeof name, "backup-209901%02dT000000.tar.gz", i % 28 + 1);
		if (i >= 28)
			snprintf(name, sizeof name, "backup-209902%02dT000000.tar.gz", i % 28 + 1);
		put(name, "junk, not an archive\n");
	}
	ok(prune_to(2, 0, &pruned, &e) == 0 && pruned.n == 2, "prune to 2 beside 50 junk files (%s)",
	   e.msg);
	ok(exists(n[3]) && exists(n[2]) && !exists(n[1]) && !exists(n[0]),
	   "the two newest real backups keep their slots");
	ok(exists("backup-20990101T000000.tar.gz"), "junk is left alone");
	backup_list_free(&pruned);
	sh("rm -f '%s'/backup-2099*", dir);

	p = xasprintf("%s/%s", dir, n[3]);
	stat(p, &sb);
	free(p);
	one = (uint64_t)sb.st_size;
	ok(prune_to(5, one, &pruned, &e) == 0 && pruned.n == 1 && exists(n[3]) && !exists(n[2]),
	   "a budget of one backup keeps the newest only");
	backup_list_free(&pruned);
	make_backup(n[0]);
	make_backup(n[1]);
	corrupt(n[3]);
	ok(prune_to(5, one, &pruned, &e) == 0 && exists(n[1]) && !exists(n[0]),
	   "the newest good one is kept within the budget (%s)", e.msg);
	backup_list_free(&pruned);
	sh("rm -f '%s'/backup-*", dir);

	/* the budget stops a writer that outgrows it */
	backup_begin(&t1, dir, ARCHIVE_CODEC_GZIP, &e);
	t1.budget = 10;
	ok(archive_pack_dir(home, ARCHIVE_CODEC_GZIP, backup_tap, &t1, &st, &e) < 0 &&
	   strstr(e.msg, "backup budget"), "one backup beyond the budget fails (%s)", e.msg);
	backup_end(&t1);

	/* two writers, one name: the second commit takes a later one, the first stays */
	backup_begin(&t1, dir, ARCHIVE_CODEC_GZIP, &e);
	backup_begin(&t2, dir, ARCHIVE_CODEC_GZIP, &e);
	free(t2.name);
	t2.name = xstrdup(t1.name);
	archive_pack_dir(home, ARCHIVE_CODEC_GZIP, backup_tap, &t1, &st, &e);
	backup_tap("x", 1, &t2, &e);
	ok(backup_commit(&t1, hex, &e) == 0, "first commit");
	rc = backup_commit(&t2, hex, &e);
	ok(rc == 0 && strcmp(t1.name, t2.name) < 0,
	   "second commit of the same name takes a later one: %s", t2.name);
	ok(backup_list_dir(dir, &l, &e) == 0 && l.n == 2, "both are there");
	backup_list_free(&l);
	ok(verify(t1.name, ARCHIVE_MAX_EXPANDED, -1, &st, &e) == 0 && last_how == BACKUP_BY_SIDECAR,
	   "the first is untouched (%s)", e.msg);
	backup_end(&t1);
	backup_end(&t2);
	sh("rm -f '%s'/backup-*", dir);
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
	slots_and_budget();
	sh("rm -rf '%s'", base);
	return done_testing();
}
