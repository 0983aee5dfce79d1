/* cgroup.c — a sandbox's cgroup on v2 or v1 (see cgroup.h for where and why). */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* /proc/self/cgroup and mountinfo are small; a host with more mounts than this has bigger
 * problems, and the cgroup mounts come early. */
#define PROC_TEXT_MAX (1u << 20)
/* Interface files read here (cgroup.procs of a sandbox, memory.events) are small: the pids
 * limit bounds cgroup.procs, and one read pass is repeated until the cgroup is empty. */
#define IFACE_READ_MAX 65536
/* CFS period for the CPU limit: the kernel's default, 100 ms. */
#define CPU_PERIOD_US 100000

static const char fix_hint[] =
	"limits need a cgroup: run as root, or as a user in a systemd session with the "
	"controllers delegated (e.g. systemd-run --user --scope -p Delegate=yes sbx-create ...), "
	"or pass -limits none to create the sandbox without limits";

/* Copies the n-th space-separated field of line (up to its end) into out, undoing
 * mountinfo's octal escapes (\040 for a space). */
static void field(const char *line, int n, char *out, size_t cap)
{
	const char *p = line;
	size_t k = 0;

	for (; n > 0 && *p && *p != '\n'; p++)
		if (*p == ' ')
			n--;
	while (*p && *p != ' ' && *p != '\n' && k + 1 < cap) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			out[k++] = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 4;
		} else {
			out[k++] = *p++;
		}
	}
	out[k] = '\0';
}

/* 1 when word is one of the comma-separated items of list (which ends at a space, a colon
 * or the line's end). */
static int in_list(const char *list, const char *word)
{
	size_t wl = strlen(word);
	const char *p = list;

	while (*p && *p != ' ' && *p != '\n' && *p != ':') {
		const char *end = p + strcspn(p, ", :\n");
		if ((size_t)(end - p) == wl && strncmp(p, word, wl) == 0)
			return 1;
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

/* The caller's cgroup path for controller ctrl (NULL: the v2 line "0::"). */
static int self_path(const char *self, const char *ctrl, char *out, size_t cap)
{
	for (const char *l = self; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		const char *eol = l + strcspn(l, "\n");
		if (c2 == NULL || c2 > eol)
			continue;
		if (ctrl == NULL ? (c1 - l == 1 && l[0] == '0' && c2 == c1 + 1)
				 : (c2 > c1 + 1 && in_list(c1 + 1, ctrl) && c2[0] == ':')) {
			snprintf(out, cap, "%.*s", (int)(eol - c2 - 1), c2 + 1);
			return 0;
		}
	}
	return -1;
}

/* The mount of cgroup2 (ctrl NULL) or of the v1 hierarchy with ctrl: its mount point and
 * the cgroup path mounted there (not "/" in a container that bind-mounts its own cgroup). */
static int mount_of(const char *mi, const char *ctrl, char *mnt, char *root, size_t cap)
{
	for (const char *l = mi; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *sep = strstr(l, " - "), *eol = l + strcspn(l, "\n");
		char type[32], opts[512];
		if (sep == NULL || sep > eol)
			continue;
		field(sep + 3, 0, type, sizeof type);
		field(sep + 3, 2, opts, sizeof opts);
		if (ctrl == NULL ? strcmp(type, "cgroup2") != 0
				 : strcmp(type, "cgroup") != 0 || !in_list(opts, ctrl))
			continue;
		field(l, 3, root, cap);
		field(l, 4, mnt, cap);
		return 0;
	}
	return -1;
}

/* The directory of the caller's cgroup: mount point + path below the mounted root. */
static int resolve(const char *mnt, const char *root, const char *path, char *out, size_t cap)
{
	size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);

	if (rl && (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0')))
		return -1;	/* our cgroup is outside what is mounted here */
	path += rl;
	if (strcmp(path, "/") == 0)
		path = "";
	return snprintf(out, cap, "%s%s", mnt, path) >= (int)cap ? -1 : 0;
}

static char *read_text(const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return NULL;
	buf = malloc(max + 1);
	while (buf && len < max && (n = read(fd, buf + len, max - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			buf = NULL;
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	if (buf)
		buf[len] = '\0';
	return buf;
}

/* Writes value into dir/name. An optional file that does not exist (memory.swap.max without
 * swap accounting) is skipped. */
static int put(const char *dir, const char *name, const char *value, bool optional)
{
	char path[PATH_MAX];
	size_t len = strlen(value);
	int fd, rc = 0;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (optional && access(path, F_OK) < 0)
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, value, len) != (ssize_t)len)
		rc = -1;
	if (close(fd) < 0)
		rc = -1;
	return rc;
}

static int put_num(const char *dir, const char *name, int64_t v, bool optional)
{
	char s[32];

	snprintf(s, sizeof s, "%" PRId64, v);
	return put(dir, name, s, optional);
}

/* Each controller w needs, for a v2 subtree_control check or the v1 hierarchies. */
static int wanted(const struct cgroup_want *w, const char *out[3])
{
	int n = 0;

	if (w->memory > 0)
		out[n++] = "memory";
	if (w->pids > 0)
		out[n++] = "pids";
	if (w->cpus_milli > 0)
		out[n++] = "cpu";
	return n;
}

/* May we make a v2 child of dir with these controllers? Root may anywhere; a user only in a
 * cgroup delegated to it (systemd chowns the directory and its cgroup.procs). */
static int v2_candidate(const char *dir, const char *const *ctrl, int nc, uid_t euid)
{
	char path[PATH_MAX], *sc;
	struct stat st;
	int ok = 1;

	if (snprintf(path, sizeof path, "%s/cgroup.subtree_control", dir) >= (int)sizeof path ||
	    (sc = read_text(path, 4096)) == NULL)
		return 0;
	for (char *p = sc; *p; p++)
		if (*p == ' ' || *p == '\n')
			*p = ',';
	for (int i = 0; i < nc && ok; i++)
		ok = in_list(sc, ctrl[i]);
	free(sc);
	if (ok && euid != 0) {
		ok = snprintf(path, sizeof path, "%s/cgroup.procs", dir) < (int)sizeof path &&
		     stat(dir, &st) == 0 && st.st_uid == euid && stat(path, &st) == 0 &&
		     st.st_uid == euid;
	}
	return ok;
}

static int v2_limits(const char *dir, const struct cgroup_want *w)
{
	char cpu[64];

	if (w->memory > 0 && (put_num(dir, "memory.max", w->memory, false) < 0 ||
			      put(dir, "memory.swap.max", "0", true) < 0))
		return -1;
	if (w->pids > 0 && put_num(dir, "pids.max", w->pids, false) < 0)
		return -1;
	snprintf(cpu, sizeof cpu, "%" PRId64 " %d", w->cpus_milli * CPU_PERIOD_US / 1000,
		 CPU_PERIOD_US);
	if (w->cpus_milli > 0 && put(dir, "cpu.max", cpu, false) < 0)
		return -1;
	return 0;
}

/* v2: in the lowest cgroup at or above ours that can hold a child with the controllers. */
static int create_v2(const struct cgroup_host *h, const char *leaf, const struct cgroup_want *w,
		     struct cgroup_set *out, struct sbx_err *e)
{
	char mnt[PATH_MAX], root[PATH_MAX], path[PATH_MAX], dir[PATH_MAX];
	const char *ctrl[3];
	int nc = wanted(w, ctrl);

	if (mount_of(h->mountinfo, NULL, mnt, root, sizeof mnt) < 0 ||
	    self_path(h->self, NULL, path, sizeof path) < 0 ||
	    resolve(mnt, root, path, dir, sizeof dir) < 0) {
		return err_set(e, SBX_EUNAVAIL, "no cgroup v2 hierarchy holds this process");
	}
	for (;;) {
		char *slash;
		if (v2_candidate(dir, ctrl, nc, h->euid))
			break;
		if (strcmp(dir, mnt) == 0 || (slash = strrchr(dir, '/')) == NULL ||
		    (size_t)(slash - dir) < strlen(mnt)) {
			char names[64] = "";
			for (int i = 0; i < nc; i++)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
					 i == 0 ? "" : i == nc - 1 ? " and " : ", ", ctrl[i]);
			return err_set(e, SBX_EUNAVAIL, "cgroup v2 (%s): no cgroup at or above %s%s "
				       "has the %s controllers enabled for its children", mnt, path,
				       h->euid ? " that this user owns" : "", names);
		}
		*slash = '\0';
	}
	out->version = 2;
	out->n = 0;
	/* The directory and its memory.events must both fit: checked before anything is made. */
	if (snprintf(out->dir[0], sizeof out->dir[0], "%s/%s", dir, leaf) >= (int)sizeof out->dir[0] ||
	    snprintf(out->oom, sizeof out->oom, "%s/memory.events", out->dir[0]) >= (int)sizeof out->oom)
		return err_set(e, SBX_EUNAVAIL, "cgroup v2: path too long below %s", dir);
	if (mkdir(out->dir[0], 0755) < 0)
		return err_sys(e, errno, "cannot create cgroup %s", out->dir[0]);
	out->n = 1;
	if (v2_limits(out->dir[0], w) < 0) {
		err_sys(e, errno, "cannot set the limits of cgroup %s", out->dir[0]);
		cgroup_destroy(out, 0);
		return -1;
	}
	return 0;
}

static int v1_limits(const char *dir, const char *ctrl, const struct cgroup_want *w)
{
	if (strcmp(ctrl, "memory") == 0)
		return put_num(dir, "memory.limit_in_bytes", w->memory, false) < 0 ||
		       put_num(dir, "memory.memsw.limit_in_bytes", w->memory, true) < 0 ? -1 : 0;
	if (strcmp(ctrl, "pids") == 0)
		return put_num(dir, "pids.max", w->pids, false);
	return put_num(dir, "cpu.cfs_period_us", CPU_PERIOD_US, false) < 0 ||
	       put_num(dir, "cpu.cfs_quota_us", w->cpus_milli * CPU_PERIOD_US / 1000, false) < 0
		       ? -1 : 0;
}

/* v1: the freezer's directory too, below our own freezer cgroup, so that the sandbox can be
 * paused. Best effort: on a host without that hierarchy the limits still hold, and a pause
 * says it cannot be done. */
static void v1_freezer(const struct cgroup_host *h, const char *leaf, struct cgroup_set *out)
{
	char mnt[PATH_MAX], root[PATH_MAX], path[PATH_MAX], dir[PATH_MAX], *made = out->dir[out->n];

	if (out->n >= CGROUP_MAX_DIRS || mount_of(h->mountinfo, "freezer", mnt, root, sizeof mnt) < 0 ||
	    self_path(h->self, "freezer", path, sizeof path) < 0 ||
	    resolve(mnt, root, path, dir, sizeof dir) < 0 ||
	    snprintf(made, sizeof out->dir[0], "%s/%s", dir, leaf) >= (int)sizeof out->dir[0])
		return;
	for (int j = 0; j < out->n; j++)
		if (strcmp(out->dir[j], made) == 0)
			return;	/* co-mounted with a controller's hierarchy: made already */
	if (mkdir(made, 0755) == 0)
		out->n++;
}

/* v1: directly below our own cgroup in each controller's hierarchy. Every hierarchy is found
 * before anything is made, so a missing one leaves nothing behind. */
static int create_v1(const struct cgroup_host *h, const char *leaf, const struct cgroup_want *w,
		     struct cgroup_set *out, struct sbx_err *e)
{
	char mnt[PATH_MAX], root[PATH_MAX], path[PATH_MAX], dir[CGROUP_MAX_DIRS][PATH_MAX];
	const char *ctrl[3];
	int nc = wanted(w, ctrl);

	out->version = 1;
	out->n = 0;
	for (int i = 0; i < nc; i++) {
		if (mount_of(h->mountinfo, ctrl[i], mnt, root, sizeof mnt) < 0 ||
		    self_path(h->self, ctrl[i], path, sizeof path) < 0 ||
		    resolve(mnt, root, path, dir[i], sizeof dir[i]) < 0) {
			return err_set(e, SBX_EUNAVAIL, "cgroup v1: no %s hierarchy holds this process",
				       ctrl[i]);
		}
		/* Room for the leaf and memory.oom_control, checked before anything is made. */
		if (strlen(dir[i]) + 1 + strlen(leaf) + sizeof "/memory.oom_control" > sizeof out->oom)
			return err_set(e, SBX_EUNAVAIL, "cgroup v1: path too long below %s", dir[i]);
		strcat(dir[i], "/");
		strcat(dir[i], leaf);
	}
	for (int i = 0; i < nc; i++) {
		int same = -1;
		for (int j = 0; j < out->n; j++)
			if (strcmp(out->dir[j], dir[i]) == 0)
				same = j;	/* co-mounted controllers (cpu,cpuacct,memory…) */
		if (same < 0) {
			if (mkdir(dir[i], 0755) < 0) {
				err_sys(e, errno, "cannot create cgroup %s", dir[i]);
				goto fail;
			}
			memcpy(out->dir[out->n++], dir[i], sizeof out->dir[0]);
		}
		if (v1_limits(dir[i], ctrl[i], w) < 0) {
			err_sys(e, errno, "cannot set the %s limit of cgroup %s", ctrl[i], dir[i]);
			goto fail;
		}
		/* Its length was checked with the leaf's above. */
		if (strcmp(ctrl[i], "memory") == 0 &&
		    snprintf(out->oom, sizeof out->oom, "%s/memory.oom_control", dir[i]) >=
		    (int)sizeof out->oom) {
			err_set(e, SBX_EUNAVAIL, "cgroup v1: path too long below %s", dir[i]);
			goto fail;
		}
	}
	v1_freezer(h, leaf, out);
	return 0;
fail:
	cgroup_destroy(out, 0);
	out->n = 0;
	return -1;
}

int cgroup_create(const struct cgroup_host *h, const char *leaf, const struct cgroup_want *w,
		  struct cgroup_set *out, struct sbx_err *e)
{
	struct sbx_err e1 = {0}, e2 = {0};
	char mnt[PATH_MAX], root[PATH_MAX];
	const char *ctrl[3];
	int has_v1 = 0;

	memset(out, 0, sizeof *out);
	if (wanted(w, ctrl) == 0)
		return 0;
	if (create_v2(h, leaf, w, out, &e2) == 0)
		return 0;
	for (int i = 0; i < wanted(w, ctrl); i++)
		has_v1 |= mount_of(h->mountinfo, ctrl[i], mnt, root, sizeof mnt) == 0;
	if (has_v1 && create_v1(h, leaf, w, out, &e1) == 0)
		return 0;
	memset(out, 0, sizeof *out);
	if (has_v1)
		return err_set(e, SBX_EUNAVAIL, "%s (and %s); %s", e1.msg, e2.msg, fix_hint);
	return err_set(e, SBX_EUNAVAIL, "%s; %s", e2.msg, fix_hint);
}

int cgroup_create_here(const char *leaf, const struct cgroup_want *w, struct cgroup_set *out,
		       struct sbx_err *e)
{
	struct cgroup_host h = {.euid = geteuid()};
	char *self = read_text("/proc/self/cgroup", PROC_TEXT_MAX);
	char *mi = read_text("/proc/self/mountinfo", PROC_TEXT_MAX);
	int rc;

	if (self == NULL || mi == NULL) {
		rc = err_sys(e, errno, "cannot read /proc/self/cgroup or /proc/self/mountinfo");
	} else {
		h.self = self;
		h.mountinfo = mi;
		rc = cgroup_create(&h, leaf, w, out, e);
	}
	free(self);
	free(mi);
	return rc;
}

int cgroup_join(const struct cgroup_set *s, pid_t pid)
{
	/* v1: the caller alone through "tasks", which spares the kernel's global threadgroup
	 * lock (and its RCU grace period, milliseconds on a busy host) that cgroup.procs takes. */
	const char *file = s->version == 1 && pid == 0 ? "tasks" : "cgroup.procs";

	for (int i = 0; i < s->n; i++)
		if (put_num(s->dir[i], file, pid, false) < 0)
			return -1;
	return 0;
}

/* SIGKILLs every process listed in dir/cgroup.procs; returns how many it saw. */
static int kill_members(const char *dir)
{
	char path[PATH_MAX], *text, *p;
	int n = 0;

	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	if ((text = read_text(path, IFACE_READ_MAX)) == NULL)
		return 0;
	for (p = text; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		/* Never ourselves nor a whole process group (0) or everything (-1). */
		if (pid > 1 && pid != (long)getpid()) {
			kill((pid_t)pid, SIGKILL);
			n++;
		}
		p = end + strspn(end, " \n");
	}
	free(text);
	return n;
}

/* The index of s's directory holding its freezer file (v2 cgroup.freeze, v1 freezer.state);
 * -1 with ENOTSUP when none does. */
static int freezer_dir(const struct cgroup_set *s)
{
	char path[PATH_MAX];

	for (int i = 0; i < s->n; i++) {
		snprintf(path, sizeof path, "%s/%s", s->dir[i],
			 s->version == 2 ? "cgroup.freeze" : "freezer.state");
		if (access(path, F_OK) == 0)
			return i;
	}
	errno = ENOTSUP;
	return -1;
}

static const char *freezer_file(const struct cgroup_set *s)
{
	return s->version == 2 ? "cgroup.freeze" : "freezer.state";
}

static const char *freezer_value(const struct cgroup_set *s, bool frozen)
{
	if (s->version == 2)
		return frozen ? "1" : "0";
	return frozen ? "FROZEN" : "THAWED";
}

/* 1 when the kernel says dir's freezing or thawing is done: v2 "frozen N" in cgroup.events,
 * v1 freezer.state (FREEZING while some task is not frozen yet). */
static int freeze_done(const struct cgroup_set *s, const char *dir, bool frozen)
{
	char path[PATH_MAX], *t;
	int done = 0;

	snprintf(path, sizeof path, "%s/%s", dir, s->version == 2 ? "cgroup.events" : "freezer.state");
	if ((t = read_text(path, 4096)) == NULL)
		return 0;
	if (s->version == 1) {
		done = strncmp(t, freezer_value(s, frozen), 6) == 0;
	} else {
		for (const char *p = t; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
			if (strncmp(p, "frozen ", 7) == 0)
				done = (p[7] == '1') == frozen;
	}
	free(t);
	return done;
}

int cgroup_freeze(const struct cgroup_set *s, bool frozen, int wait_ms)
{
	struct timespec tick = {0, 1000000};
	int i = freezer_dir(s);

	if (i < 0)
		return -1;
	if (put(s->dir[i], freezer_file(s), freezer_value(s, frozen), false) < 0)
		return -1;
	for (int waited = 0; !freeze_done(s, s->dir[i], frozen); waited++) {
		if (waited >= wait_ms) {
			/* Never left half frozen: what could not be frozen in time runs again. */
			if (frozen)
				put(s->dir[i], freezer_file(s), freezer_value(s, false), false);
			errno = ETIMEDOUT;
			return -1;
		}
		nanosleep(&tick, NULL);
	}
	return 0;
}

int cgroup_frozen(const struct cgroup_set *s)
{
	char path[PATH_MAX], *t;
	int i = freezer_dir(s), frozen;

	if (i < 0)
		return -1;
	snprintf(path, sizeof path, "%s/%s", s->dir[i], freezer_file(s));
	if ((t = read_text(path, 64)) == NULL)
		return -1;
	/* v2 "1" (asked for); v1 FREEZING or FROZEN */
	frozen = s->version == 2 ? t[0] == '1' : strncmp(t, "THAWED", 6) != 0;
	free(t);
	return frozen;
}

void cgroup_kill(const struct cgroup_set *s)
{
	int f = freezer_dir(s);

	for (int i = 0; i < s->n; i++) {
		char kill_file[PATH_MAX];

		snprintf(kill_file, sizeof kill_file, "%s/cgroup.kill", s->dir[i]);
		if (s->version == 2 && access(kill_file, F_OK) == 0)
			put(s->dir[i], "cgroup.kill", "1", true);
		else
			kill_members(s->dir[i]);
	}
	/* Killed first, thawed after: the kill lands (v1 delivers it only to a thawed task) and
	 * nothing of the sandbox runs again in between. */
	if (f >= 0)
		put(s->dir[f], freezer_file(s), freezer_value(s, false), false);
}

int cgroup_destroy(const struct cgroup_set *s, int wait_ms)
{
	struct timespec pause = {0, 1000000};
	int rc = 0;

	cgroup_kill(s);
	for (int i = s->n - 1; i >= 0; i--) {
		int waited = 0;

		for (;;) {
			kill_members(s->dir[i]);
			if (rmdir(s->dir[i]) == 0 || errno == ENOENT)
				break;
			/* EBUSY: processes still dying; anything else will not pass. */
			if (errno != EBUSY || waited++ >= wait_ms) {
				rc = -1;
				break;
			}
			nanosleep(&pause, NULL);
		}
	}
	return rc;
}

long long cgroup_oom_kills(const char *oom_file)
{
	char buf[4096], *p;
	int fd = open(oom_file, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (p = buf; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, "oom_kill ", 9) == 0)
			return strtoll(p + 9, NULL, 10);
	return -1;
}

int cgroup_set_format(const struct cgroup_set *s, char *buf, size_t cap)
{
	size_t len = 0;
	int n = snprintf(buf, cap, "version %d\n", s->version);

	for (int i = 0; n >= 0 && (size_t)n < cap - len && i <= s->n; i++) {
		len += (size_t)n;
		n = i < s->n ? snprintf(buf + len, cap - len, "dir %s\n", s->dir[i])
			     : snprintf(buf + len, cap - len, "oom %s\n", s->oom);
	}
	if (n < 0 || (size_t)n >= cap - len)
		return -1;
	return (int)(len + (size_t)n);
}

int cgroup_set_parse(const char *text, struct cgroup_set *s)
{
	memset(s, 0, sizeof *s);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		int len = (int)strcspn(l, "\n");
		if (strncmp(l, "version ", 8) == 0)
			s->version = atoi(l + 8);
		else if (strncmp(l, "dir /", 5) == 0 && s->n < CGROUP_MAX_DIRS)
			snprintf(s->dir[s->n++], sizeof s->dir[0], "%.*s", len - 4, l + 4);
		else if (strncmp(l, "oom /", 5) == 0)
			snprintf(s->oom, sizeof s->oom, "%.*s", len - 4, l + 4);
	}
	return s->version == 1 || s->version == 2 ? 0 : -1;
}
