/* fsutil.c — remove trees, write files atomically, read small files. libc only. */
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)ftw;
	if (type == FTW_DP || type == FTW_D || type == FTW_DNR) {
		if (rmdir(p) < 0 && errno != ENOENT)
			return -1;
	} else if (unlink(p) < 0 && errno != ENOENT) {
		return -1;
	}
	return 0;
}

/* A sandbox may leave directories without write or search permission; give them back to the
 * owner first, without following links. */
static int fix_perms(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D || type == FTW_DNR)
		chmod(p, (st->st_mode & 07777) | S_IRWXU);
	return 0;
}

int fs_remove_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
	if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0)
		return 0;
	nftw(path, fix_perms, 32, FTW_PHYS | FTW_MOUNT);
	if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0)
		return 0;
	return lstat(path, &st) < 0 && errno == ENOENT ? 0 : -1;
}

int fs_clear_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char p[4096];
	int rc = 0, saved = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(p, sizeof p, "%s/%s", path, de->d_name) >= (int)sizeof p) {
			rc = -1, saved = ENAMETOOLONG;
			continue;
		}
		if (fs_remove_tree(p) < 0)
			rc = -1, saved = errno;
	}
	closedir(d);
	if (rc < 0)
		errno = saved;
	return rc;
}

int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	char tmp[4096], dir[4096];
	const char *p = data;
	int fd, dfd, saved;

	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -1;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		p += n;
		len -= (size_t)n;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		fd = -1;
		goto fail;
	}
	snprintf(dir, sizeof dir, "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	errno = saved;
	return -1;
}

char *fs_read_small(const char *path, size_t max, size_t *lenp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 256;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	if (buf == NULL)
		goto fail;
	for (;;) {
		ssize_t n;
		if (len + 1 >= cap) {
			char *nb;
			if (cap > max + 1) {
				errno = EFBIG;
				goto fail;
			}
			nb = realloc(buf, cap * 2);
			if (nb == NULL)
				goto fail;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			errno = EFBIG;
			goto fail;
		}
	}
	close(fd);
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
fail:
	{
		int saved = errno;
		free(buf);
		close(fd);
		errno = saved;
	}
	return NULL;
}
