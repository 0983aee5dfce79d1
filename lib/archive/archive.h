/* archive.h — tar archives of a sandbox home through libarchive: packing a host directory
 * (entries named "./…", links stored as links, never followed), checking an archive against
 * the restore policy as it streams by, and extracting it without letting any entry escape.
 * Ownership: nothing returned needs freeing; file descriptors stay the caller's. */
#ifndef SBX_ARCHIVE_H
#define SBX_ARCHIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

enum archive_codec {
	ARCHIVE_CODEC_GZIP,	/* .tar.gz, what upstream writes and reads */
	ARCHIVE_CODEC_ZSTD,	/* .tar.zst, faster; sbx only */
	ARCHIVE_CODEC_NONE,	/* plain tar: a stream to or from tar in a sandbox (sbx-cp) */
};

/* Default cap on the expanded size of an archive (sum of file sizes): far above any agent's
 * working tree, low enough that a gzip bomb cannot fill the host disk behind our back. */
#define ARCHIVE_MAX_EXPANDED (UINT64_C(8) << 30)
/* Cap on the number of entries: bounds memory and time spent on a hostile archive. */
#define ARCHIVE_MAX_ENTRIES 2000000

struct archive_stats {
	uint64_t files;		/* entries, the "./" root excluded */
	uint64_t bytes;		/* file contents, uncompressed */
	uint64_t skipped;	/* pack: sockets, devices, fifos and files that changed under us */
	/* check (ARCHIVE_LINKS_SKIP) and unpack: the symlinks left out because their target
	 * leaves the home, by their names in the archive (bounded by ARCHIVE_MAX_ENTRIES);
	 * free with archive_stats_free. */
	char **link_names;
	size_t nlink_names;
};

/* Symlinks whose target leaves the home (absolute, like a python venv's bin/python ->
 * /usr/bin/python3, or climbing out with ".."): a snapshot keeps them as they are, never
 * following them, as upstream's tar does; a restore leaves them out (they are not created)
 * and names them. Entries reached through any symlink are refused either way. */
enum archive_links {
	ARCHIVE_LINKS_KEEP,	/* accepted: pack, and checking a snapshot as it is taken */
	ARCHIVE_LINKS_SKIP,	/* left out and recorded: checking a backup to restore, unpack */
};

void archive_stats_free(struct archive_stats *st);
/* Hands st's link_names (and their count) to the caller, who frees them with
 * archive_names_free; st keeps none. */
void archive_stats_take_names(struct archive_stats *st, char ***names, size_t *n);
/* Frees n names and their array. */
void archive_names_free(char **names, size_t n);

/* What a copy (sbx-cp) moves: the entry top and what is below it, created under the name as.
 * Every other entry is refused; the top and every symlink must stay within the tree (a
 * symlink at the top, or one leading out of it, leads outside). top "" or "." is the whole
 * archive, the tree of a restore. */
struct archive_tree {
	const char *top;
	const char *as;		/* NULL: top's own name */
};

/* Receives the archive bytes as they pass: what pack writes, what check reads. Returns 0, or
 * -1 with e set to stop the operation. */
typedef int (*archive_tap_fn)(const void *p, size_t n, void *arg, struct sbx_err *e);

/* An archive_tap_fn writing every byte to the file descriptor *(int *)arg (a pipe, a spool). */
int archive_fd_sink(const void *p, size_t n, void *arg, struct sbx_err *e);

/* "gzip"/"zstd" → codec; returns 0 or -1. */
int archive_codec_parse(const char *s, enum archive_codec *out);
/* ".tar.gz" or ".tar.zst". */
const char *archive_codec_ext(enum archive_codec c);

/* Writes a compressed tar of dir's contents to sink: entries "./" and "./path", symlinks
 * stored as symlinks (those leading out of dir too; a symlink's other names as symlinks of
 * their own, never hard links to it), hard links as links, mount points not
 * crossed, sockets, fifos and device nodes left out. An entry restore would refuse (see
 * archive_unpack_fd) fails the whole run, naming it: every archive written here is one
 * archive_unpack_fd accepts. Each file is opened without following links and must still be the inode
 * that was listed (a file swapped for a link mid-run is left out, never followed). */
int archive_pack_dir(const char *dir, enum archive_codec codec, archive_tap_fn sink, void *arg,
		     struct archive_stats *st, struct sbx_err *e);
/* The same for path, a directory or not, whose entry is named top ("name", then "name/…"),
 * or whose contents are written as "./…" when top is ".". */
int archive_pack_tree(const char *path, const char *top, enum archive_codec codec,
		      archive_tap_fn sink, void *arg, struct archive_stats *st, struct sbx_err *e);

/* Reads an archive (gzip, zstd or plain tar) from fd to its very end, passing every byte read
 * to tap (may be NULL), and checks every entry against the restore policy (see
 * archive_unpack_fd) with max_bytes as the expansion cap. cancel_fd (or -1) becoming
 * readable stops it with SBX_ECANCELED. */
int archive_check_fd(int fd, int cancel_fd, uint64_t max_bytes, enum archive_links links,
		     archive_tap_fn tap, void *arg, struct archive_stats *st, struct sbx_err *e);
/* The same for a copy: only the tree's entries are allowed (see struct archive_tree). */
int archive_check_tree(int fd, int cancel_fd, uint64_t max_bytes, enum archive_links links,
		       const struct archive_tree *tree, archive_tap_fn tap, void *arg,
		       struct archive_stats *st, struct sbx_err *e);

/* Extracts the archive on fd into the existing directory dir, modes and mtimes kept
 * (set-id bits dropped). Symlinks whose target leaves dir are not created (counted and named
 * in st), nor are hard links to them. Refused, naming the entry: absolute paths, ".."
 * components, other ".." in link targets, entries reached through a symlink of the archive,
 * hard links to outside, device nodes, fifos, a total size above max_bytes, and what the
 * extraction would fail on halfway (hard links to a directory or to nothing earlier in the
 * archive, a non-directory over a directory, an entry under a file, a name component over
 * NAME_MAX bytes).
 * Every entry is placed relative to one fd of dir, never through a symlink on disk (one a
 * sandbox swapped in makes that entry fail; nothing is written outside dir).
 * Callers check the whole archive first (archive_check_fd) so a refusal leaves dir as it was;
 * the checks here are repeated as a second line of defence. */
int archive_unpack_fd(int fd, const char *dir, uint64_t max_bytes, struct archive_stats *st,
		      struct sbx_err *e);
/* How a copy's extraction writes. */
struct archive_unpack_opts {
	const char *tmp;	/* a name in dir: each file written there, then renamed into place */
	bool sync;		/* fsync each file and directory before it is final */
};
/* The same for a copy: only the tree's entries, its top created under tree->as; uo may be
 * NULL. */
int archive_unpack_tree(int fd, const char *dir, uint64_t max_bytes,
			const struct archive_tree *tree, const struct archive_unpack_opts *uo,
			struct archive_stats *st, struct sbx_err *e);
/* Reads the archive on fd (any compression) and writes, as a plain GNU tar to sink, the
 * entries of tree that pass the restore policy: a refused entry stops it with an error (what
 * was written stays written: the caller says the stream is incomplete), links out are left
 * out and named in st, the top is renamed to tree->as. cancel_fd as for archive_check_fd. */
int archive_filter_fd(int fd, int cancel_fd, uint64_t max_bytes, const struct archive_tree *tree,
		      archive_tap_fn sink, void *arg, struct archive_stats *st, struct sbx_err *e);

#endif
