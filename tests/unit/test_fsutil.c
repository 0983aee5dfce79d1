/* test_fsutil.c — lib/fsutil's fs_remove_tree on what a sandbox may leave in its home: a tree
 * deeper than PATH_MAX, directories with no permission at all, names of any bytes, links to
 * outside (never followed), special files; as root and as the home's unprivileged owner. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"
#include "tap.h"

/* Levels of the deep tree: 3 bytes each ("dd/"), so well past PATH_MAX. */
#define DEPTH 2000

static char tmp[256];

/* Makes DIR/tree: deep, locked and oddly named, plus DIR/outside that a link points to. */
static int make_tree(const char *dir)
{
	char p[512];
	int fd, i;

	snprintf(p, sizeof p, "%s/tree", dir);
	if (mkdir(p, 0755) < 0 || chdir(p) < 0)
		return -1;
	snprintf(p, sizeof p, "%s/outside", dir);
	if (mkdir(p, 0755) < 0)
		return -1;
	snprintf(p, sizeof p, "%s/outside/keep", dir);
	if ((fd = open(p, O_CREAT | O_WRONLY, 0600)) < 0)
		return -1;
	close(fd);
	snprintf(p, sizeof p, "%s/outside", dir);
	if (symlink(p, "link-out") < 0 || mkfifo("fifo", 0600) < 0 || mkdir("-rf", 0) < 0 ||
	    mkdir("a\nb", 0755) < 0 || mkdir("a\nb/*", 0755) < 0)
		return -1;
	memset(p, 'n', 255);
	p[255] = '\0';
	if ((fd = open(p, O_CREAT | O_WRONLY, 0)) < 0)
		return -1;
	close(fd);
	for (i = 0; i < DEPTH; i++) {
		if (mkdir("dd", 0755) < 0 || chdir("dd") < 0)
			return -1;
		if (i % 500 == 250 && ((fd = open("f", O_CREAT | O_WRONLY, 0)) < 0 || close(fd) < 0))
			return -1;
	}
	/* Lock every few levels on the way back up: no read, write or search for anyone. */
	for (i = DEPTH; i > 0; i--) {
		if (chdir("..") < 0 || (i % 300 == 0 && chmod("dd", 0) < 0))
			return -1;
	}
	return chdir("/");
}

/* make_tree then fs_remove_tree, in a child as uid (0: stay root). Returns the child's
 * verdict: 0 when the tree is gone and the outside intact. */
static int remove_as(uid_t uid, const char *dir)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char t[512], k[512];
		struct stat sb;
		if (uid && (chown(dir, uid, uid) < 0 || setgid(uid) < 0 || setuid(uid) < 0))
			_exit(10);
		if (make_tree(dir) < 0)
			_exit(11);
		snprintf(t, sizeof t, "%s/tree", dir);
		snprintf(k, sizeof k, "%s/outside/keep", dir);
		if (fs_remove_tree(t) < 0)
			_exit(12);
		if (lstat(t, &sb) == 0 || errno != ENOENT)
			_exit(13);
		_exit(stat(k, &sb) == 0 ? 0 : 14);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

/* fs_open_beneath in tmp/b: a/f is reached; through the symlink l (to tmp, outside), by
 * "..", by an absolute path or at a symlink itself it is not (but O_PATH|O_NOFOLLOW opens
 * the link). fs_clear_at empties b and leaves what l points to. */
static void beneath(void)
{
	char b[512], p[600];
	int dfd, fd;

	snprintf(b, sizeof b, "%s/b", tmp);
	snprintf(p, sizeof p, "%s/b/a", tmp);
	mkdir(b, 0755);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/b/a/f", tmp);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	snprintf(p, sizeof p, "%s/b/l", tmp);
	if (symlink(tmp, p) < 0 || (dfd = open(b, O_RDONLY | O_DIRECTORY)) < 0) {
		ok(0, "set up the beneath tree");
		return;
	}
	fd = fs_open_beneath(dfd, "a/f", O_RDONLY, 0);
	ok(fd >= 0, "a name below is opened");
	close(fd);
	errno = 0;
	ok(fs_open_beneath(dfd, "l/b/a/f", O_RDONLY, 0) < 0 && errno == ELOOP,
	   "never through a symlink (ELOOP)");
	ok(fs_open_beneath(dfd, "l", O_RDONLY | O_DIRECTORY, 0) < 0, "never at a symlink");
	ok(fs_open_beneath(dfd, "../b/a/f", O_RDONLY, 0) < 0 && errno == EXDEV, "never by \"..\"");
	ok(fs_open_beneath(dfd, p, O_RDONLY, 0) < 0, "never by an absolute path");
	fd = fs_open_beneath(dfd, "l", O_PATH | O_NOFOLLOW, 0);
	ok(fd >= 0, "O_PATH|O_NOFOLLOW opens the link itself");
	close(fd);
	ok(fs_clear_at(dfd) == 0 && access(tmp, F_OK) == 0, "fs_clear_at empties it, the link's target stays");
	close(dfd);
	ok(rmdir(b) == 0, "nothing is left in it");
}

int main(void)
{
	char d[512];
	int rc;

	snprintf(tmp, sizeof tmp, "/tmp/test_fsutil.XXXXXX");
	if (mkdtemp(tmp) == NULL || chmod(tmp, 0755) < 0)
		return 1;
	snprintf(d, sizeof d, "%s/root", tmp);
	mkdir(d, 0755);
	rc = remove_as(0, d);
	ok(rc == 0, "as root: a %d-level tree with locked directories and odd names is gone, "
	   "the link's target kept (child said %d)", DEPTH, rc);
	if (geteuid() == 0) {
		snprintf(d, sizeof d, "%s/user", tmp);
		mkdir(d, 0755);
		rc = remove_as(65534, d);
		ok(rc == 0, "as the unprivileged owner: the same (child said %d)", rc);
	}
	beneath();
	ok(fs_remove_tree("/nonexistent/x") == 0, "a missing path is success");
	snprintf(d, sizeof d, "%s/file", tmp);
	close(open(d, O_CREAT | O_WRONLY, 0600));
	ok(fs_remove_tree(d) == 0 && access(d, F_OK) < 0, "a plain file is removed");
	ok(fs_remove_tree(tmp) == 0 && access(tmp, F_OK) < 0, "the whole test directory");
	is_str(tmp[0] == '/' ? "absolute" : "relative", "absolute", "worked below /tmp");
	return done_testing();
}
