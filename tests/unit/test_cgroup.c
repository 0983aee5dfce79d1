/* test_cgroup.c — lib/cgroup over fake cgroupfs trees: cgroup v2 as root and as a user in a
 * systemd-delegated subtree (this machine has no v2 controllers to try it on), v1 with
 * separate, co-mounted and container-bound hierarchies, and the failures' messages. The fake
 * tree holds the files the code reads; what it writes lands in plain files checked here. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "fsutil.h"
#include "tap.h"

static char top[PATH_MAX];

/* Makes top/rel (and parents) owned by uid, with a cgroup.subtree_control of sc. */
static void cg(const char *rel, const char *sc, uid_t uid)
{
	char path[PATH_MAX * 2], file[PATH_MAX * 3];
	int fd;

	snprintf(path, sizeof path, "%s/%s", top, rel);
	for (char *p = path + strlen(top) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	mkdir(path, 0755);
	if (chown(path, uid, uid) < 0)
		perror("chown");
	snprintf(file, sizeof file, "%s/cgroup.subtree_control", path);
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, sc, strlen(sc)) < 0)
			perror("write");
		close(fd);
	}
	snprintf(file, sizeof file, "%s/cgroup.procs", path);
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
	if (chown(file, uid, uid) < 0)
		perror("chown");
}

static char *slurp(const char *dir, const char *name)
{
	static char buf[256];
	char path[PATH_MAX * 2];
	char *s;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	s = fs_read_small(path, sizeof buf - 1, NULL);
	snprintf(buf, sizeof buf, "%s", s ? s : "(missing)");
	free(s);
	return buf;
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	fs_write_atomic(path, text, strlen(text), 0644);
}

/* mountinfo's escaping of a mount point: a space is \040. */
static void escaped(const char *path, char *out, size_t cap)
{
	size_t k = 0;

	for (const char *p = path; *p && k + 5 < cap; p++)
		k += (size_t)(*p == ' ' ? snprintf(out + k, cap - k, "\\040")
					: snprintf(out + k, cap - k, "%c", *p));
	out[k] = '\0';
}

/* Removes the regular files the code wrote into dir, as the kernel would not need. */
static void clear_files(const char *dir)
{
	const char *names[] = {"memory.max", "memory.swap.max", "pids.max", "cpu.max",
			       "cgroup.procs", "cgroup.kill", "memory.events",
			       "memory.limit_in_bytes", "cpu.cfs_period_us", "cpu.cfs_quota_us", "tasks",
			       "cgroup.freeze", "cgroup.events", "freezer.state"};
	char path[PATH_MAX * 2];

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
}

/* v2 pause: cgroup.freeze written, done when cgroup.events says "frozen 1" (the kernel's
 * word, faked here); one not frozen in time is thawed again. */
static void test_v2_freeze(const struct cgroup_host *h, const struct cgroup_want *w)
{
	struct cgroup_set s;
	struct sbx_err e;

	ok(cgroup_create(h, "sbx-f", w, &s, &e) == 0, "v2 freeze: created (%s)", e.msg);
	errno = 0;
	ok(cgroup_freeze(&s, true, 10) < 0 && errno == ENOTSUP && cgroup_frozen(&s) < 0,
	   "v2 freeze: without cgroup.freeze (a kernel before 5.2) it says it cannot");
	put_file(s.dir[0], "cgroup.freeze", "0\n");
	put_file(s.dir[0], "cgroup.events", "populated 1\nfrozen 1\n");
	ok(cgroup_freeze(&s, true, 1000) == 0, "v2 freeze: done once cgroup.events says frozen 1");
	is_str(slurp(s.dir[0], "cgroup.freeze"), "1", "v2 freeze: writes 1 to cgroup.freeze");
	ok(cgroup_frozen(&s) == 1, "v2 freeze: frozen read back from cgroup.freeze");
	ok(cgroup_freeze(&s, true, 1000) == 0, "v2 freeze: twice is fine");
	put_file(s.dir[0], "cgroup.events", "populated 1\nfrozen 0\n");
	ok(cgroup_freeze(&s, false, 1000) == 0 && cgroup_frozen(&s) == 0,
	   "v2 thaw: writes 0, done at frozen 0");
	is_str(slurp(s.dir[0], "cgroup.freeze"), "0", "v2 thaw: cgroup.freeze is 0");
	errno = 0;
	ok(cgroup_freeze(&s, true, 20) < 0 && errno == ETIMEDOUT,
	   "v2 freeze: a cgroup that never says frozen 1 times out");
	is_str(slurp(s.dir[0], "cgroup.freeze"), "0", "v2 freeze: a freeze not done in time is undone");
	put_file(s.dir[0], "cgroup.freeze", "1\n");
	put_file(s.dir[0], "cgroup.kill", "");
	put_file(s.dir[0], "cgroup.procs", "");
	cgroup_kill(&s);
	ok(strcmp(slurp(s.dir[0], "cgroup.kill"), "1") == 0 &&
		   strcmp(slurp(s.dir[0], "cgroup.freeze"), "0") == 0,
	   "v2 kill: cgroup.kill, then thawed");
	clear_files(s.dir[0]);
	ok(cgroup_destroy(&s, 0) == 0, "v2 freeze: removed");
}

static void test_v2(void)
{
	char mnt[PATH_MAX], esc[PATH_MAX * 4], mi[PATH_MAX * 5], want_dir[PATH_MAX * 2];
	const char *self = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope\n";
	struct cgroup_want w = {.memory = 128 << 20, .pids = 64};
	struct cgroup_host h = {.self = self, .euid = 1000};
	struct cgroup_set s, back;
	struct sbx_err e;
	char text[8192];

	if (snprintf(mnt, sizeof mnt, "%s/v2 root", top) >= (int)sizeof mnt) {
		ok(0, "the test directory's path is too long");
		return;
	}
	escaped(mnt, esc, sizeof esc);
	snprintf(mi, sizeof mi,
		 "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "41 31 0:38 / %s rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
		 esc);
	h.mountinfo = mi;
	cg("v2 root", "cpu memory pids", 0);
	cg("v2 root/user.slice", "cpu memory pids", 0);
	cg("v2 root/user.slice/user-1000.slice", "memory pids", 0);
	cg("v2 root/user.slice/user-1000.slice/user@1000.service", "memory pids", 1000);
	cg("v2 root/user.slice/user-1000.slice/user@1000.service/app.slice", "", 1000);
	cg("v2 root/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope", "", 1000);

	/* a user: its delegated subtree, the lowest cgroup there with the controllers */
	ok(cgroup_create(&h, "sbx-a", &w, &s, &e) == 0, "v2 user: created (%s)", e.msg);
	snprintf(want_dir, sizeof want_dir, "%s/user.slice/user-1000.slice/user@1000.service/sbx-a", mnt);
	ok(s.version == 2 && s.n == 1, "v2 user: one cgroup v2 directory");
	is_str(s.dir[0], want_dir, "v2 user: in user@1000.service, not above it");
	is_str(slurp(s.dir[0], "memory.max"), "134217728", "v2: memory.max");
	is_str(slurp(s.dir[0], "pids.max"), "64", "v2: pids.max");
	is_str(slurp(s.dir[0], "cpu.max"), "(missing)", "v2: no cpu.max without -cpus");
	is_str(slurp(s.dir[0], "memory.swap.max"), "(missing)",
	       "v2: memory.swap.max only where the kernel has it");
	ok(strstr(s.oom, "/sbx-a/memory.events") != NULL, "v2: OOM kills counted in memory.events");
	ok(cgroup_join(&s, 4242) == 0, "v2: join");
	is_str(slurp(s.dir[0], "cgroup.procs"), "4242", "v2: join writes the pid to cgroup.procs");
	put_file(s.dir[0], "memory.events", "low 0\nhigh 0\nmax 7\noom 2\noom_kill 3\noom_group_kill 0\n");
	ok(cgroup_oom_kills(s.oom) == 3, "v2: oom_kill read from memory.events");
	ok(cgroup_set_format(&s, text, sizeof text) > 0 && cgroup_set_parse(text, &back) == 0 &&
		   back.version == 2 && back.n == 1 && strcmp(back.dir[0], s.dir[0]) == 0 &&
		   strcmp(back.oom, s.oom) == 0, "the set survives its state file");
	ok(cgroup_create(&h, "sbx-a", &w, &s, &e) < 0 && strstr(e.msg, "cannot create cgroup"),
	   "an existing cgroup of that name is never adopted: %s", e.msg);

	/* destroy: cgroup.kill when the kernel has it, then rmdir (here after the fake files go) */
	ok(cgroup_set_parse(text, &s) == 0, "reparsed");
	put_file(s.dir[0], "cgroup.procs", "");
	put_file(s.dir[0], "cgroup.kill", "");
	ok(cgroup_destroy(&s, 0) < 0, "destroy fails while the directory holds files");
	is_str(slurp(s.dir[0], "cgroup.kill"), "1", "v2 destroy: writes 1 to cgroup.kill");
	clear_files(s.dir[0]);
	ok(cgroup_destroy(&s, 0) == 0 && access(s.dir[0], F_OK) < 0, "destroy removes the cgroup");
	ok(cgroup_destroy(&s, 0) == 0, "destroy of a removed cgroup is success");

	test_v2_freeze(&h, &w);

	/* a user who needs cpu, which its subtree lacks: a clear error, never a cgroup above */
	w.cpus_milli = 500;
	ok(cgroup_create(&h, "sbx-b", &w, &s, &e) < 0, "v2 user without cpu delegated: refused");
	ok(strstr(e.msg, "memory, pids and cpu controllers") && strstr(e.msg, "that this user owns") &&
		   strstr(e.msg, "-limits none") && strstr(e.msg, "Delegate=yes"),
	   "v2 user: says why and how to fix it: %s", e.msg);

	/* root: anywhere, so the lowest with the controllers: user.slice for cpu */
	h.euid = 0;
	ok(cgroup_create(&h, "sbx-c", &w, &s, &e) == 0, "v2 root with cpu: created (%s)", e.msg);
	snprintf(want_dir, sizeof want_dir, "%s/user.slice/sbx-c", mnt);
	is_str(s.dir[0], want_dir, "v2 root: the lowest cgroup with cpu, memory and pids");
	is_str(slurp(s.dir[0], "cpu.max"), "50000 100000", "v2: cpu.max for 0.5 CPU");
	clear_files(s.dir[0]);
	ok(cgroup_destroy(&s, 0) == 0, "v2 root: removed");

	/* our cgroup outside the mounted subtree (another cgroup namespace's view) */
	snprintf(mi, sizeof mi, "41 31 0:38 /elsewhere %s rw - cgroup2 cgroup2 rw\n", esc);
	ok(cgroup_create(&h, "sbx-d", &w, &s, &e) < 0 && strstr(e.msg, "no cgroup v2 hierarchy"),
	   "v2: a cgroup not reachable through the mount is an error: %s", e.msg);
}

static void test_v1(void)
{
	char mi[PATH_MAX * 6], want_dir[PATH_MAX * 2];
	struct cgroup_want w = {.memory = 64 << 20, .pids = 100, .cpus_milli = 1500};
	struct cgroup_host h = {.euid = 0};
	struct cgroup_set s;
	struct sbx_err e;

	/* hybrid: v1 controllers, an empty v2 mount (this machine's shape); cpu co-mounted */
	cg("v1/unified", "", 0);
	cg("v1/memory/process_api/x", "", 0);
	cg("v1/pids", "", 0);
	cg("v1/cpu,cpuacct/user.slice", "", 0);
	snprintf(mi, sizeof mi,
		 "32 31 0:29 / %s/v1/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		 "35 31 0:32 / %s/v1/memory rw - cgroup cgroup rw,memory\n"
		 "39 31 0:36 / %s/v1/pids rw - cgroup cgroup rw,pids\n"
		 "41 31 0:38 / %s/v1/unified rw - cgroup2 cgroup2 rw\n", top, top, top, top);
	h.mountinfo = mi;
	h.self = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/x\n1:cpu,cpuacct:/user.slice\n0::/\n";
	ok(cgroup_create(&h, "sbx-v1", &w, &s, &e) == 0, "v1: created (%s)", e.msg);
	ok(s.version == 1 && s.n == 3, "v1: one directory per hierarchy");
	snprintf(want_dir, sizeof want_dir, "%s/v1/memory/process_api/x/sbx-v1", top);
	is_str(s.dir[0], want_dir, "v1 memory: below our own memory cgroup");
	snprintf(want_dir, sizeof want_dir, "%s/v1/pids/sbx-v1", top);
	is_str(s.dir[1], want_dir, "v1 pids: below our pids cgroup (the root here)");
	snprintf(want_dir, sizeof want_dir, "%s/v1/cpu,cpuacct/user.slice/sbx-v1", top);
	is_str(s.dir[2], want_dir, "v1 cpu: in the co-mounted cpu,cpuacct hierarchy");
	is_str(slurp(s.dir[0], "memory.limit_in_bytes"), "67108864", "v1: memory.limit_in_bytes");
	is_str(slurp(s.dir[1], "pids.max"), "100", "v1: pids.max");
	is_str(slurp(s.dir[2], "cpu.cfs_quota_us"), "150000", "v1: cfs quota for 1.5 CPU");
	is_str(slurp(s.dir[2], "cpu.cfs_period_us"), "100000", "v1: cfs period");
	ok(strstr(s.oom, "sbx-v1/memory.oom_control") != NULL, "v1: OOM kills in memory.oom_control");
	put_file(s.dir[0], "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n");
	ok(cgroup_oom_kills(s.oom) == 5, "v1: oom_kill read");
	ok(cgroup_join(&s, 77) == 0 && strcmp(slurp(s.dir[1], "cgroup.procs"), "77") == 0 &&
		   strcmp(slurp(s.dir[2], "cgroup.procs"), "77") == 0, "v1: join writes every hierarchy");
	ok(cgroup_join(&s, 0) == 0 && strcmp(slurp(s.dir[0], "tasks"), "0") == 0 &&
		   strcmp(slurp(s.dir[2], "tasks"), "0") == 0,
	   "v1: the caller joins through tasks (no global lock)");
	for (int i = 0; i < s.n; i++) {
		clear_files(s.dir[i]);
		unlink(strcat(strcpy(want_dir, s.dir[i]), "/memory.oom_control"));
	}
	ok(cgroup_destroy(&s, 0) == 0 && access(s.dir[0], F_OK) < 0 && access(s.dir[2], F_OK) < 0,
	   "v1: every directory removed");

	/* with a freezer hierarchy: a directory there too, and pause through freezer.state */
	cg("v1/freezer", "", 0);
	snprintf(mi, sizeof mi,
		 "32 31 0:29 / %s/v1/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		 "35 31 0:32 / %s/v1/memory rw - cgroup cgroup rw,memory\n"
		 "37 31 0:34 / %s/v1/freezer rw - cgroup cgroup rw,freezer\n"
		 "39 31 0:36 / %s/v1/pids rw - cgroup cgroup rw,pids\n", top, top, top, top);
	h.self = "8:pids:/\n6:freezer:/\n4:memory:/process_api/x\n1:cpu,cpuacct:/user.slice\n";
	ok(cgroup_create(&h, "sbx-fz", &w, &s, &e) == 0 && s.n == 4, "v1 freezer: created (%s)", e.msg);
	snprintf(want_dir, sizeof want_dir, "%s/v1/freezer/sbx-fz", top);
	is_str(s.dir[3], want_dir, "v1 freezer: below our own freezer cgroup");
	put_file(s.dir[3], "freezer.state", "THAWED\n");
	ok(cgroup_frozen(&s) == 0, "v1 freezer: THAWED is running");
	ok(cgroup_freeze(&s, true, 20) == 0 && strcmp(slurp(s.dir[3], "freezer.state"), "FROZEN") == 0,
	   "v1 freezer: FROZEN written into freezer.state, and read back as done");
	put_file(s.dir[3], "freezer.state", "FREEZING\n");
	ok(cgroup_frozen(&s) == 1, "v1 freezer: FREEZING counts as paused");
	put_file(s.dir[3], "cgroup.procs", "");
	cgroup_kill(&s);
	is_str(slurp(s.dir[3], "freezer.state"), "THAWED", "v1 kill: thawed after the kill");
	for (int i = 0; i < s.n; i++)
		clear_files(s.dir[i]);
	ok(cgroup_destroy(&s, 0) == 0 && access(s.dir[3], F_OK) < 0, "v1 freezer: removed");

	/* a container that bind-mounts its own cgroup at the hierarchy's mount point */
	cg("v1c/memory", "", 0);
	cg("v1c/pids", "", 0);
	snprintf(mi, sizeof mi,
		 "35 31 0:32 /docker/abc %s/v1c/memory rw - cgroup cgroup rw,memory\n"
		 "39 31 0:36 /docker/abc %s/v1c/pids rw - cgroup cgroup rw,pids\n", top, top);
	h.self = "8:pids:/docker/abc\n4:memory:/docker/abc\n";
	w.cpus_milli = 0;
	ok(cgroup_create(&h, "sbx-c", &w, &s, &e) == 0, "v1 in a container: created (%s)", e.msg);
	snprintf(want_dir, sizeof want_dir, "%s/v1c/memory/sbx-c", top);
	is_str(s.dir[0], want_dir, "v1 in a container: below the mounted cgroup");
	for (int i = 0; i < s.n; i++)
		clear_files(s.dir[i]);
	ok(cgroup_destroy(&s, 0) == 0, "v1 in a container: removed");

	/* no pids hierarchy: nothing is left behind, and the message says what to do */
	snprintf(mi, sizeof mi, "35 31 0:32 / %s/v1/memory rw - cgroup cgroup rw,memory\n", top);
	h.self = "4:memory:/process_api/x\n";
	ok(cgroup_create(&h, "sbx-p", &w, &s, &e) < 0 && strstr(e.msg, "no pids hierarchy") &&
		   strstr(e.msg, "-limits none"), "v1 without pids: refused: %s", e.msg);
	snprintf(want_dir, sizeof want_dir, "%s/v1/memory/process_api/x/sbx-p", top);
	ok(access(want_dir, F_OK) < 0, "v1 without pids: the memory cgroup made first is gone");

	/* no cgroup mounted at all */
	h.mountinfo = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n";
	ok(cgroup_create(&h, "sbx-n", &w, &s, &e) < 0 && strstr(e.msg, "limits need a cgroup"),
	   "no cgroups at all: %s", e.msg);
}

int main(void)
{
	snprintf(top, sizeof top, "/tmp/sbx-cgroup-test.XXXXXX");
	if (mkdtemp(top) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_v2();
	test_v1();
	fs_remove_tree(top);
	return done_testing();
}
