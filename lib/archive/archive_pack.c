/* archive_pack.c — write a tar of a host file or directory with libarchive: links stored as
 * links, never followed; every entry passing the policy restore applies. The tree may be a
 * sandbox's home, changing as it is read: it is walked from one directory fd, each name
 * opened in its open parent without following anything (fs_open_beneath), and each entry
 * built from the inode actually opened, never from a path (libarchive's disk reader re-opens
 * names by path, following what a sandbox swapped in). */
#include "archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive_int.h"
#include "fsutil.h"
#include "xalloc.h"

/* gzip level for new backups: 6 is gzip's own default, the size upstream's backups have. */
#define GZIP_LEVEL "6"
/* zstd level: its fastest; still as small as gzip -6 on typical homes, at several times the
 * speed (snapshots run at every turn boundary, so speed comes first). */
#define ZSTD_LEVEL "1"

static la_ssize_t sink_write(struct archive *a, void *ctx, const void *p, size_t n)
{
	struct archive_sink *s = ctx;

	if (s->fn(p, n, s->arg, s->e) < 0) {
		s->failed = true;
		archive_set_error(a, EIO, "%s", s->e->msg);
		return -1;
	}
	return (la_ssize_t)n;
}

int archive_sink_error(struct archive *a, const struct archive_sink *s, struct sbx_err *e)
{
	if (s->failed)
		return -1;
	return err_set(e, SBX_EIO, "cannot write the archive: %s",
		       archive_error_string(a) ? archive_error_string(a) : "unknown error");
}

int archive_sink_open(struct archive *a, struct archive_sink *s, struct sbx_err *e)
{
	if (archive_write_open(a, s, NULL, sink_write, NULL) != ARCHIVE_OK)
		return archive_sink_error(a, s, e);
	return 0;
}

/* Copies exactly size bytes of fd into the archive, zero-padding a file that shrank. */
static int copy_data(struct archive *a, int fd, int64_t size, char *buf,
		     const struct archive_sink *s, struct sbx_err *e)
{
	while (size > 0) {
		size_t want = size > ARCHIVE_IO_BUF ? ARCHIVE_IO_BUF : (size_t)size;
		ssize_t n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			memset(buf, 0, want);
			n = (ssize_t)want;
		}
		if (archive_write_data(a, buf, (size_t)n) < 0)
			return archive_sink_error(a, s, e);
		size -= n;
	}
	return 0;
}

/* The writer: GNU tar's own format, what upstream's `tar -zcf` writes (names as raw bytes, no
 * pax hdrcharset header GNU tar would warn about, long names as ././@LongLink). */
static int writer_open(struct archive *a, enum archive_codec codec, struct archive_sink *s,
		       struct sbx_err *e)
{
	archive_write_set_format_gnutar(a);
	if (codec == ARCHIVE_CODEC_ZSTD) {
		archive_write_add_filter_zstd(a);
		archive_write_set_filter_option(a, "zstd", "compression-level", ZSTD_LEVEL);
	} else if (codec == ARCHIVE_CODEC_GZIP) {
		archive_write_add_filter_gzip(a);
		archive_write_set_filter_option(a, "gzip", "compression-level", GZIP_LEVEL);
	} else {
		archive_write_add_filter_none(a);
	}
	/* No padding after a compressed stream: zstd readers take trailing zeros for a frame. */
	if (codec != ARCHIVE_CODEC_NONE)
		archive_write_set_bytes_in_last_block(a, 1);
	return archive_sink_open(a, s, e);
}

/* One packing: the walk, the writer, what names entries get. */
struct pack {
	struct archive *a, *names;	/* names: user and group names only, never a walk */
	struct archive_entry_linkresolver *lr;
	struct archive_entry *ent;
	struct archive_sink s;
	struct archive_policy pol;
	struct archive_stats *st;
	struct buf name;	/* the entry name being written: "./…", or top"/…" */
	dev_t dev;		/* the tree's file system: other ones are not entered */
	char *buf;
};

/* Writes one entry (its data from fd, or -1). 0, or -1 with e. */
static int write_entry(struct pack *pk, struct archive_entry *ent, int fd, struct sbx_err *e)
{
	struct archive_entry *out = ent, *spare = NULL;

	/* A symlink's other names are stored as symlinks of their own, not hard links: a
	 * restore leaving the link out (it leads outside) can leave each name out alike. */
	if (archive_entry_filetype(ent) == AE_IFLNK)
		archive_entry_set_nlink(ent, 1);
	archive_entry_linkify(pk->lr, &out, &spare);
	if (out == NULL)
		out = ent;
	/* What restore would refuse is not written: a backup sbx makes is one it restores. */
	if (archive_policy_check(&pk->pol, out, e) < 0)
		return -1;
	if (archive_write_header(pk->a, out) < ARCHIVE_WARN)
		return archive_sink_error(pk->a, &pk->s, e);
	if (fd >= 0 && archive_entry_hardlink(out) == NULL &&
	    copy_data(pk->a, fd, archive_entry_size(out), pk->buf, &pk->s, e) < 0)
		return -1;
	if (!archive_policy_is_root(archive_entry_pathname(out)))
		pk->st->files++;
	if (archive_entry_hardlink(out) == NULL)
		pk->st->bytes += (uint64_t)archive_entry_size(out);
	if (archive_write_finish_entry(pk->a) < ARCHIVE_WARN)
		return archive_sink_error(pk->a, &pk->s, e);
	return 0;
}

/* Fills pk->ent for the inode whose status is sb (link: a symlink's target), named pk->name. */
static struct archive_entry *entry_of(struct pack *pk, const struct stat *sb, const char *link)
{
	struct archive_entry *ent = pk->ent;
	const char *n;

	archive_entry_clear(ent);
	archive_entry_copy_stat(ent, sb);
	archive_entry_copy_pathname(ent, pk->name.data);
	if ((n = archive_read_disk_uname(pk->names, (la_int64_t)sb->st_uid)) != NULL)
		archive_entry_copy_uname(ent, n);
	if ((n = archive_read_disk_gname(pk->names, (la_int64_t)sb->st_gid)) != NULL)
		archive_entry_copy_gname(ent, n);
	if (link)
		archive_entry_copy_symlink(ent, link);
	return ent;
}

static int pack_dir(struct pack *pk, int fd, struct sbx_err *e);

/* Cuts the entry name back to its first len bytes. */
static void name_cut(struct pack *pk, size_t len)
{
	pk->name.len = len;
	pk->name.data[len] = '\0';
}

/* Opens name in dirfd (listed with status *sb) as flags, and checks it is still that inode
 * (a name swapped for something else since it was listed is left out). The fd, or -1. */
static int open_listed(int dirfd, const char *name, int flags, struct stat *sb)
{
	struct stat now;
	int fd = fs_open_beneath(dirfd, name, flags & O_PATH ? flags : flags | O_NOCTTY, 0);

	if (fd < 0)
		return -1;
	if (fstat(fd, &now) < 0 || now.st_dev != sb->st_dev || now.st_ino != sb->st_ino ||
	    (now.st_mode & S_IFMT) != (sb->st_mode & S_IFMT)) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	*sb = now;
	return fd;
}

/* Writes the entry name of dirfd, as pk->name, and what is below it. Every open is of one
 * name in an open directory, without following a symlink, and checked against what was
 * listed: a sandbox swapping names meanwhile can only make entries be left out. */
static int pack_one(struct pack *pk, int dirfd, const char *name, struct sbx_err *e)
{
	struct stat sb;
	char link[PATH_MAX + 1];
	ssize_t n;
	int fd = -1, rc;

	if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return pk->st->skipped++, 0;
	if (S_ISREG(sb.st_mode)) {
		if ((fd = open_listed(dirfd, name, O_RDONLY | O_NONBLOCK, &sb)) < 0)
			return pk->st->skipped++, 0;
		rc = write_entry(pk, entry_of(pk, &sb, NULL), fd, e);
		close(fd);
		return rc;
	}
	if (S_ISLNK(sb.st_mode)) {
		if ((fd = open_listed(dirfd, name, O_PATH, &sb)) < 0)
			return pk->st->skipped++, 0;
		n = readlinkat(fd, "", link, sizeof link - 1);
		close(fd);
		if (n < 0 || n != sb.st_size)
			return pk->st->skipped++, 0;
		link[n] = '\0';
		return write_entry(pk, entry_of(pk, &sb, link), -1, e);
	}
	if (!S_ISDIR(sb.st_mode))
		return pk->st->skipped++, 0;	/* sockets, fifos, devices */
	/* A mount point is stored, not entered; a directory we may not enter is stored empty. */
	if (sb.st_dev != pk->dev || (fd = open_listed(dirfd, name, O_RDONLY | O_DIRECTORY, &sb)) < 0) {
		if (sb.st_dev == pk->dev && errno != EACCES)
			return pk->st->skipped++, 0;	/* swapped: gone as a directory */
		if (sb.st_dev == pk->dev)
			pk->st->skipped++;
		return write_entry(pk, entry_of(pk, &sb, NULL), -1, e);
	}
	if (write_entry(pk, entry_of(pk, &sb, NULL), -1, e) < 0) {
		close(fd);
		return -1;
	}
	return pack_dir(pk, fd, e);
}

/* Writes what the directory open as fd holds (fd is closed). Recursion is bounded by the
 * policy's name length: a deeper name fails the run before it is entered. */
static int pack_dir(struct pack *pk, int fd, struct sbx_err *e)
{
	DIR *d = fdopendir(fd);
	size_t len = pk->name.len;
	struct dirent *de;
	int rc = 0;

	if (d == NULL) {
		close(fd);
		return pk->st->skipped++, 0;
	}
	while (rc == 0) {
		errno = 0;
		if ((de = readdir(d)) == NULL) {
			if (errno)
				pk->st->skipped++;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		name_cut(pk, len);
		if (pk->name.data[len - 1] != '/')
			buf_puts(&pk->name, "/");
		buf_puts(&pk->name, de->d_name);
		rc = pack_one(pk, dirfd(d), de->d_name, e);
	}
	name_cut(pk, len);
	closedir(d);
	return rc;
}

/* Packs root: path's contents as "./…" (top "."), or path itself as top. path is the
 * caller's (trusted up to its last component, which is not followed); below it, the walk. */
static int pack_root(struct pack *pk, const char *path, const char *top, struct sbx_err *e)
{
	struct stat sb;
	char *dir, *base;
	int fd, rc;

	if (strcmp(top, ".") == 0) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &sb) < 0) {
			rc = errno == ENOTDIR || errno == ELOOP
			     ? err_set(e, SBX_EIO, "%s is not a directory", path)
			     : err_sys(e, errno, "cannot read %s", path);
			if (fd >= 0)
				close(fd);
			return rc;
		}
		pk->dev = sb.st_dev;
		buf_puts(&pk->name, "./");
		if (write_entry(pk, entry_of(pk, &sb, NULL), -1, e) < 0) {
			close(fd);
			return -1;
		}
		name_cut(pk, 1);	/* "." then "/name" */
		return pack_dir(pk, fd, e);
	}
	dir = xstrdup(path);
	base = strrchr(dir, '/');
	if (base)
		*base++ = '\0';
	fd = open(base == NULL ? "." : *dir ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstatat(fd, base ? base : dir, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = err_sys(e, errno, "cannot read %s", path);
	} else {
		pk->dev = sb.st_dev;
		buf_puts(&pk->name, top);
		rc = pack_one(pk, fd, base ? base : dir, e);
	}
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

int archive_pack_tree(const char *path, const char *top, enum archive_codec codec,
		      archive_tap_fn fn, void *arg, struct archive_stats *st, struct sbx_err *e)
{
	struct archive_tree tree = {.top = top};
	struct pack pk = {.a = archive_write_new(), .names = archive_read_disk_new(),
			  .lr = archive_entry_linkresolver_new(), .ent = archive_entry_new(),
			  .s = {fn, arg, e, false}, .st = st, .buf = xmalloc(ARCHIVE_IO_BUF)};
	char *root = xstrdup(path);
	size_t n = strlen(root);
	int rc = -1;

	memset(st, 0, sizeof *st);
	if (pk.a == NULL || pk.names == NULL || pk.lr == NULL || pk.ent == NULL)
		abort();
	archive_read_disk_set_standard_lookup(pk.names);
	archive_policy_init(&pk.pol, ARCHIVE_MAX_EXPANDED, ARCHIVE_LINKS_KEEP, &tree, NULL);
	while (n > 1 && root[n - 1] == '/')
		root[--n] = '\0';
	if (writer_open(pk.a, codec, &pk.s, e) < 0)
		goto out;
	archive_entry_linkresolver_set_strategy(pk.lr, archive_format(pk.a));
	if (pack_root(&pk, root, top, e) < 0)
		goto out;
	if (archive_write_close(pk.a) != ARCHIVE_OK) {
		archive_sink_error(pk.a, &pk.s, e);
		goto out;
	}
	rc = 0;
out:
	archive_read_free(pk.names);
	archive_write_free(pk.a);
	archive_entry_free(pk.ent);
	archive_entry_linkresolver_free(pk.lr);
	archive_policy_free(&pk.pol);
	buf_free(&pk.name);
	free(root);
	free(pk.buf);
	return rc;
}

int archive_pack_dir(const char *dir, enum archive_codec codec, archive_tap_fn fn, void *arg,
		     struct archive_stats *st, struct sbx_err *e)
{
	return archive_pack_tree(dir, ".", codec, fn, arg, st, e);
}
