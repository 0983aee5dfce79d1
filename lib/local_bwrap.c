/* local_bwrap.c — the privileged door of the local backend: what a sandbox is made of and how
 * it is started. Everything that decides what a command in a sandbox can see or do is here —
 * the namespaces, the filesystem plan with its masked host secrets, the environment, the
 * identities — so a security reviewer reads this file (and cmd/sbx-init, which carries the
 * plan out) end to end. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "local.h"
#include "localnet.h"
#include "paths.h"
#include "reslimit.h"
#include "xalloc.h"

/* Host uid/gid that root's sandboxes run as (root inside, nobody outside). */
#define DEFAULT_SANDBOX_ID 65534
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
	img = oci_helper_run(helper, spec->image, spec->homedir, e);
	free(helper);
	return img;
}

void local_bwrap_ids(uid_t *uid, gid_t *gid, int *drop)
{
	const char *u = getenv("SBX_SANDBOX_UID"), *g = getenv("SBX_SANDBOX_GID");

	*drop = geteuid() == 0;
	*uid = u && *u ? (uid_t)strtoul(u, NULL, 10) : DEFAULT_SANDBOX_ID;
	*gid = g && *g ? (gid_t)strtoul(g, NULL, 10) : DEFAULT_SANDBOX_ID;
}

/* Paths as bubblewrap sees them: when the sandbox runs as another uid, below STAGE. */
struct plan_src {
	const char *home, *init, *tool, *rootfs;
};

/* The namespaces: all of them new; lib/localnet.c connects the network one (or not). */
static void plan_namespaces(struct strvec *a, const struct sbx_spec *spec,
			    const struct oci_image *img)
{
	strvec_push(a, "--die-with-parent");
	strvec_push(a, "--new-session");
	strvec_push(a, "--unshare-user");
	strvec_push(a, "--uid");
	strvec_pushf(a, "%lu", img ? (unsigned long)img->uid : 0UL);
	strvec_push(a, "--gid");
	strvec_pushf(a, "%lu", img ? (unsigned long)img->gid : 0UL);
	strvec_push(a, "--unshare-pid");
	strvec_push(a, "--unshare-ipc");
	strvec_push(a, "--unshare-uts");
	strvec_push(a, "--unshare-cgroup-try");
	strvec_push(a, "--unshare-net");
	strvec_push(a, "--hostname");
	strvec_push(a, spec->name);
}

static void push3(struct strvec *a, const char *opt, const char *x, const char *y)
{
	strvec_push(a, opt);
	strvec_push(a, x);
	if (y)
		strvec_push(a, y);
}

/* The host's own root, read-only, with its secrets masked. */
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

static void plan_host_root(struct strvec *a)
{
	char link[PATH_MAX], src[64];
	struct stat st;
	size_t i;
	ssize_t n;

	push3(a, "--ro-bind", "/usr", "/usr");
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
	push3(a, "--ro-bind", "/etc", "/etc");
	for (i = 0; i < sizeof masked_files / sizeof masked_files[0]; i++)
		if (lstat(masked_files[i], &st) == 0 && S_ISREG(st.st_mode))
			push3(a, "--ro-bind", "/dev/null", masked_files[i]);
	for (i = 0; i < sizeof masked_dirs / sizeof masked_dirs[0]; i++)
		if (lstat(masked_dirs[i], &st) == 0 && S_ISDIR(st.st_mode))
			push_tmpfs(a, NULL, RESLIMIT_MASK, masked_dirs[i]);
}

/* Private /proc, /dev, /tmp, /run, /var; the home; sbx-init and the toolbox read-only. */
static void plan_mounts(struct strvec *a, const struct sbx_spec *spec,
			const struct plan_src *src)
{
	push3(a, "--proc", "/proc", NULL);
	push3(a, "--dev", "/dev", NULL);
	push_tmpfs(a, spec, RESLIMIT_SHM, "/dev/shm");
	push3(a, "--remount-ro", "/dev", NULL);	/* bwrap's own /dev tmpfs has no size */
	push_tmpfs(a, spec, RESLIMIT_TMP, "/tmp");
	push_tmpfs(a, spec, RESLIMIT_RUN, "/run");
	push_tmpfs(a, spec, RESLIMIT_VAR, "/var");
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

/* bubblewrap's arguments. img (NULL: none) is an OCI image whose rootfs is bound from
 * src->rootfs; its User becomes the sandbox's ids and its WorkingDir the service's (so
 * commands' default) directory. */
static int plan(struct strvec *a, const struct sbx_spec *spec, const struct plan_src *src,
		const struct oci_image *img, const char *dir, struct sbx_err *e)
{
	struct stat st;

	plan_namespaces(a, spec, img);
	if (img) {
		push3(a, "--ro-bind", src->rootfs, "/");
	} else if (spec->image[0] == '/') {
		if (stat(spec->image, &st) < 0 || !S_ISDIR(st.st_mode))
			return err_set(e, SBX_EINVAL, "image %s is not a directory", spec->image);
		push3(a, "--ro-bind", spec->image, "/");
	} else {
		plan_host_root(a);
	}
	plan_mounts(a, spec, src);
	push3(a, "--chdir", img && img->workdir[0] ? img->workdir : "/", NULL);
	plan_env(a, spec, img);
	/* The network's helper and what it needs inside (lib/localnet.c). */
	if (localnet_prepare(spec, dir, img ? img->rootfs : spec->image[0] == '/' ? spec->image : "/",
			     a, e) < 0)
		return -1;
	strvec_push(a, "/run/sbx/sbx-init");
	strvec_push(a, "serve");
	return 0;
}

/* Starts "sbx-init supervise …" detached (double fork, new session) with the listening
 * socket as fd 3. Returns 0 once the intermediate child is reaped. */
static int spawn_supervisor(char **argv, int lsock, struct sbx_err *e)
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
		if (dup2(lsock, 3) < 0)
			_exit(111);
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		for (fd = 4; fd < 1024; fd++)
			close(fd);
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return err_set(e, SBX_EIO, "cannot start the sandbox supervisor");
	return 0;
}

/* The supervisor's command line: what it stages for bubblewrap, then bubblewrap's own. */
static int supervisor_argv(struct strvec *sv, const struct local_start *st, const char *init,
			   const char *tool, const char *bwrap, struct sbx_err *e)
{
	struct plan_src src = {st->home, init, tool, st->img ? st->img->rootfs : NULL};
	uid_t uid;
	gid_t gid;
	int drop;

	local_bwrap_ids(&uid, &gid, &drop);
	strvec_push(sv, init);
	strvec_push(sv, "supervise");
	strvec_push(sv, st->paths->dir);
	strvec_push(sv, st->paths->nslock);
	if (drop) {
		strvec_pushf(sv, "%lu", (unsigned long)uid);
		strvec_pushf(sv, "%lu", (unsigned long)gid);
		strvec_push(sv, st->home);
		strvec_push(sv, init);
		strvec_push(sv, tool ? tool : "-");
		strvec_push(sv, st->img ? st->img->rootfs : "-");
		src = (struct plan_src){STAGE "/home", STAGE "/sbx-init",
					tool ? STAGE "/geminicli-toolbox" : NULL,
					st->img ? STAGE "/rootfs" : NULL};
	} else {
		for (int i = 0; i < 6; i++)
			strvec_push(sv, "-");
	}
	strvec_push(sv, "--");
	strvec_push(sv, bwrap);
	return plan(sv, st->spec, &src, st->img, st->paths->dir, e);
}

int local_bwrap_start(const struct local_start *st, struct sbx_err *e)
{
	char *bwrap, *init = NULL, *tool = NULL;
	struct strvec sv = {0};
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
	if (supervisor_argv(&sv, st, init, tool, bwrap, e) < 0)
		goto out;
	rc = spawn_supervisor(sv.v, st->lsock, e);
out:
	strvec_clear(&sv);
	free(bwrap);
	free(init);
	free(tool);
	return rc;
}
