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

#include "paths.h"
#include "xalloc.h"

#define LOCK_NAME ".lock"
#define SIDECAR_EXT ".sha256"
/* A sidecar is one line: 64 hex digits, two spaces, a backup name. */
#define SIDECAR_MAX 512

void backup_list_add(struct backup_list *l, const char *name, const char *why)
{
	l->name = xrealloc(l->name, (l->n + 1) * sizeof *l->name);
	l->why = xrealloc(l->why, (l->n + 1) * sizeof *l->why);
	l->name[l->n] = xstrdup(name);
	l->why[l->n] = why ? xstrdup(why) : NULL;
	l->n++;
}

void backup_list_free(struct backup_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->name[i]);
		free(l->why[i]);
	}
	free(l->name);
	free(l->why);
	memset(l, 0, sizeof *l);
}

char *backup_dir(const char *session, struct sbx_err *e)
{
	return paths_session_dir(session, "fs", e);
}

int backup_restoring_mark(const char *dir, const char *backup, struct sbx_err *e)
{
	char *p = xasprintf("%s/%s", dir, BACKUP_RESTORING);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600), rc = -1;
	size_t n = strlen(backup);

	if (fd < 0) {
		err_sys(e, errno, "cannot write %s", p);
		goto out;
	}
	if (write(fd, backup, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
		err_sys(e, errno, "cannot write %s", p);
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(p);
	return rc;
}

int backup_restoring_clear(const char *dir, struct sbx_err *e)
{
	char *p = xasprintf("%s/%s", dir, BACKUP_RESTORING);
	int rc = 0;

	if (unlink(p) < 0 && errno != ENOENT)
		rc = err_sys(e, errno, "cannot remove %s", p);
	free(p);
	return rc;
}

char *backup_restoring(const char *session)
{
	char *dir = backup_dir(session, NULL), *p, buf[4096];
	ssize_t n = -1;
	int fd;

	if (dir == NULL)
		return NULL;
	p = xasprintf("%s/%s", dir, BACKUP_RESTORING);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) >= 0) {
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
	}
	free(p);
	free(dir);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	for (char *c = buf; *c; c++)
		if (!isprint((unsigned char)*c))
			*c = '?';	/* it ends up in a message for people */
	return xstrdup(buf[0] ? buf : "(unknown backup)");
}

bool backup_name_valid(const char *name, enum archive_codec *codec)
{
	const char *p = name + 7;
	int i;

	if (strncmp(name, "backup-", 7) != 0)
		return false;
	for (i = 0; i < BACKUP_STAMP_LEN; i++) {
		if (i == 8 ? p[i] != 'T' : !isdigit((unsigned char)p[i]))
			return false;
	}
	p += BACKUP_STAMP_LEN;
	if (strcmp(p, ".tar.gz") == 0) {
		if (codec)
			*codec = ARCHIVE_CODEC_GZIP;
	} else if (strcmp(p, ".tar.zst") == 0) {
		if (codec)
			*codec = ARCHIVE_CODEC_ZSTD;
	} else {
		return false;
	}
	return true;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Calls fn for every directory entry name; stops at fn's non-zero. */
static int each_name(const char *dir, int (*fn)(const char *, void *), void *arg,
		     struct sbx_err *e)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (d == NULL)
		return err_sys(e, errno, "cannot read %s", dir);
	while ((de = readdir(d)) != NULL) {
		if ((rc = fn(de->d_name, arg)) != 0)
			break;
	}
	closedir(d);
	return rc < 0 ? -1 : 0;
}

static int add_valid(const char *name, void *arg)
{
	if (backup_name_valid(name, NULL))
		backup_list_add(arg, name, NULL);
	return 0;
}

int backup_list_dir(const char *dir, struct backup_list *out, struct sbx_err *e)
{
	memset(out, 0, sizeof *out);
	if (each_name(dir, add_valid, out, e) < 0)
		return -1;
	/* Same-width time stamps: name order is time order (upstream sorts the same way). */
	if (out->n > 1)
		qsort(out->name, out->n, sizeof *out->name, by_name);
	return 0;
}

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

int backup_begin(struct backup_tmp *t, const char *dir, enum archive_codec codec,
		 struct sbx_err *e)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int lock = -1, rc = -1;

	memset(t, 0, sizeof *t);
	t->dir_fd = t->fd = t->cancel_fd = -1;
	/* Go layout 20060102T150405 in local time, as upstream names them. */
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", localtime_r(&now, &tm));
	t->dir = xstrdup(dir);
	t->name = xasprintf("backup-%s%s", stamp, archive_codec_ext(codec));
	t->tmp = xasprintf("%s/%s.XXXXXX.tmp", dir, t->name);
	if ((t->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		err_sys(e, errno, "cannot open %s", dir);
		goto out;
	}
	/* Created and locked under the directory lock, so a prune never takes it for dead. */
	if ((lock = lock_dir(dir, e)) < 0)
		goto out;
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

int backup_commit(struct backup_tmp *t, char hex[BACKUP_SHA256_HEX + 1], struct sbx_err *e)
{
	char *final = xasprintf("%s/%s", t->dir, t->name);
	char *side = xasprintf("%s%s", final, SIDECAR_EXT), *sidetmp = NULL;
	int lock = -1, rc = -1;

	sha_final(t->sha, hex);
	if (fsync(t->fd) < 0) {
		err_sys(e, errno, "cannot sync %s", t->tmp);
		goto out;
	}
	if ((sidetmp = write_sidecar(t, hex, e)) == NULL)
		goto out;
	if ((lock = lock_dir(t->dir, e)) < 0)
		goto out;
	/* A same-second backup is replaced (as upstream does); its old sidecar goes first so a
	 * crash in between leaves a backup without sidecar, never one with a wrong sidecar. */
	if (unlink(side) < 0 && errno != ENOENT) {
		err_sys(e, errno, "cannot remove %s", side);
		goto out;
	}
	if (rename(t->tmp, final) < 0) {
		err_sys(e, errno, "cannot rename %s", t->tmp);
		goto out;
	}
	free(t->tmp);
	t->tmp = NULL;
	if (rename(sidetmp, side) < 0) {
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
	free(final);
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

int backup_verify(int fd, const char *dir, const char *name, uint64_t max_bytes, int cancel_fd,
		  struct archive_stats *st, struct sbx_err *e)
{
	char want[BACKUP_SHA256_HEX + 1], got[BACKUP_SHA256_HEX + 1];
	void *sha = sha_new();
	int has, rc = -1;

	if ((has = backup_read_sidecar(dir, name, want, e)) < 0)
		goto out;
	if (archive_check_fd(fd, cancel_fd, max_bytes, ARCHIVE_LINKS_SKIP, sha_tap, sha, st, e) < 0)
		goto out;
	sha_final(sha, got);
	if (has && strcmp(want, got) != 0) {
		err_set(e, SBX_EIO, "checksum mismatch (sidecar %s, file %s)", want, got);
		goto out;
	}
	rc = 0;
out:
	EVP_MD_CTX_free(sha);
	return rc;
}

/* Removes the ".tmp" files of dead writers and sidecars whose backup is gone. */
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
		/* A live writer holds its lock; one without lock gets the benefit of its age. */
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &sb) == 0 &&
		    time(NULL) - sb.st_mtime > BACKUP_STALE_TMP_SECONDS)
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

int backup_prune(const char *dir, int keep, const char *known_good, struct backup_list *pruned,
		 struct sbx_err *e)
{
	struct backup_list l;
	struct sbx_err ve;
	struct archive_stats st;
	size_t i, good = (size_t)-1;
	int lock = -1, rc = -1;

	if (keep < 1)
		return err_set(e, SBX_EINVAL, "keep must be at least 1");
	if (backup_list_dir(dir, &l, e) < 0)
		return -1;
	/* Find the newest good backup before taking the lock: verifying can take a while and
	 * must not hold up a snapshot's commit. Only the ones about to go need it. */
	if (l.n > (size_t)keep) {
		for (i = l.n; i-- > 0;) {
			int fd;
			if (known_good && strcmp(l.name[i], known_good) == 0) {
				good = i;
				break;
			}
			if ((fd = backup_open(dir, l.name[i], &ve)) < 0)
				continue;
			if (backup_verify(fd, dir, l.name[i], ARCHIVE_MAX_EXPANDED, -1, &st, &ve) == 0)
				good = i;
			close(fd);
			if (good == i)
				break;
		}
	}
	if ((lock = lock_dir(dir, e)) < 0)
		goto out;
	for (i = 0; l.n > (size_t)keep && i < l.n - (size_t)keep; i++) {
		char *p, *s;
		if (i == good)
			continue;
		p = xasprintf("%s/%s", dir, l.name[i]);
		s = xasprintf("%s%s", p, SIDECAR_EXT);
		if (unlink(p) < 0 && errno != ENOENT) {
			err_sys(e, errno, "cannot remove %s", p);
			free(p);
			free(s);
			goto out;
		}
		unlink(s);
		if (pruned)
			backup_list_add(pruned, p, NULL);
		free(p);
		free(s);
	}
	each_name(dir, sweep, (void *)dir, NULL);
	rc = 0;
out:
	if (lock >= 0)
		close(lock);
	backup_list_free(&l);
	return rc;
}
