/* backup_mark.c — what a session's backups are called and which marks its directory holds
 * (a restore under way, a restore owed), apart from the archives themselves (backup.c), so
 * that the programs which only look at the marks (sbx-exec, through the backend's create)
 * load no libarchive: its libraries (libxml2, ICU, libstdc++) cost every command more time
 * than the rest of sbx-exec's start. */
#include "backup.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "name.h"
#include "paths.h"
#include "xalloc.h"

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

/* The session's backup directory if it exists (never made here), newly allocated, or NULL. */
static char *existing_dir(const char *session)
{
	char *root = paths_session_root(NULL), *d;
	struct stat sb;

	if (root == NULL)
		return NULL;
	d = xasprintf("%s/%s/fs", root, session);
	free(root);
	if (lstat(d, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		free(d);
		return NULL;
	}
	return d;
}

static int has_backup(const char *name, void *arg)
{
	(void)arg;
	return backup_name_valid(name, NULL) ? 1 : 0;
}

/* Writes text to a temporary beside path, synced, and links it to path unless path exists.
 * 1 written, 0 path was there, -1 with errno. */
static int write_new(const char *path, const char *text)
{
	char *tmp = xasprintf("%s.XXXXXX", path), *d = xstrdup(path);
	size_t len = strlen(text);
	int fd = mkostemp(tmp, O_CLOEXEC), rc = -1, dfd;

	if (fd < 0)
		goto out;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0) {
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	rc = link(tmp, path) == 0 ? 1 : errno == EEXIST ? 0 : -1;
	unlink(tmp);
	*strrchr(d, '/') = '\0';
	if (rc == 1 && (dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(dfd);
		close(dfd);
	}
out:
	free(tmp);
	free(d);
	return rc;
}

int backup_owed_begin(const char *session, bool *wrote, struct sbx_err *e)
{
	char *dir = existing_dir(session), *p = NULL, *line = NULL;
	struct timespec now;
	int rc = 0, w;

	*wrote = false;
	/* backup_each_name stops at the first backup (1); a directory it cannot read counts as having
	 * some: owing a restore wrongly costs a restore, not a backup. */
	if (dir == NULL || backup_each_name(dir, has_backup, NULL, NULL) == 0)
		goto out;
	clock_gettime(CLOCK_REALTIME, &now);
	p = xasprintf("%s/%s", dir, BACKUP_OWED);
	line = xasprintf("sandbox %s made new at %lld\n", session, (long long)now.tv_sec);
	if ((w = write_new(p, line)) < 0)
		rc = err_sys(e, errno, "cannot write %s", p);
	else
		*wrote = w == 1;
out:
	free(line);
	free(p);
	free(dir);
	return rc;
}

void backup_owed_settle(const char *session, bool wrote, bool reused)
{
	char *dir;

	if (!wrote || !reused || (dir = existing_dir(session)) == NULL)
		return;
	backup_owed_clear(dir, NULL);
	free(dir);
}

bool backup_owed(const char *session)
{
	char *dir = existing_dir(session), *p;
	struct stat sb;
	bool owed;

	if (dir == NULL)
		return false;
	p = xasprintf("%s/%s", dir, BACKUP_OWED);
	owed = lstat(p, &sb) == 0;
	free(p);
	free(dir);
	return owed;
}

int backup_owed_clear(const char *dir, struct sbx_err *e)
{
	char *p = xasprintf("%s/%s", dir, BACKUP_OWED);
	int rc = 0, dfd;

	if (unlink(p) < 0 && errno != ENOENT) {
		rc = err_sys(e, errno, "cannot remove %s", p);
	} else if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(dfd);	/* a restore said done must not come back owed after a crash */
		close(dfd);
	}
	free(p);
	return rc;
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
	if (*p == '_') {
		for (i = 1; i < BACKUP_SUBSEC_LEN; i++)
			if (!isdigit((unsigned char)p[i]))
				return false;
		p += BACKUP_SUBSEC_LEN;
	}
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

int backup_each_name(const char *dir, int (*fn)(const char *, void *), void *arg,
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
	return rc;
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
	if (backup_each_name(dir, add_valid, out, e) < 0)
		return -1;
	/* Same-width time stamps: name order is time order (upstream sorts the same way). */
	if (out->n > 1)
		qsort(out->name, out->n, sizeof *out->name, by_name);
	return 0;
}

int backup_sessions(struct backup_list *out, struct sbx_err *e)
{
	char *root = paths_session_root(e), *fs;
	struct dirent *de;
	DIR *d;

	if (root == NULL)
		return -1;
	if ((d = opendir(root)) == NULL) {
		free(root);
		return 0;	/* no sessions yet */
	}
	while ((de = readdir(d)) != NULL) {
		if (name_check(de->d_name, NULL) < 0)
			continue;
		fs = xasprintf("%s/%s/fs", root, de->d_name);
		if (access(fs, F_OK) == 0)
			backup_list_add(out, de->d_name, NULL);
		free(fs);
	}
	closedir(d);
	free(root);
	return 0;
}
