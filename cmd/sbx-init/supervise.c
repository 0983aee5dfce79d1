/* supervise.c — the host-side keeper of one local sandbox. It holds DIR/lock while the
 * sandbox lives (so anyone can tell a live sandbox from a stale directory left by a crash or
 * a reboot), runs bubblewrap, and removes the sandbox and its home when DIR/deadline passes
 * (the Agent Sandbox controller's shutdownTime with policy Delete) or on SIGTERM. With
 * DIR/idle (-idle pause) the deadline freezes the sandbox instead, and the removal waits the
 * paused ttl more; a resume moves the deadline (lib/local/local_backend.c) and SIGHUPs this.
 * DIR may be renamed while this runs (a pooled sandbox taken by sbx-create, lib/local/
 * local_pool.c): every use after the start finds DIR again through a descriptor of it
 * (here()), and the namespace lock from DIR's name at that moment. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "idmap.h"
#include "local_bwrap.h"
#include "reslimit.h"
#include "rootlayer.h"
#include "init.h"
#include "localnet.h"

/* Longest sleep between deadline checks: bounds the effect of a wall-clock jump. */
#define MAX_SLEEP_MS 30000
/* How long to wait for the namespace lock an expiring sandbox needs (a touch or delete
 * holds it only briefly). */
#define LOCK_WAIT_MS 5000
/* How long a new supervisor waits for its sandbox's lock: only a liveness probe (local_alive in
 * lib/local/local_state.c, which tries the lock for a moment) can hold it, never for long. */
#define OWN_LOCK_WAIT_MS 5000
/* How long the pause at the deadline waits for the kernel to freeze every process. */
#define FREEZE_WAIT_MS 5000
/* With the namespace lock busy at the deadline of a sandbox to pause, how soon to try again. */
#define RETRY_MS 1000
/* Words of bubblewrap's command line: the options added here and "-- sbx-init serve". */
#define ARGV_MAX 24

/* DIR, held open so that its path can be found again after a rename (-1: not yet). */
static int dir_fd = -1;
static char dir_now[4096];

/* DIR's path now: what /proc says of dir_fd, else the last one known (it was removed). */
static const char *here(void)
{
	char link[64], buf[sizeof dir_now];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", dir_fd);
	n = dir_fd < 0 ? -1 : readlink(link, buf, sizeof buf - 1);
	if (n > 0 && buf[0] == '/') {
		buf[n] = '\0';
		if (strstr(buf, " (deleted)") == NULL)
			memcpy(dir_now, buf, (size_t)n + 1);
	}
	return dir_now;
}

/* The namespace lock of DIR's name now: NSDIR/.NAME.lock (lib/local/local_state.c). */
static const char *nslock_now(char *buf, size_t size)
{
	const char *d = here(), *base = strrchr(d, '/');

	snprintf(buf, size, "%.*s/.%s.lock", (int)(base - d), d, base + 1);
	return buf;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t read_deadline(const char *dir)
{
	char path[4096], *s;
	int64_t v;

	snprintf(path, sizeof path, "%s/deadline", dir);
	s = fs_read_small(path, 64, NULL);
	if (s == NULL)
		return 0;
	v = strtoll(s, NULL, 10);
	free(s);
	return v;
}

/* The paused ttl in DIR/idle (ns), 0 without one: the sandbox is removed at its deadline. */
static int64_t read_paused_ttl(const char *dir)
{
	char path[4096], *s;
	long long v = 0;

	snprintf(path, sizeof path, "%s/idle", dir);
	s = fs_read_small(path, 64, NULL);
	if (s == NULL)
		return 0;
	if (sscanf(s, "%lld", &v) != 1 || v < 0)
		v = 0;
	free(s);
	return v;
}

/* Root's sandboxes run as an unprivileged host user, and bubblewrap then resolves bind
 * sources as that user, who cannot traverse root's 0700 state directory. So, in a mount
 * namespace private to this supervisor, the sources are bound below a fresh tmpfs on /run
 * (STAGE_DIR) that the user can reach. Nobody else sees these mounts. */
#define STAGE_DIR "/run/sbx-stage"

static int stage_one(const char *src, const char *name, int is_dir)
{
	char dst[256];
	int fd;

	if (strcmp(src, "-") == 0)
		return 0;
	snprintf(dst, sizeof dst, "%s/%s", STAGE_DIR, name);
	if (is_dir) {
		if (mkdir(dst, 0755) < 0)
			return -1;
	} else {
		if ((fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0755)) < 0)
			return -1;
		close(fd);
	}
	return mount(src, dst, NULL, MS_BIND, NULL);
}

static int stage(const char *const src[4])
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("sbx-stage", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0 ||
	    mkdir(STAGE_DIR, 0755) < 0)
		return -1;
	/* src: the home, sbx-init, geminicli-toolbox and an OCI image's rootfs ("-": none). */
	if (stage_one(src[0], "home", 1) < 0 || stage_one(src[1], "sbx-init", 0) < 0 ||
	    stage_one(src[2], "geminicli-toolbox", 0) < 0 || stage_one(src[3], "rootfs", 1) < 0)
		return -1;
	return 0;
}

/* Puts bubblewrap's options (argv up to "--") in a memory file for its --args: then
 * /proc/PID/cmdline of the sandbox's first process shows no host path, whoever may read it.
 * Returns the fd (inherited by bubblewrap, which closes it once read) or -1; *rest is the
 * "--" and the command, which bubblewrap wants on its own command line. */
static int args_file(char **argv, char ***rest)
{
	int fd = memfd_create("bwrap-args", 0), i;

	if (fd < 0)
		return -1;
	for (i = 1; argv[i] && strcmp(argv[i], "--") != 0; i++) {
		size_t len = strlen(argv[i]) + 1, done = 0;
		while (done < len) {
			ssize_t n = write(fd, argv[i] + done, len - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				close(fd);
				return -1;
			}
			done += (size_t)n;
		}
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	*rest = argv + i;
	return fd;
}

/* The user namespaces of a sandbox with a range of ids (lib/local/idmap.h), made by
 * init_supervise; -1: none. A user's keeps the outer one (home_userns) to clear its home. */
static int userns_fd[2] = {-1, -1};
static int home_userns = -1;

/* ids[2] "COUNT:IUID:IGID" as a request for the namespaces of uid:gid's range (root's
 * sandbox), or "COUNT:IUID:IGID:SUBUID:SUBGID" (a user's, ids[0] and ids[1] "-": the user's
 * subordinate ids from SUBUID and SUBGID, mapped by newuidmap). 0 or -1. */
static int make_userns(const char *const ids[3])
{
	struct idmap_req r = {(uid_t)strtoul(ids[0], NULL, 10), (gid_t)strtoul(ids[1], NULL, 10),
			      0, 1, 1, 0, 0, 0};
	unsigned long n, u, g, su = 0, sg = 0;
	int k = sscanf(ids[2], "%lu:%lu:%lu:%lu:%lu", &n, &u, &g, &su, &sg);

	if ((k != 3 && k != 5) || n == 0 || n > IDMAP_RANGE || (k == 5 && (su == 0 || sg == 0))) {
		errno = EINVAL;
		return -1;
	}
	if (k == 5) {
		r.uid = (uid_t)su;
		r.gid = (gid_t)sg;
		r.owned = 0;
		r.helper = 1;
	}
	r.count = n;
	r.in_uid = (uid_t)u;
	r.in_gid = (gid_t)g;
	userns_fd[0] = idmap_userns(&r, &userns_fd[1]);
	if (userns_fd[0] >= 0 && r.helper && (home_userns = fcntl(userns_fd[0], F_DUPFD_CLOEXEC, 5)) < 0)
		return -1;
	return userns_fd[0] < 0 ? -1 : 0;
}

/* Hands the prepared user namespaces to bubblewrap: their options, in av at *n. 0 or -1. */
static int pass_userns(char **av, int *n, char text[2][16])
{
	if (userns_fd[0] < 0)
		return 0;
	for (int i = 0; i < 2; i++) {
		if (fcntl(userns_fd[i], F_SETFD, 0) < 0)
			return -1;
		snprintf(text[i], sizeof text[i], "%d", userns_fd[i]);
		av[(*n)++] = i == 0 ? "--userns" : "--userns2";
		av[(*n)++] = text[i];
	}
	/* bubblewrap checks that the sandbox cannot make one more */
	av[(*n)++] = "--assert-userns-disabled";
	return 0;
}

static pid_t start_bwrap(const char *dir, const char *uid, const char *gid, char **argv)
{
	pid_t p = fork();
	char log[4096], fdtext[16], sctext[16], nstext[2][16], **rest, *av[ARGV_MAX];
	sigset_t none;
	int fd, i, n = 0;

	if (p != 0)
		return p;
	sigemptyset(&none);
	for (i = 1; i < NSIG; i++)
		signal(i, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	snprintf(log, sizeof log, "%s/bwrap.log", dir);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0)
		dup2(fd, 2);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
	}
	/* Into the sandbox's cgroups (its limits) while still privileged; all it starts follows. */
	if (reslimit_join(dir) < 0) {
		fprintf(stderr, "sbx-init: cannot join the sandbox's cgroup: %s\n", strerror(errno));
		_exit(EXIT_FAIL);
	}
	/* Root's sandboxes run as an unprivileged host user: root inside, nobody outside. */
	if (strcmp(uid, "-") != 0 &&
	    local_bwrap_become((uid_t)strtoul(uid, NULL, 10), (gid_t)strtoul(gid, NULL, 10)) < 0) {
		fprintf(stderr, "sbx-init: cannot drop privileges: %s\n", strerror(errno));
		_exit(EXIT_FAIL);
	}
	if (net_child_fds() < 0) {
		fprintf(stderr, "sbx-init: cannot pass the network descriptors: %s\n", strerror(errno));
		_exit(EXIT_FAIL);
	}
	if ((fd = args_file(argv, &rest)) < 0) {
		fprintf(stderr, "sbx-init: cannot pass bubblewrap its arguments: %s\n", strerror(errno));
		_exit(EXIT_FAIL);
	}
	snprintf(fdtext, sizeof fdtext, "%d", fd);
	/* The sandbox's syscall filter (lib/local/local_bwrap.c), under which bubblewrap starts the
	 * service; inherited, so not close-on-exec. */
	if ((fd = local_bwrap_filter_fd(0)) < 0 || fcntl(fd, F_SETFD, 0) < 0) {
		fprintf(stderr, "sbx-init: cannot build the syscall filter\n");
		_exit(EXIT_FAIL);
	}
	snprintf(sctext, sizeof sctext, "%d", fd);
	av[n++] = argv[0];
	av[n++] = "--args";
	av[n++] = fdtext;
	av[n++] = "--seccomp";
	av[n++] = sctext;
	if (pass_userns(av, &n, nstext) < 0) {
		fprintf(stderr, "sbx-init: cannot pass the user namespaces: %s\n", strerror(errno));
		_exit(EXIT_FAIL);
	}
	for (i = 0; rest[i] && n < ARGV_MAX - 1; i++)
		av[n++] = rest[i];
	av[n] = NULL;
	execv(argv[0], av);
	fprintf(stderr, "sbx-init: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(EXIT_CMD_NOT_FOUND);
}

/* Takes the namespace lock unless SIGTERM arrives first. Returns the fd or -1. */
static int take_nslock(const char *nslock, int sfd)
{
	int fd = open(nslock, O_RDWR | O_CREAT | O_CLOEXEC, 0600), waited;

	if (fd < 0)
		return -1;
	for (waited = 0; waited < LOCK_WAIT_MS; waited += 10) {
		struct pollfd p = {.fd = sfd, .events = POLLIN};
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (poll(&p, 1, 10) > 0)
			break;
	}
	close(fd);
	return -1;
}

/* Takes the sandbox's own lock. Creating is serialized by the namespace lock, so nobody but a
 * liveness probe (sbx-list, sbx-exec, … trying it for a moment) holds it now: wait those out,
 * a bounded time, rather than give up and leave the create waiting for a sandbox that never
 * starts. 0, or -1 when it stays taken. */
static int take_own_lock(int fd)
{
	for (int waited = 0; waited < OWN_LOCK_WAIT_MS; waited++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		usleep(1000);
	}
	return -1;
}

/* The mount namespace the supervisor started in (the caller's), where the home's disk image
 * is mounted; -1 when the supervisor never left it. */
static int host_mntns = -1;

/* What the limits hold outside the directory: the cgroup (with any process left in it)
 * and the home's mount, which lives in the caller's mount namespace. */
static void release_outside(const char *dir)
{
	if (host_mntns >= 0 && setns(host_mntns, CLONE_NEWNS) == 0) {
		close(host_mntns);
		host_mntns = -1;
	}
	reslimit_release(dir);
}

/* Removes the home. A user's sandbox may have given files to the user's subordinate ids,
 * which the user cannot remove: a child does it as the root of the sandbox's outer user
 * namespace, with rights over the sandbox's ids and no other. */
static void remove_home(const char *home)
{
	pid_t p;
	int st;

	if (home_userns < 0 || (p = fork()) < 0) {
		fs_remove_tree(home);
		return;
	}
	if (p == 0)
		_exit(idmap_enter(home_userns) < 0 || fs_remove_tree(home) < 0);
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	fs_remove_tree(home);	/* what is left, if anything */
}

static void teardown(const char *dir, pid_t bwrap)
{
	char trash[4096], home[4096 + 8];
	const char *base = strrchr(dir, '/');
	int st;

	if (bwrap > 0) {
		kill(bwrap, SIGKILL);
		reslimit_kill(dir);	/* a paused sandbox's frozen bubblewrap dies only so */
		while (waitpid(bwrap, &st, 0) < 0 && errno == EINTR)
			;
	}
	net_stop();
	release_outside(dir);
	/* Rename first: the sandbox disappears at once; the removal may take a while. The home
	 * goes first and the lock (held until this process exits) last, so a trash directory
	 * whose lock nobody holds is one a removal left unfinished: the next sbx-create,
	 * sbx-list or sbx-delete in the namespace finishes it. */
	snprintf(trash, sizeof trash, "%.*s/.trash.%s.%ld", (int)(base - dir), dir, base + 1,
		 (long)getpid());
	if (rename(dir, trash) < 0)
		snprintf(trash, sizeof trash, "%s", dir);
	snprintf(home, sizeof home, "%s/home", trash);
	remove_home(home);
	fs_remove_tree(trash);
}

/* At the deadline, under the namespace lock nl (-1: not had): 1 when the sandbox is paused
 * (-idle pause, within its paused ttl) until *until, 0 when it is to be removed now. A pause
 * that fails (no freezer) removes it, as without -idle pause. */
static int pause_at_deadline(const char *dir, int nl, int64_t *until)
{
	int64_t dl = read_deadline(dir), pttl = read_paused_ttl(dir);

	if (pttl <= 0 || now_ns() >= dl + pttl)
		return 0;
	*until = dl + pttl;
	if (nl < 0) {		/* busy: a moment later, not without the lock a resume takes */
		*until = now_ns() + (int64_t)RETRY_MS * 1000000;
		return 1;
	}
	return reslimit_frozen(dir) > 0 || reslimit_freeze(dir, true, FREEZE_WAIT_MS) == 0;
}

/* Until the sandbox ends: its deadline (re-read when it passes, under the namespace lock, as
 * a touch may have moved it; with -idle pause it is paused then, and removed the paused ttl
 * later), SIGTERM or SIGINT (sbx-delete), or bubblewrap's own end. Then tears it down.
 * Returns the exit status. */
static int watch(int sfd, pid_t bwrap)
{
	char nslock[sizeof dir_now + 16];

	for (;;) {
		const char *dir = here();
		int64_t until = read_deadline(dir), left = until - now_ns();
		struct pollfd p = {.fd = sfd, .events = POLLIN};
		struct signalfd_siginfo si;
		int timeout, st;

		if (left <= 0) {
			int nl = take_nslock(nslock_now(nslock, sizeof nslock), sfd), paused;
			/* Re-read under the lock: a touch may have moved the deadline meanwhile. */
			if (nl >= 0 && read_deadline(here()) - now_ns() > 0) {
				close(nl);
				continue;
			}
			paused = pause_at_deadline(here(), nl, &until);
			if (nl >= 0)
				close(nl);
			if (!paused) {
				teardown(here(), bwrap);
				return 0;
			}
			left = until - now_ns();
			if (left < 1000000)
				left = 1000000;
		}
		timeout = left / 1000000 > MAX_SLEEP_MS ? MAX_SLEEP_MS : (int)(left / 1000000) + 1;
		if (poll(&p, 1, timeout) <= 0)
			continue;
		while (read(sfd, &si, sizeof si) == sizeof si) {
			if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
				teardown(here(), bwrap);
				return 0;
			}
			if (si.ssi_signo == SIGCHLD && waitpid(bwrap, &st, WNOHANG) == bwrap) {
				/* The sandbox ended by itself: nothing can run in it any more. */
				int nl = take_nslock(nslock_now(nslock, sizeof nslock), sfd);
				teardown(here(), -1);
				if (nl >= 0)
					close(nl);
				return 0;
			}
		}
	}
}

int init_supervise(const char *dir, const char *nslock, const char *const ids[3],
		   const char *const stage_src[4], char **bwrap_argv)
{
	const char *uid = ids[0], *gid = ids[1];
	char path[4096], pid[32];
	sigset_t set;
	int lock, sfd;
	pid_t bwrap;

	/* fd 4, when the sandbox has a host id of its own: that id's lock, held until this
	 * process ends (after the home is gone), never handed to bubblewrap. */
	if (strcmp(ids[2], "-") != 0 && fcntl(4, F_SETFD, FD_CLOEXEC) < 0 && errno != EBADF)
		return EXIT_FAIL;
	/* The secrets' feed, when sbx-create gave one: only sbx-proxy may read it, never
	 * bubblewrap, so out of its way and closed on exec. */
	if (fcntl(LOCALNET_SECRETS_FD, F_GETFD) >= 0) {
		int feed = fcntl(LOCALNET_SECRETS_FD, F_DUPFD_CLOEXEC, 10);
		close(LOCALNET_SECRETS_FD);
		if (feed < 0)
			return EXIT_FAIL;
		net_secrets(feed);
	}
	snprintf(dir_now, sizeof dir_now, "%s", dir);
	if ((dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return EXIT_FAIL;
	snprintf(path, sizeof path, "%s/lock", dir);
	lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || take_own_lock(lock) < 0)
		return EXIT_FAIL;
	snprintf(path, sizeof path, "%s/supervisor.pid", dir);
	snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (fs_write_atomic(path, pid, strlen(pid), 0600) < 0)
		return EXIT_FAIL;

	if (strcmp(uid, "-") != 0)
		host_mntns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (strcmp(uid, "-") != 0 && stage(stage_src) < 0) {
		snprintf(path, sizeof path, "%s/bwrap.log", dir);
		snprintf(pid, sizeof pid, "staging: %d\n", errno);
		fs_write_atomic(path, pid, strlen(pid), 0600);
		return EXIT_FAIL;
	}
	/* A sandbox with a range of ids: its user namespaces, before anything of it runs. */
	if (strcmp(ids[2], "-") != 0 && make_userns(ids) < 0) {
		snprintf(path, sizeof path, "%s/bwrap.log", dir);
		snprintf(pid, sizeof pid, "user namespace: %d\n", errno);
		fs_write_atomic(path, pid, strlen(pid), 0600);
		return EXIT_FAIL;
	}
	/* Its writable root, if the plan has one (lib/local/rootlayer.h), over the stage. */
	if (strcmp(uid, "-") != 0 && rootlayer_mount(dir, STAGE_DIR, userns_fd[1],
						     (uid_t)strtoul(uid, NULL, 10),
						     (gid_t)strtoul(gid, NULL, 10)) < 0) {
		char why[160];
		snprintf(why, sizeof why, "cannot mount the writable root (-readonly-root does "
			 "without it): %s\n", strerror(errno));
		snprintf(path, sizeof path, "%s/bwrap.log", dir);
		fs_write_atomic(path, why, strlen(why), 0600);
		return EXIT_FAIL;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return EXIT_FAIL;
	if (net_load(dir) < 0 || (bwrap_argv = net_bwrap_argv(bwrap_argv)) == NULL) {
		snprintf(path, sizeof path, "%s/bwrap.log", dir);
		snprintf(pid, sizeof pid, "network plan: %d\n", errno);
		fs_write_atomic(path, pid, strlen(pid), 0600);
		return EXIT_FAIL;
	}
	bwrap = start_bwrap(dir, uid, gid, bwrap_argv);
	close(3);	/* the listening socket now lives only in the sandbox */
	for (int i = 0; i < 2; i++)	/* and the user namespaces in bubblewrap */
		if (userns_fd[i] >= 0)
			close(userns_fd[i]);
	if (bwrap < 0) {
		teardown(dir, -1);
		return EXIT_FAIL;
	}
	if (net_start(dir, uid, gid) < 0) {
		/* The directory stays, with the helper's log, for sbx-create to read and remove:
		 * once this process is gone it is stale to everyone else. */
		int st;
		kill(bwrap, SIGKILL);
		while (waitpid(bwrap, &st, 0) < 0 && errno == EINTR)
			;
		net_stop();
		release_outside(dir);
		return EXIT_FAIL;
	}
	(void)nslock;	/* found again from DIR's name at each use: see here() */
	return watch(sfd, bwrap);
}
