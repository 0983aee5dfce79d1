/* fsutil.c — remove trees whatever they hold, write files atomically, read small files. libc
 * only. */
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

/* ---- fs_open_beneath: one open that cannot leave its directory ---- */

/* Calls of openat2 that a concurrent rename may make fail with EAGAIN before we give up. */
#define OPEN_BENEATH_TRIES 16

int fs_open_beneath(int dirfd, const char *path, int flags, unsigned mode)
{
	/* The kernel resolves path below dirfd and fails on any symlink (ELOOP) or "..":
	 * nothing the sandbox swaps in can make it land elsewhere. */
	struct open_how how = {.flags = (unsigned)(flags | O_NOFOLLOW | O_CLOEXEC),
			       .mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};
	const char *p = path;
	int cur = dirfd, next, tries = 0;
	long fd;

	/* EAGAIN: a rename elsewhere raced the kernel's own check; it asks to be called again. */
	while ((fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how)) < 0 && errno == EAGAIN &&
	       ++tries < OPEN_BENEATH_TRIES)
		;

	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return (int)fd;
	/* No openat2 (a kernel before 5.6, or a filter refusing it): the same one component
	 * at a time, each opened without following and never "..". */
	for (;;) {
		const char *q = strchr(p, '/');
		size_t n = q ? (size_t)(q - p) : strlen(p);
		char part[256];

		if (n >= sizeof part || (n == 2 && p[0] == '.' && p[1] == '.')) {
			if (cur != dirfd)
				close(cur);
			errno = n >= sizeof part ? ENAMETOOLONG : EXDEV;
			return -1;
		}
		memcpy(part, p, n);
		part[n] = '\0';
		while (q && q[1] == '/')
			q++;
		if (q == NULL || q[1] == '\0')
			next = openat(cur, n ? part : ".", flags | O_NOFOLLOW | O_CLOEXEC, mode);
		else
			next = openat(cur, n ? part : ".", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cur != dirfd) {
			int saved = errno;
			close(cur);
			errno = saved;
		}
		if (next < 0 || q == NULL || q[1] == '\0')
			return next;
		cur = next;
		p = q + 1;
	}
}

/* ---- fs_remove_tree: an openat/unlinkat walk ----
 * A sandbox's home may hold anything: trees deeper than PATH_MAX, directories without any
 * permission, names of any bytes. The walk never builds a path (each step is relative to an
 * open directory), never follows a symbolic link, keeps at most REMOVE_FDS directories open
 * (deeper ones are found again through ".." and checked by device and inode, so a tree moved
 * meanwhile makes it start over from the top rather than step outside), and gives a
 * directory its owner's rwx back when it lacks them. */

/* Directories kept open at once (the rest are reopened through ".."): far below any
 * RLIMIT_NOFILE. */
#define REMOVE_FDS 32
/* Fresh starts from the top after the tree moved under the walk: a tree nobody else is
 * changing needs none. */
#define REMOVE_RESTARTS 64
/* How often a name that changed type under fs_remove_at is looked at again. */
#define REMOVE_RACES 64

struct rm_level {
	char *name;		/* its name in the parent (NULL at the top) */
	dev_t dev;
	ino_t ino;
	DIR *d;			/* open, or NULL when closed to spare descriptors */
};

struct rm_walk {
	struct rm_level *lv;
	size_t depth, cap;	/* lv[0 .. depth] are in use */
};

/* Gives the directory open as fd (O_PATH or not) its owner's rwx when it lacks them. */
static void rm_fix_perms(int fd, const struct stat *st)
{
	char path[64];

	if ((st->st_mode & S_IRWXU) == S_IRWXU)
		return;
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	chmod(path, (st->st_mode & 07777) | S_IRWXU);	/* the inode fd holds: no race */
}

/* Opens the directory name in dirfd without following links, making it readable first if
 * need be; checks it is the directory want describes (NULL: any). Returns a DIR or NULL. */
static DIR *rm_open(int dirfd, const char *name, const struct stat *want, struct stat *got)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0 && errno == EACCES) {
		int pfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (pfd < 0)
			return NULL;
		if (fstat(pfd, &st) == 0)
			rm_fix_perms(pfd, &st);
		fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(pfd);
	}
	if (fd < 0)
		return NULL;
	if (fstat(fd, got) < 0 || (want && (got->st_dev != want->st_dev || got->st_ino != want->st_ino))) {
		close(fd);
		errno = ESTALE;
		return NULL;
	}
	rm_fix_perms(fd, got);
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return d;
}

/* Removes name (not a directory, or an empty one) from the open directory d. */
static int rm_entry(DIR *d, const char *name, int is_dir)
{
	int fd = dirfd(d);

	if (unlinkat(fd, name, is_dir ? AT_REMOVEDIR : 0) == 0 || errno == ENOENT)
		return 0;
	if (errno == EACCES || errno == EPERM) {
		struct stat st;
		if (fstat(fd, &st) == 0) {
			fchmod(fd, (st.st_mode & 07777) | S_IRWXU);
			if (unlinkat(fd, name, is_dir ? AT_REMOVEDIR : 0) == 0 || errno == ENOENT)
				return 0;
		}
	}
	return -1;
}

static void rm_walk_free(struct rm_walk *w)
{
	for (size_t i = 0; w->lv && i <= w->depth; i++) {
		if (w->lv[i].d)
			closedir(w->lv[i].d);
		free(w->lv[i].name);
	}
	free(w->lv);
	memset(w, 0, sizeof *w);
}

/* Goes down into the directory name of the current level. 0, or -1. */
static int rm_descend(struct rm_walk *w, const char *name, const struct stat *st)
{
	struct rm_level *cur = &w->lv[w->depth], *next;
	struct stat got;
	DIR *d = rm_open(dirfd(cur->d), name, st, &got);

	if (d == NULL)
		return -1;
	if (w->depth + 1 >= w->cap) {
		size_t cap = w->cap * 2;
		struct rm_level *lv = realloc(w->lv, cap * sizeof *lv);
		if (lv == NULL) {
			closedir(d);
			return -1;
		}
		w->lv = lv;
		w->cap = cap;
	}
	next = &w->lv[++w->depth];
	*next = (struct rm_level){strdup(name), got.st_dev, got.st_ino, d};
	if (next->name == NULL)
		return -1;
	if (w->depth >= REMOVE_FDS && w->lv[w->depth - REMOVE_FDS].d) {
		closedir(w->lv[w->depth - REMOVE_FDS].d);
		w->lv[w->depth - REMOVE_FDS].d = NULL;
	}
	return 0;
}

/* The current level is empty: goes back up (reopening the parent through ".." when it was
 * closed) and removes it. 0; 1 when the tree moved and the walk must start over; -1. */
static int rm_ascend(struct rm_walk *w)
{
	struct rm_level *cur = &w->lv[w->depth], *up = &w->lv[w->depth - 1];
	struct stat st = {.st_dev = up->dev, .st_ino = up->ino}, got;
	int rc = 0;

	if (up->d == NULL && (up->d = rm_open(dirfd(cur->d), "..", &st, &got)) == NULL)
		rc = errno == ESTALE ? 1 : -1;
	closedir(cur->d);
	cur->d = NULL;
	if (rc == 0 && rm_entry(up->d, cur->name, 1) < 0)
		rc = -1;
	free(cur->name);
	cur->name = NULL;
	w->depth--;
	return rc;
}

/* Empties the tree open as w->lv[0]. 0, 1 (start over), or -1. */
static int rm_walk_run(struct rm_walk *w, dev_t top_dev)
{
	for (;;) {
		struct rm_level *cur = &w->lv[w->depth];
		struct dirent *de;
		struct stat st;
		int r;

		errno = 0;
		if ((de = readdir(cur->d)) == NULL) {
			if (errno)
				return -1;
			if (w->depth == 0)
				return 0;
			if ((r = rm_ascend(w)) != 0)
				return r;
			continue;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(cur->d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			return -1;
		}
		if (!S_ISDIR(st.st_mode) || st.st_dev != top_dev) {
			/* a mount point is not walked (nor removed: that fails) */
			if (rm_entry(cur->d, de->d_name, S_ISDIR(st.st_mode)) < 0)
				return -1;
			continue;
		}
		if (rm_entry(cur->d, de->d_name, 1) == 0)
			continue;	/* it was empty */
		if (errno != ENOTEMPTY && errno != EEXIST)
			return -1;
		if (rm_descend(w, de->d_name, &st) < 0)
			return errno == ESTALE ? 1 : -1;
	}
}

/* One try of fs_remove_at: fails with EISDIR or ENOTDIR when name changed type under it. */
static int remove_once(int dirfd, const char *name)
{
	struct rm_walk w = {0};
	struct stat st, got;
	int rc = -1, saved, round;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -1 : 0;
	for (round = 0; round < REMOVE_RESTARTS; round++) {
		if ((w.lv = calloc(REMOVE_FDS * 2, sizeof *w.lv)) == NULL)
			return -1;
		w.cap = REMOVE_FDS * 2;
		w.lv[0] = (struct rm_level){NULL, st.st_dev, st.st_ino, rm_open(dirfd, name, &st, &got)};
		rc = w.lv[0].d ? rm_walk_run(&w, st.st_dev) : -1;
		saved = errno;
		rm_walk_free(&w);
		if (rc != 1)
			break;
	}
	if (rc == 0 && (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT))
		return 0;
	if (rc == 0)
		saved = errno;
	errno = saved;
	return -1;
}

int fs_remove_at(int dirfd, const char *name)
{
	/* A name swapped between a file (or link) and a directory while it is removed (a sandbox
	 * renaming under its own home) is looked at again, a bounded number of times. */
	for (int tries = 1;; tries++) {
		int rc = remove_once(dirfd, name);

		if (rc == 0 || tries >= REMOVE_RACES || (errno != EISDIR && errno != ENOTDIR))
			return rc;
	}
}

int fs_remove_tree(const char *path)
{
	return fs_remove_at(AT_FDCWD, path);
}

int fs_clear_at(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	int rc = 0, saved = 0;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Each entry is removed by its name in this very directory: never a path. */
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fs_remove_at(dirfd, de->d_name) < 0)
			rc = -1, saved = errno;
	}
	closedir(d);
	if (rc < 0)
		errno = saved;
	return rc;
}

int fs_clear_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc, saved;

	if (fd < 0)
		return -1;
	rc = fs_clear_at(fd);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/* fs_write_atomic, and without its fsyncs when !durable (fs_write_replace). */
static int write_replace(const char *path, const void *data, size_t len, unsigned mode,
			 bool durable)
{
	char tmp[4096], dir[4096];
	const char *p = data;
	int fd, dfd, saved;

	/* A name of its own (O_EXCL): two writers of path never share a temporary file. */
	if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		return -1;
	if (fchmod(fd, mode) < 0)
		goto fail;
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
	if ((durable && fsync(fd) < 0) || close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		fd = -1;
		goto fail;
	}
	if (!durable)
		return 0;
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

int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	return write_replace(path, data, len, mode, true);
}

int fs_write_replace(const char *path, const void *data, size_t len, unsigned mode)
{
	return write_replace(path, data, len, mode, false);
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

char *fs_read_tail(const char *path, long long from, size_t max, size_t *lenp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t len = 0, want;
	char *buf = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (from < 0)
		from = 0;
	if ((long long)st.st_size - from > (long long)max)
		from = (long long)st.st_size - (long long)max;
	want = st.st_size > from ? (size_t)(st.st_size - from) : 0;
	if ((buf = malloc(want + 1)) == NULL)
		goto fail;
	while (len < want) {
		ssize_t n = pread(fd, buf + len, want - len, (off_t)from + (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*lenp = len;
	return buf;
fail:
	{
		int err = errno;
		free(buf);
		close(fd);
		errno = err;
	}
	return NULL;
}
