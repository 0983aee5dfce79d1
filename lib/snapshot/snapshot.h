/* snapshot.h — a sandbox's home to a verified backup and back. A backend that exposes the
 * home on the host (home_path) is read and written directly with libarchive; otherwise tar
 * runs inside the sandbox (upstream's `tar -zcf - -C HOME .` / `tar -zxf - -C HOME`) and the
 * stream is checked as it passes. The host path forks a child that takes the home owner's
 * identity (and runs a thread for the exec path), so callers in threaded programs must not hold
 * locks the child needs. Ownership: results are freed with their *_free function. */
#ifndef SBX_SNAPSHOT_H
#define SBX_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "archive.h"
#include "backend.h"
#include "backup.h"

struct json_object;

/* The default backup budget, in disk caps of the home (issue 27.5). */
#define BACKUP_BUDGET_CAPS 3

struct snapshot_opts {
	const char *homedir;	/* NULL: the sandbox's home; else this directory, via tar inside */
	enum archive_codec codec;
	int keep;		/* backups kept after success */
	uint64_t budget;	/* bytes the session's kept backups may take; 0: three times the
				 * home's disk cap in force (none when the home has no cap) */
	int cancel_fd;		/* -1, or readable when the caller wants it stopped */
	void (*progress)(uint64_t bytes, void *arg);
	void *progress_arg;
};

struct snapshot_result {
	char *path;		/* the new backup */
	uint64_t bytes;		/* its size */
	uint64_t files;		/* entries archived */
	uint64_t skipped;	/* entries left out (sockets, fifos, devices, vanished files) */
	uint64_t budget;	/* the budget applied, 0 for none */
	char sha256[BACKUP_SHA256_HEX + 1];
	struct backup_list pruned;
	char *prune_error;	/* pruning failed (the backup itself is good), or NULL */
};

/* Archives the home of sandbox `session` into the session's backup directory, then prunes to
 * opts->keep and the budget. A failure (or cancellation) leaves no new backup and the old ones
 * as they were. Refused while the home owes a restore (BACKUP_OWED) or holds a partial one
 * (BACKUP_RESTORING), and when the backup alone exceeds the budget. */
int snapshot_take(struct sbx_backend *b, const char *session, const struct snapshot_opts *o,
		  struct snapshot_result *r, struct sbx_err *e);
void snapshot_result_free(struct snapshot_result *r);

struct snapshot_restore_opts {
	const char *homedir;	/* as in snapshot_opts */
	const char *from;	/* a backup file to use instead of the session's newest */
	uint64_t max_bytes;	/* expansion cap (ARCHIVE_MAX_EXPANDED by default) */
	int cancel_fd;
	bool optional;		/* a session without backups is success (restored NULL) */
	bool fresh;		/* restore nothing: empty the home and settle what is owed */
};

struct snapshot_restore_result {
	char *restored;		/* the backup used, NULL when the session has none */
	uint64_t files, bytes;
	struct backup_list skipped;	/* newer backups passed over (failed verification or
					 * extraction), with why */
	struct backup_list sidecar_wrong;	/* backups whose sidecar was wrong but whose
						 * archive verified by its own checksums */
	char **links_out;		/* symlinks not created: their target leaves the home */
	size_t nlinks_out;
};

/* Restores the newest good backup (or opts->from) into sandbox `session`. Each candidate is
 * verified whole (checksum, structure, entry policy) before anything is written, so a refused
 * archive leaves the home as it was; a bad newest backup falls back to the next one, and so
 * does one whose extraction fails (the home is emptied first). While a candidate is extracted
 * the session's BACKUP_RESTORING mark names it; it is removed only when one completes, and so
 * is BACKUP_OWED. No backup at all is SBX_ENOTFOUND saying so (success with restored NULL when
 * opts->optional); backups that are all bad are an error, which settles the owed restore only
 * when every one was refused for what it holds (nothing restorable is left to wait for); a
 * full disk is said as such and leaves the restore owed. opts->fresh restores nothing, empties
 * the home and settles both marks (a fresh start by choice). */
int snapshot_restore(struct sbx_backend *b, const char *session,
		     const struct snapshot_restore_opts *o, struct snapshot_restore_result *r,
		     struct sbx_err *e);
void snapshot_restore_free(struct snapshot_restore_result *r);

/* The documents printed for a result (snapshot_json.c), new references: a backup written
 * {"path","bytes","files","sha256","pruned"}; the backups pruned of a session
 * {"session","pruned"}; a restore {"restored","files","bytes","skipped_corrupt","skipped_links"}. */
struct json_object *snapshot_result_json(const struct snapshot_result *r);
struct json_object *snapshot_pruned_json(const char *session, const struct backup_list *pruned);
struct json_object *snapshot_restore_json(const struct snapshot_restore_result *r);
/* The warning about n symlinks left out (sbx-restore's and sbx-cp's): "left out N symlink(s)
 * <where>: a, b, … and M more", naming at most SNAPSHOT_LINKS_WARNED (the JSON lists them all).
 * NULL when n is 0; else the caller frees it. */
#define SNAPSHOT_LINKS_WARNED 5
char *snapshot_links_warning(char *const *links, size_t n, const char *where);

#endif
