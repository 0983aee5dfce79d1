/* homedisk.c — a sandbox home on its own capped ext4 image (see homedisk.h). */
#include "homedisk.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "xalloc.h"

/* Tries at a free loop device: other creates at the same moment are offered the same one by
 * LOOP_CTL_GET_FREE, and all but one get EBUSY (50 concurrent ACP sessions ran out of 16). */
#define LOOP_TRIES 200
/* What a tool says on failure, kept for the message. */
#define TOOL_ERR_MAX 512
/* How long fuse2fs may take to mount, and fusermount3 to unmount. */
#define TOOL_TIMEOUT_NS (INT64_C(20) * 1000000000)
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

/* The filesystem: no room reserved for root or for growth (the cap is the size), inode tables
 * left to be zeroed lazily and, with noinit_itable at mount, never: the image file then holds
 * only the few blocks of metadata the template has. The kernel's ext4 gets a journal (not for
 * a crash: the home dies with its sandbox): without one it reuses no inode freed in the last
 * 30 s (recently_deleted(), a scan per file made), so a home emptied and restored made its
 * 12 000 files in 26 s instead of 5.6 s, and deleting them took 41 s instead of 0.7 s, each
 * freed block discarded on its own. fuse2fs (1.47) writes no journal: a user's has none. */
static const char *const mkfs_argv_head[] = {
	"-q", "-F", "-t", "ext4", "-m", "0", "-E", NULL,
};
#define MKFS_FEATURES_LOOP "^resize_inode"
#define MKFS_FEATURES_FUSE "^has_journal,^resize_inode"
#define MKFS_EXTENDED "lazy_itable_init=1,lazy_journal_init=1,nodiscard"
#define MOUNT_OPTS "discard,noinit_itable"

/* The tools, where Debian puts them (never looked up on PATH: fusermount3 runs setuid). */
static const char *const mkfs_progs[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs", NULL};
static const char *const fuse2fs_progs[] = {"/usr/bin/fuse2fs", "/usr/sbin/fuse2fs",
					    "/sbin/fuse2fs", "/bin/fuse2fs", NULL};
static const char *const fusermount_progs[] = {"/usr/bin/fusermount3", "/bin/fusermount3",
					       "/usr/bin/fusermount", "/bin/fusermount", NULL};

static const char *find_prog(const char *const *progs)
{
	for (; *progs; progs++)
		if (access(*progs, X_OK) == 0)
			return *progs;
	return NULL;
}

/* Runs prog with argv (argv[0] included) and only PATH in its environment: fuse2fs lives on
 * as the home's server, and nothing of the caller's (an API key) should live on with it.
 * timeout_ns: 0 for none. On failure the first of what it said is in why. */
static int run_tool(const char *prog, char *const *argv, int64_t timeout_ns, char *why,
		    size_t cap)
{
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	struct child_req r = CHILD_REQ_INIT(.path = prog, .argv = argv, .envp = envp,
					    .timeout_ns = timeout_ns);
	struct child_result res = {0};
	const char *name = strrchr(prog, '/') + 1;
	struct sbx_err e;
	int rc = -1;

	if (child_run(&r, &res, &e) < 0) {
		snprintf(why, cap, "cannot run %s: %.*s", name, TOOL_ERR_MAX, e.msg);
	} else if (res.timed_out) {
		snprintf(why, cap, "%s did not finish in %d s", name,
			 (int)(timeout_ns / 1000000000));
	} else if (res.status != 0) {
		/* what it said first: on stderr, else on stdout */
		const char *said = res.err_len ? res.err : res.out ? res.out : "";
		int n = (int)strcspn(said, "\n");
		if (n == 0)
			snprintf(why, cap, "%s failed (status %d) with no message", name, res.status);
		else
			snprintf(why, cap, "%s failed: %.*s", name, n < TOOL_ERR_MAX ? n : TOOL_ERR_MAX,
				 said);
	} else {
		rc = 0;
	}
	child_result_free(&res);
	return rc;
}

/* Runs mke2fs on path: for fuse2fs (no journal), the root directory owned by owner ("UID:GID"),
 * when owner is not NULL; for the kernel otherwise. */
static int run_mkfs(const char *path, const char *owner, char *why, size_t cap)
{
	const char *prog = find_prog(mkfs_progs);
	struct strvec argv = {0};
	char *ext;
	int rc;

	if (prog == NULL) {
		snprintf(why, cap, "mke2fs is not installed (Debian package e2fsprogs)");
		return -1;
	}
	ext = owner ? xasprintf("%s,root_owner=%s", MKFS_EXTENDED, owner) : xstrdup(MKFS_EXTENDED);
	strvec_push(&argv, prog);
	strvec_pushv(&argv, (char *const *)mkfs_argv_head);
	strvec_push(&argv, ext);
	strvec_push(&argv, "-O");
	strvec_push(&argv, owner ? MKFS_FEATURES_FUSE : MKFS_FEATURES_LOOP);
	strvec_push(&argv, path);
	rc = run_tool(prog, argv.v, 0, why, cap);	/* a big filesystem takes its time */
	strvec_clear(&argv);
	free(ext);
	return rc;
}

int homedisk_fuse_usable(char *why, size_t cap)
{
	const char *fm = find_prog(fusermount_progs);
	struct stat st;
	int fd;

	if (find_prog(fuse2fs_progs) == NULL) {
		snprintf(why, cap, "fuse2fs is not installed (Debian package fuse2fs)");
		return -1;
	}
	if (fm == NULL || stat(fm, &st) < 0 || !(st.st_mode & S_ISUID) || st.st_uid != 0) {
		snprintf(why, cap, "there is no setuid fusermount3 (Debian package fuse3)");
		return -1;
	}
	/* What fusermount3 does first, with this process's rights. */
	if ((fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0) {
		int err = errno;
		snprintf(why, cap, "/dev/fuse is not open to this user (%s)%s", strerror(err),
			 err == EACCES ? ": distributions' udev makes it mode 0666, here it is not"
				       : "");
		return -1;
	}
	close(fd);
	return 0;
}

/* The template for this size (and owner: NULL, root), made once under its lock. */
static int template_for(const char *cache_dir, int64_t size, const char *owner, char *path,
			size_t cap, struct sbx_err *e)
{
	char lock[PATH_MAX], tmp[PATH_MAX], why[TOOL_ERR_MAX + 64], tag[96];
	int lk, fd, rc = -1;

	if (mkdir(cache_dir, 0700) < 0 && errno != EEXIST)
		return err_sys(e, errno, "cannot create %s", cache_dir);
	/* The longest of the three names made here is the temporary one. */
	/* "ext4j": the kernel's, with a journal since issue 27 (older templates have none) */
	snprintf(tag, sizeof tag, "ext4%s-%" PRId64 "%s%s", owner ? "" : "j", size, owner ? "-" : "",
		 owner ? owner : "");
	for (char *c = tag; *c; c++)
		if (*c == ':')
			*c = '-';
	if (snprintf(tmp, sizeof tmp, "%s/%s.img.%ld.tmp", cache_dir, tag, (long)getpid()) >=
		    (int)sizeof tmp || strlen(tmp) >= cap)
		return err_set(e, SBX_EINVAL, "the image cache path %s is too long", cache_dir);
	snprintf(path, cap, "%s/%s.img", cache_dir, tag);
	if (access(path, R_OK) == 0)
		return 0;
	snprintf(lock, sizeof lock, "%s/%s.lock", cache_dir, tag);
	if ((lk = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return err_sys(e, errno, "cannot open %s", lock);
	while (flock(lk, LOCK_EX) < 0 && errno == EINTR)
		;
	if (access(path, R_OK) == 0) {
		rc = 0;
		goto out;
	}
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size) < 0) {
		err_sys(e, errno, "cannot create %s", tmp);
		if (fd >= 0)
			close(fd);
		goto out_tmp;
	}
	close(fd);
	if (run_mkfs(tmp, owner, why, sizeof why) < 0) {
		err_set(e, SBX_EUNAVAIL, "cannot make the home's filesystem: %s", why);
		goto out_tmp;
	}
	/* On disk before it has its name: a template torn by a crash would fail every mount. */
	if ((fd = open(tmp, O_RDONLY | O_CLOEXEC)) < 0 || fsync(fd) < 0) {
		err_sys(e, errno, "cannot sync %s", tmp);
		if (fd >= 0)
			close(fd);
		goto out_tmp;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		err_sys(e, errno, "cannot rename %s", tmp);
		goto out_tmp;
	}
	rc = 0;
	goto out;
out_tmp:
	unlink(tmp);
out:
	close(lk);
	return rc;
}

/* Copies the allocated extents of src into the new sparse file dst of the same size. */
static int sparse_copy(const char *src, const char *dst, int64_t size, struct sbx_err *e)
{
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
	off_t pos = 0, data, hole;

	if (in < 0)
		return err_sys(e, errno, "cannot open %s", src);
	out = open(dst, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0 || ftruncate(out, size) < 0) {
		err_sys(e, errno, "cannot create %s", dst);
		goto out;
	}
	while ((data = lseek(in, pos, SEEK_DATA)) >= 0) {
		if ((hole = lseek(in, data, SEEK_HOLE)) < 0)
			break;
		for (off_t a = data, b = data; a < hole;) {
			ssize_t n = copy_file_range(in, &a, out, &b, (size_t)(hole - a), 0);
			if (n <= 0) {
				/* no in-kernel copy here (another filesystem): plain reads */
				char buf[65536];
				ssize_t r = pread(in, buf, sizeof buf < (size_t)(hole - a) ? sizeof buf
									       : (size_t)(hole - a), a);
				if (r <= 0 || pwrite(out, buf, (size_t)r, a) != r) {
					err_sys(e, r < 0 ? errno : EIO, "cannot copy %s", src);
					goto out;
				}
				a += r;
				b = a;
			}
		}
		pos = hole;
	}
	if (errno != ENXIO && data < 0) {
		err_sys(e, errno, "cannot read %s", src);
		goto out;
	}
	rc = 0;
out:
	close(in);
	if (out >= 0)
		close(out);
	return rc;
}

/* Binds image to a free loop device that goes away with its last mount; returns its fd. */
static int loop_attach(const char *image, char *dev, size_t cap, struct sbx_err *e)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), img, lfd = -1;

	if (ctl < 0)
		return err_sys(e, errno, "cannot open /dev/loop-control");
	if ((img = open(image, O_RDWR | O_CLOEXEC)) < 0) {
		close(ctl);
		return err_sys(e, errno, "cannot open %s", image);
	}
	for (int i = 0; i < LOOP_TRIES && lfd < 0; i++) {
		struct loop_config cfg;
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);

		if (n < 0) {
			err_sys(e, errno, "no free loop device");
			break;
		}
		snprintf(dev, cap, "/dev/loop%d", n);
		if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) < 0) {
			err_sys(e, errno, "cannot open %s", dev);
			break;
		}
		memset(&cfg, 0, sizeof cfg);
		cfg.fd = (unsigned)img;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
			int err = errno;
			close(lfd);
			lfd = -1;
			if (err != EBUSY) {
				err_sys(e, err, "cannot set up %s", dev);
				break;
			}
			/* Another create took the same free device first: let the crowd pass. */
			if (i + 1 == LOOP_TRIES)
				err_set(e, SBX_EIO, "every free loop device was taken by another sandbox "
					"%d times in a row", LOOP_TRIES);
			else
				usleep(1000 + (useconds_t)(getpid() % 8) * 1000);
		}
	}
	close(img);
	close(ctl);
	return lfd;
}

/* Mounts image on home with the kernel's ext4 through a loop device (root). */
static int mount_loop(const char *image, const char *home, struct sbx_err *e)
{
	char dev[64];
	int lfd;

	if ((lfd = loop_attach(image, dev, sizeof dev, e)) < 0)
		return -1;
	if (mount(dev, home, "ext4", MS_NOSUID | MS_NODEV, MOUNT_OPTS) < 0) {
		err_sys(e, errno, "cannot mount the home's filesystem on %s", home);
		ioctl(lfd, LOOP_CLR_FD, 0);
		close(lfd);
		return -1;
	}
	close(lfd);	/* the mount holds the device now; autoclear frees it after the last */
	return 0;
}

/* Mounts image on home with fuse2fs (a user). It returns once the filesystem is mounted,
 * leaving its server in the background (a session of its own, on /dev/null, in /). */
static int mount_fuse(const char *image, const char *home, struct sbx_err *e)
{
	const char *prog = find_prog(fuse2fs_progs);
	char why[TOOL_ERR_MAX + 64];
	/* The kernel checks permissions (default_permissions), as it does on any filesystem;
	 * fuse2fs's own checks, which refuse writing to a file just made read-only (git's
	 * objects), are off (fakeroot). Only this user may enter the mount at all (no
	 * allow_other), and every process of the sandbox is this user on the host. */
	char *argv[] = {(char *)"fuse2fs", (char *)image, (char *)home, (char *)"-o",
			(char *)"fakeroot,default_permissions", NULL};

	if (prog == NULL)
		return err_set(e, SBX_EUNAVAIL, "fuse2fs is not installed (Debian package fuse2fs)");
	if (run_tool(prog, argv, TOOL_TIMEOUT_NS, why, sizeof why) < 0)
		return err_set(e, SBX_EUNAVAIL, "cannot mount the home's filesystem: %s", why);
	return 0;
}

int homedisk_create(const char *dir, const char *cache_dir, int64_t size, uid_t uid, gid_t gid,
		    enum homedisk_kind kind, struct sbx_err *e)
{
	char tmpl[PATH_MAX], image[PATH_MAX], home[PATH_MAX], lf[PATH_MAX], owner[64];
	bool fuse = kind == HOMEDISK_FUSE;

	if (snprintf(image, sizeof image, "%s/%s", dir, HOMEDISK_IMAGE) >= (int)sizeof image ||
	    snprintf(lf, sizeof lf, "%s/home/lost+found", dir) >= (int)sizeof lf)
		return err_set(e, SBX_EINVAL, "the sandbox directory %s is too long", dir);
	snprintf(home, sizeof home, "%s/home", dir);
	/* fuse2fs lets only root give files away: a user's filesystem is made with its root
	 * directory the user's already. */
	snprintf(owner, sizeof owner, "%lu:%lu", (unsigned long)uid, (unsigned long)gid);
	if (template_for(cache_dir, size, fuse ? owner : NULL, tmpl, sizeof tmpl, e) < 0 ||
	    sparse_copy(tmpl, image, size, e) < 0)
		goto fail;
	if ((fuse ? mount_fuse(image, home, e) : mount_loop(image, home, e)) < 0)
		goto fail;
	if (rmdir(lf) < 0 || (!fuse && chown(home, uid, gid) < 0) || chmod(home, 0755) < 0) {
		err_sys(e, errno, "cannot prepare the home's filesystem on %s", home);
		goto fail;
	}
	return 0;
fail:
	homedisk_release(dir);
	return -1;
}

/* Whether DIR/home is a mount of its own (st_dev differs from DIR's): 1, 0, or -1 when it
 * cannot be looked at (a FUSE mount whose server is gone: ENOTCONN). */
static int home_mounted(const char *dir, const char *home)
{
	struct stat d, h;

	if (stat(dir, &d) < 0 || lstat(home, &h) < 0)
		return -1;
	return d.st_dev != h.st_dev;
}

/* The two ways a home is lost; e says which (what of "the home"). */
static int lost_fuse(struct sbx_err *e)
{
	err_set(e, SBX_EIO, "its filesystem is gone: the fuse2fs serving it ended");
	return HOMEDISK_LOST;
}

static int lost_unmounted(struct sbx_err *e, const char *dir)
{
	err_set(e, SBX_EIO, "its filesystem is no longer mounted on %s/home", dir);
	return HOMEDISK_LOST;
}

/* Whether the holder (pid), in the mount namespace the home was mounted in, sees it mounted:
 * 1 with its path there (/proc/PID/root/DIR/home) in out, 0, or -1 with errno when that view
 * cannot be had (ESRCH: no holder; EXDEV: the holder does not see DIR itself, a tmpfs on a
 * parent in its namespace, say; EACCES: not this process's to look at). */
static int holder_view(const char *dir, pid_t holder, char *out, size_t cap)
{
	char root[PATH_MAX];
	struct stat here, there;

	if (holder <= 0 || dir[0] != '/') {
		errno = ESRCH;
		return -1;
	}
	if (snprintf(root, sizeof root, "/proc/%ld/root%s", (long)holder, dir) >= (int)sizeof root ||
	    snprintf(out, cap, "%s/home", root) >= (int)cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (stat(root, &there) < 0)
		return -1;
	if (stat(dir, &here) < 0 || here.st_dev != there.st_dev || here.st_ino != there.st_ino) {
		errno = EXDEV;
		return -1;
	}
	return home_mounted(root, out);
}

int homedisk_look(const char *dir, pid_t holder, char *home, size_t cap, struct sbx_err *e)
{
	char image[PATH_MAX], there[PATH_MAX];
	int m;

	if (snprintf(image, sizeof image, "%s/%s", dir, HOMEDISK_IMAGE) >= (int)sizeof image ||
	    snprintf(home, cap, "%s/home", dir) >= (int)cap)
		return err_set(e, SBX_EINVAL, "the sandbox directory %s is too long", dir);
	if (access(image, F_OK) < 0)
		return HOMEDISK_MOUNTED;
	if ((m = home_mounted(dir, home)) > 0)
		return HOMEDISK_MOUNTED;
	/* A dead fuse2fs is dead in every namespace that has its mount. */
	if (m < 0 && errno == ENOTCONN)
		return lost_fuse(e);
	if (m < 0)
		return err_sys(e, errno, "cannot look at %s", home);
	/* Not mounted here. The mount lives in the mount namespace the sandbox was made in, and
	 * this process may be in another (a service started with a private /tmp, a container
	 * sharing the state directory): what the host path shows here is the directory below,
	 * which says nothing. The supervisor, which sees the mount, decides. */
	m = holder_view(dir, holder, there, sizeof there);
	if (m > 0) {
		snprintf(home, cap, "%s", there);
		return HOMEDISK_MOUNTED;
	}
	if (m == 0)
		return lost_unmounted(e, dir);
	if (errno == ENOTCONN)
		return lost_fuse(e);
	if (holder <= 0)
		return err_set(e, SBX_EIO, "it is not mounted in this mount namespace, and it has "
			       "no supervisor to ask");
	return err_sys(e, errno, "it is not mounted in this mount namespace, and its "
		       "supervisor's view (/proc/%ld/root) cannot be had", (long)holder);
}

/* Unmounts a user's FUSE home, lazily; the fuse2fs serving it ends with its last user. */
static int unmount_fuse(const char *home)
{
	const char *prog = find_prog(fusermount_progs);
	char *argv[] = {(char *)"fusermount3", (char *)"-u", (char *)"-z", (char *)"--",
			(char *)home, NULL};
	char why[TOOL_ERR_MAX + 64];

	if (prog == NULL) {
		errno = ENOENT;
		return -1;
	}
	if (run_tool(prog, argv, TOOL_TIMEOUT_NS, why, sizeof why) < 0) {
		errno = EBUSY;
		return -1;
	}
	return 0;
}

int homedisk_release(const char *dir)
{
	char image[PATH_MAX], home[PATH_MAX];
	struct statfs fs;
	int m;

	snprintf(image, sizeof image, "%s/%s", dir, HOMEDISK_IMAGE);
	if (access(image, F_OK) < 0)
		return 0;
	snprintf(home, sizeof home, "%s/home", dir);
	m = home_mounted(dir, home);
	if (m < 0 && errno == ENOENT)
		m = 0;
	if (m != 0) {
		/* A dead fuse2fs leaves ENOTCONN; a live one, FUSE's magic. */
		bool fuse = m < 0 ? errno == ENOTCONN
				  : statfs(home, &fs) == 0 && fs.f_type == FUSE_SUPER_MAGIC;
		if (fuse ? unmount_fuse(home) < 0
			 : umount2(home, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
			return -1;
	}
	return unlink(image) < 0 && errno != ENOENT ? -1 : 0;
}
