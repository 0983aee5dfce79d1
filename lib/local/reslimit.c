/* reslimit.c — a local sandbox's limits in force and taken away (see reslimit.h). */
#include "reslimit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cgroup.h"
#include "fsutil.h"
#include "homedisk.h"

/* DIR/cgroups holds at most CGROUP_MAX_DIRS paths and the OOM file's. */
#define SET_TEXT_MAX ((CGROUP_MAX_DIRS + 2) * (PATH_MAX + 8))

#define MIB (INT64_C(1) << 20)
/* The smallest cap worth a filesystem: below it the host disk is simply full. */
#define DISK_MIN_FREE MIB

static int load_set(const char *dir, struct cgroup_set *s)
{
	char path[PATH_MAX], *text;
	int rc;

	snprintf(path, sizeof path, "%s/cgroups", dir);
	if ((text = fs_read_small(path, SET_TEXT_MAX, NULL)) == NULL)
		return -1;
	rc = cgroup_set_parse(text, s);
	free(text);
	return rc;
}

/* Written once, before the supervisor starts, and never fsynced: after a crash of the host
 * no cgroup survives to be found through it. */
static int save_set(const char *dir, const struct cgroup_set *s, struct sbx_err *e)
{
	char path[PATH_MAX], link[PATH_MAX], text[SET_TEXT_MAX];
	int len = cgroup_set_format(s, text, sizeof text), fd;

	snprintf(path, sizeof path, "%s/cgroups", dir);
	if (len < 0)
		return err_set(e, SBX_EIO, "cannot write %s: paths too long", path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return err_sys(e, errno, "cannot write %s", path);
	if (write(fd, text, (size_t)len) != len) {
		err_sys(e, errno ? errno : EIO, "cannot write %s", path);
		close(fd);
		return -1;
	}
	if (close(fd) < 0)
		return err_sys(e, errno, "cannot write %s", path);
	snprintf(link, sizeof link, "%s/memory.oom", dir);
	if (s->oom[0] && symlink(s->oom, link) < 0)
		return err_sys(e, errno, "cannot write %s", link);
	return 0;
}

/* The home's cap: what was asked, but never more than 7/8 of what the host file system has
 * free now, so the image (sparse: it takes space only as the home fills) can always hold
 * what the cap promises when the sandbox is made. -1 when not even DISK_MIN_FREE is free. */
static int64_t disk_cap(const char *dir, int64_t want)
{
	struct statvfs vfs;
	int64_t room, round;

	if (statvfs(dir, &vfs) < 0)
		return want;
	room = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize / 8 * 7;
	if (room >= want)
		return want;
	round = room >= (INT64_C(1) << 30) ? 256 * MIB : MIB;
	room -= room % round;
	return room >= DISK_MIN_FREE ? room : -1;
}

int reslimit_setup(const struct reslimit_ctx *c, const struct sbx_limits *want,
		   struct sbx_limits *in_force, struct sbx_err *e)
{
	struct cgroup_want w = {want->memory, want->pids, want->cpus_milli};
	struct cgroup_set s;
	char text[32];

	memset(in_force, 0, sizeof *in_force);
	if (!want->enforced)
		return 0;
	if (cgroup_create_here(c->leaf, &w, &s, e) < 0)
		return -1;
	if (save_set(c->dir, &s, e) < 0)
		goto fail;
	*in_force = *want;
	in_force->disk = c->can_cap ? disk_cap(c->dir, want->disk) : 0;
	if (in_force->disk < 0) {
		err_set(e, SBX_EIO, "cannot cap the home: the file system of %s has less than %s free",
			c->dir, reslimit_size_text(DISK_MIN_FREE, text, sizeof text));
		goto fail;
	}
	if (in_force->disk > 0 &&
	    homedisk_create(c->dir, c->cache_dir, in_force->disk, c->uid, c->gid, c->disk_kind,
			    e) < 0) {
		err_prefix(e, "cannot cap the home at %s",
			   reslimit_size_text(in_force->disk, text, sizeof text));
		goto fail;
	}
	snprintf(in_force->cgroup, sizeof in_force->cgroup, "v%d", s.version);
	return 0;
fail:
	cgroup_destroy(&s, RESLIMIT_RELEASE_WAIT_MS);
	reslimit_release(c->dir);
	return -1;
}

int reslimit_load(const char *dir, struct cgroup_set *s)
{
	return load_set(dir, s);
}

int reslimit_join(const char *dir)
{
	struct cgroup_set s;

	if (load_set(dir, &s) < 0)
		return errno == ENOENT ? 0 : -1;
	return cgroup_join(&s, 0);
}

int reslimit_release(const char *dir)
{
	struct cgroup_set s;
	char path[PATH_MAX];
	int rc = 0;

	if (load_set(dir, &s) == 0) {
		if (cgroup_destroy(&s, RESLIMIT_RELEASE_WAIT_MS) < 0)
			rc = -1;
		snprintf(path, sizeof path, "%s/cgroups", dir);
		if (rc == 0)
			unlink(path);
	}
	if (homedisk_release(dir) < 0)
		rc = -1;
	return rc;
}

int reslimit_freeze(const char *dir, bool paused, int wait_ms)
{
	struct cgroup_set s;

	if (load_set(dir, &s) < 0)
		return -1;
	return cgroup_freeze(&s, paused, wait_ms);
}

int reslimit_frozen(const char *dir)
{
	struct cgroup_set s;

	if (load_set(dir, &s) < 0)
		return -1;
	return cgroup_frozen(&s);
}

void reslimit_kill(const char *dir)
{
	struct cgroup_set s;

	if (load_set(dir, &s) == 0)
		cgroup_kill(&s);
}

long long reslimit_oom_kills(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/memory.oom", dir);
	return cgroup_oom_kills(path);
}

int64_t reslimit_tmpfs_size(int64_t memory, enum reslimit_tmpfs which)
{
	switch (which) {
	case RESLIMIT_TMP:
	case RESLIMIT_VAR:
		return memory / 4;
	case RESLIMIT_RUN:
		return memory / 8 < 64 * MIB ? memory / 8 : 64 * MIB;
	case RESLIMIT_SHM:
		return memory / 4 < 64 * MIB ? memory / 4 : 64 * MIB;
	case RESLIMIT_ROOT:
		return MIB;
	case RESLIMIT_MASK:
		break;
	}
	return 64 << 10;
}

const char *reslimit_size_text(int64_t bytes, char *buf, size_t cap)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, cap, "%" PRId64, bytes);
	else
		snprintf(buf, cap, "%" PRId64 "%c", bytes, units[u]);
	return buf;
}
