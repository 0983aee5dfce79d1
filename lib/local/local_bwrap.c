/* local_bwrap.c — the privileged door of the local backend: what a sandbox is made of and how
 * it is started. Everything that decides what a command in a sandbox can see or do is in this
 * file, so a security reviewer reads it end to end: the host half (built into libsbx) makes
 * bubblewrap's plan — namespaces, the filesystem with its masked host secrets, the
 * environment, the identities, the service's capabilities; the sandbox half (built into the
 * static sbx-init with SBX_INIT defined, see lib/local/local_bwrap.h) carries out every change of
 * identity or privilege after bubblewrap's own.
 *
 * The shape of a sandbox, and why:
 *
 *   host:  supervisor (sbx-init supervise; PATH only in its environment)
 *            └ bubblewrap, as the sandbox's host uid; plan through --args; into the user
 *              namespaces of the sandbox's id range (lib/local/idmap.h: root's, or a user's of
 *              the user's subordinate ids), else (a user without them) its own
 *   P0:        └ bwrap's pid 1 └ the exec service (sbx-init serve, non-dumpable) └ shepherds
 *   P1:                            └ the commands' init  ⟵ every command and what it starts
 *
 * A command must not reach the service, the shepherds or the supervisor: not signal them,
 * ptrace them, take their descriptors (pidfd_getfd), read their memory (process_vm_readv) or
 * their environment. All of those name a process by a pid the command can see, or a /proc
 * entry of it. So the commands live in a pid namespace of their own, P1, nested in
 * bubblewrap's, with a /proc of P1 only: the service, the shepherds and bubblewrap have no
 * pid there, and the supervisor is on the host. Every command of the sandbox shares P1, so
 * commands still see and signal each other (gemini-cli's background commands print PIDs that
 * a later command kills). P1's init is ours and visible: as a pid namespace's init it drops
 * SIGKILL and SIGSTOP from inside it; it is non-dumpable and commands hold no capability over
 * it, so ptrace, pidfd_getfd and process_vm_readv are refused; it holds no descriptor.
 * Another uid for the service would be the other way, but an unprivileged bubblewrap maps a
 * single uid, so the pid namespace is the defence that works for root and users alike.
 *
 * Making P1 takes CAP_SYS_ADMIN, and --disable-userns (bubblewrap 0.8: user.max_user_namespaces
 * 1 under a second user namespace; for root's sandboxes the supervisor makes the same two
 * levels and bubblewrap asserts it) leaves none to gain, so bubblewrap keeps four capabilities
 * for the service (service_caps below) and every command drops them before exec, keeping
 * only what root needs to own its sandbox's files (cmd_caps, in the second level only). A
 * command's shepherd stays in P0, out of the command's reach, so killing or stopping "its
 * parent" is impossible and the timeout holds. Its processes cannot all stay below the
 * shepherd (orphans go to P1's init, the only reaper a nested namespace may have), so each
 * command gets a mark instead: a UTS namespace of its own (a copy: same hostname, a few
 * hundred bytes), inherited by everything it starts and left by none — leaving takes setns
 * or unshare, which no capability and no user namespace allow. To kill a command, its
 * shepherd kills every process with the mark, through pidfds. */
#ifndef SBX_INIT
/* ==== the host half: the plan ==== */

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exitcode.h"
#include "idmap.h"
#include "local.h"
#include "localnet.h"
#include "paths.h"
#include "reslimit.h"
#include "rootlayer.h"
#include "xalloc.h"

/* Where bubblewrap finds what the supervisor staged for a sandbox run as another uid (see
 * cmd/sbx-init/supervise.c). */
#define STAGE "/run/sbx-stage"

/* Host files that must not be readable inside even by a root-mapped sandbox. */
static const char *const masked_files[] = {
	"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers",
	"/etc/security/opasswd",
};
static const char *const masked_dirs[] = {
	"/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d", "/etc/kubernetes", "/etc/rancher",
};
/* Top-level host directories bound read-only (or recreated as the host's symlinks). */
static const char *const host_dirs[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};

#define SANDBOX_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/run/sbx/bin"

int local_bwrap_check_image(const char *image, struct sbx_err *e)
{
	if (image[0] == '\0' || strcmp(image, "host") == 0 || image[0] == '/' || oci_is_ref(image))
		return 0;
	return err_set(e, SBX_EINVAL,
		       "the local backend cannot pull image \"%s\": use \"host\" (the default), "
		       "the absolute path of a root filesystem directory, oci-archive:PATH[:TAG] or "
		       "oci:DIR[:TAG]", image);
}

struct oci_image *local_bwrap_open_image(const struct sbx_spec *spec, struct sbx_err *e)
{
	char *helper = paths_helper("SBX_IMAGE_HELPER", "sbx-image");
	struct oci_image *img;

	if (helper == NULL) {
		err_set(e, SBX_EUNAVAIL, "cannot find sbx-image next to this program (set "
			"SBX_IMAGE_HELPER)");
		return NULL;
	}
	img = oci_image_run(helper, spec->image, spec->homedir, e);
	free(helper);
	return img;
}

/* ---- identities ----
 * Run as root, each sandbox gets IDMAP_RANGE host uids and gids of its own (lib/local/idmap.h: the
 * "sbx" entries of /etc/subuid and /etc/subgid when the host has them, else 0x70010000 up to
 * 2^31), root inside being the first: per-uid kernel accounting — RLIMIT_NPROC, inotify
 * instances, keys, pending signals — is not shared between sandboxes, none can read or
 * change what another wrote, and inside, root can give files to any id of its range (chown,
 * tar -x, npm). The supervisor maps them into a user namespace it makes, which bubblewrap
 * enters (--userns). A lock file per range under SBX_ID_LOCKS (root's alone, on a tmpfs that
 * a reboot empties) is held by the sandbox's supervisor until its home is removed, so no two
 * live sandboxes share a range, whatever crashes. SBX_SANDBOX_UID and SBX_SANDBOX_GID pin one
 * id instead (the sandbox then has that one id only). */
#define SBX_ID_LOCKS "/run/sbx/ranges"

/* Takes the lock of one free range of the pool (a lock file per range in dir), trying from a
 * random one. fd, -2 when all are taken (with e), or -1. */
static int reserve_range(const char *dir, unsigned long slots, unsigned long *index,
			 struct sbx_err *e)
{
	unsigned long first, i;
	int fd;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return err_sys(e, errno, "cannot create %s", dir);
	first = ((unsigned long)getpid() * 2654435761u + (unsigned long)time(NULL)) % slots;
	for (i = 0; i < slots; i++) {
		char path[PATH_MAX];
		*index = (first + i) % slots;
		snprintf(path, sizeof path, "%s/%lu", dir, *index);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return err_sys(e, errno, "cannot open %s", path);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		close(fd);
	}
	err_set(e, SBX_EUNAVAIL, "all %lu sandbox id ranges are in use", slots);
	return -2;
}

/* ---- a user's sandbox: the user's subordinate ids ----
 * With entries in /etc/subuid and /etc/subgid (and newuidmap, newgidmap), each of a user's
 * sandboxes maps a range of IDMAP_RANGE of them, as rootless podman does: root inside is the
 * user (so the home, a fuse2fs mount only the user may enter, and what the user's host-side
 * tools read stay the user's), id n > 0 inside the range's first + n. Ranges are reserved by
 * lock files under the state directory, as root's are under SBX_ID_LOCKS. Where the user has
 * none, the sandbox has the user's own id only, as before, and sbx-create says so once per
 * state directory (the file NOTICE_MARK there). */
#define USER_ID_LOCKS ".idranges"
#define NOTICE_MARK ".notice-subids"

/* Sets the notice on the user's lack of subordinate ids (why), unless it was given before. */
static void notice_once(struct local_ids *ids, const char *state_root, const char *why)
{
	char mark[PATH_MAX];
	int fd;

	snprintf(mark, sizeof mark, "%s/" NOTICE_MARK, state_root);
	if ((fd = open(mark, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return;
	close(fd);
	snprintf(ids->notice, sizeof ids->notice,
		 "%s, so this user's sandboxes run as the user's own uid and gid: they share the "
		 "user's per-uid kernel limits (processes, keys, inotify) with the user's own "
		 "processes, and root inside can chown to no other id (README: Local backend)", why);
}

static int user_ids(struct local_ids *ids, const char *state_root, struct sbx_err *e)
{
	struct passwd *pw = getpwuid(getuid());
	struct idmap_pool pool;
	unsigned long i = 0;
	char dir[PATH_MAX];

	if (pw == NULL || idmap_user_pool(pw->pw_name, pw->pw_uid, &pool) < 0) {
		notice_once(ids, state_root, errno == ERANGE
			    ? "your entries in /etc/subuid and /etc/subgid hold fewer than 65536 ids"
			    : "you have no subordinate ids (no entry in /etc/subuid and /etc/subgid)");
		return 0;
	}
	if (!idmap_helpers_present()) {
		notice_once(ids, state_root, "newuidmap and newgidmap are not installed (Debian "
			    "package uidmap) to map your subordinate ids");
		return 0;
	}
	snprintf(dir, sizeof dir, "%s/" USER_ID_LOCKS, state_root);
	ids->lock = reserve_range(dir, pool.slots, &i, e);
	if (ids->lock == -1)
		return -1;
	if (ids->lock == -2) {	/* all taken: share one, and say so */
		ids->lock = -1;
		snprintf(ids->notice, sizeof ids->notice, "all %lu ranges of 65536 of your "
			 "subordinate ids (/etc/subuid) are in use by your other sandboxes: this one "
			 "shares range %lu with one of them", pool.slots, i);
	}
	ids->sub_uid = pool.uid_start + i * IDMAP_RANGE;
	ids->sub_gid = pool.gid_start + i * IDMAP_RANGE;
	ids->count = IDMAP_RANGE;
	return 0;
}

int local_bwrap_ids(struct local_ids *ids, const char *state_root, struct sbx_err *e)
{
	const char *u = getenv("SBX_SANDBOX_UID"), *g = getenv("SBX_SANDBOX_GID"), *why;
	struct idmap_pool pool;
	unsigned long i = 0;

	*ids = (struct local_ids){geteuid(), getegid(), 1, geteuid() == 0, -1, 0, 0, ""};
	if (!ids->drop)
		return user_ids(ids, state_root, e);
	if (u && *u) {
		ids->uid = (uid_t)strtoul(u, NULL, 10);
		ids->gid = g && *g ? (gid_t)strtoul(g, NULL, 10) : (gid_t)ids->uid;
		return 0;
	}
	if (idmap_pool(&pool, &why) < 0)
		return err_set(e, SBX_EINVAL, "%s", why);
	if (mkdir("/run/sbx", 0755) < 0 && errno != EEXIST)
		return err_sys(e, errno, "cannot create /run/sbx");
	if ((ids->lock = reserve_range(SBX_ID_LOCKS, pool.slots, &i, e)) < 0)
		return -1;
	ids->uid = (uid_t)(pool.uid_start + i * IDMAP_RANGE);
	ids->gid = (gid_t)(pool.gid_start + i * IDMAP_RANGE);
	ids->count = IDMAP_RANGE;
	return 0;
}

static void push3(struct strvec *a, const char *opt, const char *x, const char *y)
{
	strvec_push(a, opt);
	strvec_push(a, x);
	if (y)
		strvec_push(a, y);
}

/* Paths as bubblewrap sees them: when the sandbox runs as another uid, below STAGE. */
struct plan_src {
	const char *home, *init, *tool, *rootfs;
};

/* The writable root's layers (lib/local/rootlayer.h), as the plan adds them: each a host
 * directory (or "-": an empty one) whose overlay the supervisor mounts at STAGE/root/I. */
struct root_layers {
	int64_t size;			/* the cap; 0: no writable root, the image read-only */
	char *lower[ROOTLAYER_MAX];
	int n;
};

/* What the host image's /var gets of the host's: the package managers' own state only
 * (the rest of the host's /var — logs, other services' data — stays out). dpkg's and apt's
 * databases are layers over the host's (lower "-": an empty directory of the sandbox's
 * instead: apt's archive cache and debconf's answers, which apt and debconf remake; the
 * fewer layers, the faster a create), each with whether it is walked for what only root
 * may read (mask_private): dpkg's database is not, its files public by design (dpkg makes
 * them 0644; only its empty lock files are root's), and it holds thousands of files, a walk
 * of which took most of what the writable root added to a create. */
static const struct {
	const char *dir, *lower;
	int walk;
} host_var_dirs[] = {
	{"/var/lib/dpkg", "/var/lib/dpkg", 0}, {"/var/lib/apt", "/var/lib/apt", 1},
	{"/var/cache/apt", "-", 0}, {"/var/cache/debconf", "-", 0},
};
/* What an image's writable root covers: its top-level directories of these names. */
static const char *const image_dirs[] = {"usr", "etc", "var", "opt", "srv", "root"};

/* The layer of lower (host path or "-") at dest, bound from its overlay on the stage. */
static void push_layer(struct strvec *a, struct root_layers *l, const char *lower,
		       const char *dest)
{
	if (l->n >= ROOTLAYER_MAX)
		return;
	l->lower[l->n] = xstrdup(lower);
	strvec_push(a, "--bind");
	strvec_pushf(a, STAGE "/layer/%d", l->n++);
	strvec_push(a, dest);
}

/* dir, read-only, or writable through its layer when the plan has a writable root. */
static void push_root_dir(struct strvec *a, struct root_layers *l, const char *dir)
{
	if (l->size > 0)
		push_layer(a, l, dir, dir);
	else
		push3(a, "--ro-bind", dir, dir);
}

/* What the exec service keeps of the capabilities bubblewrap's user namespace gives (and
 * only there: nothing on the host): CAP_SYS_ADMIN and CAP_SYS_CHROOT to make the commands'
 * namespaces and mount their /proc, CAP_SETPCAP to empty a command's bounding set,
 * CAP_SYS_PTRACE to read the namespaces of a command that made itself non-dumpable,
 * CAP_SYS_RESOURCE to set the namespace's own inotify limits (share_user_limits). Commands
 * drop all of them (local_bwrap_confine). */
static const char *const service_caps[] = {
	"CAP_SYS_ADMIN", "CAP_SYS_CHROOT", "CAP_SETPCAP", "CAP_SYS_PTRACE", "CAP_SYS_RESOURCE",
};
/* And what it hands on to commands as root: the sandbox half's cmd_caps, by name. */
static const char *const cmd_cap_names[] = {
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
	"CAP_SETUID",
};

/* The namespaces: all of them new (lib/local/localnet.c connects the network one, or not); no
 * more user namespaces inside. Root's sandboxes enter the user namespaces their supervisor
 * made for their id range (it adds --userns, --userns2 and --assert-userns-disabled: the
 * same two levels, the image's user the inner root, see lib/local/idmap.h), and so do a
 * user's with subordinate ids; a user's without them has bubblewrap make them, mapping the
 * user's own ids. */
static void plan_namespaces(struct strvec *a, const struct sbx_spec *spec,
			    const struct oci_image *img, int prepared)
{
	strvec_push(a, "--die-with-parent");
	strvec_push(a, "--new-session");
	for (size_t i = 0; i < sizeof service_caps / sizeof service_caps[0]; i++)
		push3(a, "--cap-add", service_caps[i], NULL);
	for (size_t i = 0; i < sizeof cmd_cap_names / sizeof cmd_cap_names[0]; i++)
		push3(a, "--cap-add", cmd_cap_names[i], NULL);
	if (!prepared) {
		strvec_push(a, "--unshare-user");
		strvec_push(a, "--disable-userns");
		strvec_push(a, "--uid");
		strvec_pushf(a, "%lu", img ? (unsigned long)img->uid : 0UL);
		strvec_push(a, "--gid");
		strvec_pushf(a, "%lu", img ? (unsigned long)img->gid : 0UL);
	}
	strvec_push(a, "--unshare-pid");
	strvec_push(a, "--unshare-ipc");
	strvec_push(a, "--unshare-uts");
	strvec_push(a, "--unshare-cgroup-try");
	strvec_push(a, "--unshare-net");
	strvec_push(a, "--hostname");
	strvec_push(a, spec->name);
}

/* "--size N --tmpfs PATH": every tmpfs sized from the memory limit (see reslimit.h), the
 * default one under -limits none, so none defaults to half of the host's RAM. */
static void push_tmpfs(struct strvec *a, const struct sbx_spec *spec, enum reslimit_tmpfs which,
		       const char *path)
{
	char n[32];
	int64_t mem = spec && spec->limits.enforced ? spec->limits.memory : backend_default_memory();

	snprintf(n, sizeof n, "%" PRId64, reslimit_tmpfs_size(mem, which));
	push3(a, "--size", n, NULL);
	push3(a, "--tmpfs", path, NULL);
}

/* Whether directory path has an entry (so masking it hides something). */
static int has_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int found = 0;

	while (d && !found && (de = readdir(d)) != NULL)
		found = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	if (d)
		closedir(d);
	return found;
}

/* Most directory levels mask_private descends: deeper is not walked (a host's /etc is 5). */
#define MASK_DEPTH 16

/* A writable root's lower is idmapped to the sandbox's root (lib/local/rootlayer.h), so what
 * only the host's root may read there would be the sandbox's to read: below dir (a host
 * directory a layer covers), every file others may not read and that has content is masked
 * as the secrets are, and every such directory with entries. One walk by directory
 * descriptors (fstatat of each name, no path lookups: a host's /etc, about 1300 entries,
 * takes about a millisecond); /usr is not walked (SECURITY.md says why). Lock files (empty)
 * stay, for dpkg and apt. path (PATH_MAX bytes) holds dir's path and is restored. */
static void mask_walk(struct strvec *a, int dfd, char *path, int depth)
{
	size_t len = strlen(path);
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	struct stat st;

	if (d == NULL) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    de->d_type == DT_LNK || len + strlen(de->d_name) + 2 > PATH_MAX ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		snprintf(path + len, PATH_MAX - len, "/%s", de->d_name);
		if (S_ISDIR(st.st_mode) && (st.st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH)) {
			if (has_entries(path))
				push_tmpfs(a, NULL, RESLIMIT_MASK, path);
		} else if (S_ISDIR(st.st_mode) && depth < MASK_DEPTH) {
			int sub = openat(dirfd(d), de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				mask_walk(a, sub, path, depth + 1);
		} else if (S_ISREG(st.st_mode) && !(st.st_mode & S_IROTH) && st.st_size > 0) {
			push3(a, "--ro-bind", "/dev/null", path);
		}
		path[len] = '\0';
	}
	closedir(d);
}

static void mask_private(struct strvec *a, const char *dir)
{
	char path[PATH_MAX];
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	snprintf(path, sizeof path, "%s", dir);
	if (fd >= 0)
		mask_walk(a, fd, path, 0);
}

/* The host's own root, read-only (or /usr and /etc writable through layers), with its
 * secrets masked: the masks go over the layers. */
static void plan_host_root(struct strvec *a, struct root_layers *l)
{
	char link[PATH_MAX], src[64];
	struct stat st;
	size_t i;
	ssize_t n;

	push_tmpfs(a, NULL, RESLIMIT_ROOT, "/");	/* below every other mount: bwrap's has no size */
	push_root_dir(a, l, "/usr");
	for (i = 0; i < sizeof host_dirs / sizeof host_dirs[0]; i++) {
		snprintf(src, sizeof src, "/%s", host_dirs[i]);
		if (lstat(src, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode) && (n = readlink(src, link, sizeof link - 1)) > 0) {
			link[n] = '\0';
			push3(a, "--symlink", link, src);
		} else if (S_ISDIR(st.st_mode)) {
			push3(a, "--ro-bind", src, src);
		}
	}
	push_root_dir(a, l, "/etc");
	for (i = 0; i < sizeof masked_files / sizeof masked_files[0]; i++)
		if (lstat(masked_files[i], &st) == 0 && S_ISREG(st.st_mode))
			push3(a, "--ro-bind", "/dev/null", masked_files[i]);
	for (i = 0; i < sizeof masked_dirs / sizeof masked_dirs[0]; i++)
		if (lstat(masked_dirs[i], &st) == 0 && S_ISDIR(st.st_mode))
			push_tmpfs(a, NULL, RESLIMIT_MASK, masked_dirs[i]);
	if (l->size > 0)
		mask_private(a, "/etc");
}

/* Private /proc, /dev, /tmp, /run, /var (an image's own, with a writable root; the host's
 * with its package managers' state); the home; sbx-init and the toolbox read-only. */
static void plan_mounts(struct strvec *a, const struct sbx_spec *spec,
			const struct plan_src *src, struct root_layers *l, int host)
{
	struct stat st;

	push3(a, "--proc", "/proc", NULL);
	push3(a, "--dev", "/dev", NULL);
	push_tmpfs(a, spec, RESLIMIT_SHM, "/dev/shm");
	push3(a, "--remount-ro", "/dev", NULL);	/* bwrap's own /dev tmpfs has no size */
	push_tmpfs(a, spec, RESLIMIT_TMP, "/tmp");
	push_tmpfs(a, spec, RESLIMIT_RUN, "/run");
	if (l->size == 0 || host)
		push_tmpfs(a, spec, RESLIMIT_VAR, "/var");
	if (l->size > 0 && host) {
		for (size_t i = 0; i < sizeof host_var_dirs / sizeof host_var_dirs[0]; i++)
			if (lstat(host_var_dirs[i].dir, &st) == 0 && S_ISDIR(st.st_mode)) {
				push_layer(a, l, host_var_dirs[i].lower, host_var_dirs[i].dir);
				if (host_var_dirs[i].walk)
					mask_private(a, host_var_dirs[i].dir);
			}
		push3(a, "--dir", "/var/log/apt", NULL);
		push_layer(a, l, "-", "/opt");
	}
	push3(a, "--dir", "/var/tmp", NULL);
	push3(a, "--bind", src->home, spec->homedir);
	push3(a, "--ro-bind", src->init, "/run/sbx/sbx-init");
	if (src->tool)
		push3(a, "--ro-bind", src->tool, "/run/sbx/bin/geminicli-toolbox");
}

/* What an OCI image adds after the defaults: its Env (the sandbox keeps its own HOME and
 * HOSTNAME; /run/sbx/bin stays on PATH). A later --setenv overrides an earlier one. */
static void image_env(struct strvec *a, const struct oci_image *img)
{
	size_t i;

	for (i = 0; img->env[i]; i++) {
		const char *eq = strchr(img->env[i], '=');
		char *name = xstrndup(img->env[i], (size_t)(eq - img->env[i]));
		if (strcmp(name, "HOME") != 0 && strcmp(name, "HOSTNAME") != 0) {
			char *val = strcmp(name, "PATH") == 0 ? xasprintf("%s:/run/sbx/bin", eq + 1)
							      : xstrdup(eq + 1);
			push3(a, "--setenv", name, val);
			free(val);
		}
		free(name);
	}
}

/* A scrubbed environment: nothing of the caller's (API keys above all) gets in. */
static void plan_env(struct strvec *a, const struct sbx_spec *spec, const struct oci_image *img)
{
	strvec_push(a, "--clearenv");
	push3(a, "--setenv", "HOME", spec->homedir);
	push3(a, "--setenv", "PATH", SANDBOX_PATH);
	push3(a, "--setenv", "LANG", "C.UTF-8");
	push3(a, "--setenv", "TERM", "dumb");
	push3(a, "--setenv", "HOSTNAME", spec->name);
	if (img)
		image_env(a, img);
}

/* The sandbox's own cgroup, read-only: on v2 its directory at /sys/fs/cgroup, on v1 each
 * hierarchy's directory at /sys/fs/cgroup/<hierarchy> (the cgroup namespace makes it "/" in
 * /proc/self/cgroup), so a runtime sizing itself from memory.max or memory.limit_in_bytes
 * finds -memory. Only those directories: nothing else of /sys enters. On the host's root
 * only, a tmpfs where bubblewrap can make the mount points (an image's root is read-only).
 * Nothing without limits. */
static void plan_cgroup(struct strvec *a, const char *dir)
{
	static const char top[] = "/sys/fs/cgroup/";
	struct cgroup_set s;

	if (reslimit_load(dir, &s) < 0)
		return;
	for (int i = 0; i < s.n; i++) {
		const char *h = s.dir[i] + sizeof top - 1;
		size_t len = strcspn(h, "/");

		if (s.version == 2) {
			push3(a, "--ro-bind", s.dir[i], "/sys/fs/cgroup");
			continue;
		}
		if (strncmp(s.dir[i], top, sizeof top - 1) != 0 || len == 0 || h[len] != '/')
			continue;
		strvec_push(a, "--ro-bind");
		strvec_push(a, s.dir[i]);
		strvec_pushf(a, "%s%.*s", top, (int)len, h);
	}
}

/* bubblewrap's arguments. img (NULL: none) is an OCI image whose rootfs is bound from
 * src->rootfs; its User becomes the sandbox's ids and its WorkingDir the service's (so
 * commands' default) directory, else the home is. */
static int plan(struct strvec *a, const struct sbx_spec *spec, const struct plan_src *src,
		const struct oci_image *img, int prepared, int64_t root_size, const char *dir,
		struct buf *feed, struct sbx_err *e)
{
	struct stat st;

	const char *rootfs = img ? img->rootfs : spec->image[0] == '/' ? spec->image : NULL;
	struct root_layers l = {.size = prepared ? root_size : 0};
	int rc = -1;

	plan_namespaces(a, spec, img, prepared);
	if (rootfs && !img && (stat(rootfs, &st) < 0 || !S_ISDIR(st.st_mode)))
		return err_set(e, SBX_EINVAL, "image %s is not a directory", spec->image);
	if (rootfs) {
		push3(a, "--ro-bind", img ? src->rootfs : rootfs, "/");
		for (size_t i = 0; l.size > 0 && i < sizeof image_dirs / sizeof image_dirs[0]; i++) {
			char *lower = xasprintf("%s/%s", rootfs, image_dirs[i]), *dest;
			dest = xasprintf("/%s", image_dirs[i]);
			if (lstat(lower, &st) == 0 && S_ISDIR(st.st_mode))
				push_layer(a, &l, lower, dest);
			free(lower);
			free(dest);
		}
	} else {
		plan_host_root(a, &l);
		plan_cgroup(a, dir);
	}
	plan_mounts(a, spec, src, &l, rootfs == NULL);
	if (l.n > 0 && rootlayer_write(dir, l.size, (const char *const *)l.lower, l.n) < 0) {
		err_sys(e, errno, "cannot write %s/" ROOTLAYER_FILE, dir);
		goto out;
	}
	/* Commands start in the home, where what they write persists (upstream starts in /),
	 * unless an image names its own WorkingDir. */
	push3(a, "--chdir", img && img->workdir[0] ? img->workdir : spec->homedir, NULL);
	plan_env(a, spec, img);
	/* The network's helper and what it needs inside (lib/local/localnet.c). */
	if (localnet_prepare(spec, dir, rootfs ? rootfs : "/", a, feed, e) < 0)
		goto out;
	strvec_push(a, "--");
	strvec_push(a, "/run/sbx/sbx-init");
	strvec_push(a, "serve");
	rc = 0;
out:
	for (int i = 0; i < l.n; i++)
		free(l.lower[i]);
	return rc;
}

/* The supervisor's whole environment, and so bubblewrap's: nothing of the caller's (API keys,
 * HOME, XDG_* and the rest) may reach a process that a sandbox could ever see. */
static char *const supervisor_env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};

/* Pins this process (and so everything the sandbox starts) to n of the CPUs it may run on,
 * n the -cpus quota rounded up, so nproc, sched_getaffinity and the runtimes that size their
 * pools from them (make -j$(nproc), Go, the JVM, Node) see the quota rather than the host.
 * Which n: from an offset that differs between sandboxes, so two -cpus 1 sandboxes do not
 * share one CPU. Advisory (a command may widen its own affinity again; the cgroup's quota is
 * the limit); where the kernel refuses, nothing changes. */
static void pin_cpus(int64_t cpus_milli)
{
	cpu_set_t have, want;
	int n = (int)((cpus_milli + 999) / 1000), count, skip, cpu;

	if (cpus_milli <= 0 || sched_getaffinity(0, sizeof have, &have) < 0 ||
	    (count = CPU_COUNT(&have)) <= n)
		return;
	CPU_ZERO(&want);
	skip = (int)(getpid() % count);
	for (int i = 0, taken = 0; taken < n && i < 2 * CPU_SETSIZE; i++) {
		cpu = i % CPU_SETSIZE;
		if (!CPU_ISSET(cpu, &have) || (skip > 0 && skip--))
			continue;
		CPU_SET(cpu, &want);
		taken = CPU_COUNT(&want);
	}
	sched_setaffinity(0, sizeof want, &want);
}

/* Starts "sbx-init supervise …" detached (double fork, new session) with the listening
 * socket as fd 3, the id's lock (if any) as fd 4, the secrets' feed (if any) at
 * LOCALNET_SECRETS_FD and no other descriptor of ours, pinned to the -cpus quota's CPUs
 * (cpus_milli; 0: none). Returns 0 once the intermediate child is reaped. */
static int spawn_supervisor(char **argv, int lsock, int idlock, int feed, int64_t cpus_milli,
			    struct sbx_err *e)
{
	pid_t p = fork(), q;
	int st;

	if (p < 0)
		return err_sys(e, errno, "fork");
	if (p == 0) {
		int fd;
		setsid();
		q = fork();
		if (q != 0)
			_exit(q < 0 ? 1 : 0);
		/* out of the way first, so that dup2 leaves it open across exec */
		if (idlock >= 0 && (idlock = fcntl(idlock, F_DUPFD_CLOEXEC, 10)) < 0)
			_exit(EXIT_FAIL);
		if (feed >= 0 && (feed = fcntl(feed, F_DUPFD_CLOEXEC, 10)) < 0)
			_exit(EXIT_FAIL);
		if (dup2(lsock, 3) < 0 || (idlock >= 0 && dup2(idlock, 4) < 0) ||
		    (feed >= 0 && dup2(feed, LOCALNET_SECRETS_FD) < 0))
			_exit(EXIT_FAIL);
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		close_range(feed >= 0 ? LOCALNET_SECRETS_FD + 1 : idlock >= 0 ? 5 : 4, ~0U, 0);
		pin_cpus(cpus_milli);
		execve(argv[0], argv, supervisor_env);
		_exit(EXIT_CMD_NOT_FOUND);
	}
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return err_set(e, SBX_EIO, "cannot start the sandbox supervisor");
	return 0;
}

/* The supervisor's command line: what it stages for bubblewrap, then bubblewrap's own. */
static int supervisor_argv(struct strvec *sv, const struct local_start *st, const char *init,
			   const char *tool, const char *bwrap, struct buf *feed, struct sbx_err *e)
{
	struct plan_src src = {st->home, init, tool, st->img ? st->img->rootfs : NULL};

	strvec_push(sv, init);
	strvec_push(sv, "supervise");
	strvec_push(sv, st->paths->dir);
	strvec_push(sv, st->paths->nslock);
	if (st->ids->drop) {
		unsigned long iu = st->img ? (unsigned long)st->img->uid : 0;
		unsigned long ig = st->img ? (unsigned long)st->img->gid : 0;
		if (st->ids->count > 1 && (iu >= st->ids->count || ig >= st->ids->count))
			return err_set(e, SBX_EINVAL, "the image's user %lu:%lu is not one of the "
				       "sandbox's %lu ids", iu, ig, st->ids->count);
		strvec_pushf(sv, "%lu", (unsigned long)st->ids->uid);
		strvec_pushf(sv, "%lu", (unsigned long)st->ids->gid);
		strvec_pushf(sv, "%lu:%lu:%lu", st->ids->count, iu, ig);
		strvec_push(sv, st->home);
		strvec_push(sv, init);
		strvec_push(sv, tool ? tool : "-");
		strvec_push(sv, st->img ? st->img->rootfs : "-");
		src = (struct plan_src){STAGE "/home", STAGE "/sbx-init",
					tool ? STAGE "/geminicli-toolbox" : NULL,
					st->img ? STAGE "/rootfs" : NULL};
	} else if (st->ids->sub_uid) {
		/* a user's: the supervisor has newuidmap map the range (lib/local/idmap.h) */
		unsigned long iu = st->img ? (unsigned long)st->img->uid : 0;
		unsigned long ig = st->img ? (unsigned long)st->img->gid : 0;
		if (iu >= st->ids->count || ig >= st->ids->count)
			return err_set(e, SBX_EINVAL, "the image's user %lu:%lu is not one of the "
				       "sandbox's %lu ids", iu, ig, st->ids->count);
		strvec_push(sv, "-");
		strvec_push(sv, "-");
		strvec_pushf(sv, "%lu:%lu:%lu:%lu:%lu", st->ids->count, iu, ig, st->ids->sub_uid,
			     st->ids->sub_gid);
		for (int i = 0; i < 4; i++)
			strvec_push(sv, "-");
	} else {
		for (int i = 0; i < 7; i++)
			strvec_push(sv, "-");
	}
	strvec_push(sv, "--");
	strvec_push(sv, bwrap);
	return plan(sv, st->spec, &src, st->img, st->ids->drop || st->ids->sub_uid != 0,
		    st->root_size, st->paths->dir, feed, e);
}

/* A pipe holding the whole feed (the supervisor reads it at its leisure): its read end. */
static int secrets_pipe(const struct buf *feed, struct sbx_err *e)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return err_sys(e, errno, "pipe");
	if (fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < (int)feed->len ||
	    write(p[1], feed->data, feed->len) != (ssize_t)feed->len) {
		close(p[0]);
		close(p[1]);
		return err_set(e, SBX_EIO, "cannot hand the secrets to the sandbox's proxy");
	}
	close(p[1]);
	return p[0];
}

int local_bwrap_start(const struct local_start *st, struct sbx_err *e)
{
	char *bwrap, *init = NULL, *tool = NULL;
	struct strvec sv = {0};
	struct buf feed = {0};
	int pfd[1] = {-1};
	int rc = -1;

	bwrap = paths_which(getenv("SBX_BWRAP") ? getenv("SBX_BWRAP") : "bwrap");
	if (bwrap == NULL) {
		err_set(e, SBX_EUNAVAIL,
			"bubblewrap is not installed: install the Debian package \"bubblewrap\"");
		goto out;
	}
	init = paths_helper("SBX_INIT", "sbx-init");
	if (init == NULL) {
		err_set(e, SBX_EUNAVAIL, "cannot find sbx-init next to this program or in "
			"../libexec/sbx (set SBX_INIT)");
		goto out;
	}
	tool = paths_helper("SBX_TOOLBOX", "geminicli-toolbox");
	if (supervisor_argv(&sv, st, init, tool, bwrap, &feed, e) < 0)
		goto out;
	if (feed.len && (pfd[0] = secrets_pipe(&feed, e)) < 0)
		goto out;
	rc = spawn_supervisor(sv.v, st->lsock, st->ids->lock, pfd[0],
			      st->spec->limits.enforced ? st->spec->limits.cpus_milli : 0, e);
out:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (feed.data)
		explicit_bzero(feed.data, feed.len);
	buf_free(&feed);
	strvec_clear(&sv);
	free(bwrap);
	free(init);
	free(tool);
	return rc;
}

#else /* SBX_INIT */
/* ==== the sandbox half: what sbx-init carries out ==== */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/seccomp.h>

#include <seccomp.h>

#include "exitcode.h"
#include "local_bwrap.h"

int local_bwrap_become(uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		return -1;
	return 0;
}

int local_bwrap_harden(void)
{
	return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* What a command as root keeps of the capabilities, as Docker's default set does for a
 * container's root (less what needs the network, devices or the audit log): over the ids of
 * its sandbox's range only (the kernel grants them for an inode only when its owner and
 * group are mapped in the sandbox's user namespace, and over no namespace of bubblewrap's),
 * so that root inside owns files as root does (chown, tar -x, npm). Commands as another user
 * keep none. The host half hands them to the service with --cap-add (cmd_cap_names). */
static const int cmd_caps[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID, CAP_SETUID,
};

static uint64_t cmd_cap_mask(void)
{
	uint64_t m = 0;

	for (size_t i = 0; i < sizeof cmd_caps / sizeof cmd_caps[0]; i++)
		m |= 1ULL << cmd_caps[i];
	return m;
}

/* Empties the bounding set but for keep, so that not even an exec as uid 0 gives another
 * capability back. The service does it once it made the commands' namespaces (it never
 * execs, and keeps what it holds); every command inherits the set. */
static int drop_bounding_set(uint64_t keep)
{
	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (!(cap < 64 && (keep >> cap) & 1) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			return -1;
	return 0;
}

/* Every capability this process holds gone but keep: effective, permitted, inheritable;
 * no ambient one (so an exec as another user than root keeps none). */
static int hold_only_caps(uint64_t keep)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	memset(d, 0, sizeof d);
	for (int i = 0; i < 2; i++)
		d[i].effective = d[i].permitted = d[i].inheritable = (uint32_t)(keep >> (32 * i));
	return (int)syscall(SYS_capset, &h, d);
}

/* The per-user kernel limits a sandbox that has one host id shares with that id's own
 * processes (a user's sandbox: the user, its editor, its desktop), as the share one sandbox
 * may take: the kernel charges every process of a user namespace to the user who made it as
 * well as to its own id inside, so the namespace's limit caps the whole sandbox, and the
 * rest stays the user's (issue 27.6: a sandbox took all 128 inotify instances and the
 * user's editor failed). A sandbox of a range of ids (root's) shares them with nobody. */
#define USER_LIMIT_SHARE 2	/* one sandbox: half of the user's */
static const char *const shared_limits[][2] = {
	{"/proc/sys/fs/inotify/max_user_instances", "/proc/sys/user/max_inotify_instances"},
	{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"},
};

/* Reads a small decimal file. The number, or -1. */
static long read_number(const char *path)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/* Whether this user namespace maps one host uid only (the sandbox shares its host id). */
static int single_id(void)
{
	char buf[256];
	unsigned long in, out, count;
	int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return sscanf(buf, "%lu %lu %lu", &in, &out, &count) == 3 && count == 1 &&
	       strchr(buf, '\n') == buf + n - 1;
}

/* Sets this user namespace's own limits of shared_limits to a share of the user's (through a
 * writable /proc: the commands' own, before its sys is covered). 0 or -1. */
static int share_user_limits(void)
{
	if (!single_id())
		return 0;
	for (size_t i = 0; i < sizeof shared_limits / sizeof shared_limits[0]; i++) {
		long all = read_number(shared_limits[i][0]);
		char text[32];
		int fd, ok;
		if (all <= 0)
			continue;	/* a kernel without it */
		snprintf(text, sizeof text, "%ld", all / USER_LIMIT_SHARE > 0 ? all / USER_LIMIT_SHARE : 1);
		if ((fd = open(shared_limits[i][1], O_WRONLY | O_CLOEXEC)) < 0)
			return -1;
		ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
		close(fd);
		if (!ok)
			return -1;
	}
	return 0;
}

/* /proc entries bubblewrap covers read-only when they are writable, covered the same way in
 * the commands' /proc. */
static const char *const cover_proc[] = {"sys", "sysrq-trigger", "irq", "bus"};

/* In the commands' init, first thing: a mount namespace of its own with a /proc of P1. */
static int mount_cmd_proc(void)
{
	const unsigned long fl = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	char path[64];

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", fl, NULL) < 0 || share_user_limits() < 0)
		return -1;
	for (size_t i = 0; i < sizeof cover_proc / sizeof cover_proc[0]; i++) {
		snprintf(path, sizeof path, "/proc/%s", cover_proc[i]);
		if (access(path, W_OK) < 0)
			continue;	/* already read-only, or absent, as bubblewrap checks */
		if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0 ||
		    mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | fl, NULL) < 0)
			return -1;
	}
	return 0;
}

/* The commands' init (pid 1 of P1): holds nothing, keeps no capability, reaps orphans. As
 * the namespace's init it receives no SIGKILL or SIGSTOP from inside it, and every other
 * signal stays blocked, never acted on. */
static int cmd_init(void *arg)
{
	int ready = *(int *)arg, null = open("/dev/null", O_RDWR | O_CLOEXEC);
	sigset_t all;
	char ok = 1;

	if (null < 0 || mount_cmd_proc() < 0)
		_exit(EXIT_FAIL);
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	if (ready > 3)
		close_range(3, (unsigned)ready - 1, 0);
	close_range((unsigned)ready + 1, ~0U, 0);
	if (drop_bounding_set(0) < 0 || hold_only_caps(0) < 0 || write(ready, &ok, 1) != 1)
		_exit(EXIT_FAIL);
	close(ready);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		siginfo_t si;
		if (sigwaitinfo(&all, &si) == SIGCHLD)
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
	}
}

/* Opens /proc/PID/ns/WHICH of the service's own /proc. */
static int open_ns(int procfd, pid_t pid, const char *which)
{
	char path[64];

	snprintf(path, sizeof path, "%ld/ns/%s", (long)pid, which);
	return openat(procfd, path, O_RDONLY | O_CLOEXEC);
}

/* The init's stack: it only waits and reaps. */
#define CMD_INIT_STACK (64 * 1024)

int local_bwrap_cmdns_start(int procfd, struct local_cmdns *ns)
{
	static char stack[CMD_INIT_STACK] __attribute__((aligned(16)));
	int rdy[2] = {-1, -1}, mnt = -1, rc = -1;
	char ok = 0;

	ns->init_fd = ns->pidns = -1;
	if (pipe2(rdy, O_CLOEXEC) < 0)
		goto out;
	/* clone, not unshare: only this child belongs in P1 (and setns back to bubblewrap's pid
	 * namespace is not ours to do: it belongs to bubblewrap's outer user namespace). */
	ns->init = clone(cmd_init, stack + sizeof stack, CLONE_NEWPID | SIGCHLD, &rdy[1]);
	if (ns->init < 0)
		goto out;
	close(rdy[1]);
	rdy[1] = -1;
	if (read(rdy[0], &ok, 1) != 1 || !ok) {
		errno = ECHILD;
		goto out;
	}
	ns->init_fd = (int)syscall(SYS_pidfd_open, ns->init, 0);
	ns->pidns = open_ns(procfd, ns->init, "pid");
	mnt = open_ns(procfd, ns->init, "mnt");
	/* The service joins the commands' mount namespace (its /proc shows P1, where the service
	 * is not: it looks at itself through procfd), so commands start there; and empties its
	 * bounding set for them all. */
	if (ns->init_fd < 0 || ns->pidns < 0 || mnt < 0 || setns(mnt, CLONE_NEWNS) < 0 ||
	    drop_bounding_set(cmd_cap_mask()) < 0)
		goto out;
	rc = 0;
out:
	if (mnt >= 0)
		close(mnt);
	if (rdy[0] >= 0)
		close(rdy[0]);
	if (rdy[1] >= 0)
		close(rdy[1]);
	return rc;
}

static int mark_of(int procfd, const char *pid, struct local_mark *m)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof path, "%s/ns/uts", pid);
	if (fstatat(procfd, path, &st, 0) < 0)
		return -1;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	return 0;
}

int local_bwrap_shepherd(int procfd, const struct local_cmdns *ns, struct local_mark *mark)
{
	char self[32];

	snprintf(self, sizeof self, "%ld", (long)getpid());
	if (unshare(CLONE_NEWUTS) < 0 || mark_of(procfd, self, mark) < 0)
		return -1;
	return setns(ns->pidns, CLONE_NEWPID);
}

int local_bwrap_marked(int procfd, const char *pid, const struct local_mark *mark)
{
	struct local_mark m;

	return mark_of(procfd, pid, &m) == 0 && m.dev == mark->dev && m.ino == mark->ino;
}

int local_bwrap_confine(const struct sock_fprog *filter)
{
	/* a command as another user than root (an image's User) keeps none */
	uint64_t keep = geteuid() == 0 ? cmd_cap_mask() : 0;

	if (hold_only_caps(keep) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, filter, 0, 0) < 0)
		return -errno;
	return 0;
}

/* ---- the syscall filters ----
 * Two, built with libseccomp: the sandbox's (handed to bubblewrap with --seccomp, so the
 * service, its shepherds and every command run under it) and the commands' (loaded by each
 * command just before exec, on top). The sandbox's refuses what nothing in a sandbox needs;
 * the commands' adds what only the service needs to make their namespaces — the tension the
 * design comment at the top of this file resolves. Both allow by default and refuse a list,
 * as Flatpak's does; for every call on that list they are at least as strict as Docker's
 * default profile (moby/profiles seccomp/default.json), with its errno (EPERM; ENOSYS for
 * clone3, so that libc falls back to clone, whose flags can be checked). Other
 * architectures' system calls (32-bit x86, x32) are refused with ENOSYS: a rule written for
 * one numbering means nothing in another. */

enum filter_scope { ALL, CMDS };

struct deny {
	const char *name;	/* as libseccomp names it; absent on this architecture: skipped */
	enum filter_scope scope;
	int err;
	int arg;		/* -1: always; else refused when (arg & mask) == value */
	uint64_t mask, value;
	int arg2;		/* a second condition on another argument, or -1 */
	uint64_t mask2, value2;
};

#define ALWAYS(n, s) {n, s, EPERM, -1, 0, 0, -1, 0, 0}
#define WHEN(n, s, a, m, v) {n, s, EPERM, a, m, v, -1, 0, 0}
#define WHEN2(n, s, a, m, v, b, m2, v2) {n, s, EPERM, a, m, v, b, m2, v2}
/* The kernel reads an ioctl request as 32 bits: compare only those. */
#define IOCTL(cmd) WHEN("ioctl", ALL, 1, 0xffffffffu, cmd)

static const struct deny deny_table[] = {
	/* keys, performance counters, userfaultfd, kcmp, bpf, io_uring: kernel attack surface
	 * no command needs, refused by Docker without a capability we never give */
	ALWAYS("keyctl", ALL), ALWAYS("add_key", ALL), ALWAYS("request_key", ALL),
	ALWAYS("perf_event_open", ALL), ALWAYS("userfaultfd", ALL), ALWAYS("kcmp", ALL),
	ALWAYS("bpf", ALL), ALWAYS("io_uring_setup", ALL), ALWAYS("io_uring_enter", ALL),
	ALWAYS("io_uring_register", ALL),
	/* NUMA placement */
	ALWAYS("mbind", ALL), ALWAYS("set_mempolicy", ALL), ALWAYS("get_mempolicy", ALL),
	ALWAYS("set_mempolicy_home_node", ALL), ALWAYS("move_pages", ALL),
	ALWAYS("migrate_pages", ALL),
	/* mounts: the new mount API for everyone, the old one for commands */
	ALWAYS("fsopen", ALL), ALWAYS("fsconfig", ALL), ALWAYS("fsmount", ALL),
	ALWAYS("fspick", ALL), ALWAYS("move_mount", ALL), ALWAYS("open_tree", ALL),
	ALWAYS("mount_setattr", ALL), ALWAYS("pivot_root", ALL), ALWAYS("chroot", ALL),
	ALWAYS("mount", CMDS), ALWAYS("umount2", CMDS), ALWAYS("umount", CMDS),
	/* namespaces: the service makes the commands', commands make none */
	ALWAYS("unshare", CMDS), ALWAYS("setns", CMDS),
	WHEN("clone", CMDS, 0, CLONE_NEWNS, CLONE_NEWNS),
	WHEN("clone", CMDS, 0, CLONE_NEWCGROUP, CLONE_NEWCGROUP),
	WHEN("clone", CMDS, 0, CLONE_NEWUTS, CLONE_NEWUTS),
	WHEN("clone", CMDS, 0, CLONE_NEWIPC, CLONE_NEWIPC),
	WHEN("clone", CMDS, 0, CLONE_NEWUSER, CLONE_NEWUSER),
	WHEN("clone", CMDS, 0, CLONE_NEWPID, CLONE_NEWPID),
	WHEN("clone", CMDS, 0, CLONE_NEWNET, CLONE_NEWNET),
	{"clone3", CMDS, ENOSYS, -1, 0, 0, -1, 0, 0},
	ALWAYS("pidfd_getfd", CMDS),
	/* sockets: vsock (the host's hypervisor), packet and raw IP sockets */
	WHEN("socket", ALL, 0, 0xffffffffu, AF_VSOCK), WHEN("socket", ALL, 0, 0xffffffffu, AF_PACKET),
	WHEN2("socket", ALL, 0, 0xffffffffu, AF_INET, 1, 0xf, SOCK_RAW),
	WHEN2("socket", ALL, 0, 0xffffffffu, AF_INET, 1, 0xf, SOCK_PACKET),
	WHEN2("socket", ALL, 0, 0xffffffffu, AF_INET6, 1, 0xf, SOCK_RAW),
	WHEN2("socket", ALL, 0, 0xffffffffu, AF_INET6, 1, 0xf, SOCK_PACKET),
	/* typing into a terminal, the console's private requests */
	IOCTL(TIOCSTI), IOCTL(TIOCLINUX),
	/* the kernel, time, the machine: each also needs a capability nothing here has */
	ALWAYS("kexec_load", ALL), ALWAYS("kexec_file_load", ALL), ALWAYS("init_module", ALL),
	ALWAYS("finit_module", ALL), ALWAYS("delete_module", ALL), ALWAYS("reboot", ALL),
	ALWAYS("swapon", ALL), ALWAYS("swapoff", ALL), ALWAYS("acct", ALL),
	ALWAYS("quotactl", ALL), ALWAYS("quotactl_fd", ALL), ALWAYS("settimeofday", ALL),
	ALWAYS("clock_settime", ALL), ALWAYS("syslog", ALL), ALWAYS("iopl", ALL),
	ALWAYS("ioperm", ALL), ALWAYS("lookup_dcookie", ALL), ALWAYS("open_by_handle_at", ALL),
	ALWAYS("uselib", ALL), ALWAYS("ustat", ALL), ALWAYS("sysfs", ALL), ALWAYS("vhangup", ALL),
	ALWAYS("nfsservctl", ALL), ALWAYS("_sysctl", ALL),
};

/* personality: only what Docker allows — PER_LINUX, PER_LINUX32, UNAME26 and both — so
 * READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE and the rest are refused. libseccomp takes one
 * condition per argument in a rule, so this is a rule per other bit (which refuses the
 * 0xffffffff query too: stricter than Docker). */
static int deny_personality(scmp_filter_ctx ctx)
{
	for (int bit = 0; bit < 32; bit++) {
		uint32_t b = 1u << bit;
		if (b == PER_LINUX32 || b == UNAME26)
			continue;
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, b, b)) < 0)
			return -1;
	}
	return 0;
}

static int add_deny(scmp_filter_ctx ctx, const struct deny *d)
{
	int nr = seccomp_syscall_resolve_name(d->name);
	struct scmp_arg_cmp c[2];
	unsigned n = 0;

	if (nr == __NR_SCMP_ERROR || nr < 0)
		return 0;	/* not a call of this architecture */
	if (d->arg >= 0)
		c[n++] = (struct scmp_arg_cmp){(unsigned)d->arg, SCMP_CMP_MASKED_EQ, d->mask, d->value};
	if (d->arg2 >= 0)
		c[n++] = (struct scmp_arg_cmp){(unsigned)d->arg2, SCMP_CMP_MASKED_EQ, d->mask2, d->value2};
	return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(d->err), nr, n, c) < 0 ? -1 : 0;
}

int local_bwrap_filter_fd(int cmds)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int fd = -1, ok = ctx != NULL;

	if (ok)
		ok = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS)) == 0 &&
		     /* a binary tree of the system call numbers: every call of every command
		      * runs through the filter, most of them allowed */
		     seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) == 0;
	for (size_t i = 0; ok && i < sizeof deny_table / sizeof deny_table[0]; i++)
		if (deny_table[i].scope == ALL || cmds)
			ok = add_deny(ctx, &deny_table[i]) == 0;
	if (ok)
		ok = deny_personality(ctx) == 0;
	if (ok && (fd = memfd_create("sbx-seccomp", MFD_CLOEXEC)) >= 0 &&
	    (seccomp_export_bpf(ctx, fd) < 0 || lseek(fd, 0, SEEK_SET) < 0)) {
		close(fd);
		fd = -1;
	}
	if (ctx)
		seccomp_release(ctx);
	return fd;
}

int local_bwrap_filter_load(struct sock_fprog *prog)
{
	int fd = local_bwrap_filter_fd(1);
	struct stat st;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
	    (prog->filter = malloc((size_t)st.st_size)) == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = read(fd, prog->filter, (size_t)st.st_size);
	close(fd);
	prog->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
	return n == st.st_size ? 0 : -1;
}
#endif
