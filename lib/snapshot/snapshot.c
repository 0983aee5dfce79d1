/* snapshot.c — snapshot and restore of a sandbox home, over home_path or tar-in-sandbox. */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "execjob.h"
#include "fsutil.h"
#include "idmap.h"
#include "xalloc.h"

/* take_by_exec's reader: the stream through the checker into the temporary. */
struct take {
	struct backup_tmp *t;
	struct archive_stats *st;
};

static int take_check(int fd, void *arg, struct sbx_err *e)
{
	struct take *tk = arg;

	return archive_check_fd(fd, tk->t->cancel_fd, ARCHIVE_MAX_EXPANDED, ARCHIVE_LINKS_KEEP,
				backup_tap, tk->t, tk->st, e);
}

/* Streams `tar -c` of home inside the sandbox through the checker into the temporary. */
static int take_by_exec(struct sbx_backend *b, const char *session, const char *home,
			enum archive_codec codec, struct backup_tmp *t, struct archive_stats *st,
			struct sbx_err *e)
{
	/* Entries owned by root, as upstream's root pods write them: a backup from a non-root
	 * pod (uid 1000 on kubernetes) restores in upstream's pod as if upstream had made it. */
	char *argv[] = {"tar", codec == ARCHIVE_CODEC_ZSTD ? "--zstd" : "-z", "--owner=0",
			"--group=0", "--numeric-owner", "-cf", "-", "-C", (char *)home, ".", NULL};
	struct take tk = {t, st};

	return execjob_read(b, session, argv, take_check, &tk, "snapshot", e);
}

/* ---- work on the host home, done by a child holding only the home owner's rights ---- */

/* What the child reports back through its pipe. */
struct report {
	int rc;
	struct archive_stats st;
	struct sbx_err err;
	bool died;		/* set by the parent: no report came */
};

struct host_job {
	const char *dir;
	enum archive_codec codec;
	int fd;			/* pack: where the archive goes; unpack: the archive */
	uint64_t max_bytes;
	enum { HOST_PACK, HOST_UNPACK, HOST_CLEAR } op;
	struct sbx_backend *b;	/* pack: the compression is charged to the cgroup of */
	const char *session;	/* this sandbox (issue 27.5), or NULL */
};

/* Joins the sandbox's cgroup (its memory, pids and CPU limits), before any work is done. A
 * sandbox without one (gone meanwhile, or made with -limits none) charges nothing. */
static int charge(const struct host_job *hj, struct sbx_err *e)
{
	if (hj->b == NULL || hj->b->ops->charge == NULL || hj->b->ops->charge(hj->b, hj->session) == 0 ||
	    errno == ENOENT)
		return 0;
	return err_sys(e, errno, "cannot join the cgroup of sandbox %s", hj->session);
}

/* Enters dir and becomes its owner. The home is the sandbox's to change at any moment, so
 * root must not walk it: a directory swapped for a symlink would make it read or write host
 * files. Entered first, as its parents may be closed to the owner. A root's sandbox owns a
 * range of ids (lib/local/idmap.h) and its files may belong to any of them: the child becomes the
 * root of a user namespace mapping that range, as the sandbox's own root is, with rights
 * over those ids and no other (and sees the owners the sandbox sees). So does a user's
 * sandbox that maps a range of the user's subordinate ids (recorded next to its home). */
static int enter_as_owner(const char *dir, struct sbx_err *e)
{
	struct stat sb;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return err_sys(e, errno, "cannot open %s", dir);
	if (fstat(fd, &sb) < 0 || fchdir(fd) < 0) {
		close(fd);
		return err_sys(e, errno, "cannot enter %s", dir);
	}
	close(fd);
	struct idmap_req r = {sb.st_uid, sb.st_gid, idmap_count_of(sb.st_uid), 0, 0, 0, 0, 0};
	/* A user's sandbox that maps the user's subordinate ids: the same, made with newuidmap. */
	if (geteuid() != 0 && idmap_user_of_home(dir, &r) < 0)
		return 0;
	if (geteuid() == 0 && sb.st_uid == 0)
		return 0;
	int ns = idmap_userns(&r, &fd);
	if (ns < 0 || idmap_enter(ns) < 0) {
		if (ns >= 0)
			close(ns);
		return err_sys(e, errno, "cannot take the identity of the owner of %s", dir);
	}
	close(ns);
	return 0;
}

/* Runs a pack or unpack in a child; returns its pid, the read end of its report in *rep. */
static pid_t host_start(const struct host_job *hj, int *rep, struct sbx_err *e)
{
	int rp[2];
	pid_t pid;

	if (pipe2(rp, O_CLOEXEC) < 0)
		return err_sys(e, errno, "pipe");
	if ((pid = fork()) < 0) {
		close(rp[0]), close(rp[1]);
		return err_sys(e, errno, "fork");
	}
	if (pid == 0) {
		struct report r = {0};
		int fd = hj->fd >= 0 ? hj->fd : rp[1];	/* clearing needs no archive */
		int lo = fd < rp[1] ? fd : rp[1], hi = fd < rp[1] ? rp[1] : fd;
		/* Keep only the archive and the report: this child works for the sandbox's owner
		 * and must hold nothing else of ours (the backup file, sockets, locks). */
		if (lo > 3)
			close_range(3, (unsigned)lo - 1, 0);
		if (hi > lo + 1)
			close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
		close_range((unsigned)hi + 1, ~0U, 0);
		r.rc = charge(hj, &r.err);
		if (r.rc == 0)
			r.rc = enter_as_owner(hj->dir, &r.err);
		if (r.rc == 0 && hj->op == HOST_UNPACK)
			r.rc = archive_unpack_fd(fd, ".", hj->max_bytes, &r.st, &r.err);
		else if (r.rc == 0 && hj->op == HOST_PACK)
			r.rc = archive_pack_dir(".", hj->codec, archive_fd_sink, &fd, &r.st, &r.err);
		else if (r.rc == 0 && fs_clear_dir(".") < 0)
			r.rc = err_sys(&r.err, errno, "cannot empty the home");
		if (r.rc < 0)
			err_prefix(&r.err, "%s", hj->dir);
		if (write(rp[1], &r, sizeof r) != (ssize_t)sizeof r)
			_exit(2);
		_exit(r.rc == 0 ? 0 : 1);
	}
	close(rp[1]);
	*rep = rp[0];
	return pid;
}

/* Collects the child's report (killing it first when kill_it). Returns its rc. */
static int host_finish(pid_t pid, int rep, bool kill_it, struct report *r)
{
	ssize_t n;

	if (kill_it)
		kill(pid, SIGKILL);
	memset(r, 0, sizeof *r);
	while ((n = read(rep, r, sizeof *r)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof *r) {
		r->rc = -1;
		r->died = true;
		err_set(&r->err, SBX_EIO, "the archiving process died");
	}
	close(rep);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return r->rc;
}

/* Packs the host home in a child and checks the stream into the temporary. */
static int take_from_host(struct sbx_backend *b, const char *session, const char *host,
			  enum archive_codec codec, struct backup_tmp *t, struct archive_stats *st,
			  struct sbx_err *e)
{
	int out[2], rep = -1, rc;
	struct host_job hj = {.dir = host, .codec = codec, .fd = -1, .op = HOST_PACK, .b = b,
			      .session = session};
	struct report r;
	pid_t pid;

	if (pipe2(out, O_CLOEXEC) < 0)
		return err_sys(e, errno, "pipe");
	hj.fd = out[1];
	pid = host_start(&hj, &rep, e);
	close(out[1]);
	if (pid < 0) {
		close(out[0]);
		return -1;
	}
	rc = archive_check_fd(out[0], t->cancel_fd, ARCHIVE_MAX_EXPANDED, ARCHIVE_LINKS_KEEP,
			    backup_tap, t, st, e);
	close(out[0]);
	/* The packer closes its end only after reporting, so a stream cut short by its failure
	 * finds the report there; its reason is the precise one. */
	if (host_finish(pid, rep, rc < 0, &r) < 0 && (rc == 0 || !r.died)) {
		if (rc == 0 || e->code != SBX_ECANCELED)
			*e = r.err;
		return -1;
	}
	st->skipped = r.st.skipped;
	return rc;
}

/* Unpacks the backup on fd into the host home (HOST_UNPACK), or empties it (HOST_CLEAR, fd
 * -1), in a child. */
static int restore_to_host(const char *host, int op, int fd, uint64_t max, int cancel_fd,
			   struct archive_stats *st, struct sbx_err *e)
{
	struct host_job hj = {.dir = host, .fd = fd, .max_bytes = max, .op = op};
	struct pollfd pf[2];
	struct report r;
	int rep = -1;
	pid_t pid = host_start(&hj, &rep, e);
	bool canceled = false;

	if (pid < 0)
		return -1;
	pf[0] = (struct pollfd){rep, POLLIN, 0};
	pf[1] = (struct pollfd){cancel_fd, POLLIN, 0};
	while (poll(pf, cancel_fd >= 0 ? 2 : 1, -1) < 0 && errno == EINTR)
		;
	canceled = cancel_fd >= 0 && (pf[1].revents & POLLIN) && !(pf[0].revents & POLLIN);
	if (host_finish(pid, rep, canceled, &r) < 0) {
		if (canceled)
			return err_set(e, SBX_ECANCELED, "interrupted");
		*e = r.err;
		return -1;
	}
	/* the counts only: the names came from the check (a pointer from the child is no use) */
	st->files = r.st.files;
	st->bytes = r.st.bytes;
	return 0;
}

/* The host directory of the home when the backend has one and no other homedir is asked. */
static char *host_home(struct sbx_backend *b, const char *session, const char *homedir,
		       struct sbx_err *e, bool *failed)
{
	char *h;

	*failed = false;
	if (homedir || b->ops->home_path == NULL)
		return NULL;
	if ((h = b->ops->home_path(b, session, e)) == NULL)
		*failed = true;
	return h;
}

/* A snapshot of a home that owes a restore, or holds part of one, would become the newest
 * backup and, pruning, push out the good ones: refused, saying what to run. */
static int refuse_unrestored(const char *session, struct sbx_err *e)
{
	char *partial = backup_restoring(session);

	if (partial != NULL) {
		err_set(e, SBX_EIO, "the home of sandbox %s is only partly restored (a restore of %s "
			"was interrupted); run sbx-restore %s again before taking a snapshot",
			session, partial, session);
		free(partial);
		return -1;
	}
	if (backup_owed(session))
		return err_set(e, SBX_EIO, "the home of sandbox %s owes a restore (the sandbox was "
			       "made new and no restore of the session's backups completed); run "
			       "sbx-restore %s first, or sbx-restore -fresh %s to start afresh on "
			       "purpose", session, session, session);
	return 0;
}

int snapshot_take(struct sbx_backend *b, const char *session, const struct snapshot_opts *o,
		  struct snapshot_result *r, struct sbx_err *e)
{
	struct sbx_info info;
	struct backup_tmp t = {.fd = -1, .dir_fd = -1};
	struct archive_stats st;
	struct backup_prune_opts po;
	struct sbx_err pe;
	char *dir = NULL, *host = NULL;
	bool failed;
	int rc = -1;

	memset(r, 0, sizeof *r);
	if (o->keep < 1)
		return err_set(e, SBX_EINVAL, "keep must be at least 1");
	if (sbx_get(b, session, &info, e) < 0)
		return -1;
	if ((dir = backup_dir(session, e)) == NULL)
		return -1;
	if (o->homedir == NULL && refuse_unrestored(session, e) < 0)
		goto out;
	/* 27.5: backups multiply the home's disk cap; three of it is one kept copy of a full
	 * home and room to move (a user may set any other). */
	r->budget = o->budget ? o->budget : info.limits.enforced && info.limits.disk > 0 ?
		    (uint64_t)info.limits.disk * BACKUP_BUDGET_CAPS : 0;
	host = host_home(b, session, o->homedir, e, &failed);
	if (failed)
		goto out;
	if (backup_begin(&t, dir, o->codec, e) < 0)
		goto out;
	t.cancel_fd = o->cancel_fd;
	t.budget = r->budget;
	t.progress = o->progress;
	t.progress_arg = o->progress_arg;
	if (host) {
		if (take_from_host(b, session, host, o->codec, &t, &st, e) < 0)
			goto out;
	} else if (take_by_exec(b, session, o->homedir ? o->homedir : info.homedir, o->codec, &t,
				&st, e) < 0) {
		goto out;
	}
	if (backup_commit(&t, r->sha256, e) < 0)
		goto out;
	r->path = xasprintf("%s/%s", dir, t.name);
	r->bytes = t.bytes;
	r->files = st.files;
	r->skipped = st.skipped;
	po = (struct backup_prune_opts){o->keep, r->budget, t.name};
	if (backup_prune(dir, &po, &r->pruned, &pe) < 0)
		r->prune_error = xstrdup(pe.msg);
	rc = 0;
out:
	backup_end(&t);
	free(host);
	free(dir);
	return rc;
}

void snapshot_result_free(struct snapshot_result *r)
{
	free(r->path);
	free(r->prune_error);
	backup_list_free(&r->pruned);
	memset(r, 0, sizeof *r);
}

/* Feeds the backup on fd to `tar -x` inside the sandbox, leaving out the symlinks the check
 * found leading out of the home (GNU tar's exact, anchored --exclude). */
static int restore_by_exec(struct sbx_backend *b, const char *session, const char *home, int fd,
			   int cancel_fd, const struct archive_stats *st, struct sbx_err *e)
{
	unsigned char magic[4] = {0};
	/* --no-same-owner: files belong to whoever extracts, as with the local backend (upstream's
	 * root-owned entries become a non-root pod's own). The archive's top entry "." is left
	 * out (--no-recursion: that entry only, not what it holds) and existing directories keep
	 * their metadata: the home itself keeps its owner and mode, which a non-root pod may not
	 * change on a volume it does not own (GNU tar would fail the restore trying). */
	char *base[] = {"tar", "-z", "--no-same-owner", "--no-overwrite-dir", "--no-recursion",
			"--exclude=.", "-xf", "-", "-C", (char *)home};
	size_t nb = sizeof base / sizeof base[0], na = nb + 1, i;
	char **argv;
	struct execjob j;
	int rc;

	if (st->nlink_names)
		na += 2 + st->nlink_names;
	argv = xcalloc(na, sizeof *argv);
	memcpy(argv, base, sizeof base);
	if (st->nlink_names) {
		argv[nb++] = "--anchored";
		argv[nb++] = "--no-wildcards";
		for (i = 0; i < st->nlink_names; i++)
			argv[nb++] = xasprintf("--exclude=%s", st->link_names[i]);
	}
	/* The compression comes from the bytes, not the name (-from may name anything). */
	if (pread(fd, magic, sizeof magic, 0) == (ssize_t)sizeof magic &&
	    memcmp(magic, "\x28\xb5\x2f\xfd", 4) == 0)
		argv[1] = "--zstd";
	else if (magic[0] != 0x1f || magic[1] != 0x8b)
		argv[1] = "-p";	/* plain tar: a harmless flag in -z's place */
	if ((rc = execjob_run(&j, b, session, argv, fd, -1, cancel_fd, e)) == 0)
		rc = execjob_finish(&j, "restore", e);
	for (i = sizeof base / sizeof base[0] + 2; st->nlink_names && argv[i]; i++)
		free(argv[i]);
	free(argv);
	return rc;
}

/* Empties home inside the sandbox after a failed extraction (POSIX sh and rm only). */
static int clear_by_exec(struct sbx_backend *b, const char *session, const char *home,
			 int cancel_fd, struct sbx_err *e)
{
	char *argv[] = {"sh", "-c", "cd -- \"$1\" && rm -rf -- ./* ./.[!.]* ./..?*", "sh",
			(char *)home, NULL};
	struct execjob j;

	if (execjob_run(&j, b, session, argv, -1, -1, cancel_fd, e) < 0)
		return -1;
	return execjob_finish(&j, "emptying the home", e);
}

/* Verifies one candidate; the open, verified fd (rewound) or -1 with the reason in e. */
static int candidate(const char *dir, const char *name, const struct snapshot_restore_opts *o,
		     struct archive_stats *st, enum backup_vouch *how, struct sbx_err *e)
{
	int fd = backup_open(dir, name, e);

	if (fd < 0)
		return -1;
	if (backup_verify(fd, dir, name, o->max_bytes ? o->max_bytes : ARCHIVE_MAX_EXPANDED,
			  o->cancel_fd, st, how, e) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A home with less than this free after a failed write is taken for full: libarchive's own
 * "Write failed" does not carry the errno. */
#define FULL_BELOW (64 * 1024)

/* Whether a failed extraction into host (NULL: inside the sandbox) was a full disk (or
 * quota): tar in the sandbox says so through strerror; on the host the home's file system is
 * asked how much room it has left. */
static bool no_room(const char *host, const struct sbx_err *e)
{
	struct statvfs vfs;

	if (strstr(e->msg, strerror(ENOSPC)) || strstr(e->msg, strerror(EDQUOT)))
		return true;
	return host && statvfs(host, &vfs) == 0 &&
	       (uint64_t)vfs.f_bavail * vfs.f_frsize < FULL_BELOW;
}

/* Where and how a restore writes: the host home, or tar in the sandbox. */
struct target {
	struct sbx_backend *b;
	const char *session, *home;	/* home: the directory inside, for the exec path */
	char *host;			/* the host directory, or NULL */
	char *mark;			/* the backup directory holding the mark, or NULL (-homedir) */
	uint64_t max;
	int cancel_fd;
};

/* Extracts the verified backup on fd into the home, marked as incomplete until it is whole. */
static int extract(const struct target *t, const char *backup, int fd, struct archive_stats *st,
		   struct sbx_err *e)
{
	if (t->mark && backup_restoring_mark(t->mark, backup, e) < 0)
		return -1;
	if (t->host)
		return restore_to_host(t->host, HOST_UNPACK, fd, t->max, t->cancel_fd, st, e);
	return restore_by_exec(t->b, t->session, t->home, fd, t->cancel_fd, st, e);
}

/* Empties the home after a failed extraction, so the next backup is restored alone. */
static int clear_home(const struct target *t, struct sbx_err *e)
{
	struct archive_stats st = {0};

	if (t->host)
		return restore_to_host(t->host, HOST_CLEAR, -1, 0, t->cancel_fd, &st, e);
	return clear_by_exec(t->b, t->session, t->home, t->cancel_fd, e);
}

/* -from names the file itself: one that is not there is SBX_ENOTFOUND, one that is no archive
 * at all (neither gzip, zstd nor tar by its first bytes) the caller's mistake (SBX_EINVAL); a
 * damaged archive is found by the verification after. */
static int from_check(const char *path, struct sbx_err *e)
{
	unsigned char m[262];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	ssize_t n;

	if (fd < 0 && errno == ENOENT)
		return err_set(e, SBX_ENOTFOUND, "%s: no such file", path);
	if (fd < 0)
		return 0;	/* the open that reads it says why */
	n = pread(fd, m, sizeof m, 0);
	close(fd);
	if ((n >= 2 && m[0] == 0x1f && m[1] == 0x8b) ||
	    (n >= 4 && memcmp(m, "\x28\xb5\x2f\xfd", 4) == 0) ||
	    (n >= 262 && memcmp(m + 257, "ustar", 5) == 0))
		return 0;
	return err_set(e, SBX_EINVAL, "%s is not a backup (a tar archive, gzip- or zstd-compressed)",
		       path);
}

/* The candidates of a restore, oldest first, and the directory they are in. */
static char *candidates(const char *session, const struct snapshot_restore_opts *o,
			struct backup_list *l, struct sbx_err *e)
{
	char *dir;

	if (o->from) {
		char *d = xstrdup(o->from), *n = xstrdup(o->from);
		dir = xstrdup(dirname(d));
		backup_list_add(l, basename(n), NULL);
		free(d), free(n);
		return dir;
	}
	if ((dir = backup_dir(session, e)) != NULL && backup_list_dir(dir, l, e) < 0) {
		free(dir);
		dir = NULL;
	}
	return dir;
}

/* -fresh: the home emptied, both marks gone: what the session's snapshots save from now on
 * is its state by choice. */
static int fresh_start(struct sbx_backend *b, const char *session, struct target *t,
		       const char *dir, struct sbx_err *e)
{
	bool failed;

	t->host = host_home(b, session, NULL, e, &failed);
	if (failed || clear_home(t, e) < 0)
		return -1;
	if (backup_restoring_clear(dir, e) < 0 || backup_owed_clear(dir, e) < 0)
		return -1;
	return 0;
}

/* Long: upstream's restore order (backups newest first, each verified, the first good one
 * restored, the skipped named) with one exit path that releases what was taken. */
int snapshot_restore(struct sbx_backend *b, const char *session,
		     const struct snapshot_restore_opts *o, struct snapshot_restore_result *r,
		     struct sbx_err *e)
{
	struct sbx_info info;
	struct backup_list l = {0};
	struct archive_stats st = {0};
	struct target t = {.b = b, .session = session, .cancel_fd = o->cancel_fd,
			   .max = o->max_bytes ? o->max_bytes : ARCHIVE_MAX_EXPANDED};
	char *dir = NULL, *used = NULL;
	bool failed, ready = false, extract_failed = false, full = false;
	enum backup_vouch how;
	int fd = -1, rc = -1;

	memset(r, 0, sizeof *r);
	if (o->from && from_check(o->from, e) < 0)
		return -1;
	if (sbx_get(b, session, &info, e) < 0)
		return -1;
	t.home = o->homedir ? o->homedir : info.homedir;
	if ((dir = candidates(session, o, &l, e)) == NULL)
		goto out;
	if (o->fresh) {
		rc = fresh_start(b, session, &t, dir, e);
		goto out;
	}
	if (l.n == 0) {
		if (o->optional && !o->from && o->homedir == NULL &&
		    backup_owed_clear(dir, e) < 0)	/* nothing to restore: nothing owed */
			goto out;
		rc = o->optional ? 0 : err_set(e, SBX_ENOTFOUND, "session %s has no backup in %s (to "
					       "restore another backup, name it with -from FILE)",
					       session, dir);
		goto out;
	}
	/* Newest first: one that fails verification is passed over before anything is written;
	 * one that fails to extract (a full disk, say) leaves a partial home that is emptied
	 * before the next is restored alone. With -from there is only the one. */
	for (size_t i = l.n; i-- > 0 && used == NULL;) {
		char *path = xasprintf("%s/%s", dir, l.name[i]);
		archive_stats_free(&st);
		if ((fd = candidate(dir, l.name[i], o, &st, &how, e)) >= 0) {
			if (how == BACKUP_SIDECAR_WRONG)
				backup_list_add(&r->sidecar_wrong, path, NULL);
			if (!ready) {
				t.host = host_home(b, session, o->homedir, e, &failed);
				if (failed || (o->homedir == NULL &&
					       (t.mark = backup_dir(session, e)) == NULL)) {
					free(path);
					goto out;
				}
				ready = true;
			}
			if (extract(&t, path, fd, &st, e) == 0) {
				used = path;
				break;
			}
			extract_failed = true;
			full |= no_room(t.host, e);
			if (e->code != SBX_ECANCELED)
				err_prefix(e, "cannot be extracted");
			if (e->code != SBX_ECANCELED && !o->from && i > 0) {
				struct sbx_err ce;
				if (clear_home(&t, &ce) < 0) {
					err_set(e, ce.code, "%s: %s; %s", path, e->msg, ce.msg);
					free(path);
					goto out;
				}
			}
			close(fd);
			fd = -1;
		}
		if (!o->from && e->code != SBX_ECANCELED)
			backup_list_add(&r->skipped, path, e->msg);
		if (e->code != SBX_ECANCELED)
			err_prefix(e, "%s", path);
		free(path);
		if (o->from || e->code == SBX_ECANCELED)
			goto out;
	}
	if (used == NULL && full) {
		/* the backups are fine: the home has no room for them; the restore stays owed */
		err_set(e, SBX_EIO, "disk full: the home has no room for the backups (%s); free some "
			"space or raise the sandbox's -disk, then run sbx-restore %s again",
			r->skipped.why[0], session);
		goto out;
	}
	if (used == NULL) {
		err_set(e, SBX_EIO, "none of the %zu backups in %s is good (newest: %s)", l.n, dir,
			r->skipped.why[0]);
		/* Every one refused for what it holds: nothing restorable is left to wait for,
		 * so the home may go on fresh (upstream's way). One that failed to extract may
		 * succeed another time: the restore stays owed. */
		if (!extract_failed && !o->from && o->homedir == NULL)
			backup_owed_clear(dir, NULL);
		goto out;
	}
	if (t.mark && (backup_restoring_clear(t.mark, e) < 0 || backup_owed_clear(t.mark, e) < 0))
		goto out;
	r->restored = used;
	used = NULL;
	r->files = st.files;
	r->bytes = st.bytes;
	archive_stats_take_names(&st, &r->links_out, &r->nlinks_out);
	rc = 0;
out:
	free(t.mark);
	free(t.host);
	archive_stats_free(&st);
	if (fd >= 0)
		close(fd);
	backup_list_free(&l);
	free(used);
	free(dir);
	return rc;
}

void snapshot_restore_free(struct snapshot_restore_result *r)
{
	archive_names_free(r->links_out, r->nlinks_out);
	free(r->restored);
	backup_list_free(&r->skipped);
	backup_list_free(&r->sidecar_wrong);
	memset(r, 0, sizeof *r);
}
