/* rootlayer.c — the sandbox's writable root (see rootlayer.h): the plan's file, and the
 * supervisor's mounts that carry it out. Why each piece:
 *  - the lower is an idmapped read-only clone of the image's directory: the image's files are
 *    owned by host root, which no sandbox maps, and the kernel refuses a copy-up (so every
 *    write) of a file whose owner is not mapped; through the sandbox's own user namespace
 *    they are the sandbox root's, and the clone stays read-only, so nothing of the host's
 *    directory can change;
 *  - the upper layers share one tmpfs whose size is the cap (its pages are charged to the
 *    memory cgroup of the sandbox's process that writes them), mounted where only this
 *    supervisor's mount namespace sees it: it goes when the sandbox goes;
 *  - the overlays are mounted here, by root, as Docker's are: bubblewrap 0.8 has no overlay
 *    option, and an overlay mounted inside the sandbox's user namespace could not read the
 *    idmapped lower's files as their owner. */
#include "rootlayer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

/* The plan's file: the cap and ROOTLAYER_MAX paths, each a line. */
#define PLAN_MAX (32 + ROOTLAYER_MAX * (PATH_MAX + 1))

int rootlayer_write(const char *dir, int64_t size, const char *const *lower, int n)
{
	char path[PATH_MAX], *text;
	size_t len = 0;
	int rc, fd, saved;

	if (n > ROOTLAYER_MAX) {
		errno = E2BIG;
		return -1;
	}
	text = malloc(PLAN_MAX);
	if (text == NULL)
		return -1;
	len += (size_t)snprintf(text, PLAN_MAX, "%" PRId64 "\n", size);
	for (int i = 0; i < n; i++) {
		if (strchr(lower[i], '\n') || strlen(lower[i]) >= PATH_MAX) {
			free(text);
			errno = EINVAL;
			return -1;
		}
		len += (size_t)snprintf(text + len, PLAN_MAX - len, "%s\n", lower[i]);
	}
	/* A plain write, no fsync: the file lives only until the supervisor has read it (a
	 * crash before then leaves a sandbox that never started), and a create waits for none. */
	snprintf(path, sizeof path, "%s/" ROOTLAYER_FILE, dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	rc = fd >= 0 && write(fd, text, len) == (ssize_t)len ? 0 : -1;
	saved = errno;
	if (fd >= 0 && close(fd) < 0 && rc == 0)
		rc = -1, saved = errno;
	free(text);
	errno = saved;
	return rc;
}

/* The idmapped read-only clone of src, attached at dst. 0 or -1. */
static int idmapped_clone(const char *src, const char *dst, int userns)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY |
					      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
				  .userns_fd = (uint64_t)userns};
	int fd = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
	int rc = -1, saved;

	if (fd < 0)
		return -1;
	if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) == 0 && mkdir(dst, 0755) == 0 &&
	    move_mount(fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) == 0)
		rc = 0;
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/* Layer i of lower (a host directory, or "-") at stage/layer/I. */
static int mount_layer(const char *stage, int i, const char *lower, int userns, uid_t uid,
		       gid_t gid)
{
	char lo[256], up[256], work[256], at[256], opts[1024];
	struct stat st = {.st_mode = S_IFDIR | 0755, .st_uid = uid, .st_gid = gid};
	int layered = strcmp(lower, "-") != 0;

	snprintf(lo, sizeof lo, "%s/lower/%d", stage, i);
	snprintf(up, sizeof up, "%s/upper/u%d", stage, i);
	snprintf(work, sizeof work, "%s/upper/w%d", stage, i);
	snprintf(at, sizeof at, "%s/layer/%d", stage, i);
	/* the lower's owner as the sandbox sees it, in host ids (stat through the idmapping) */
	if (layered && (idmapped_clone(lower, lo, userns) < 0 || lstat(lo, &st) < 0))
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	/* the overlay's top shows the upper's owner and mode: the lower's */
	if (mkdir(up, 0755) < 0 || chown(up, st.st_uid, st.st_gid) < 0 ||
	    chmod(up, st.st_mode & 07777) < 0 || mkdir(at, 0755) < 0)
		return -1;
	if (!layered)
		return mount(up, at, NULL, MS_BIND, NULL);
	snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s", lo, up, work);
	if (mkdir(work, 0700) < 0)
		return -1;
	return mount("sbx-root", at, "overlay", MS_NOSUID | MS_NODEV, opts);
}

int rootlayer_mount(const char *dir, const char *stage, int userns, uid_t uid, gid_t gid)
{
	char path[PATH_MAX], opts[64], *plan, *line, *next;
	long long size;
	int i = 0, rc = -1;

	snprintf(path, sizeof path, "%s/" ROOTLAYER_FILE, dir);
	plan = fs_read_small(path, PLAN_MAX, NULL);
	if (plan == NULL)
		return errno == ENOENT ? 0 : -1;
	next = strchr(plan, '\n');
	if (next == NULL || sscanf(plan, "%lld", &size) != 1 || size <= 0) {
		errno = EINVAL;
		goto out;
	}
	snprintf(opts, sizeof opts, "size=%lld,mode=0755", size);
	snprintf(path, sizeof path, "%s/upper", stage);
	if (mkdir(path, 0755) < 0 || mount("sbx-root", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		goto out;
	snprintf(path, sizeof path, "%s/lower", stage);
	if (mkdir(path, 0755) < 0)
		goto out;
	snprintf(path, sizeof path, "%s/layer", stage);
	if (mkdir(path, 0755) < 0)
		goto out;
	for (line = next + 1; (next = strchr(line, '\n')) != NULL; line = next + 1, i++) {
		*next = '\0';
		if (i >= ROOTLAYER_MAX || mount_layer(stage, i, line, userns, uid, gid) < 0)
			goto out;
	}
	rc = 0;
out:
	free(plan);
	return rc;
}
