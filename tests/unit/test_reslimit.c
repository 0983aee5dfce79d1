/* test_reslimit.c — lib/reslimit's pure parts: tmpfs sizes against the memory limit (each
 * below it, together at most 7/8 of it), the size text of messages, and the limits JSON of
 * the handle both ways (lib/backend/backend.c); lib/homedisk's look at a home, from the mount
 * namespace it is mounted in and from another (as root). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "homedisk.h"
#include "reslimit.h"
#include "tap.h"

static void test_tmpfs(void)
{
	const int64_t mems[] = {INT64_C(32) << 20, INT64_C(128) << 20, INT64_C(2) << 30,
				INT64_C(64) << 30};
	const enum reslimit_tmpfs all[] = {RESLIMIT_TMP, RESLIMIT_VAR, RESLIMIT_RUN, RESLIMIT_SHM};

	for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++) {
		int64_t sum = 0, max = 0;
		for (size_t j = 0; j < sizeof all / sizeof all[0]; j++) {
			int64_t t = reslimit_tmpfs_size(mems[i], all[j]);
			sum += t;
			max = t > max ? t : max;
		}
		ok(max < mems[i] && sum <= mems[i] / 8 * 7,
		   "memory %lld: every tmpfs below it, together %lld <= 7/8", (long long)mems[i],
		   (long long)sum);
	}
	ok(reslimit_tmpfs_size(INT64_C(2) << 30, RESLIMIT_SHM) == INT64_C(64) << 20,
	   "/dev/shm is 64M by default");
	ok(reslimit_tmpfs_size(INT64_C(2) << 30, RESLIMIT_TMP) == INT64_C(512) << 20,
	   "/tmp is a quarter of the default limit");
	ok(reslimit_tmpfs_size(INT64_C(32) << 20, RESLIMIT_MASK) == 64 << 10,
	   "a masking tmpfs is 64K: five of them still fit in the last eighth of 32M");
	ok(reslimit_tmpfs_size(INT64_C(32) << 20, RESLIMIT_ROOT) == INT64_C(1) << 20 &&
	   reslimit_tmpfs_size(INT64_C(64) << 30, RESLIMIT_ROOT) == INT64_C(1) << 20,
	   "the root tmpfs is 1M whatever the memory: with the masks, within the last eighth of 32M");
}

static void test_text(void)
{
	char b[32];

	is_str(reslimit_size_text(INT64_C(128) << 20, b, sizeof b), "128M", "128M");
	is_str(reslimit_size_text(INT64_C(2) << 30, b, sizeof b), "2G", "2G");
	is_str(reslimit_size_text(INT64_C(1536) << 10, b, sizeof b), "1536K", "1536K");
	is_str(reslimit_size_text(1000, b, sizeof b), "1000", "plain bytes");
	is_str(reslimit_size_text(INT64_C(3) << 40, b, sizeof b), "3T", "3T");
}

static void test_json(void)
{
	struct sbx_limits in = {.enforced = true, .memory = INT64_C(128) << 20, .pids = 64,
				.cpus_milli = 1500, .disk = INT64_C(1) << 30, .cgroup = "v2"}, out;
	struct json_object *o = sbx_limits_json(&in);

	is_str(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	       "{\"enforced\":true,\"memory\":134217728,\"pids\":64,\"cpus\":1.5,\"disk\":1073741824,"
	       "\"cgroup\":\"v2\"}", "the handle's limits");
	ok(sbx_limits_from_json(o, &out) == 0 && out.enforced && out.memory == in.memory &&
		   out.pids == 64 && out.cpus_milli == 1500 && out.disk == in.disk &&
		   strcmp(out.cgroup, "v2") == 0, "read back as written");
	json_object_put(o);
	in.cpus_milli = 2000;
	o = sbx_limits_json(&in);
	ok(strstr(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "\"cpus\":2,") != NULL,
	   "whole CPUs are integers");
	json_object_put(o);
	memset(&in, 0, sizeof in);
	o = sbx_limits_json(&in);
	is_str(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{\"enforced\":false}",
	       "-limits none: enforced false only");
	json_object_put(o);
}

/* A child in a mount namespace of its own with a tmpfs on home, until killed; its pid. */
static pid_t mount_elsewhere(const char *home)
{
	int p[2];
	char c = 0;
	pid_t pid;

	if (pipe(p) < 0 || (pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		    mount("test-home", home, "tmpfs", 0, "size=64k") == 0)
			c = 1;
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || c != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

static void test_look(void)
{
	char dir[] = "/tmp/test-homedisk.XXXXXX", home[4096], want[4096], img[4096], sub[4096];
	struct sbx_err e;
	FILE *f;
	pid_t pid;
	int m;

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(sub, sizeof sub, "%s/home", dir);
	snprintf(img, sizeof img, "%s/%s", dir, HOMEDISK_IMAGE);
	mkdir(sub, 0755);
	m = homedisk_look(dir, getpid(), home, sizeof home, &e);
	ok(m == HOMEDISK_MOUNTED && strcmp(home, sub) == 0, "no image: the home is its directory");
	if ((f = fopen(img, "w")) == NULL) {
		ok(0, "%s: %s", img, strerror(errno));
		return;
	}
	fclose(f);
	m = homedisk_look(dir, getpid(), home, sizeof home, &e);
	ok(m == HOMEDISK_LOST && strstr(e.msg, "no longer mounted on") != NULL,
	   "an image, and its holder sees no mount: lost (%s)", e.msg);
	m = homedisk_look(dir, -1, home, sizeof home, &e);
	ok(m == -1 && strstr(e.msg, "no supervisor to ask") != NULL,
	   "no holder to ask: cannot tell, not lost (%s)", e.msg);
	if (geteuid() != 0) {
		printf("# not root: no mount namespace to look at the home from outside\n");
	} else if ((pid = mount_elsewhere(sub)) < 0) {
		ok(0, "a tmpfs on the home in a mount namespace of a child's");
	} else {
		m = homedisk_look(dir, pid, home, sizeof home, &e);
		snprintf(want, sizeof want, "/proc/%ld/root%s/home", (long)pid, dir);
		ok(m == HOMEDISK_MOUNTED && strcmp(home, want) == 0,
		   "mounted in the holder's namespace only: seen through its view (%s)", home);
		m = homedisk_look(dir, getpid(), home, sizeof home, &e);
		ok(m == HOMEDISK_LOST, "a holder in this namespace sees it unmounted");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		m = homedisk_look(dir, pid, home, sizeof home, &e);
		ok(m == -1, "its holder gone: cannot tell (%s)", e.msg);
	}
	unlink(img);
	rmdir(sub);
	rmdir(dir);
}

/* What a snapshot's compressing child does (lib/local/local_backend.c l_charge): reslimit_join of
 * the sandbox directory moves the caller into the cgroups its "cgroups" file names: v2's one
 * cgroup.procs, v1's "tasks" of each hierarchy; none recorded, nothing to do. A fake tree. */
static void test_join(void)
{
	char base[] = "/tmp/test_reslimit.XXXXXX", p[512], buf[64] = "";
	FILE *f;

	if (mkdtemp(base) == NULL)
		abort();
	snprintf(p, sizeof p, "%s/cg2", base);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/cg2/cgroup.procs", base);
	fclose(fopen(p, "w"));
	snprintf(p, sizeof p, "%s/cgroups", base);
	f = fopen(p, "w");
	fprintf(f, "version 2\ndir %s/cg2\noom %s/cg2/memory.events\n", base, base);
	fclose(f);
	ok(reslimit_join(base) == 0, "v2: join");
	snprintf(p, sizeof p, "%s/cg2/cgroup.procs", base);
	f = fopen(p, "r");
	ok(f && fgets(buf, sizeof buf, f) && strcmp(buf, "0") == 0, "v2: the caller is written to cgroup.procs");
	if (f)
		fclose(f);
	snprintf(p, sizeof p, "%s/cgroups", base);
	unlink(p);
	ok(reslimit_join(base) == 0, "no cgroup recorded: nothing to join");
	snprintf(p, sizeof p, "rm -rf '%s'", base);
	if (system(p) != 0)
		abort();
}

int main(void)
{
	test_join();
	test_tmpfs();
	test_text();
	test_json();
	test_look();
	return done_testing();
}
