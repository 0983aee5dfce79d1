/* archive_pack.c — write a tar of a host file or directory with libarchive: links stored as
 * links, never followed; every entry passing the policy restore applies. */
#include "archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive_int.h"
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

/* Opens the regular file an entry describes, refusing anything but that very inode. */
static int open_listed(struct archive_entry *ent)
{
	const char *src = archive_entry_sourcepath(ent);
	struct stat sb;
	int fd = open(src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_ino != (ino_t)archive_entry_ino64(ent) || sb.st_dev != archive_entry_dev(ent)) {
		close(fd);
		return -1;
	}
	return fd;
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
	struct archive *a, *disk;
	struct archive_entry_linkresolver *lr;
	struct archive_sink s;
	struct archive_policy pol;
	const char *root;	/* the walked path, without trailing '/' */
	size_t rootlen;
	const char *top;	/* its entry's name; "." for a directory's contents ("./…") */
	char *buf;
};

/* Names a walked entry for the archive: the top, or below it. */
static void name_entry(const struct pack *pk, struct archive_entry *ent, const char *p)
{
	const char *rest = p + pk->rootlen;
	char *name = strcmp(pk->top, ".") == 0 ? xasprintf(".%s%s", rest, *rest ? "" : "/")
					      : xasprintf("%s%s", pk->top, rest);

	archive_entry_copy_sourcepath(ent, p);
	archive_entry_copy_pathname(ent, name);
	free(name);
}

/* Writes one walked entry (its data from fd, or -1). 0, or -1 with e. */
static int write_entry(struct pack *pk, struct archive_entry *ent, int fd,
		       struct archive_stats *st, struct sbx_err *e)
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
		st->files++;
	if (archive_entry_hardlink(out) == NULL)
		st->bytes += (uint64_t)archive_entry_size(out);
	if (archive_write_finish_entry(pk->a) < ARCHIVE_WARN)
		return archive_sink_error(pk->a, &pk->s, e);
	return 0;
}

/* Walks the tree physically (symlinks are entries, never followed; other file systems not
 * entered) and writes what it finds. */
static int walk(struct pack *pk, struct archive_entry *ent, struct archive_stats *st,
		struct sbx_err *e)
{
	archive_read_disk_set_symlink_physical(pk->disk);
	archive_read_disk_set_behavior(pk->disk, ARCHIVE_READDISK_NO_TRAVERSE_MOUNTS |
				       ARCHIVE_READDISK_NO_XATTR | ARCHIVE_READDISK_NO_ACL |
				       ARCHIVE_READDISK_NO_FFLAGS | ARCHIVE_READDISK_NO_SPARSE);
	archive_read_disk_set_standard_lookup(pk->disk);
	if (archive_read_disk_open(pk->disk, pk->root) != ARCHIVE_OK)
		return err_set(e, SBX_EIO, "cannot read %s: %s", pk->root,
			       archive_error_string(pk->disk));
	for (;;) {
		const char *p;
		int fd = -1, r, rc;

		archive_entry_clear(ent);
		r = archive_read_next_header2(pk->disk, ent);
		if (r == ARCHIVE_EOF)
			return 0;
		/* A directory we may not enter is left out, like an unreadable file. */
		if (r == ARCHIVE_FAILED) {
			st->skipped++;
			continue;
		}
		if (r < ARCHIVE_WARN)
			return err_set(e, SBX_EIO, "cannot read %s: %s", pk->root,
				       archive_error_string(pk->disk));
		if (r == ARCHIVE_WARN && archive_entry_pathname(ent) == NULL)
			continue;
		archive_read_disk_descend(pk->disk);
		p = archive_entry_pathname(ent);
		if (strncmp(p, pk->root, pk->rootlen) != 0 ||
		    (p[pk->rootlen] != '\0' && p[pk->rootlen] != '/'))
			continue;
		name_entry(pk, ent, p);
		switch (archive_entry_filetype(ent)) {
		case AE_IFREG:
			if ((fd = open_listed(ent)) < 0) {
				st->skipped++;
				continue;
			}
			break;
		case AE_IFDIR:
		case AE_IFLNK:
			break;
		default:
			st->skipped++;
			continue;
		}
		rc = write_entry(pk, ent, fd, st, e);
		if (fd >= 0)
			close(fd);
		if (rc < 0)
			return -1;
	}
}

int archive_pack_tree(const char *path, const char *top, enum archive_codec codec,
		      archive_tap_fn fn, void *arg, struct archive_stats *st, struct sbx_err *e)
{
	struct archive_tree tree = {.top = top};
	struct pack pk = {.a = archive_write_new(), .disk = archive_read_disk_new(),
			  .lr = archive_entry_linkresolver_new(), .s = {fn, arg, e, false},
			  .top = top, .buf = xmalloc(ARCHIVE_IO_BUF)};
	struct archive_entry *ent = archive_entry_new();
	char *root = xstrdup(path);
	struct stat sb;
	int rc = -1;

	memset(st, 0, sizeof *st);
	if (pk.a == NULL || pk.disk == NULL || pk.lr == NULL || ent == NULL)
		abort();
	archive_policy_init(&pk.pol, ARCHIVE_MAX_EXPANDED, ARCHIVE_LINKS_KEEP, &tree, NULL);
	pk.rootlen = strlen(root);
	while (pk.rootlen > 1 && root[pk.rootlen - 1] == '/')
		root[--pk.rootlen] = '\0';
	pk.root = root;
	if (lstat(root, &sb) < 0) {
		err_sys(e, errno, "cannot read %s", root);
		goto out;
	}
	if (strcmp(top, ".") == 0 && !S_ISDIR(sb.st_mode)) {
		err_set(e, SBX_EIO, "%s is not a directory", root);
		goto out;
	}
	if (writer_open(pk.a, codec, &pk.s, e) < 0)
		goto out;
	archive_entry_linkresolver_set_strategy(pk.lr, archive_format(pk.a));
	if (walk(&pk, ent, st, e) < 0)
		goto out;
	if (archive_write_close(pk.a) != ARCHIVE_OK) {
		archive_sink_error(pk.a, &pk.s, e);
		goto out;
	}
	rc = 0;
out:
	archive_read_free(pk.disk);
	archive_write_free(pk.a);
	archive_entry_free(ent);
	archive_entry_linkresolver_free(pk.lr);
	archive_policy_free(&pk.pol);
	free(root);
	free(pk.buf);
	return rc;
}

int archive_pack_dir(const char *dir, enum archive_codec codec, archive_tap_fn fn, void *arg,
		     struct archive_stats *st, struct sbx_err *e)
{
	return archive_pack_tree(dir, ".", codec, fn, arg, st, e);
}
