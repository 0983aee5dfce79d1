/* copy.c — files between the host and a sandbox as tar streams (see copy.h). */
#include "copy.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "execjob.h"
#include "fsutil.h"
#include "tmpname.h"
#include "xalloc.h"

/* What the probe prints: two kinds, a space each, and a path. */
#define PROBE_MAX (PATH_MAX + 16)

/* What a path in the sandbox is: 'd' a directory, 'f' anything else, 'n' nothing there (for
 * it and for its parent directory), and its real path (a symlink it is, followed). */
struct spath {
	char kind, parent;
	char *real;
};

/* Asks the sandbox what path is (POSIX sh; readlink -f where there is one). */
static const char probe_script[] =
	"p=$1; if [ -L \"$p\" ]; then r=$(readlink -f -- \"$p\" 2>/dev/null) && [ -n \"$r\" ] && p=$r; fi; "
	"k=n; [ -e \"$p\" ] && k=f; [ -d \"$p\" ] && k=d && p=$(cd -- \"$p\" && pwd -P); "
	"d=$(dirname -- \"$p\"); j=n; [ -e \"$d\" ] && j=f; [ -d \"$d\" ] && j=d; "
	"printf '%s %s %s' \"$k\" \"$j\" \"$p\"";

static int probe(struct sbx_backend *b, const char *sandbox, const char *path, int cancel_fd,
		 struct spath *sp, struct sbx_err *e)
{
	char *argv[] = {"sh", "-c", (char *)probe_script, "sh", (char *)path, NULL};
	char out[PROBE_MAX + 1];
	struct execjob j;
	ssize_t n;
	int fd = memfd_create("sbx-cp-probe", MFD_CLOEXEC), rc = -1;

	memset(sp, 0, sizeof *sp);
	if (fd < 0)
		return err_sys(e, errno, "cannot set up the probe");
	if (execjob_run(&j, b, sandbox, argv, -1, fd, cancel_fd, e) < 0 ||
	    execjob_finish(&j, "looking at the path", e) < 0)
		goto out;
	n = pread(fd, out, PROBE_MAX, 0);
	out[n > 0 ? n : 0] = '\0';
	if (n < 5 || !strchr("dfn", out[0]) || out[1] != ' ' || !strchr("dfn", out[2]) ||
	    out[3] != ' ') {
		err_set(e, SBX_EIO, "the sandbox gave no answer about %s (it needs sh)", path);
		goto out;
	}
	sp->kind = out[0];
	sp->parent = out[2];
	sp->real = xstrdup(out + 4);
	rc = 0;
out:
	close(fd);
	return rc;
}

/* path made absolute against the sandbox's home, newly allocated. */
static char *in_home(const char *home, const char *path)
{
	return path[0] == '/' ? xstrdup(path) : xasprintf("%s/%s", home, *path ? path : ".");
}

/* Whether path names a directory's contents ("dir/.", "."); if so *cut is the directory. */
static bool contents_of(const char *path, char **cut)
{
	size_t n = strlen(path);

	if (strcmp(path, ".") == 0 || (n >= 2 && strcmp(path + n - 2, "/.") == 0)) {
		*cut = n == 1 ? xstrdup(".") : xstrndup(path, n - 2);
		if (**cut == '\0') {
			free(*cut);
			*cut = xstrdup("/");
		}
		return true;
	}
	*cut = xstrdup(path);
	return false;
}

/* The last component of path (trailing '/' ignored), newly allocated. */
static char *last_part(const char *path)
{
	size_t n = strlen(path);
	const char *s;

	while (n > 1 && path[n - 1] == '/')
		n--;
	for (s = path + n; s > path && s[-1] != '/'; s--)
		;
	return xstrndup(s, (size_t)(path + n - s));
}

/* The directory of path ("." for a bare name), newly allocated. */
static char *parent_of(const char *path)
{
	char *p = xstrdup(path), *s;
	size_t n = strlen(p);

	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	if ((s = strrchr(p, '/')) == NULL) {
		free(p);
		return xstrdup(".");
	}
	if (s == p)
		s[1] = '\0';
	else
		*s = '\0';
	return p;
}

static bool ends_with_slash(const char *p)
{
	size_t n = strlen(p);

	return n > 1 && p[n - 1] == '/';
}

/* A sandbox's home (the base of its relative paths). */
static char *home_of(struct sbx_backend *b, const char *sandbox, struct sbx_err *e)
{
	struct sbx_info info;

	if (sbx_get(b, sandbox, &info, e) < 0)
		return NULL;
	return xstrdup(info.homedir);
}

/* ---- into the sandbox ---- */

struct pack_job {
	const char *src, *top;
	struct archive_stats st;
};

static int produce_pack(int fd, void *arg, struct sbx_err *e)
{
	struct pack_job *pj = arg;

	return archive_pack_tree(pj->src, pj->top, ARCHIVE_CODEC_NONE, archive_fd_sink, &fd,
				 &pj->st, e);
}

/* Where a copy into dst (what the probe found) goes: its directory and its name there. */
static int place_in_sandbox(const char *sandbox, const char *dst, const struct spath *d,
			    bool src_dir, bool contents, const char *src_name, char **dir,
			    char **top, struct sbx_err *e)
{
	if (d->kind == 'd') {
		*dir = xstrdup(d->real);
		*top = xstrdup(contents ? "." : src_name);
		return 0;
	}
	if (d->kind == 'f' && src_dir)
		return err_set(e, SBX_EINVAL, "cannot copy a directory onto the file %s:%s",
			       sandbox, dst);
	if (d->kind == 'n' && ends_with_slash(dst))
		return err_set(e, SBX_ENOTFOUND, "%s:%s: no such directory", sandbox, dst);
	if (d->kind == 'n' && d->parent != 'd')
		return err_set(e, SBX_ENOTFOUND, "%s:%s: its directory does not exist", sandbox, dst);
	*dir = parent_of(d->real);
	*top = last_part(d->real);
	return 0;
}

int copy_to_sandbox(struct sbx_backend *b, const char *sandbox, const char *src, const char *dst,
		    const struct copy_opts *o, struct copy_result *r, struct sbx_err *e)
{
	char *home = NULL, *path = NULL, *src_path = NULL, *real = NULL, *name = NULL;
	char *dir = NULL, *top = NULL;
	struct pack_job pj = {0};
	struct spath d = {0};
	struct stat st;
	bool contents;
	int rc = -1;

	memset(r, 0, sizeof *r);
	contents = contents_of(src, &src_path);
	/* A symlink named as the source is followed (the host path is the caller's own). */
	if ((real = realpath(src_path, NULL)) == NULL || stat(real, &st) < 0) {
		err_sys(e, errno, "%s", src);
		goto out;
	}
	contents = contents && S_ISDIR(st.st_mode);
	name = last_part(src_path);
	if ((home = home_of(b, sandbox, e)) == NULL)
		goto out;
	path = in_home(home, dst);
	if (probe(b, sandbox, path, o->cancel_fd, &d, e) < 0 ||
	    place_in_sandbox(sandbox, dst, &d, S_ISDIR(st.st_mode), contents, name, &dir, &top, e) < 0)
		goto out;
	{
		/* --no-same-owner: files belong to whoever extracts, as a restore makes them; the
		 * destination directory itself (the archive's "." when contents are copied) keeps
		 * its metadata, as in a restore: a non-root pod may not change a volume's. */
		char *argv[] = {"tar", "--no-same-owner", "--no-overwrite-dir", "--no-recursion",
				"--exclude=.", "-xf", "-", "-C", dir, NULL};
		pj.src = real;
		pj.top = top;
		if (execjob_write(b, sandbox, argv, o->cancel_fd, produce_pack, &pj, "copy", e) < 0)
			goto out;
	}
	r->to = strcmp(top, ".") == 0 ? xstrdup(dir) : xasprintf("%s%s%s", dir,
		strcmp(dir, "/") == 0 ? "" : "/", top);
	r->files = pj.st.files;
	r->bytes = pj.st.bytes;
	rc = 0;
out:
	free(home), free(path), free(src_path), free(real), free(name), free(dir), free(top);
	free(d.real);
	return rc;
}

int copy_stream_in(struct sbx_backend *b, const char *sandbox, int in_fd, const char *dst,
		   const struct copy_opts *o, struct copy_result *r, struct sbx_err *e)
{
	char *home, *path;
	struct spath d = {0};
	struct execjob j;
	int rc = -1;

	memset(r, 0, sizeof *r);
	if ((home = home_of(b, sandbox, e)) == NULL)
		return -1;
	path = in_home(home, dst);
	if (probe(b, sandbox, path, o->cancel_fd, &d, e) < 0)
		goto out;
	if (d.kind != 'd') {
		err_set(e, d.kind == 'n' ? SBX_ENOTFOUND : SBX_EINVAL, "%s:%s is not a directory (a "
			"tar stream is extracted into one)", sandbox, dst);
		goto out;
	}
	{
		char *argv[] = {"tar", "--no-same-owner", "--no-overwrite-dir", "--no-recursion",
				"--exclude=.", "-xf", "-", "-C", d.real, NULL};
		if (execjob_run(&j, b, sandbox, argv, in_fd, -1, o->cancel_fd, e) < 0 ||
		    execjob_finish(&j, "copy", e) < 0)
			goto out;
	}
	r->to = xstrdup(d.real);
	rc = 0;
out:
	free(home);
	free(path);
	free(d.real);
	return rc;
}

/* ---- out of the sandbox ---- */

/* What tar in the sandbox archives for src: `-C dir name`, or `-C src .` for contents. */
struct source {
	char *dir, *name;
	struct archive_tree tree;
};

/* Probes sandbox:src (ENOTFOUND when nothing is there) and says how to archive it. */
static int source_of(struct sbx_backend *b, const char *sandbox, const char *src, int cancel_fd,
		     struct source *so, bool *is_dir, struct sbx_err *e)
{
	char *home, *cut, *path;
	struct spath s = {0};
	bool contents = contents_of(src, &cut);
	int rc = -1;

	memset(so, 0, sizeof *so);
	if ((home = home_of(b, sandbox, e)) == NULL) {
		free(cut);
		return -1;
	}
	path = in_home(home, cut);
	if (probe(b, sandbox, path, cancel_fd, &s, e) < 0)
		goto out;
	if (s.kind == 'n') {
		err_set(e, SBX_ENOTFOUND, "%s:%s: no such file or directory", sandbox, src);
		goto out;
	}
	*is_dir = s.kind == 'd';
	if (contents && *is_dir) {
		so->dir = xstrdup(s.real);
		so->name = xstrdup(".");
	} else {
		so->dir = parent_of(s.real);
		so->name = last_part(s.real);
	}
	so->tree.top = so->name;
	rc = 0;
out:
	free(home), free(cut), free(path), free(s.real);
	return rc;
}

static void source_free(struct source *so)
{
	free(so->dir);
	free(so->name);
}

/* The spool beside the destination (same file system), unnamed; else one in TMPDIR. */
static int spool_open(const char *dir, struct sbx_err *e)
{
	const char *tmp = getenv("TMPDIR");
	char *p;
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0)
		return fd;
	p = xasprintf("%s/sbx-cp.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if ((fd = mkostemp(p, O_CLOEXEC)) < 0)
		err_sys(e, errno, "cannot make a spool file for the copy");
	else
		unlink(p);
	free(p);
	return fd;
}

/* The check as the stream arrives: restore's rules, bytes into the spool. */
struct spool_job {
	const struct copy_opts *o;
	const struct archive_tree *tree;
	int spool;
	struct archive_stats st;
};

static int consume_check(int fd, void *arg, struct sbx_err *e)
{
	struct spool_job *sj = arg;

	return archive_check_tree(fd, sj->o->cancel_fd, sj->o->max_bytes, ARCHIVE_LINKS_SKIP,
				  sj->tree, archive_fd_sink, &sj->spool, &sj->st, e);
}

/* Where a copy out to dst goes on the host: its directory and its name there (NULL: as in
 * the sandbox). */
static int place_on_host(const char *dst, bool src_dir, bool contents, const char *src_name,
			 char **dir, char **as, struct sbx_err *e)
{
	struct stat st;
	bool exists = stat(dst, &st) == 0;

	if (!exists && errno != ENOENT)
		return err_sys(e, errno, "%s", dst);
	if (exists && S_ISDIR(st.st_mode)) {
		*dir = xstrdup(dst);
		*as = contents ? NULL : xstrdup(src_name);
		return 0;
	}
	if (exists && src_dir)
		return err_set(e, SBX_EINVAL, "cannot copy a directory onto the file %s", dst);
	*dir = parent_of(dst);
	if (ends_with_slash(dst) || stat(*dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		err_set(e, SBX_ENOTFOUND, "%s: no such directory", ends_with_slash(dst) ? dst : *dir);
		free(*dir);
		*dir = NULL;
		return -1;
	}
	*as = last_part(dst);
	return 0;
}

/* Removes from the directory dfd the temporaries of sbx-cp runs that were killed (their
 * maker is gone): the next copy into a directory cleans up after a killed one. */
static void sweep(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (tmpname_stale("sbx-cp", de->d_name))
			fs_remove_at(dfd, de->d_name);
	closedir(d);
}

/* How the checked spool becomes the copy in dir, atomically: each file written under a
 * temporary name in dir, fsynced, renamed into place (an existing file is only ever replaced
 * by a complete one); a directory that is not there yet written whole under a temporary name,
 * then renamed (RENAME_NOREPLACE) and the directory fsynced. An existing directory is merged
 * into, file by file, as docker cp does. */
struct landing {
	char ftmp[TMPNAME_MAX], dtmp[TMPNAME_MAX];
	bool whole;		/* the tree goes under dtmp, then is renamed to as */
};

static int land(int spool, const char *dir, int dfd, struct source *so, const char *as,
		bool is_dir, const struct copy_opts *o, struct archive_stats *st, struct sbx_err *e)
{
	struct landing l = {.whole = false};
	struct archive_unpack_opts uo = {.tmp = l.ftmp, .sync = true};
	struct stat sb;
	int rc = -1;

	if (tmpname_make("sbx-cp", ".f", l.ftmp) < 0 || tmpname_make("sbx-cp", ".d", l.dtmp) < 0)
		return err_sys(e, errno, "cannot name a temporary");
	l.whole = as && is_dir && fstatat(dfd, as, &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
	if (l.whole) {
		so->tree.as = l.dtmp;
		uo.tmp = NULL;	/* a new tree: nothing in it to replace */
	}
	if (lseek(spool, 0, SEEK_SET) < 0) {
		err_sys(e, errno, "cannot read the spool");
		goto out;
	}
	if (archive_unpack_tree(spool, dir, o->max_bytes, &so->tree, &uo, st, e) < 0)
		goto out;
	if (l.whole && renameat2(dfd, l.dtmp, dfd, as, RENAME_NOREPLACE) < 0) {
		err_sys(e, errno, "cannot move the copy to %s/%s", dir, as);
		goto out;
	}
	if (fsync(dfd) < 0) {
		err_sys(e, errno, "cannot sync %s", dir);
		goto out;
	}
	rc = 0;
out:
	so->tree.as = as;
	if (rc < 0) {
		fs_remove_at(dfd, l.ftmp);
		if (l.whole)
			fs_remove_at(dfd, l.dtmp);
	}
	return rc;
}

int copy_from_sandbox(struct sbx_backend *b, const char *sandbox, const char *src,
		      const char *dst, const struct copy_opts *o, struct copy_result *r,
		      struct sbx_err *e)
{
	struct source so;
	struct spool_job sj = {.o = o, .spool = -1};
	struct archive_stats st = {0};
	char *dir = NULL, *as = NULL, *given = last_part(src);
	bool is_dir = false;
	int rc = -1, dfd = -1;

	memset(r, 0, sizeof *r);
	if (source_of(b, sandbox, src, o->cancel_fd, &so, &is_dir, e) < 0)
		goto out;
	if (place_on_host(dst, is_dir, strcmp(so.name, ".") == 0, given, &dir, &as, e) < 0)
		goto out;
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		err_sys(e, errno, "%s", dir);
		goto out;
	}
	sweep(dfd);
	so.tree.as = as;
	sj.tree = &so.tree;
	if ((sj.spool = spool_open(dir, e)) < 0)
		goto out;
	{
		char *argv[] = {"tar", "-cf", "-", "-C", so.dir, so.name, NULL};
		if (execjob_read(b, sandbox, argv, consume_check, &sj, "copy", e) < 0)
			goto out;
	}
	/* Checked whole: now it is written, with the same rules again. */
	if (land(sj.spool, dir, dfd, &so, as, is_dir, o, &st, e) < 0)
		goto out;
	/* what the caller named, or the name inside the directory it named */
	r->to = strcmp(dir, dst) != 0 ? xstrdup(dst) : as ? xasprintf("%s%s%s", dst,
		ends_with_slash(dst) ? "" : "/", as) : xstrdup(dst);
	r->files = st.files;
	r->bytes = st.bytes;
	archive_stats_take_names(&st, &r->links_out, &r->nlinks_out);
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	if (sj.spool >= 0)
		close(sj.spool);
	archive_stats_free(&sj.st);
	archive_stats_free(&st);
	source_free(&so);
	free(dir), free(as), free(given);
	return rc;
}

/* The filter as the stream arrives: restore's rules, a clean tar out. */
struct filter_job {
	const struct copy_opts *o;
	const struct archive_tree *tree;
	int out_fd;
	struct archive_stats st;
};

static int consume_filter(int fd, void *arg, struct sbx_err *e)
{
	struct filter_job *fj = arg;

	return archive_filter_fd(fd, fj->o->cancel_fd, fj->o->max_bytes, fj->tree, archive_fd_sink,
				 &fj->out_fd, &fj->st, e);
}

int copy_stream_out(struct sbx_backend *b, const char *sandbox, const char *src, int out_fd,
		    const struct copy_opts *o, struct copy_result *r, struct sbx_err *e)
{
	struct source so;
	struct filter_job fj = {.o = o, .out_fd = out_fd};
	bool is_dir;
	int rc = -1;

	memset(r, 0, sizeof *r);
	if (source_of(b, sandbox, src, o->cancel_fd, &so, &is_dir, e) < 0)
		goto out;
	fj.tree = &so.tree;
	{
		char *argv[] = {"tar", "-cf", "-", "-C", so.dir, so.name, NULL};
		if (execjob_read(b, sandbox, argv, consume_filter, &fj, "copy", e) < 0)
			goto out;
	}
	r->to = xstrdup("-");
	r->files = fj.st.files;
	r->bytes = fj.st.bytes;
	archive_stats_take_names(&fj.st, &r->links_out, &r->nlinks_out);
	rc = 0;
out:
	archive_stats_free(&fj.st);
	source_free(&so);
	return rc;
}

void copy_result_free(struct copy_result *r)
{
	archive_names_free(r->links_out, r->nlinks_out);
	free(r->to);
	memset(r, 0, sizeof *r);
}
