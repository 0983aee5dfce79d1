/* archive_place.c — where extraction writes: every entry placed relative to one directory fd
 * (a sandbox's home, or sbx-cp's destination), each parent reached with fs_open_beneath (no
 * symlink, no ".." on the way), each name created in its open parent with mkdirat, openat
 * O_CREAT|O_EXCL|O_NOFOLLOW, symlinkat or linkat (which never follow), modes and times set on
 * the fds. A sandbox swapping a directory for a symlink meanwhile makes an entry fail, never
 * land elsewhere (libarchive's disk writer checks by path, then writes by path). */
#include "archive_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "xalloc.h"

/* A directory's mode and times, set once everything below it is written (a read-only
 * directory in the archive still receives its files). */
struct fixup {
	char *path;
	mode_t mode;
	struct timespec ts[2];
};

struct archive_place {
	int root;		/* the directory everything goes below */
	const char *tmp;	/* files written as root/tmp, then renamed (NULL: in place) */
	bool sync;		/* fsync files and directories before they are final */
	char *cached;		/* the parent of the last entry, and its O_PATH fd */
	int cached_fd;
	struct fixup *fx;
	size_t nfx, capfx;
};

struct archive_place *archive_place_open(const char *dir, const char *tmp, bool sync,
					 struct sbx_err *e)
{
	struct archive_place *pl;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		err_sys(e, errno, "cannot open %s", dir);
		return NULL;
	}
	pl = xcalloc(1, sizeof *pl);
	pl->root = fd;
	pl->tmp = tmp;
	pl->sync = sync;
	pl->cached_fd = -1;
	return pl;
}

/* The normalized name of an entry ("a/b/c": no "", "." or leading "./"), newly allocated. */
static char *clean_name(const char *in)
{
	char *out = xmalloc(strlen(in) + 1), *o = out;
	const char *p = in;

	while (*p) {
		const char *q = strchrnul(p, '/');
		size_t n = (size_t)(q - p);
		if (n > 0 && !(n == 1 && *p == '.')) {
			if (o != out)
				*o++ = '/';
			memcpy(o, p, n);
			o += n;
		}
		p = *q ? q + 1 : q;
	}
	*o = '\0';
	return out;
}

/* The directory path below the root, as an O_PATH fd, made (0755, as tar makes the parents an
 * archive did not list) where missing, one component at a time in its open parent. -1, errno. */
static int open_made(int root, char *path)
{
	char *p = path, *q;
	int cur = fs_open_beneath(root, *path ? path : ".", O_PATH | O_DIRECTORY, 0), next;

	if (cur >= 0 || errno != ENOENT)
		return cur;
	cur = fcntl(root, F_DUPFD_CLOEXEC, 0);
	for (; cur >= 0 && p; p = q) {
		if ((q = strchr(p, '/')) != NULL)
			*q++ = '\0';
		if (mkdirat(cur, p, 0755) < 0 && errno != EEXIST)
			next = -1;
		else
			next = fs_open_beneath(cur, p, O_PATH | O_DIRECTORY, 0);
		if (q)
			q[-1] = '/';
		{
			int saved = errno;
			close(cur);
			errno = saved;
		}
		cur = next;
	}
	return cur;
}

/* The parent directory of name (its first len bytes, "" for the root) as an O_PATH fd owned
 * by pl (kept for the next entry: an open directory stays the one it was). -1 with errno. */
static int parent_fd(struct archive_place *pl, const char *name, size_t len)
{
	char *dir = xstrndup(name, len);
	int fd;

	if (pl->cached && strcmp(pl->cached, dir) == 0) {
		free(dir);
		return pl->cached_fd;
	}
	if (pl->cached_fd >= 0)
		close(pl->cached_fd);
	free(pl->cached);
	pl->cached = NULL;
	pl->cached_fd = -1;
	if ((fd = open_made(pl->root, dir)) < 0) {
		int saved = errno;
		free(dir);
		errno = saved;
		return -1;
	}
	pl->cached = dir;
	pl->cached_fd = fd;
	return fd;
}

/* Makes room for a new entry at name in pfd: removes what is there (a directory only when
 * empty); an existing directory is kept when want_dir. 1 when a directory was kept. */
static int make_room(int pfd, const char *name, bool want_dir)
{
	struct stat sb;

	if (fstatat(pfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (S_ISDIR(sb.st_mode) && want_dir)
		return 1;
	return unlinkat(pfd, name, S_ISDIR(sb.st_mode) ? AT_REMOVEDIR : 0) < 0 ? -1 : 0;
}

/* The entry's access and modification times for futimens/utimensat. */
static void times_of(struct archive_entry *ent, struct timespec ts[2])
{
	ts[1].tv_sec = archive_entry_mtime(ent);
	ts[1].tv_nsec = archive_entry_mtime_nsec(ent);
	if (!archive_entry_mtime_is_set(ent))
		ts[1].tv_nsec = UTIME_NOW;
	ts[0] = ts[1];
	if (archive_entry_atime_is_set(ent)) {
		ts[0].tv_sec = archive_entry_atime(ent);
		ts[0].tv_nsec = archive_entry_atime_nsec(ent);
	}
}

/* Writes the entry's data blocks into fd at their offsets, then its size. 0; -1 (errno) on a
 * write; -2 on a read (the reader's error). */
static int write_data(struct archive *a, int fd, struct archive_entry *ent, uint64_t *bytes)
{
	const void *blk;
	size_t n;
	la_int64_t off, end = 0;
	int r;

	while ((r = archive_read_data_block(a, &blk, &n, &off)) == ARCHIVE_OK) {
		const char *p = blk;
		while (n > 0) {
			ssize_t w = pwrite(fd, p, n, (off_t)off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w == 0 ? (errno = ENOSPC, -1) : -1;
			p += w;
			off += w;
			n -= (size_t)w;
			*bytes += (uint64_t)w;
		}
		if (off > end)
			end = off;
	}
	if (r != ARCHIVE_EOF)
		return -2;
	/* a sparse file's trailing hole (the file was made empty: nothing else to cut) */
	return end < archive_entry_size(ent) ? ftruncate(fd, (off_t)archive_entry_size(ent)) : 0;
}

/* A regular file: written whole (under pl->tmp in the root when set, then renamed over
 * name) with its mode and times. */
static int place_file(struct archive_place *pl, struct archive *a, int pfd, const char *name,
		      struct archive_entry *ent, uint64_t *bytes)
{
	int dfd = pl->tmp ? pl->root : pfd, fd, r, saved;
	const char *at = pl->tmp ? pl->tmp : name;
	struct timespec ts[2];

	/* Made where nothing is, the common case; else what is there goes first. */
	if ((fd = openat(dfd, at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0 &&
	    (errno != EEXIST || make_room(dfd, at, false) < 0 ||
	     (fd = openat(dfd, at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0))
		return -1;
	times_of(ent, ts);
	r = write_data(a, fd, ent, bytes);
	if (r == 0 && (fchmod(fd, archive_entry_perm(ent) & 01777) < 0 || futimens(fd, ts) < 0 ||
		       (pl->sync && fsync(fd) < 0)))
		r = -1;
	saved = errno;
	close(fd);
	if (r == 0 && pl->tmp && renameat(dfd, at, pfd, name) < 0)
		r = -1, saved = errno;
	if (r < 0 && pl->tmp)
		unlinkat(dfd, at, 0);
	errno = saved;
	return r;
}

/* A directory: made (0700 until its fixup) or kept; its mode and times recorded for the end. */
static int place_dir(struct archive_place *pl, int pfd, const char *name, const char *path,
		     struct archive_entry *ent)
{
	int kept = make_room(pfd, name, true);
	struct fixup *f;

	if (kept < 0 || (kept == 0 && mkdirat(pfd, name, 0700) < 0))
		return -1;
	if (pl->nfx == pl->capfx) {
		pl->capfx = pl->capfx ? pl->capfx * 2 : 64;
		pl->fx = xrealloc(pl->fx, pl->capfx * sizeof *pl->fx);
	}
	f = &pl->fx[pl->nfx++];
	f->path = xstrdup(path);
	f->mode = archive_entry_perm(ent) & 01777;
	times_of(ent, f->ts);
	return 0;
}

int archive_place_entry(struct archive_place *pl, struct archive *a, struct archive_entry *ent,
			uint64_t *bytes)
{
	char *path = clean_name(archive_entry_pathname(ent)), *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	const char *hl = archive_entry_hardlink(ent);
	int pfd = parent_fd(pl, path, slash ? (size_t)(slash - path) : 0), r = -1;

	if (pfd < 0 || *name == '\0') {
		free(path);
		return -1;
	}
	if (hl) {
		char *target = clean_name(hl), *ts = strrchr(target, '/');
		int tfd = fs_open_beneath(pl->root, ts ? (*ts = '\0', target) : ".", O_PATH | O_DIRECTORY, 0);
		if (tfd >= 0 && make_room(pfd, name, false) == 0)
			r = linkat(tfd, ts ? ts + 1 : target, pfd, name, 0);
		if (tfd >= 0)
			close(tfd);
		free(target);
	} else if (archive_entry_filetype(ent) == AE_IFREG) {
		r = place_file(pl, a, pfd, name, ent, bytes);
	} else if (archive_entry_filetype(ent) == AE_IFDIR) {
		r = place_dir(pl, pfd, name, path, ent);
	} else if (archive_entry_filetype(ent) == AE_IFLNK) {
		struct timespec ts[2];
		times_of(ent, ts);
		if (make_room(pfd, name, false) == 0 &&
		    (r = symlinkat(archive_entry_symlink(ent), pfd, name)) == 0)
			utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW);
	} else {
		errno = EINVAL;	/* the policy lets nothing else through */
	}
	free(path);
	return r;
}

int archive_place_finish(struct archive_place *pl, struct sbx_err *e)
{
	int rc = 0;

	/* Deepest first (an archive lists a directory before what it holds): a directory's
	 * final mode never keeps its own fixups out. A directory gone or swapped meanwhile is
	 * left alone. */
	for (size_t i = pl->nfx; i-- > 0;) {
		struct fixup *f = &pl->fx[i];
		int fd = fs_open_beneath(pl->root, f->path, O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0)
			continue;
		if ((fchmod(fd, f->mode) < 0 || futimens(fd, f->ts) < 0 ||
		     (pl->sync && fsync(fd) < 0)) && rc == 0) {
			char q[ARCHIVE_QUOTE_MAX + 16];
			rc = err_sys(e, errno, "cannot finish \"%s\"",
				     archive_policy_quote(f->path, q, sizeof q));
		}
		close(fd);
	}
	if (rc == 0 && pl->sync && fsync(pl->root) < 0)
		rc = err_sys(e, errno, "cannot sync the destination");
	return rc;
}

void archive_place_free(struct archive_place *pl)
{
	if (pl == NULL)
		return;
	for (size_t i = 0; i < pl->nfx; i++)
		free(pl->fx[i].path);
	free(pl->fx);
	if (pl->cached_fd >= 0)
		close(pl->cached_fd);
	free(pl->cached);
	close(pl->root);
	free(pl);
}
