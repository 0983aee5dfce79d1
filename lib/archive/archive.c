/* archive.c — check, extract and filter tar archives with libarchive, each entry passing the
 * policy of lib/archive/archive_policy.c; packing is lib/archive/archive_pack.c. */
#include "archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_int.h"
#include "xalloc.h"

int archive_codec_parse(const char *s, enum archive_codec *out)
{
	if (strcmp(s, "gzip") == 0)
		*out = ARCHIVE_CODEC_GZIP;
	else if (strcmp(s, "zstd") == 0)
		*out = ARCHIVE_CODEC_ZSTD;
	else
		return -1;
	return 0;
}

int archive_fd_sink(const void *p, size_t n, void *arg, struct sbx_err *e)
{
	const char *c = p;
	int fd = *(int *)arg;

	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return err_sys(e, errno, "cannot pass the archive on");
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

const char *archive_codec_ext(enum archive_codec c)
{
	return c == ARCHIVE_CODEC_ZSTD ? ".tar.zst" : c == ARCHIVE_CODEC_NONE ? ".tar" : ".tar.gz";
}

/* ---- reading ---- */

struct src {
	int fd, cancel_fd;
	archive_tap_fn tap;
	void *arg;
	struct sbx_err *e;
	bool failed;
	char *buf;
};

/* Waits for data or cancellation, reads a block and shows it to the tap. */
static ssize_t src_fill(struct src *s)
{
	ssize_t n;

	for (;;) {
		if (s->cancel_fd >= 0) {
			struct pollfd p[2] = {{s->fd, POLLIN, 0}, {s->cancel_fd, POLLIN, 0}};
			if (poll(p, 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				err_sys(s->e, errno, "poll");
				return -1;
			}
			if (p[1].revents) {
				err_set(s->e, SBX_ECANCELED, "interrupted");
				return -1;
			}
		}
		n = read(s->fd, s->buf, ARCHIVE_IO_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			continue;
		break;
	}
	if (n < 0) {
		err_sys(s->e, errno, "cannot read the archive");
		return -1;
	}
	if (n > 0 && s->tap && s->tap(s->buf, (size_t)n, s->arg, s->e) < 0)
		return -1;
	return n;
}

static la_ssize_t src_read(struct archive *a, void *ctx, const void **out)
{
	struct src *s = ctx;
	ssize_t n = src_fill(s);

	if (n < 0) {
		s->failed = true;
		archive_set_error(a, EIO, "%s", s->e->msg);
		return -1;
	}
	*out = s->buf;
	return n;
}

static struct archive *reader_new(void)
{
	struct archive *a = archive_read_new();

	if (a == NULL)
		abort();
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	return a;
}

/* The error of a failed read: the source's own, else libarchive's. */
static int read_error(struct archive *a, const struct src *s, struct sbx_err *e)
{
	if (s->failed)
		return -1;
	return err_set(e, SBX_EIO, "corrupt archive: %s",
		       archive_error_string(a) ? archive_error_string(a) : "unreadable");
}

int archive_check_tree(int fd, int cancel_fd, uint64_t max_bytes, enum archive_links links,
		       const struct archive_tree *tree, archive_tap_fn tap, void *arg,
		       struct archive_stats *st, struct sbx_err *e)
{
	struct src s = {fd, cancel_fd, tap, arg, e, false, xmalloc(ARCHIVE_IO_BUF)};
	struct archive_policy pol;
	struct archive *a = reader_new();
	struct archive_entry *ent;
	int r, rc = -1;

	memset(st, 0, sizeof *st);
	archive_policy_init(&pol, max_bytes, links, tree, st);
	if (archive_read_open(a, &s, NULL, src_read, NULL) != ARCHIVE_OK) {
		read_error(a, &s, e);
		goto out;
	}
	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		const void *blk;
		size_t n;
		la_int64_t off;
		uint64_t got = 0;

		int take = archive_policy_check(&pol, ent, e);
		if (take < 0)
			goto out;
		if (take == 0 && !archive_policy_is_root(archive_entry_pathname(ent)))
			st->files++;
		/* Read every data block: this is what proves the compressed stream is intact. */
		while ((r = archive_read_data_block(a, &blk, &n, &off)) == ARCHIVE_OK)
			got += n;
		if (r != ARCHIVE_EOF) {
			read_error(a, &s, e);
			goto out;
		}
		st->bytes += got;
	}
	if (r != ARCHIVE_EOF) {
		read_error(a, &s, e);
		goto out;
	}
	/* The rest of the stream (tar padding, compression trailer) still goes to the tap. */
	while ((r = (int)src_fill(&s)) > 0)
		;
	if (r < 0)
		goto out;
	rc = 0;
out:
	archive_read_free(a);
	archive_policy_free(&pol);
	free(s.buf);
	return rc;
}

int archive_check_fd(int fd, int cancel_fd, uint64_t max_bytes, enum archive_links links,
		     archive_tap_fn tap, void *arg, struct archive_stats *st, struct sbx_err *e)
{
	return archive_check_tree(fd, cancel_fd, max_bytes, links, NULL, tap, arg, st, e);
}

/* ---- extracting ---- */

/* Long: one libarchive read loop: each entry checked by the policy, placed and written under
 * the caps in the order libarchive gives them; the checks themselves are archive_policy.c,
 * the writing archive_place.c. */
int archive_unpack_tree(int fd, const char *dir, uint64_t max_bytes,
			const struct archive_tree *tree, const struct archive_unpack_opts *uo,
			struct archive_stats *st, struct sbx_err *e)
{
	struct src s = {fd, -1, NULL, NULL, e, false, xmalloc(ARCHIVE_IO_BUF)};
	struct archive_policy pol;
	struct archive *a = reader_new();
	struct archive_place *pl;
	struct archive_entry *ent;
	int r, rc = -1;

	memset(st, 0, sizeof *st);
	archive_policy_init(&pol, max_bytes, ARCHIVE_LINKS_SKIP, tree, st);
	if ((pl = archive_place_open(dir, uo ? uo->tmp : NULL, uo && uo->sync, e)) == NULL)
		goto out;
	if (archive_read_open(a, &s, NULL, src_read, NULL) != ARCHIVE_OK) {
		read_error(a, &s, e);
		goto out;
	}
	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		char q[ARCHIVE_QUOTE_MAX + 16];

		int take = archive_policy_check(&pol, ent, e);
		if (take < 0)
			goto out;
		/* The top entry is the directory itself: its owner, mode and time stay as they are
		 * (an archive must not lock the home's owner out of it). A link out is left out. */
		if (take == 1 || archive_policy_is_root(archive_entry_pathname(ent)))
			continue;
		/* Set-id bits would outlive the sandbox on the host: drop them. No owner either:
		 * files belong to whoever restores. */
		archive_entry_set_perm(ent, archive_entry_perm(ent) & 01777);
		archive_policy_rename(&pol, ent);
		if ((r = archive_place_entry(pl, a, ent, &st->bytes)) == -2) {
			read_error(a, &s, e);
			goto out;
		}
		if (r < 0) {
			bool file = archive_entry_filetype(ent) == AE_IFREG &&
				    archive_entry_hardlink(ent) == NULL;
			err_sys(e, errno, "cannot %s \"%s\"", file ? "write" : "extract",
				archive_policy_quote(archive_entry_pathname(ent), q, sizeof q));
			goto out;
		}
		if (!archive_policy_is_root(archive_entry_pathname(ent)))
			st->files++;
	}
	if (r != ARCHIVE_EOF) {
		read_error(a, &s, e);
		goto out;
	}
	if (archive_place_finish(pl, e) < 0)
		goto out;
	rc = 0;
out:
	archive_place_free(pl);
	archive_read_free(a);
	archive_policy_free(&pol);
	free(s.buf);
	return rc;
}

int archive_unpack_fd(int fd, const char *dir, uint64_t max_bytes, struct archive_stats *st,
		      struct sbx_err *e)
{
	return archive_unpack_tree(fd, dir, max_bytes, NULL, NULL, st, e);
}

/* ---- filtering ---- */

/* Copies one entry, header and data, from the reader to the writer. */
static int filter_entry(struct archive *a, struct archive *w, struct archive_entry *ent,
			const struct src *s, const struct archive_sink *fs, struct archive_stats *st,
			struct sbx_err *e)
{
	const void *blk;
	size_t n;
	la_int64_t off;
	int r;

	if (archive_write_header(w, ent) < ARCHIVE_WARN)
		return archive_sink_error(w, fs, e);
	while ((r = archive_read_data_block(a, &blk, &n, &off)) == ARCHIVE_OK) {
		if (archive_write_data(w, blk, n) < 0)
			return archive_sink_error(w, fs, e);
		st->bytes += n;
	}
	if (r != ARCHIVE_EOF)
		return read_error(a, s, e);
	return 0;
}

int archive_filter_fd(int fd, int cancel_fd, uint64_t max_bytes, const struct archive_tree *tree,
		      archive_tap_fn sink, void *arg, struct archive_stats *st, struct sbx_err *e)
{
	struct src s = {fd, cancel_fd, NULL, NULL, e, false, xmalloc(ARCHIVE_IO_BUF)};
	struct archive_sink fs = {sink, arg, e, false};
	struct archive_policy pol;
	struct archive *a = reader_new(), *w = archive_write_new();
	struct archive_entry *ent;
	int r, rc = -1;

	memset(st, 0, sizeof *st);
	if (w == NULL)
		abort();
	archive_policy_init(&pol, max_bytes, ARCHIVE_LINKS_SKIP, tree, st);
	archive_write_set_format_gnutar(w);
	archive_write_add_filter_none(w);
	if (archive_sink_open(w, &fs, e) < 0)
		goto out;
	if (archive_read_open(a, &s, NULL, src_read, NULL) != ARCHIVE_OK) {
		read_error(a, &s, e);
		goto out;
	}
	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		int take = archive_policy_check(&pol, ent, e);
		if (take < 0)
			goto out;
		if (take == 1)
			continue;	/* a link out: left out, named in st */
		archive_policy_rename(&pol, ent);
		if (filter_entry(a, w, ent, &s, &fs, st, e) < 0)
			goto out;
		if (!archive_policy_is_root(archive_entry_pathname(ent)))
			st->files++;
	}
	if (r != ARCHIVE_EOF) {
		read_error(a, &s, e);
		goto out;
	}
	if (archive_write_close(w) != ARCHIVE_OK) {
		archive_sink_error(w, &fs, e);
		goto out;
	}
	rc = 0;
out:
	archive_write_free(w);
	archive_read_free(a);
	archive_policy_free(&pol);
	free(s.buf);
	return rc;
}
