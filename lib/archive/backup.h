/* backup.h — a session's backup directory in upstream's layout
 * (~/.local/sandboxed-tools/<session>/fs/backup-YYYYMMDDTHHMMSS.tar.gz, local time): names,
 * listing, SHA-256 sidecars ("<backup>.sha256", sha256sum format), atomic commits, the marks
 * that say a sandbox's home still owes a restore, and pruning (count, budget).
 * Ownership: returned strings and lists are the caller's (free, backup_list_free). */
#ifndef SBX_BACKUP_H
#define SBX_BACKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "archive.h"
#include "err.h"

/* How many backups a session keeps: upstream's number. */
#define BACKUP_DEFAULT_KEEP 5
/* A ".tmp" no process holds a lock on and untouched this long is a dead writer's (an upstream
 * writer holds no lock, so the age keeps its live file safe). */
#define BACKUP_STALE_TMP_SECONDS 60
/* "backup-" + "YYYYMMDDTHHMMSS" */
#define BACKUP_STAMP_LEN 15
/* sbx's names add "_" and the nanoseconds (9 digits) to upstream's stamp, so two backups in
 * one second never share a name: "backup-20261207T174500_123456789.tar.gz". '_' (0x5f) sorts
 * after '.' (0x2e), so upstream's same-second "backup-20261207T174500.tar.gz" comes first and
 * ours after it, by name as by time; a '.' or a digit there would sort before upstream's (a
 * digit also makes the stamp's end ambiguous), '-' and ',' sort before '.' too. The fixed
 * width keeps name order time order among ours. Upstream's names stay readable. */
#define BACKUP_SUBSEC_LEN 10
#define BACKUP_SHA256_HEX 64

/* Names of complete backups, oldest first (sorted by time stamp). */
struct backup_list {
	char **name;
	char **why;	/* per name, or NULL: why it was skipped (restore) */
	size_t n;
};
void backup_list_add(struct backup_list *l, const char *name, const char *why);
void backup_list_free(struct backup_list *l);

/* The session's backup directory (created 0700 like upstream); newly allocated. */
char *backup_dir(const char *session, struct sbx_err *e);
/* A restore into the session's sandbox that began writing and has not finished leaves the
 * file BACKUP_RESTORING (holding the backup's path) in the backup directory: the home is then
 * only partly restored. Snapshots refuse to run while it is there (they would save the part
 * and, pruning, push out the good backups), and agent-loop restores again. */
#define BACKUP_RESTORING ".restore-incomplete"
/* Writes the mark (synced) naming the backup being restored; 0 or -1 with e. */
int backup_restoring_mark(const char *dir, const char *backup, struct sbx_err *e);
/* Removes the mark; 0 or -1 with e (a mark already gone is fine). */
int backup_restoring_clear(const char *dir, struct sbx_err *e);
/* The backup named by the session's mark, newly allocated, or NULL when there is none. */
char *backup_restoring(const char *session);

/* A sandbox made new for a session that has backups owes a restore: its home is empty, and a
 * snapshot of it would become the newest backup and, pruning, push the good ones out. The
 * file BACKUP_OWED in the backup directory says so from before the sandbox exists (written
 * and synced, then linked into place) until a restore completes or a fresh start is chosen
 * (sbx-restore -fresh, or no backup being restorable at all). Snapshots refuse to run while
 * it is there; agent-loop restores first and runs nothing while it cannot. */
#define BACKUP_OWED ".restore-owed"
/* sbx_create's half: before the backend creates or reuses sandbox `session`, marks a restore
 * as owed when the session has backups and no mark is there yet (made whole under a
 * temporary name, then linked into place: of two creates only one writes it). *wrote says
 * whether this call wrote it. No session directory, or no backup: nothing to owe. 0 or -1
 * with e. */
int backup_owed_begin(const char *session, bool *wrote, struct sbx_err *e);
/* After the create: a reused sandbox keeps the state it had, so a mark this create wrote is
 * taken back (one that was there before stays: an earlier create was never restored); a new
 * sandbox keeps it. */
void backup_owed_settle(const char *session, bool wrote, bool reused);
/* Whether the session's sandbox owes a restore (the mark is there). */
bool backup_owed(const char *session);
/* Removes the mark from the backup directory dir; 0 or -1 with e (none there is fine). */
int backup_owed_clear(const char *dir, struct sbx_err *e);

/* Whether name is a complete backup's name (upstream's or sbx's sub-second form); sets *codec
 * from its extension. */
bool backup_name_valid(const char *name, enum archive_codec *codec);
/* Lists the complete backups in dir (".tmp" files and sidecars left out). */
int backup_list_dir(const char *dir, struct backup_list *out, struct sbx_err *e);
/* The sessions (valid names) under the session root that have a backup directory, in the
 * root's order; none when there is no root directory yet. -1 with e when the root cannot be
 * found. */
int backup_sessions(struct backup_list *out, struct sbx_err *e);
/* Calls fn for every entry name of dir; stops at fn's non-zero, which it returns (0 when fn
 * never stopped it; -1 with e when dir cannot be read). */
int backup_each_name(const char *dir, int (*fn)(const char *, void *), void *arg,
		     struct sbx_err *e);

/* A backup being written: "<final>.XXXXXX.tmp" (0600), locked while it lives. The final name
 * is chosen at commit (a name taken meanwhile is never replaced: a later one is used). */
struct backup_tmp {
	int dir_fd, fd;
	char *dir, *name, *tmp;
	enum archive_codec codec;
	void *sha;		/* EVP_MD_CTX */
	uint64_t bytes;
	uint64_t budget;	/* 0, or the most one backup may take */
	int cancel_fd;		/* -1, or readable when the writer must stop */
	void (*progress)(uint64_t bytes, void *arg);
	void *progress_arg;
};
/* Opens a new temporary backup named for the current local time (and removes the
 * temporaries of writers that are gone). */
int backup_begin(struct backup_tmp *t, const char *dir, enum archive_codec codec,
		 struct sbx_err *e);
/* An archive_tap_fn: writes, hashes, reports progress, honours cancel_fd and stops (SBX_EIO,
 * saying so) when the backup grows beyond budget (0: none). */
int backup_tap(const void *p, size_t n, void *arg, struct sbx_err *e);
/* fsyncs, writes the sidecar, renames both into place and fsyncs the directory. hex gets the
 * SHA-256. The temporary is gone on return either way; backup_end then only frees. */
int backup_commit(struct backup_tmp *t, char hex[BACKUP_SHA256_HEX + 1], struct sbx_err *e);
/* Removes the temporary (if still there) and frees t. */
void backup_end(struct backup_tmp *t);

/* Reads name's sidecar: 1 with hex filled, 0 when there is none, -1 when unreadable. */
int backup_read_sidecar(const char *dir, const char *name, char hex[BACKUP_SHA256_HEX + 1],
			struct sbx_err *e);
/* Opens dir/name for reading (links not followed); -1 with e set. */
int backup_open(const char *dir, const char *name, struct sbx_err *e);
/* How a backup was found good. */
enum backup_vouch {
	BACKUP_BY_SIDECAR,	/* its sidecar's checksum matched */
	BACKUP_BY_ITSELF,	/* no sidecar: the archive's own checksums (gzip CRC-32 and size,
				 * zstd's when written) and structure */
	BACKUP_SIDECAR_WRONG,	/* the sidecar is wrong or unreadable, the archive is intact by
				 * its own checksums: the sidecar is what broke */
};
/* Checks the backup open on fd (from offset 0) completely: the checksum in dir/name's
 * sidecar, and every entry (archive_check_fd with max_bytes). A sidecar that does not match
 * (or cannot be read) does not condemn the archive: it is then checked by its own checksums,
 * read through to the end. 0 = good (*how says why, may be NULL); -1 with the reason in e. */
int backup_verify(int fd, const char *dir, const char *name, uint64_t max_bytes, int cancel_fd,
		  struct archive_stats *st, enum backup_vouch *how, struct sbx_err *e);
/* The archive on fd read through its compression to the end (from offset 0): gzip members'
 * CRC-32 and length, zstd frames. 0 intact; -1 with e. */
int backup_check_stream(int fd, int cancel_fd, struct sbx_err *e);

struct backup_prune_opts {
	int keep;		/* backups kept (at least 1) */
	uint64_t budget;	/* 0, or the bytes the kept backups may take together */
	const char *known_good;	/* NULL, or a backup already known good (the one just made) */
};
/* Deletes the oldest backups (with their sidecars) beyond o->keep or beyond o->budget, and
 * dead writers' ".tmp" files. Only sbx's backups and archives that verify take a kept slot
 * (junk with a backup's name among the newest is left alone and counts for nothing); the
 * newest good backup is never deleted. Holds the directory lock while it deletes, so it is
 * safe beside a running snapshot. Deleted names are added to pruned (may be NULL). */
int backup_prune(const char *dir, const struct backup_prune_opts *o, struct backup_list *pruned,
		 struct sbx_err *e);

#endif
