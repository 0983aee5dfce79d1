/* sessions.c — list the session store and remove sessions nobody uses. */
#include "sessions.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup.h"
#include "fsutil.h"
#include "history.h"
#include "paths.h"
#include "xalloc.h"

/* The size of a whole session, summed by nftw's callback (it takes no argument); one per
 * thread, as servers may list from several. */
static _Thread_local uint64_t tree_bytes;

static int add_size(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)p, (void)ftw;
	if (type == FTW_F)
		tree_bytes += (uint64_t)st->st_size;
	return 0;
}

/* Lines in the history file (a torn last line counts: it is what is there). */
static uint64_t count_lines(const char *path)
{
	char buf[65536];
	uint64_t n = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK), last = '\n';

	if (fd < 0)
		return 0;
	while ((r = read(fd, buf, sizeof buf)) > 0) {
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
		last = buf[r - 1];
	}
	close(fd);
	return n + (last != '\n');
}

/* Fills in everything about session dir/name but its name and holder. */
static void describe(const char *dir, struct session_info *si)
{
	char *hist = xasprintf("%s/sessions/latest.jsonl", dir), *fs = xasprintf("%s/fs", dir);
	struct backup_list l;
	struct stat st;

	si->messages = count_lines(hist);
	if (stat(hist, &st) == 0 || stat(dir, &st) == 0)
		si->updated_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (backup_list_dir(fs, &l, NULL) == 0) {
		si->backups = l.n;
		backup_list_free(&l);
	}
	tree_bytes = 0;
	nftw(dir, add_size, 16, FTW_PHYS | FTW_MOUNT);
	si->bytes = tree_bytes;
	free(hist);
	free(fs);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int sessions_list(int (*fn)(const struct session_info *, void *), void *arg, struct sbx_err *e)
{
	char *root = paths_session_root(e), **names = NULL;
	size_t n = 0, i;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (root == NULL)
		return -1;
	if ((d = opendir(root)) == NULL) {
		rc = errno == ENOENT ? 0 : err_sys(e, errno, "cannot read %s", root);
		free(root);
		return rc;
	}
	while ((de = readdir(d)) != NULL)
		if (name_check(de->d_name, NULL) == 0) {	/* a session's directory, nothing else */
			names = xrealloc(names, (n + 1) * sizeof *names);
			names[n++] = xstrdup(de->d_name);
		}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof *names, by_name);
	for (i = 0; i < n; i++) {
		struct session_info si = {0};
		char *dir, *holder;
		if (rc == 0) {
			dir = xasprintf("%s/%s", root, names[i]);
			snprintf(si.name, sizeof si.name, "%s", names[i]);
			describe(dir, &si);
			si.holder = holder = history_holder(names[i]);
			rc = fn(&si, arg);
			free(holder);
			free(dir);
		}
		free(names[i]);
	}
	free(names);
	free(root);
	return rc;
}

int sessions_remove(const char *name, struct sbx_err *e)
{
	char *root, *dir;
	struct stat st;
	int lock, rc = -1;

	if (name_check(name, e) < 0 || (root = paths_session_root(e)) == NULL)
		return -1;
	dir = xasprintf("%s/%s", root, name);
	free(root);
	if (lstat(dir, &st) < 0 && errno == ENOENT) {
		free(dir);
		return err_set(e, SBX_ENOTFOUND, "session \"%s\" does not exist", name);
	}
	/* Held while the tree goes: nobody starts on the session halfway through. */
	if ((lock = history_lock(name, e)) < 0)
		goto out;
	if (fs_remove_tree(dir) < 0)
		err_sys(e, errno, "cannot remove %s", dir);
	else
		rc = 0;
	close(lock);
out:
	free(dir);
	return rc;
}

const char *sessions_env_name(const char *dflt)
{
	const char *v = getenv("SESSION_NAME");

	return v != NULL && *v != '\0' ? v : dflt;
}
