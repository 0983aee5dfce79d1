/* homedisk.c — a sandbox home on its own capped ext4 image (see homedisk.h). */
#include "homedisk.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "xalloc.h"

/* Tries at a free loop device: other creates at the same moment are offered the same one by
 * LOOP_CTL_GET_FREE, and all but one get EBUSY (50 concurrent ACP sessions ran out of 16). */
#define LOOP_TRIES 200
/* What mke2fs says on failure, kept for the message. */
#define MKFS_ERR_MAX 512

/* The filesystem: no journal (the home dies with its sandbox, so a crash needs no replay, and
 * nothing is written twice), no room reserved for root or for growth (the cap is the size),
 * inode tables left to be zeroed lazily and, with noinit_itable at mount, never: the image
 * file then holds only the few blocks of metadata the template has. */
static const char *const mkfs_argv_tail[] = {
	"-q", "-F", "-t", "ext4", "-m", "0", "-O", "^has_journal,^resize_inode",
	"-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", NULL,
};
#define MOUNT_OPTS "discard,noinit_itable"

/* Runs mke2fs on path; on failure the first of what it said is in why. */
static int run_mkfs(const char *path, char *why, size_t cap)
{
	const char *progs[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs"};
	const char *prog = NULL;
	struct strvec argv = {0};
	struct child_req r = {.cancel_fd = -1};
	struct child_result res = {0};
	struct sbx_err e;
	int rc = -1;

	for (size_t i = 0; i < sizeof progs / sizeof progs[0] && !prog; i++)
		if (access(progs[i], X_OK) == 0)
			prog = progs[i];
	if (prog == NULL) {
		snprintf(why, cap, "mke2fs is not installed (Debian package e2fsprogs)");
		return -1;
	}
	strvec_push(&argv, prog);
	strvec_pushv(&argv, (char *const *)mkfs_argv_tail);
	strvec_push(&argv, path);
	r.path = prog;
	r.argv = argv.v;
	if (child_run(&r, &res, &e) < 0) {
		snprintf(why, cap, "cannot run mke2fs: %.*s", MKFS_ERR_MAX, e.msg);
	} else if (res.status != 0) {
		/* what it said first: on stderr, else on stdout */
		const char *said = res.err_len ? res.err : res.out ? res.out : "";
		int n = (int)strcspn(said, "\n");
		if (n == 0)
			snprintf(why, cap, "mke2fs failed: no message");
		else
			snprintf(why, cap, "mke2fs failed: %.*s", n < MKFS_ERR_MAX ? n : MKFS_ERR_MAX, said);
	} else {
		rc = 0;
	}
	child_result_free(&res);
	strvec_clear(&argv);
	return rc;
}

/* The template for this size, made once under its lock. */
static int template_for(const char *cache_dir, int64_t size, char *path, size_t cap,
			struct sbx_err *e)
{
	char lock[PATH_MAX], tmp[PATH_MAX], why[MKFS_ERR_MAX + 64];
	int lk, fd, rc = -1;

	if (mkdir(cache_dir, 0700) < 0 && errno != EEXIST)
		return err_sys(e, errno, "cannot create %s", cache_dir);
	/* The longest of the three names made here is the temporary one. */
	if (snprintf(tmp, sizeof tmp, "%s/ext4-%" PRId64 ".img.%ld.tmp", cache_dir, size,
		     (long)getpid()) >= (int)sizeof tmp || strlen(tmp) >= cap)
		return err_set(e, SBX_EINVAL, "the image cache path %s is too long", cache_dir);
	snprintf(path, cap, "%s/ext4-%" PRId64 ".img", cache_dir, size);
	if (access(path, R_OK) == 0)
		return 0;
	snprintf(lock, sizeof lock, "%s/ext4-%" PRId64 ".lock", cache_dir, size);
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
	if (run_mkfs(tmp, why, sizeof why) < 0) {
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

int homedisk_create(const char *dir, const char *cache_dir, int64_t size, uid_t uid, gid_t gid,
		    struct sbx_err *e)
{
	char tmpl[PATH_MAX], image[PATH_MAX], home[PATH_MAX], dev[64], lf[PATH_MAX];
	int lfd;

	if (snprintf(image, sizeof image, "%s/%s", dir, HOMEDISK_IMAGE) >= (int)sizeof image ||
	    snprintf(lf, sizeof lf, "%s/home/lost+found", dir) >= (int)sizeof lf)
		return err_set(e, SBX_EINVAL, "the sandbox directory %s is too long", dir);
	snprintf(home, sizeof home, "%s/home", dir);
	if (template_for(cache_dir, size, tmpl, sizeof tmpl, e) < 0 ||
	    sparse_copy(tmpl, image, size, e) < 0)
		goto fail;
	if ((lfd = loop_attach(image, dev, sizeof dev, e)) < 0)
		goto fail;
	if (mount(dev, home, "ext4", MS_NOSUID | MS_NODEV, MOUNT_OPTS) < 0) {
		err_sys(e, errno, "cannot mount the home's filesystem on %s", home);
		ioctl(lfd, LOOP_CLR_FD, 0);
		close(lfd);
		goto fail;
	}
	close(lfd);	/* the mount holds the device now; autoclear frees it after the last */
	if (rmdir(lf) < 0 || chown(home, uid, gid) < 0 || chmod(home, 0755) < 0) {
		err_sys(e, errno, "cannot prepare the home's filesystem on %s", home);
		goto fail;
	}
	return 0;
fail:
	homedisk_release(dir);
	return -1;
}

int homedisk_release(const char *dir)
{
	char image[PATH_MAX], home[PATH_MAX];

	snprintf(image, sizeof image, "%s/%s", dir, HOMEDISK_IMAGE);
	if (access(image, F_OK) < 0)
		return 0;
	snprintf(home, sizeof home, "%s/home", dir);
	if (umount2(home, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
		return -1;
	return unlink(image) < 0 && errno != ENOENT ? -1 : 0;
}
