/* archive.c — pack, check and extract sandbox-home tarballs with libarchive. */
#include "archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

/* Size of one read from a file or a stream: large enough to keep syscalls rare. */
#define IO_BUF (256 * 1024)
/* gzip level for new backups: 6 is gzip's own default, the size upstream's backups have. */
#define GZIP_LEVEL "6"
/* zstd level: its fastest; still as small as gzip -6 on typical homes, at several times the
 * speed (snapshots run at every turn boundary, so speed comes first). */
#define ZSTD_LEVEL "1"
/* Longest entry name we accept (PATH_MAX, what the kernel accepts for a path). */
#define ENTRY_PATH_MAX PATH_MAX
/* How much of an entry name an error message shows. */
#define QUOTE_MAX 200
#define SBX_STR2(x) #x
#define SBX_STR(x) SBX_STR2(x)

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

const char *archive_codec_ext(enum archive_codec c)
{
	return c == ARCHIVE_CODEC_ZSTD ? ".tar.zst" : ".tar.gz";
}

/* An entry name fit for a message: control bytes as \xNN, cut at QUOTE_MAX. */
static const char *quote(const char *s, char *out, size_t cap)
{
	size_t o = 0;

	for (; s && *s && o + 8 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (s && *s)
		o += (size_t)snprintf(out + o, cap - o, "...");
	out[o] = '\0';
	return out;
}

/* ---- the restore policy ---- */

/* What an archive has created so far: normalized path → the kind of entry (ENT_*). */
struct strset {
	char **slot;
	char *kind;
	size_t cap, n;
};

/* The kinds of entries the policy remembers, to refuse what extraction would trip over. */
enum {
	ENT_NONE = 0,
	ENT_DIR = 'd',
	ENT_FILE = 'f',		/* a regular file, or a hard link to one */
	ENT_LINK = 'l',		/* a symlink that is created */
	ENT_LINK_OUT = 'o',	/* a symlink (or a hard link to one) left out: it leads outside */
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* The slot of k, or of the empty place where it would go. */
static size_t strset_slot(const struct strset *s, const char *k)
{
	size_t i;

	for (i = hash(k) & (s->cap - 1); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (strcmp(s->slot[i], k) == 0)
			break;
	return i;
}

/* The kind recorded for k, ENT_NONE when the archive has not created it. */
static int strset_kind(const struct strset *s, const char *k)
{
	size_t i;

	if (s->cap == 0)
		return ENT_NONE;
	i = strset_slot(s, k);
	return s->slot[i] ? s->kind[i] : ENT_NONE;
}

/* Records k (or a later entry of the same name) as kind. */
static void strset_add(struct strset *s, const char *k, int kind)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap) {
		struct strset g = {xcalloc(s->cap ? s->cap * 2 : 64, sizeof(char *)),
				   xcalloc(s->cap ? s->cap * 2 : 64, 1), s->cap ? s->cap * 2 : 64, 0};
		for (i = 0; i < s->cap; i++) {
			if (s->slot[i]) {
				size_t j = strset_slot(&g, s->slot[i]);
				g.slot[j] = s->slot[i];
				g.kind[j] = s->kind[i];
				g.n++;
			}
		}
		free(s->slot);
		free(s->kind);
		*s = g;
	}
	i = strset_slot(s, k);
	if (s->slot[i] == NULL) {
		s->slot[i] = xstrdup(k);
		s->n++;
	}
	s->kind[i] = (char)kind;
}

static void strset_free(struct strset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	free(s->kind);
	memset(s, 0, sizeof *s);
}

struct policy {
	uint64_t max_bytes, total, entries;
	struct strset links;		/* every entry created so far, by kind (not only links) */
	enum archive_links outside;	/* what becomes of symlinks whose target leaves the tree */
	struct archive_stats *st;	/* records the links left out */
};

/* Normalizes an entry path into out ("a/b", "" for the root); why says what is wrong. */
/* The next path component of *p other than "" and "."; its length (0 at the end). */
static size_t next_part(const char **p, const char **part)
{
	for (;;) {
		const char *q = strchr(*p, '/');
		size_t n = q ? (size_t)(q - *p) : strlen(*p);
		*part = *p;
		*p += n + (q != NULL);
		if (n == 0 && q == NULL)
			return 0;
		if (n > 1 || (n == 1 && **part != '.'))
			return n;
	}
}

static int normalize(const char *in, char *out, size_t cap, const char **why)
{
	size_t o = 0, n;
	const char *p = in, *part;

	if (in == NULL || *in == '\0')
		return *why = "empty name", -1;
	if (*in == '/')
		return *why = "absolute path", -1;
	if (strlen(in) >= ENTRY_PATH_MAX)
		return *why = "name too long", -1;
	while ((n = next_part(&p, &part)) > 0) {
		if (n == 2 && part[0] == '.' && part[1] == '.')
			return *why = "\"..\" path component", -1;
		if (n > NAME_MAX)
			return *why = "a name component longer than " SBX_STR(NAME_MAX) " bytes", -1;
		if (o + n + 2 > cap)
			return *why = "name too long", -1;
		if (o)
			out[o++] = '/';
		memcpy(out + o, part, n);
		o += n;
	}
	out[o] = '\0';
	return 0;
}

/* The first proper prefix of path that the archive made a symlink (or, with files, a file):
 * nothing may be reached through one. *kind gets what it is. */
static const char *through(const struct policy *pol, char *path, bool files, int *kind)
{
	char *s;

	for (s = path; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		*kind = strset_kind(&pol->links, path);
		if (*kind == ENT_LINK || *kind == ENT_LINK_OUT || (files && *kind == ENT_FILE))
			return path;
		*s = '/';
	}
	return NULL;
}

/* A symlink target that stays in the tree is relative, with only leading ".." (no more of
 * them than the link's depth). One that leaves it (absolute, or climbing out: a python venv's
 * bin/python -> /usr/bin/python3) sets *outside. Any other ".." after a name (a name may
 * itself be a link, making "name/.." land anywhere) and an empty target are problems. */
static const char *link_target_problem(const char *target, int parent_depth, bool *outside)
{
	const char *p = target, *part;
	bool named = false;
	size_t n;

	*outside = false;
	if (*target == '\0')
		return "empty symlink target";
	if (*target == '/') {
		*outside = true;
		return "symlink target is an absolute path outside the home directory";
	}
	while ((n = next_part(&p, &part)) > 0) {
		if (n == 2 && part[0] == '.' && part[1] == '.') {
			if (named)
				return "symlink target has \"..\" after a name";
			if (--parent_depth < 0) {
				*outside = true;
				return "symlink target climbs out of the home directory";
			}
		} else {
			named = true;
		}
	}
	return NULL;
}

/* Records a symlink left out under its name in the archive (see archive_stats). */
static void note_link_out(struct archive_stats *st, const char *name)
{
	st->link_names = xrealloc(st->link_names, (st->nlink_names + 1) * sizeof *st->link_names);
	st->link_names[st->nlink_names++] = xstrdup(name);
}

void archive_stats_free(struct archive_stats *st)
{
	for (size_t i = 0; i < st->nlink_names; i++)
		free(st->link_names[i]);
	free(st->link_names);
	st->link_names = NULL;
	st->nlink_names = 0;
}

/* Whether an entry name is the archive's top ("./", ".", "./."). */
static bool is_root(const char *name)
{
	for (const char *p = name; *p; p++) {
		if (*p == '.' && (p[1] == '/' || p[1] == '\0') && (p == name || p[-1] == '/'))
			continue;
		if (*p != '/')
			return false;
	}
	return true;
}

static int refuse(struct sbx_err *e, const char *name, const char *why)
{
	char q[QUOTE_MAX + 16];

	return err_set(e, SBX_EPERM, "refusing entry \"%s\": %s", quote(name, q, sizeof q), why);
}

/* What a hard link to hl makes (the kind of its target: a file, or a symlink kept or left
 * out with it), or -1 refused: extraction could not make it (a target that is not an earlier
 * entry, a directory) or it would leave the tree. */
static int hardlink_kind(const struct policy *pol, const char *name, const char *hl,
			 struct sbx_err *e)
{
	char tnorm[ENTRY_PATH_MAX], q[QUOTE_MAX + 16], why[QUOTE_MAX + 64];
	const char *bad;
	int kind;

	if (normalize(hl, tnorm, sizeof tnorm, &bad) < 0 || tnorm[0] == '\0' ||
	    through(pol, tnorm, false, &kind))
		return refuse(e, name, "hard link target is outside the home directory");
	kind = strset_kind(&pol->links, tnorm);
	if (kind == ENT_DIR)
		return refuse(e, name, "hard link to a directory");
	if (kind == ENT_NONE) {
		snprintf(why, sizeof why, "hard link target \"./%s\" is not an earlier file of the archive",
			 quote(tnorm, q, sizeof q));
		return refuse(e, name, why);
	}
	return kind;
}

/* What an entry other than a hard link makes, or -1 refused. */
static int entry_kind(const struct policy *pol, struct archive_entry *ent, const char *name,
		      const char *norm, struct sbx_err *e)
{
	const char *why, *target = archive_entry_symlink(ent);
	bool outside;
	int depth = 0;

	switch (archive_entry_filetype(ent)) {
	case AE_IFREG:
		return ENT_FILE;
	case AE_IFDIR:
		return ENT_DIR;
	case AE_IFLNK:
		for (const char *s = norm; (s = strchr(s, '/')) != NULL; s++)
			depth++;
		if ((why = link_target_problem(target ? target : "", depth, &outside)) == NULL)
			return ENT_LINK;
		if (!outside)
			return refuse(e, name, why);
		return pol->outside == ARCHIVE_LINKS_SKIP ? ENT_LINK_OUT : ENT_LINK;
	case AE_IFCHR:
	case AE_IFBLK:
		return refuse(e, name, "device node");
	case AE_IFIFO:
		return refuse(e, name, "fifo");
	case AE_IFSOCK:
		return refuse(e, name, "socket");
	default:
		return refuse(e, name, "unsupported file type");
	}
}

/* Checks one entry against the policy and records what later entries must be checked with.
 * 0: take it; 1: leave it out (a symlink out of the tree, or a hard link to one, with
 * ARCHIVE_LINKS_SKIP); -1: refused. Besides escaping the tree, it refuses what extraction
 * would fail on halfway (a backup sbx cannot restore must be refused before anything is
 * written): hard links to nothing earlier or to a directory, a non-directory over a
 * directory, entries under a file, over-long name components. */
static int policy_check(struct policy *pol, struct archive_entry *ent, struct sbx_err *e)
{
	const char *name = archive_entry_pathname(ent), *why = NULL, *hl = archive_entry_hardlink(ent);
	const char *bad;
	char norm[ENTRY_PATH_MAX], q[QUOTE_MAX + 16], why2[QUOTE_MAX + 64];
	int before, kind;

	if (++pol->entries > ARCHIVE_MAX_ENTRIES)
		return err_set(e, SBX_EPERM, "archive has more than %d entries", ARCHIVE_MAX_ENTRIES);
	if (normalize(name, norm, sizeof norm, &why) < 0)
		return refuse(e, name, why);
	if ((bad = through(pol, norm, true, &kind)) != NULL) {
		snprintf(why2, sizeof why2, "it goes through the %s \"./%s\" of the archive",
			 kind == ENT_FILE ? "file" : "symlink", quote(bad, q, sizeof q));
		return refuse(e, name, why2);
	}
	before = strset_kind(&pol->links, norm);
	if (before == ENT_LINK || before == ENT_LINK_OUT)
		return refuse(e, name, "it replaces a symlink of the archive");
	if (norm[0] == '\0' && (archive_entry_filetype(ent) != AE_IFDIR || hl))
		return refuse(e, name, "the top of the archive must be a directory");
	kind = hl ? hardlink_kind(pol, name, hl, e) : entry_kind(pol, ent, name, norm, e);
	if (kind < 0)
		return -1;
	if (before == ENT_DIR && kind != ENT_DIR)
		return refuse(e, name, "it replaces a directory of the archive");
	if (norm[0] != '\0')
		strset_add(&pol->links, norm, kind);	/* nothing is reached through a link either way */
	if (archive_entry_size_is_set(ent) && archive_entry_size(ent) > 0) {
		pol->total += (uint64_t)archive_entry_size(ent);
		if (pol->total > pol->max_bytes)
			return err_set(e, SBX_EPERM,
				       "refusing archive: it expands beyond the limit of %llu bytes "
				       "(at entry \"%s\")", (unsigned long long)pol->max_bytes,
				       quote(name, norm, QUOTE_MAX + 16));
	}
	if (kind != ENT_LINK_OUT)
		return 0;
	if (pol->st)
		note_link_out(pol->st, name);
	return 1;
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
		n = read(s->fd, s->buf, IO_BUF);
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

int archive_check_fd(int fd, int cancel_fd, uint64_t max_bytes, enum archive_links links,
		     archive_tap_fn tap, void *arg, struct archive_stats *st, struct sbx_err *e)
{
	struct src s = {fd, cancel_fd, tap, arg, e, false, xmalloc(IO_BUF)};
	struct policy pol = {.max_bytes = max_bytes, .outside = links, .st = st};
	struct archive *a = reader_new();
	struct archive_entry *ent;
	int r, rc = -1;

	memset(st, 0, sizeof *st);
	if (archive_read_open(a, &s, NULL, src_read, NULL) != ARCHIVE_OK) {
		read_error(a, &s, e);
		goto out;
	}
	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		const void *blk;
		size_t n;
		la_int64_t off;
		uint64_t got = 0;

		int take = policy_check(&pol, ent, e);
		if (take < 0)
			goto out;
		if (take == 0 && !is_root(archive_entry_pathname(ent)))
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
	strset_free(&pol.links);
	free(s.buf);
	return rc;
}

/* ---- extracting ---- */

int archive_unpack_fd(int fd, const char *dir, uint64_t max_bytes, struct archive_stats *st,
		      struct sbx_err *e)
{
	struct src s = {fd, -1, NULL, NULL, e, false, xmalloc(IO_BUF)};
	struct policy pol = {.max_bytes = max_bytes, .outside = ARCHIVE_LINKS_SKIP, .st = st};
	struct archive *a = reader_new(), *w = archive_write_disk_new();
	struct archive_entry *ent;
	int r, rc = -1, cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	memset(st, 0, sizeof *st);
	if (w == NULL)
		abort();
	/* libarchive's own guards, under ours: no "..", no absolute names, never write through
	 * a symlink already on disk. No OWNER: files belong to whoever restores. */
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
				       ARCHIVE_EXTRACT_SECURE_SYMLINKS |
				       ARCHIVE_EXTRACT_SECURE_NODOTDOT |
				       ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
	if (cwd < 0) {
		err_sys(e, errno, "cannot open the working directory");
		goto out;
	}
	if (chdir(dir) < 0) {
		err_sys(e, errno, "cannot enter %s", dir);
		goto out;
	}
	if (archive_read_open(a, &s, NULL, src_read, NULL) != ARCHIVE_OK) {
		read_error(a, &s, e);
		goto back;
	}
	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		const void *blk;
		size_t n;
		la_int64_t off;
		char q[QUOTE_MAX + 16];

		int take = policy_check(&pol, ent, e);
		if (take < 0)
			goto back;
		/* The top entry is the directory itself: its owner, mode and time stay as they are
		 * (an archive must not lock the home's owner out of it). A link out is left out. */
		if (take == 1 || is_root(archive_entry_pathname(ent)))
			continue;
		/* Set-id bits would outlive the sandbox on the host: drop them. */
		archive_entry_set_perm(ent, archive_entry_perm(ent) & 01777);
		if (archive_write_header(w, ent) < ARCHIVE_WARN) {
			err_set(e, SBX_EIO, "cannot extract \"%s\": %s",
				quote(archive_entry_pathname(ent), q, sizeof q), archive_error_string(w));
			goto back;
		}
		while ((r = archive_read_data_block(a, &blk, &n, &off)) == ARCHIVE_OK) {
			/* libarchive reports a failed write(2) (a full disk) as a mere ARCHIVE_WARN
			 * and would then extend the file with a hole: every warning here is fatal. */
			if (archive_write_data_block(w, blk, n, off) < ARCHIVE_OK) {
				err_set(e, SBX_EIO, "cannot write \"%s\": %s",
					quote(archive_entry_pathname(ent), q, sizeof q),
					archive_error_string(w));
				goto back;
			}
			st->bytes += n;
		}
		if (r != ARCHIVE_EOF) {
			read_error(a, &s, e);
			goto back;
		}
		if (archive_write_finish_entry(w) < ARCHIVE_WARN) {
			err_set(e, SBX_EIO, "cannot finish \"%s\": %s",
				quote(archive_entry_pathname(ent), q, sizeof q), archive_error_string(w));
			goto back;
		}
		if (!is_root(archive_entry_pathname(ent)))
			st->files++;
	}
	if (r != ARCHIVE_EOF) {
		read_error(a, &s, e);
		goto back;
	}
	if (archive_write_close(w) < ARCHIVE_WARN) {
		err_set(e, SBX_EIO, "cannot finish the extraction: %s", archive_error_string(w));
		goto back;
	}
	rc = 0;
back:
	if (fchdir(cwd) < 0 && rc == 0)
		rc = err_sys(e, errno, "cannot return to the working directory");
out:
	if (cwd >= 0)
		close(cwd);
	archive_write_free(w);
	archive_read_free(a);
	strset_free(&pol.links);
	free(s.buf);
	return rc;
}

/* ---- packing ---- */

struct sink {
	archive_tap_fn fn;
	void *arg;
	struct sbx_err *e;
	bool failed;
};

static la_ssize_t sink_write(struct archive *a, void *ctx, const void *p, size_t n)
{
	struct sink *s = ctx;

	if (s->fn(p, n, s->arg, s->e) < 0) {
		s->failed = true;
		archive_set_error(a, EIO, "%s", s->e->msg);
		return -1;
	}
	return (la_ssize_t)n;
}

static int write_error(struct archive *a, const struct sink *s, struct sbx_err *e)
{
	if (s->failed)
		return -1;
	return err_set(e, SBX_EIO, "cannot write the archive: %s",
		       archive_error_string(a) ? archive_error_string(a) : "unknown error");
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
static int copy_data(struct archive *a, int fd, int64_t size, char *buf, const struct sink *s,
		     struct sbx_err *e)
{
	while (size > 0) {
		size_t want = size > IO_BUF ? IO_BUF : (size_t)size;
		ssize_t n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			memset(buf, 0, want);
			n = (ssize_t)want;
		}
		if (archive_write_data(a, buf, (size_t)n) < 0)
			return write_error(a, s, e);
		size -= n;
	}
	return 0;
}

int archive_pack_dir(const char *dir, enum archive_codec codec, archive_tap_fn fn, void *arg,
		     struct archive_stats *st, struct sbx_err *e)
{
	struct sink s = {fn, arg, e, false};
	struct policy pol = {.max_bytes = ARCHIVE_MAX_EXPANDED, .outside = ARCHIVE_LINKS_KEEP};
	struct archive *a = archive_write_new(), *disk = archive_read_disk_new();
	struct archive_entry_linkresolver *lr = archive_entry_linkresolver_new();
	struct archive_entry *ent = archive_entry_new(), *spare = NULL, *out_ent;
	char *root = xstrdup(dir), *buf = xmalloc(IO_BUF);
	size_t rootlen = strlen(root);
	struct stat sb;
	int r, rc = -1;

	memset(st, 0, sizeof *st);
	if (a == NULL || disk == NULL || lr == NULL || ent == NULL)
		abort();
	while (rootlen > 1 && root[rootlen - 1] == '/')
		root[--rootlen] = '\0';
	if (lstat(root, &sb) < 0) {
		err_sys(e, errno, "cannot read %s", root);
		goto out;
	}
	if (!S_ISDIR(sb.st_mode)) {
		err_set(e, SBX_EIO, "%s is not a directory", root);
		goto out;
	}
	/* GNU tar's own format, what upstream's `tar -zcf` writes: names as raw bytes (no pax
	 * hdrcharset header GNU tar would warn about), long names as ././@LongLink. */
	archive_write_set_format_gnutar(a);
	archive_entry_linkresolver_set_strategy(lr, archive_format(a));
	if (codec == ARCHIVE_CODEC_ZSTD) {
		archive_write_add_filter_zstd(a);
		archive_write_set_filter_option(a, "zstd", "compression-level", ZSTD_LEVEL);
	} else {
		archive_write_add_filter_gzip(a);
		archive_write_set_filter_option(a, "gzip", "compression-level", GZIP_LEVEL);
	}
	/* No padding after the compressed stream: zstd readers take trailing zeros for a frame. */
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open(a, &s, NULL, sink_write, NULL) != ARCHIVE_OK) {
		write_error(a, &s, e);
		goto out;
	}
	/* Physical walk: symlinks are entries, never followed; other file systems not entered. */
	archive_read_disk_set_symlink_physical(disk);
	archive_read_disk_set_behavior(disk, ARCHIVE_READDISK_NO_TRAVERSE_MOUNTS |
				       ARCHIVE_READDISK_NO_XATTR | ARCHIVE_READDISK_NO_ACL |
				       ARCHIVE_READDISK_NO_FFLAGS | ARCHIVE_READDISK_NO_SPARSE);
	archive_read_disk_set_standard_lookup(disk);
	if (archive_read_disk_open(disk, root) != ARCHIVE_OK) {
		err_set(e, SBX_EIO, "cannot read %s: %s", root, archive_error_string(disk));
		goto out;
	}
	for (;;) {
		const char *p;
		char *name;
		int fd = -1;

		archive_entry_clear(ent);
		r = archive_read_next_header2(disk, ent);
		if (r == ARCHIVE_EOF)
			break;
		/* A directory we may not enter is left out, like an unreadable file. */
		if (r == ARCHIVE_FAILED) {
			st->skipped++;
			continue;
		}
		if (r < ARCHIVE_WARN) {
			err_set(e, SBX_EIO, "cannot read %s: %s", root, archive_error_string(disk));
			goto out;
		}
		if (r == ARCHIVE_WARN && archive_entry_pathname(ent) == NULL)
			continue;
		archive_read_disk_descend(disk);
		p = archive_entry_pathname(ent);
		if (strncmp(p, root, rootlen) != 0 || (p[rootlen] != '\0' && p[rootlen] != '/'))
			continue;
		name = xasprintf(".%s%s", p + rootlen, p[rootlen] ? "" : "/");
		archive_entry_copy_sourcepath(ent, p);
		archive_entry_copy_pathname(ent, name);
		free(name);
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
		/* A symlink's other names are stored as symlinks of their own, not hard links: a
		 * restore leaving the link out (it leads outside) can leave each name out alike. */
		if (archive_entry_filetype(ent) == AE_IFLNK)
			archive_entry_set_nlink(ent, 1);
		out_ent = ent;
		archive_entry_linkify(lr, &out_ent, &spare);
		if (out_ent == NULL)
			out_ent = ent;
		/* What restore would refuse is not written: a backup sbx makes is one it restores. */
		if (policy_check(&pol, out_ent, e) < 0) {
			if (fd >= 0)
				close(fd);
			goto out;
		}
		r = archive_write_header(a, out_ent);
		if (r < ARCHIVE_WARN) {
			if (fd >= 0)
				close(fd);
			write_error(a, &s, e);
			goto out;
		}
		if (fd >= 0 && archive_entry_hardlink(out_ent) == NULL &&
		    copy_data(a, fd, archive_entry_size(out_ent), buf, &s, e) < 0) {
			close(fd);
			goto out;
		}
		if (fd >= 0)
			close(fd);
		if (strcmp(archive_entry_pathname(out_ent), "./") != 0)
			st->files++;
		if (archive_entry_hardlink(out_ent) == NULL)
			st->bytes += (uint64_t)archive_entry_size(out_ent);
		if (archive_write_finish_entry(a) < ARCHIVE_WARN) {
			write_error(a, &s, e);
			goto out;
		}
	}
	if (archive_write_close(a) != ARCHIVE_OK) {
		write_error(a, &s, e);
		goto out;
	}
	rc = 0;
out:
	archive_read_free(disk);
	archive_write_free(a);
	archive_entry_free(ent);
	archive_entry_linkresolver_free(lr);
	strset_free(&pol.links);
	free(root);
	free(buf);
	return rc;
}
