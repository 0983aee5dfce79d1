/* backup.h — a session's backup directory in upstream's layout
 * (~/.local/sandboxed-tools/<session>/fs/backup-YYYYMMDDTHHMMSS.tar.gz, local time): names,
 * listing, SHA-256 sidecars ("<backup>.sha256", sha256sum format), atomic commits and pruning.
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

/* Whether name is a complete backup's name; sets *codec from its extension. */
bool backup_name_valid(const char *name, enum archive_codec *codec);
/* Lists the complete backups in dir (".tmp" files and sidecars left out). */
int backup_list_dir(const char *dir, struct backup_list *out, struct sbx_err *e);

/* A backup being written: "<final>.XXXXXX.tmp" (0600), locked while it lives. */
struct backup_tmp {
	int dir_fd, fd;
	char *dir, *name, *tmp;
	void *sha;		/* EVP_MD_CTX */
	uint64_t bytes;
	int cancel_fd;		/* -1, or readable when the writer must stop */
	void (*progress)(uint64_t bytes, void *arg);
	void *progress_arg;
};
/* Opens a new temporary backup named for the current local time. */
int backup_begin(struct backup_tmp *t, const char *dir, enum archive_codec codec,
		 struct sbx_err *e);
/* An archive_tap_fn: writes, hashes, reports progress, honours cancel_fd. */
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
/* Checks the backup open on fd (read from its current offset to the end) completely: the
 * checksum in dir/name's sidecar when there is one, and every entry (archive_check_fd with
 * max_bytes). 0 = good; -1 with the reason in e. */
int backup_verify(int fd, const char *dir, const char *name, uint64_t max_bytes, int cancel_fd,
		  struct archive_stats *st, struct sbx_err *e);

/* Deletes the oldest complete backups (with their sidecars) until keep remain, and dead
 * writers' ".tmp" files. The newest good backup is never deleted: when none of the newest
 * keep verifies, the newest older one that does is kept too. known_good (or NULL) names a
 * backup already known good. Holds the directory lock while it works, so it is safe beside a
 * running snapshot. Deleted names are added to pruned (may be NULL). */
int backup_prune(const char *dir, int keep, const char *known_good, struct backup_list *pruned,
		 struct sbx_err *e);

#endif
