/* archive_int.h — for lib/archive/archive*.c only: the entry policy every archive passes (the
 * restore rules of archive.h, lib/archive/archive_policy.c), shared by checking, extracting,
 * filtering and packing; and the writing end shared by packing and filtering
 * (lib/archive/archive_pack.c). Ownership: a policy's memory is freed with archive_policy_free. */
#ifndef SBX_ARCHIVE_INT_H
#define SBX_ARCHIVE_INT_H

#include <archive.h>
#include <archive_entry.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "archive.h"
#include "strset.h"

/* Size of one read from a file or a stream: large enough to keep syscalls rare. */
#define ARCHIVE_IO_BUF (256 * 1024)
/* How much of an entry name an error message shows. */
#define ARCHIVE_QUOTE_MAX 200

struct archive_policy {
	uint64_t max_bytes, total, entries;
	struct strset seen;		/* every entry created so far: normalized path → kind */
	enum archive_links outside;	/* what becomes of symlinks whose target leaves the tree */
	struct archive_stats *st;	/* records the links left out (may be NULL) */
	char *top;			/* a copy's tree (normalized), "" for the whole archive */
	size_t top_len;
	int top_depth;			/* its components */
	char *as;			/* the name top is created under, or NULL */
};

/* A policy for max_bytes, links out, and tree (NULL: the whole archive, as a restore). */
void archive_policy_init(struct archive_policy *pol, uint64_t max_bytes,
			 enum archive_links outside, const struct archive_tree *tree,
			 struct archive_stats *st);
void archive_policy_free(struct archive_policy *pol);
/* Checks one entry and records what later entries are checked with. 0: take it; 1: leave it
 * out (a symlink out of the tree, or a hard link to one, with ARCHIVE_LINKS_SKIP); -1:
 * refused, with the entry named in e. */
int archive_policy_check(struct archive_policy *pol, struct archive_entry *ent,
			 struct sbx_err *e);
/* Renames a checked entry (and its hard link target) from the tree's top to its "as". */
void archive_policy_rename(const struct archive_policy *pol, struct archive_entry *ent);
/* Whether an entry name is the archive's top directory ("./", ".", "./."). */
bool archive_policy_is_root(const char *name);
/* An entry name fit for a message: control bytes as \xNN, cut at ARCHIVE_QUOTE_MAX. */
const char *archive_policy_quote(const char *s, char *out, size_t cap);

/* Where an archive being written goes: fn gets its bytes. */
struct archive_sink {
	archive_tap_fn fn;
	void *arg;
	struct sbx_err *e;
	bool failed;		/* fn failed: its error is in e */
};
/* Opens writer a (format and filters set) onto the sink. 0, or -1 with e. */
int archive_sink_open(struct archive *a, struct archive_sink *s, struct sbx_err *e);
/* The error of a failed write: the sink's own, else libarchive's. Returns -1. */
int archive_sink_error(struct archive *a, const struct archive_sink *s, struct sbx_err *e);

/* Where an extraction writes (lib/archive/archive_place.c): entries placed below the directory dir
 * without following anything. tmp (or NULL): a name in dir each regular file is written
 * under, then renamed to its place (a file is replaced only by a complete one). sync: files
 * and directories fsynced before they are final. NULL with e when dir cannot be opened. */
struct archive_place;
struct archive_place *archive_place_open(const char *dir, const char *tmp, bool sync,
					 struct sbx_err *e);
/* Places one checked entry, its data read from a. 0; -1 with errno (a write); -2: the read
 * failed (a's error). */
int archive_place_entry(struct archive_place *pl, struct archive *a, struct archive_entry *ent,
			uint64_t *bytes);
/* Sets the directories' modes and times, deepest first. 0, or -1 with e. */
int archive_place_finish(struct archive_place *pl, struct sbx_err *e);
void archive_place_free(struct archive_place *pl);

#endif
