/* idmap.c — the host id ranges of sandboxes (root's from the sbx pool, a user's from the
 * user's subordinate ids) and the user namespaces mapping them. */
#include "idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include "child.h"

/* The default pool: above systemd-nspawn's pick range (0x00080000-0x6fffffff) up to 2^31 (ids
 * above it are signed trouble for some tools), less the first 65536 ids above 0x70000000,
 * which earlier sbx gave out one per sandbox: a sandbox made before an upgrade never shares
 * an id with one made after. 4095 ranges. */
#define IDMAP_BASE 0x70010000UL
#define IDMAP_POOL (0x80000000UL - IDMAP_BASE)

/* The "sbx" entry of a /etc/subuid-style file; 0 when it has none. */
static int subid_entry(const char *file, unsigned long *start, unsigned long *count)
{
	FILE *f = fopen(file, "re");
	char line[256];
	int found = 0;

	if (f == NULL)
		return 0;
	while (!found && fgets(line, sizeof line, f))
		found = sscanf(line, "sbx:%lu:%lu", start, count) == 2 && *count > 0;
	fclose(f);
	return found;
}

int idmap_pool(struct idmap_pool *p, const char **why)
{
	unsigned long us = IDMAP_BASE, uc = IDMAP_POOL, gs, gc;

	subid_entry("/etc/subuid", &us, &uc);
	if (!subid_entry("/etc/subgid", &gs, &gc))
		gs = us, gc = uc;
	p->uid_start = us;
	p->gid_start = gs;
	p->slots = (uc < gc ? uc : gc) / IDMAP_RANGE;
	if (p->slots == 0) {
		*why = "the sbx entries of /etc/subuid and /etc/subgid must hold 65536 ids or more";
		return -1;
	}
	return 0;
}

/* The first entry of owner (its name, or its uid in decimal) in a /etc/subuid-style file
 * that holds IDMAP_RANGE ids or more. 1 found, 0 none at all, -1 only smaller ones. */
static int subid_user_entry(const char *file, const char *name, uid_t uid, unsigned long *start,
			    unsigned long *count)
{
	FILE *f = fopen(file, "re");
	char line[256], owner[64], num[24];
	int seen = 0;

	if (f == NULL)
		return 0;
	snprintf(num, sizeof num, "%lu", (unsigned long)uid);
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%63[^:\n]:%lu:%lu", owner, start, count) != 3 ||
		    (strcmp(owner, name) != 0 && strcmp(owner, num) != 0))
			continue;
		seen = -1;
		if (*count >= IDMAP_RANGE) {
			fclose(f);
			return 1;
		}
	}
	fclose(f);
	return seen;
}

int idmap_user_pool(const char *name, uid_t uid, struct idmap_pool *p)
{
	unsigned long uc, gc;
	int u = subid_user_entry("/etc/subuid", name, uid, &p->uid_start, &uc);
	int g = subid_user_entry("/etc/subgid", name, uid, &p->gid_start, &gc);

	if (u <= 0 || g <= 0) {
		errno = u == 0 || g == 0 ? ENOENT : ERANGE;
		return -1;
	}
	p->slots = (uc < gc ? uc : gc) / IDMAP_RANGE;
	return 0;
}

/* Where Debian puts the setuid helpers (never looked up on PATH). */
static const char *const newuidmap_progs[] = {"/usr/bin/newuidmap", "/bin/newuidmap", NULL};
static const char *const newgidmap_progs[] = {"/usr/bin/newgidmap", "/bin/newgidmap", NULL};

static const char *find_helper(const char *const *progs)
{
	for (; *progs; progs++)
		if (access(*progs, X_OK) == 0)
			return *progs;
	return NULL;
}

int idmap_helpers_present(void)
{
	return find_helper(newuidmap_progs) != NULL && find_helper(newgidmap_progs) != NULL;
}

int idmap_user_of_home(const char *home, struct idmap_req *r)
{
	const char *slash = strrchr(home, '/');
	char path[4096], text[96];
	unsigned long u, g, n;
	int fd;
	ssize_t len;

	if (slash == NULL || snprintf(path, sizeof path, "%.*s/%s", (int)(slash - home), home,
				      IDMAP_USER_FILE) >= (int)sizeof path)
		return -1;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	len = read(fd, text, sizeof text - 1);
	close(fd);
	if (len <= 0)
		return -1;
	text[len] = '\0';
	if (sscanf(text, "%lu %lu %lu", &u, &g, &n) != 3 || n < 2 || n > IDMAP_RANGE)
		return -1;
	*r = (struct idmap_req){.uid = (uid_t)u, .gid = (gid_t)g, .count = n, .helper = 1};
	return 0;
}

/* Has newuidmap (or newgidmap) map process pid's user namespace: 0 to self, 1..count-1 to
 * first+1... 0 or -1. */
static int helper_map(const char *const *progs, pid_t pid, unsigned long self,
		      unsigned long first, unsigned long count)
{
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	const char *prog = find_helper(progs);
	char a[5][24];
	char *argv[] = {(char *)prog, a[0], "0", a[1], "1", "1", a[2], a[3], NULL};
	struct child_req req = CHILD_REQ_INIT(.path = prog, .argv = argv, .envp = envp,
					      .timeout_ns = 10 * 1000000000LL);
	struct child_result res = {0};
	struct sbx_err e;
	int rc;

	if (prog == NULL) {
		errno = ENOENT;
		return -1;
	}
	snprintf(a[0], sizeof a[0], "%ld", (long)pid);
	snprintf(a[1], sizeof a[1], "%lu", self);
	snprintf(a[2], sizeof a[2], "%lu", first + 1);
	snprintf(a[3], sizeof a[3], "%lu", count - 1);
	rc = child_run(&req, &res, &e) == 0 && res.status == 0 ? 0 : -1;
	child_result_free(&res);
	if (rc < 0)
		errno = EPERM;
	return rc;
}

unsigned long idmap_count_of(uid_t owner)
{
	struct idmap_pool p;
	const char *why;

	if (idmap_pool(&p, &why) < 0 || owner < p.uid_start ||
	    (owner - p.uid_start) % IDMAP_RANGE != 0 || (owner - p.uid_start) / IDMAP_RANGE >= p.slots)
		return 1;
	return IDMAP_RANGE;
}

/* Writes text to path. 0 or -1. */
static int write_file(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

/* Writes the uid and gid maps of process pid's user namespace. 0 or -1. */
static int write_maps(pid_t pid, const char *uids, const char *gids)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/%ld/uid_map", (long)pid);
	if (write_file(path, uids) < 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%ld/gid_map", (long)pid);
	return write_file(path, gids);
}

/* The inner namespace's map of one kind of id: the identity when in_id is 0; else the outer
 * root is in_id, the outer ids below it move up by one, the rest stay. */
static void inner_map(char *buf, size_t cap, unsigned long in_id, unsigned long count, int split)
{
	int n;

	if (in_id == 0 && !split) {
		snprintf(buf, cap, "0 0 %lu\n", count);
		return;
	}
	/* Each line within one line of the outer map (the kernel wants so): a user's outer map
	 * (split) has the user's own id at 0 and the subordinate ids from 1 on. */
	if (in_id == 0) {
		n = snprintf(buf, cap, "0 0 1\n");
		if (count > 1)
			snprintf(buf + n, cap - (size_t)n, "1 1 %lu\n", count - 1);
		return;
	}
	n = snprintf(buf, cap, "%lu 0 1\n", in_id);
	if (count > 1)
		n += snprintf(buf + n, cap - (size_t)n, "0 1 %lu\n", in_id);
	if (in_id + 1 < count)
		snprintf(buf + n, cap - (size_t)n, "%lu %lu %lu\n", in_id + 1, in_id + 1,
			 count - in_id - 1);
}

/* Reads one byte; 1 when it came and is 1. */
static int read_ok(int fd)
{
	char c = 0;
	ssize_t n;

	while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	return n == 1 && c == 1;
}

/* The per-user kernel limits the sandbox of a user shares with the user's own processes: the
 * kernel charges every process of a user namespace to the user who made it too, whatever
 * ids it maps, so the outer namespace's own limit caps the whole sandbox and the rest stays
 * the user's (issue 27.6: a sandbox took all 128 inotify instances and the user's editor
 * failed). One sandbox takes at most half, as a user's of one id does (lib/local/local_bwrap.c). */
static const char *const shared_limits[][2] = {
	{"/proc/sys/fs/inotify/max_user_instances", "/proc/sys/user/max_inotify_instances"},
	{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"},
};

/* In the outer namespace, as its root: sets its own limits of shared_limits to half the
 * user's. 0 or -1. */
static int share_user_limits(void)
{
	for (size_t i = 0; i < sizeof shared_limits / sizeof shared_limits[0]; i++) {
		char text[32];
		int fd = open(shared_limits[i][0], O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
		long all;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;	/* a kernel without it */
		text[n] = '\0';
		if ((all = strtol(text, NULL, 10)) <= 0)
			continue;
		snprintf(text, sizeof text, "%ld", all / 2 > 0 ? all / 2 : 1);
		if (write_file(shared_limits[i][1], text) < 0)
			return -1;
	}
	return 0;
}

/* In the outer namespace, as its root: forbids more user namespaces than the inner one,
 * makes it in a child that lives until hold's other end closes, and maps it. Returns that
 * child's pid, or -1. */
static pid_t make_inner(const struct idmap_req *r, int hold)
{
	char uids[96], gids[96];
	int rdy[2];
	pid_t pid;

	if (write_file("/proc/sys/user/max_user_namespaces", "1") < 0 ||
	    (r->helper && share_user_limits() < 0) || pipe2(rdy, O_CLOEXEC) < 0)
		return -1;
	if ((pid = fork()) == 0) {
		char ok = unshare(CLONE_NEWUSER) == 0;
		if (write(rdy[1], &ok, 1) != 1 || !ok)
			_exit(1);
		read_ok(hold);
		_exit(0);
	}
	close(rdy[1]);
	if (pid < 0 || !read_ok(rdy[0])) {
		close(rdy[0]);
		return -1;
	}
	close(rdy[0]);
	inner_map(uids, sizeof uids, r->in_uid, r->count, r->helper);
	inner_map(gids, sizeof gids, r->in_gid, r->count, r->helper);
	if (write_maps(pid, uids, gids) < 0) {
		/* it holds the caller's report pipe: the caller would wait for it forever */
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	return pid;
}

/* The child that makes the namespaces: reports on rdy, waits on hold. Never returns. */
static void userns_child(const struct idmap_req *r, int rdy, int hold)
{
	char ok = 0;
	pid_t inner = -1;

	/* Nothing of the caller's stays with a process that another may soon trace. */
	for (int fd = 3, top = rdy > hold ? rdy : hold; fd < top; fd++)
		if (fd != rdy && fd != hold)
			close(fd);
	close_range((unsigned)(rdy > hold ? rdy : hold) + 1, ~0U, 0);
	/* The owner: bubblewrap, running as uid:gid, may join only a namespace of its own.
	 * Dumpable again after the change, so that /proc of this child and of the inner one
	 * belong to uid and can be written from inside. */
	if (r->owned && !r->helper && (setgroups(0, NULL) < 0 || setresgid(r->gid, r->gid, r->gid) < 0 ||
			 setresuid(r->uid, r->uid, r->uid) < 0 || prctl(PR_SET_DUMPABLE, 1) < 0))
		_exit(1);
	ok = unshare(CLONE_NEWUSER) == 0;
	if (write(rdy, &ok, 1) != 1 || !ok || !read_ok(hold))
		_exit(1);
	if (r->inner && (inner = make_inner(r, hold)) < 0)
		_exit(1);
	if (write(rdy, &inner, sizeof inner) != (ssize_t)sizeof inner)
		_exit(1);
	read_ok(hold);
	if (inner > 0)
		while (waitpid(inner, NULL, 0) < 0 && errno == EINTR)
			;
	_exit(0);
}

/* Opens /proc/PID/ns/user. fd or -1. */
static int open_userns(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/%ld/ns/user", (long)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int idmap_userns(const struct idmap_req *r, int *inner_fd)
{
	char uids[64], gids[64], go = 1;
	int rdy[2] = {-1, -1}, hold[2] = {-1, -1}, fd = -1, st, saved;
	pid_t pid, inner = -1;

	*inner_fd = -1;
	if (pipe2(rdy, O_CLOEXEC) < 0 || pipe2(hold, O_CLOEXEC) < 0)
		goto fail;
	if ((pid = fork()) < 0)
		goto fail;
	if (pid == 0)
		userns_child(r, rdy[1], hold[0]);
	close(rdy[1]), close(hold[0]);
	rdy[1] = hold[0] = -1;
	snprintf(uids, sizeof uids, "0 %lu %lu\n", (unsigned long)r->uid, r->count);
	snprintf(gids, sizeof gids, "0 %lu %lu\n", (unsigned long)r->gid, r->count);
	if (read_ok(rdy[0]) &&
	    (r->helper ? helper_map(newuidmap_progs, pid, getuid(), r->uid, r->count) == 0 &&
			 helper_map(newgidmap_progs, pid, getgid(), r->gid, r->count) == 0
		       : write_maps(pid, uids, gids) == 0) && write(hold[1], &go, 1) == 1 &&
	    read(rdy[0], &inner, sizeof inner) == (ssize_t)sizeof inner && (fd = open_userns(pid)) >= 0 &&
	    r->inner && (*inner_fd = open_userns(inner)) < 0) {
		close(fd);
		fd = -1;
	}
	saved = fd < 0 ? (errno ? errno : EPERM) : 0;
	close(hold[1]);
	close(rdy[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	errno = saved;
	return fd;
fail:
	saved = errno;
	for (int i = 0; i < 2; i++) {
		if (rdy[i] >= 0)
			close(rdy[i]);
		if (hold[i] >= 0)
			close(hold[i]);
	}
	errno = saved;
	return -1;
}

int idmap_enter(int userns)
{
	if (setns(userns, CLONE_NEWUSER) < 0 || setgroups(0, NULL) < 0 ||
	    setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		return -1;
	return 0;
}
