/* backup.c — backup files on the host: names, sidecars, atomic commit, pruning. */
#include "backup.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "paths.h"
#include "xalloc.h"

#define LOCK_NAME ".lock"
#define SIDECAR_EXT ".sha256"
/* A sidecar is one line: 64 hex digits, two spaces, a backup name. */
#define SIDECAR_MAX 512
/* Reads of an archive checked by its own checksums: one buffer of compressed, one of plain. */
#define STREAM_CHUNK 65536
/* How many later names a commit tries when the one it chose was taken meanwhile. */
#define NAME_TRIES 1000

/* Takes the directory's lock (exclusive) that orders commits and deletions. */
static int lock_dir(const char *dir, struct sbx_err *e)
{
	char *p = xasprintf("%s/%s", dir, LOCK_NAME);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		err_sys(e, errno, "cannot open %s", p);
	else if (flock(fd, LOCK_EX) < 0) {
		err_sys(e, errno, "cannot lock %s", p);
		close(fd);
		fd = -1;
	}
	free(p);
	return fd;
}

static void hexify(const unsigned char *md, char hex[BACKUP_SHA256_HEX + 1])
{
	for (int i = 0; i < BACKUP_SHA256_HEX / 2; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
}

static void sha_final(void *ctx, char hex[BACKUP_SHA256_HEX + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;

	EVP_DigestFinal_ex(ctx, md, &len);
	hexify(md, hex);
}

static void *sha_new(void)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (c == NULL || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1)
		abort();
	return c;
}

static int sweep(const char *name, void *arg);

/* A new backup's name for time ts: upstream's stamp (Go layout 20060102T150405, local time)
 * and the nanoseconds (see BACKUP_SUBSEC_LEN). */
static char *name_for(const struct timespec *ts, enum archive_codec codec)
{
	char stamp[32];
	struct tm tm;

	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", localtime_r(&ts->tv_sec, &tm));
	return xasprintf("backup-%s_%09ld%s", stamp, ts->tv_nsec, archive_codec_ext(codec));
}

int backup_begin(struct backup_tmp *t, const char *dir, enum archive_codec codec,
		 struct sbx_err *e)
{
	struct timespec now;
	int lock = -1, rc = -1;

	memset(t, 0, sizeof *t);
	t->dir_fd = t->fd = t->cancel_fd = -1;
	clock_gettime(CLOCK_REALTIME, &now);
	t->codec = codec;
	t->dir = xstrdup(dir);
	t->name = name_for(&now, codec);
	t->tmp = xasprintf("%s/%s.XXXXXX.tmp", dir, t->name);
	if ((t->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		err_sys(e, errno, "cannot open %s", dir);
		goto out;
	}
	/* Created and locked under the directory lock, so a prune never takes it for dead. */
	if ((lock = lock_dir(dir, e)) < 0)
		goto out;
	backup_each_name(dir, sweep, (void *)dir, NULL);	/* a killed snapshot's temporary */
	if ((t->fd = mkostemps(t->tmp, 4, O_CLOEXEC)) < 0) {
		err_sys(e, errno, "cannot create %s", t->tmp);
		goto out;
	}
	if (flock(t->fd, LOCK_EX) < 0) {
		err_sys(e, errno, "cannot lock %s", t->tmp);
		goto out;
	}
	t->sha = sha_new();
	rc = 0;
out:
	if (lock >= 0)
		close(lock);
	return rc;
}

int backup_tap(const void *p, size_t n, void *arg, struct sbx_err *e)
{
	struct backup_tmp *t = arg;
	const char *c = p;
	size_t off = 0;

	if (t->cancel_fd >= 0) {
		struct pollfd pf = {t->cancel_fd, POLLIN, 0};
		if (poll(&pf, 1, 0) > 0)
			return err_set(e, SBX_ECANCELED, "interrupted");
	}
	if (t->budget && t->bytes + n > t->budget)
		return err_set(e, SBX_EIO, "this backup alone is larger than the session's backup "
			       "budget of %llu bytes (raise it with -backup-budget or "
			       "SANDBOX_BACKUP_BUDGET, or make the home smaller)",
			       (unsigned long long)t->budget);
	while (off < n) {
		ssize_t w = write(t->fd, c + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return err_sys(e, errno, "cannot write %s", t->tmp);
		off += (size_t)w;
	}
	EVP_DigestUpdate(t->sha, p, n);
	t->bytes += n;
	if (t->progress)
		t->progress(t->bytes, t->progress_arg);
	return 0;
}

/* Writes the sidecar's temporary file; returns its path or NULL. */
static char *write_sidecar(const struct backup_tmp *t, const char *hex, struct sbx_err *e)
{
	char *p = xasprintf("%s/%s%s.XXXXXX.tmp", t->dir, t->name, SIDECAR_EXT);
	char *line = xasprintf("%s  %s\n", hex, t->name);
	size_t len = strlen(line);
	int fd = mkostemps(p, 4, O_CLOEXEC);

	if (fd < 0) {
		err_sys(e, errno, "cannot create %s", p);
		goto fail;
	}
	if (write(fd, line, len) != (ssize_t)len || fsync(fd) < 0) {
		err_sys(e, errno, "cannot write %s", p);
		close(fd);
		unlink(p);
		goto fail;
	}
	close(fd);
	free(line);
	return p;
fail:
	free(line);
	free(p);
	return NULL;
}

/* Renames the temporary to a name nobody has: the one chosen at begin, or (taken meanwhile by
 * a snapshot in the same nanosecond, or a file put there) a later one. An existing archive is
 * never replaced, so a path and checksum once printed keep naming what they named. Under the
 * directory lock. */
static int place(struct backup_tmp *t, struct sbx_err *e)
{
	struct timespec ts;
	struct tm tm;
	char *p = NULL;

	for (int i = 0; i < NAME_TRIES; i++) {
		free(p);
		p = xasprintf("%s/%s", t->dir, t->name);
		if (renameat2(AT_FDCWD, t->tmp, AT_FDCWD, p, RENAME_NOREPLACE) == 0) {
			free(p);
			return 0;
		}
		if (errno != EEXIST)
			break;
		/* one nanosecond later: the stamp's digits give the time back */
		memset(&tm, 0, sizeof tm);
		tm.tm_isdst = -1;
		if (sscanf(t->name, "backup-%4d%2d%2dT%2d%2d%2d_%9ld", &tm.tm_year, &tm.tm_mon,
			   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ts.tv_nsec) != 7)
			break;
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		ts.tv_sec = mktime(&tm);
		if (++ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec = 0;
		free(t->name);
		t->name = name_for(&ts, t->codec);
	}
	err_sys(e, errno == EEXIST ? EEXIST : errno, "cannot rename %s to %s", t->tmp, p);
	free(p);
	return -1;
}

int backup_commit(struct backup_tmp *t, char hex[BACKUP_SHA256_HEX + 1], struct sbx_err *e)
{
	char *side = NULL, *sidetmp = NULL, *chosen = xstrdup(t->name);
	int lock = -1, rc = -1;

	sha_final(t->sha, hex);
	if (fsync(t->fd) < 0) {
		err_sys(e, errno, "cannot sync %s", t->tmp);
		goto out;
	}
	/* Before the archive takes its name, so a full disk fails the commit, not the sidecar. */
	if ((sidetmp = write_sidecar(t, hex, e)) == NULL)
		goto out;
	if ((lock = lock_dir(t->dir, e)) < 0)
		goto out;
	if (place(t, e) < 0)
		goto out;
	free(t->tmp);
	t->tmp = NULL;
	if (strcmp(chosen, t->name) != 0) {	/* the sidecar names the backup: write it again */
		unlink(sidetmp);
		free(sidetmp);
		sidetmp = write_sidecar(t, hex, e);
	}
	/* The archive first, then its sidecar: a crash in between (or no room for the second
	 * sidecar) leaves a backup without one, which is checked by its own checksums; never
	 * one with a wrong sidecar. */
	side = xasprintf("%s/%s%s", t->dir, t->name, SIDECAR_EXT);
	if (sidetmp && rename(sidetmp, side) < 0) {
		err_sys(e, errno, "cannot rename %s", sidetmp);
		goto out;
	}
	if (fsync(t->dir_fd) < 0) {
		err_sys(e, errno, "cannot sync %s", t->dir);
		goto out;
	}
	rc = 0;
out:
	if (sidetmp) {
		if (rc < 0)
			unlink(sidetmp);
		free(sidetmp);
	}
	if (lock >= 0)
		close(lock);
	free(chosen);
	free(side);
	return rc;
}

void backup_end(struct backup_tmp *t)
{
	if (t->tmp && t->fd >= 0)
		unlink(t->tmp);
	if (t->fd >= 0)
		close(t->fd);
	if (t->dir_fd >= 0)
		close(t->dir_fd);
	if (t->sha)
		EVP_MD_CTX_free(t->sha);
	free(t->dir);
	free(t->name);
	free(t->tmp);
	memset(t, 0, sizeof *t);
	t->fd = t->dir_fd = t->cancel_fd = -1;
}

int backup_read_sidecar(const char *dir, const char *name, char hex[BACKUP_SHA256_HEX + 1],
			struct sbx_err *e)
{
	char *p = xasprintf("%s/%s%s", dir, name, SIDECAR_EXT), buf[SIDECAR_MAX];
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = -1, i;
	ssize_t n;

	if (fd < 0) {
		rc = errno == ENOENT ? 0 : err_sys(e, errno, "cannot open %s", p);
		goto out;
	}
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0) {
		err_sys(e, errno, "cannot read %s", p);
		goto out;
	}
	buf[n] = '\0';
	for (i = 0; i < BACKUP_SHA256_HEX; i++) {
		if (!isxdigit((unsigned char)buf[i]))
			break;
		hex[i] = (char)tolower((unsigned char)buf[i]);
	}
	if (i < BACKUP_SHA256_HEX || (buf[i] != ' ' && buf[i] != '\n' && buf[i] != '\0')) {
		err_set(e, SBX_EIO, "%s is not a SHA-256 checksum line", p);
		goto out;
	}
	hex[BACKUP_SHA256_HEX] = '\0';
	rc = 1;
out:
	free(p);
	return rc;
}

static int sha_tap(const void *p, size_t n, void *arg, struct sbx_err *e)
{
	(void)e;
	EVP_DigestUpdate(arg, p, n);
	return 0;
}

int backup_open(const char *dir, const char *name, struct sbx_err *e)
{
	char *p = xasprintf("%s/%s", dir, name);
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0) {
		err_sys(e, errno, "cannot open %s", p);
		e->code = SBX_EIO;	/* a missing file is not a missing sandbox */
	}
	free(p);
	return fd;
}

/* Inflates every gzip member of the file on fd, which checks each one's CRC-32 and length
 * (libarchive stops at the tar end and reads no trailer). Bytes after a complete member
 * that start no new one are ignored, as gzip -t does. */
static int gzip_through(int fd, int cancel_fd, struct sbx_err *e)
{
	unsigned char *in = xmalloc(STREAM_CHUNK), *out = xmalloc(STREAM_CHUNK);
	z_stream z;
	off_t off = 0;
	bool ended = false, any = false;
	int zr, rc = -1;

	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, 15 + 16) != Z_OK) {
		err_set(e, SBX_EIO, "cannot start zlib");
		goto done;
	}
	for (;;) {
		if (z.avail_in == 0) {
			struct pollfd pf = {cancel_fd, POLLIN, 0};
			ssize_t n = pread(fd, in, STREAM_CHUNK, off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				err_sys(e, errno, "cannot read the archive");
				goto out;
			}
			if (n == 0)
				break;
			if (cancel_fd >= 0 && poll(&pf, 1, 0) > 0) {
				err_set(e, SBX_ECANCELED, "interrupted");
				goto out;
			}
			off += n;
			z.next_in = in;
			z.avail_in = (uInt)n;
		}
		z.next_out = out;
		z.avail_out = STREAM_CHUNK;
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr == Z_STREAM_END) {
			ended = any = true;
			inflateReset(&z);
			continue;
		}
		if (zr == Z_DATA_ERROR && ended)
			break;	/* trailing bytes that are no gzip member */
		if (zr != Z_OK && (zr != Z_BUF_ERROR || z.avail_in > 0)) {
			err_set(e, SBX_EIO, "the gzip stream is corrupt (%s)", z.msg ? z.msg : "bad data");
			goto out;
		}
		if (zr == Z_OK)
			ended = false;	/* inside a member: the end of the file would cut it */
	}
	if (!any || !ended) {
		err_set(e, SBX_EIO, "the gzip stream is cut short");
		goto out;
	}
	rc = 0;
out:
	inflateEnd(&z);
done:
	free(in);
	free(out);
	return rc;
}

int backup_check_stream(int fd, int cancel_fd, struct sbx_err *e)
{
	unsigned char magic[2] = {0};

	if (pread(fd, magic, sizeof magic, 0) != (ssize_t)sizeof magic)
		return err_set(e, SBX_EIO, "not an archive (too short)");
	if (magic[0] == 0x1f && magic[1] == 0x8b)
		return gzip_through(fd, cancel_fd, e);
	/* zstd (and plain tar): the structure check read every frame up to the tar end;
	 * libarchive's zstd writer adds no content checksum to go further by. */
	return 0;
}

int backup_verify(int fd, const char *dir, const char *name, uint64_t max_bytes, int cancel_fd,
		  struct archive_stats *st, enum backup_vouch *how, struct sbx_err *e)
{
	char want[BACKUP_SHA256_HEX + 1], got[BACKUP_SHA256_HEX + 1];
	void *sha = sha_new();
	struct sbx_err se;
	int has, rc = -1;

	/* An unreadable or garbled sidecar is a wrong one: the archive decides. */
	has = backup_read_sidecar(dir, name, want, &se);
	if (archive_check_fd(fd, cancel_fd, max_bytes, ARCHIVE_LINKS_SKIP, sha_tap, sha, st, e) < 0)
		goto out;
	sha_final(sha, got);
	if (has == 1 && strcmp(want, got) == 0) {
		if (how)
			*how = BACKUP_BY_SIDECAR;
		rc = 0;
		goto out;
	}
	/* No sidecar (upstream's backups), or one that disagrees: a sidecar is a second file
	 * that can break alone, so the archive is judged by its own checksums, read to the end. */
	if (backup_check_stream(fd, cancel_fd, e) < 0) {
		if (has == 1)
			err_prefix(e, "checksum mismatch (sidecar %s, file %s), and", want, got);
		goto out;
	}
	if (how)
		*how = has == 0 ? BACKUP_BY_ITSELF : BACKUP_SIDECAR_WRONG;
	rc = 0;
out:
	EVP_MD_CTX_free(sha);
	return rc;
}

/* Whether name is "<a backup's name>.XXXXXX.tmp", the temporary of an sbx writer, which holds
 * its lock from creation (under the directory lock) to its end. */
static bool sbx_tmp(const char *name)
{
	size_t n = strlen(name);
	char *base;
	bool r;

	if (n < 12 || strcmp(name + n - 4, ".tmp") != 0 || name[n - 11] != '.')
		return false;
	base = xstrndup(name, n - 11);
	r = backup_name_valid(base, NULL);
	free(base);
	return r;
}

/* Removes the ".tmp" files of dead writers and sidecars whose backup is gone. Called under
 * the directory lock. */
static int sweep(const char *name, void *arg)
{
	const char *dir = arg;
	size_t n = strlen(name);
	char *p;

	if (strncmp(name, "backup-", 7) != 0)
		return 0;
	p = xasprintf("%s/%s", dir, name);
	if (n > 4 && strcmp(name + n - 4, ".tmp") == 0) {
		int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		struct stat sb;
		/* A live sbx writer holds its lock: one without is gone. Others (upstream's
		 * "<final>.tmp", a sidecar's temporary) hold none and get the benefit of age. */
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &sb) == 0 &&
		    (sbx_tmp(name) || time(NULL) - sb.st_mtime > BACKUP_STALE_TMP_SECONDS))
			unlink(p);
		if (fd >= 0)
			close(fd);
	} else if (n > strlen(SIDECAR_EXT) && strcmp(name + n - strlen(SIDECAR_EXT), SIDECAR_EXT) == 0) {
		char *b = xstrndup(p, strlen(p) - strlen(SIDECAR_EXT));
		if (access(b, F_OK) < 0 && errno == ENOENT)
			unlink(p);
		free(b);
	}
	free(p);
	return 0;
}

/* Whether backup i of l is good: known so, or verified whole. */
static bool verifies(const char *dir, const char *name)
{
	struct archive_stats st = {0};
	struct sbx_err ve;
	int fd = backup_open(dir, name, &ve);
	bool good;

	if (fd < 0)
		return false;
	good = backup_verify(fd, dir, name, ARCHIVE_MAX_EXPANDED, -1, &st, NULL, &ve) == 0;
	archive_stats_free(&st);
	close(fd);
	return good;
}

/* Whether name takes a kept slot: sbx's backup (a well-formed sidecar, written only after
 * the archive was checked whole), or an archive that verifies (upstream's have no sidecar).
 * Junk with a backup's name is neither. */
static bool counts(const char *dir, const char *name)
{
	char hex[BACKUP_SHA256_HEX + 1];
	struct sbx_err se;

	return backup_read_sidecar(dir, name, hex, &se) == 1 || verifies(dir, name);
}

static uint64_t size_of(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct stat sb;
	uint64_t n = lstat(p, &sb) == 0 ? (uint64_t)sb.st_size : 0;

	free(p);
	return n;
}

/* Deletes backup name (and its sidecar) from dir; adds the path to pruned. */
static int drop(const char *dir, const char *name, struct backup_list *pruned, struct sbx_err *e)
{
	char *p = xasprintf("%s/%s", dir, name), *s = xasprintf("%s%s", p, SIDECAR_EXT);
	int rc = 0;

	if (unlink(p) < 0 && errno != ENOENT) {
		rc = err_sys(e, errno, "cannot remove %s", p);
	} else {
		unlink(s);
		if (pruned)
			backup_list_add(pruned, p, NULL);
	}
	free(p);
	free(s);
	return rc;
}

/* Long: the retention rule in one place. Newest first, each backup that counts takes a slot
 * while there are slots and budget; once either runs out everything older goes, except the
 * newest good backup, whose place and bytes are reserved first. */
int backup_prune(const char *dir, const struct backup_prune_opts *o, struct backup_list *pruned,
		 struct sbx_err *e)
{
	struct backup_list l;
	size_t i, good = (size_t)-1;
	struct backup_list gone = {0};
	uint64_t used = 0;
	int kept = 0, lock = -1, rc = -1;
	bool full = false;

	if (o->keep < 1)
		return err_set(e, SBX_EINVAL, "keep must be at least 1");
	if (backup_list_dir(dir, &l, e) < 0)
		return -1;
	/* The newest good backup, found before taking the lock: verifying can take a while and
	 * must not hold up a snapshot's commit. */
	for (i = l.n; i-- > 0;) {
		if ((o->known_good && strcmp(l.name[i], o->known_good) == 0) ||
		    verifies(dir, l.name[i])) {
			good = i;
			used = size_of(dir, l.name[i]);
			kept = 1;
			break;
		}
	}
	if ((lock = lock_dir(dir, e)) < 0)
		goto out;
	for (i = l.n; i-- > 0;) {
		uint64_t size;
		if (i == good)
			continue;
		if (!full && !counts(dir, l.name[i]))
			continue;	/* not a backup of ours: no slot, and left alone */
		size = size_of(dir, l.name[i]);
		if (!full && kept < o->keep && (o->budget == 0 || used + size <= o->budget)) {
			kept++;
			used += size;
			continue;
		}
		full = true;
		if (drop(dir, l.name[i], &gone, e) < 0)
			goto out;
	}
	backup_each_name(dir, sweep, (void *)dir, NULL);
	rc = 0;
out:
	if (lock >= 0)
		close(lock);
	for (i = gone.n; pruned && i-- > 0;)	/* oldest first, as they are listed */
		backup_list_add(pruned, gone.name[i], NULL);
	backup_list_free(&gone);
	backup_list_free(&l);
	return rc;
}
