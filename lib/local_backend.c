/* local_backend.c — sandboxes as Linux namespaces made with bubblewrap on this host.
 *
 * State: $XDG_STATE_HOME/sbx/<namespace>/<name>/ holds spec.json (the handle, shaped like the
 * Kubernetes resource), deadline (shutdown time, ns), lock (flocked by the supervisor while
 * the sandbox lives: an unlocked directory is stale, e.g. after a reboot), sock (the exec
 * service) and home/ (the sandbox home, the only persistent writable place). Operations on
 * one name are serialized by <namespace>/.<name>.lock. A supervisor (sbx-init supervise)
 * runs bubblewrap and removes everything when the deadline passes; inside, sbx-init serve
 * runs commands for sbx_exec over the socket, with the caller's own file descriptors. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "backend.h"
#include "fsutil.h"
#include "gojson.h"
#include "localproto.h"
#include "oci.h"
#include "paths.h"
#include "reslimit.h"
#include "timeutil.h"
#include "xalloc.h"

/* How long create waits for a new sandbox's exec service to answer. bwrap starts in
 * milliseconds; this only bounds a broken host. */
#define READY_TIMEOUT_MS 10000
/* How long delete waits for the supervisor to tear the sandbox down before killing it. */
#define DELETE_TIMEOUT_MS 10000
/* spec.json is ours and small; anything bigger is not ours. */
#define SPEC_MAX 65536
/* Host uid/gid that root's sandboxes run as (root inside, nobody outside). */
#define DEFAULT_SANDBOX_ID 65534
/* How long exec waits for the service's answer after asking it to kill the command. */
#define KILL_REPLY_TIMEOUT_MS 10000

struct sbx_paths {
	char *nsdir, *dir, *nslock;
};

static int paths_for(struct sbx_backend *b, const char *name, struct sbx_paths *p,
		     struct sbx_err *e)
{
	char *root = paths_state_root(e);

	if (root == NULL)
		return -1;
	p->nsdir = xasprintf("%s/%s", root, b->namespace);
	p->dir = xasprintf("%s/%s", p->nsdir, name);
	p->nslock = xasprintf("%s/.%s.lock", p->nsdir, name);
	free(root);
	return 0;
}

static void paths_free(struct sbx_paths *p)
{
	free(p->nsdir);
	free(p->dir);
	free(p->nslock);
}

/* Takes the per-name lock; returns its fd or -1. */
static int lock_name(struct sbx_paths *p, struct sbx_err *e)
{
	int fd;

	if (paths_mkdirs(p->nsdir, 0700, e) < 0)
		return -1;
	fd = open(p->nslock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_sys(e, errno, "cannot open %s", p->nslock);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			close(fd);
			return err_sys(e, errno, "cannot lock %s", p->nslock);
		}
	}
	return fd;
}

/* 1 when a supervisor holds dir/lock, 0 when not (no dir, or stale). */
static int is_alive(const char *dir)
{
	char path[PATH_MAX];
	int fd, alive;

	snprintf(path, sizeof path, "%s/lock", dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	alive = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}

static int dir_exists(const char *dir)
{
	struct stat st;

	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

static int read_spec(const char *dir, struct sbx_info *out, struct sbx_err *e)
{
	char path[PATH_MAX], *s;
	struct json_object *o, *v;
	const char *why;
	size_t len;

	snprintf(path, sizeof path, "%s/spec.json", dir);
	s = fs_read_small(path, SPEC_MAX, &len);
	if (s == NULL)
		return err_sys(e, errno, "cannot read %s", path);
	o = gojson_parse(s, len, &why);
	free(s);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return err_set(e, SBX_EIO, "corrupt %s: %s", path, why ? why : "not an object");
	}
#define STR(key, field) \
	if (json_object_object_get_ex(o, key, &v)) \
		snprintf(out->field, sizeof out->field, "%s", json_object_get_string(v));
	STR("name", name)
	STR("namespace", namespace)
	STR("image", image)
	STR("homedir", homedir)
	STR("shutdown_policy", shutdown_policy)
#undef STR
	if (json_object_object_get_ex(o, "shutdown_time", &v))
		time_parse_rfc3339(json_object_get_string(v), &out->shutdown_ns);
	if (json_object_object_get_ex(o, "created", &v))
		time_parse_rfc3339(json_object_get_string(v), &out->created_ns);
	if (json_object_object_get_ex(o, "network", &v))
		out->network = json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "limits", &v))
		sbx_limits_from_json(v, &out->limits);
	out->backend = "local";
	json_object_put(o);
	return 0;
}

static int write_spec(const char *dir, const struct sbx_info *in, struct sbx_err *e)
{
	struct json_object *o = json_object_new_object();
	char path[PATH_MAX], t1[TIME_BUFSZ], t2[TIME_BUFSZ], dl[32];
	char *text;
	int rc = 0;

	json_object_object_add(o, "name", json_object_new_string(in->name));
	json_object_object_add(o, "namespace", json_object_new_string(in->namespace));
	json_object_object_add(o, "backend", json_object_new_string("local"));
	json_object_object_add(o, "image", json_object_new_string(in->image));
	json_object_object_add(o, "homedir", json_object_new_string(in->homedir));
	json_object_object_add(o, "network", json_object_new_boolean(in->network));
	json_object_object_add(o, "limits", sbx_limits_json(&in->limits));
	json_object_object_add(o, "created",
			       json_object_new_string(time_rfc3339(in->created_ns, t1, sizeof t1)));
	json_object_object_add(o, "shutdown_time",
			       json_object_new_string(time_rfc3339(in->shutdown_ns, t2, sizeof t2)));
	json_object_object_add(o, "shutdown_policy", json_object_new_string("Delete"));
	text = gojson_encode(o);
	json_object_put(o);
	snprintf(path, sizeof path, "%s/spec.json", dir);
	if (fs_write_atomic(path, text, strlen(text), 0600) < 0)
		rc = err_sys(e, errno, "cannot write %s", path);
	free(text);
	/* The supervisor reads this one: the deadline in ns, plain decimal. */
	snprintf(path, sizeof path, "%s/deadline", dir);
	snprintf(dl, sizeof dl, "%" PRId64 "\n", in->shutdown_ns);
	if (rc == 0 && fs_write_atomic(path, dl, strlen(dl), 0600) < 0)
		rc = err_sys(e, errno, "cannot write %s", path);
	return rc;
}

/* Connects to dir/sock. The path may exceed sun_path, so go through an O_PATH fd. */
static int connect_sock(const char *dir, struct sbx_err *e)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int dfd, s;

	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return err_sys(e, errno, "cannot open %s", dir);
	snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/sock", dfd);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		err_sys(e, errno, "cannot reach the sandbox's exec service");
		if (s >= 0)
			close(s);
		s = -1;
	}
	close(dfd);
	return s;
}

static int send_req(int s, uint32_t type, const void *payload, uint32_t len, const int *fds,
		    int nfds)
{
	struct lp_hdr h = {LP_MAGIC, type, len, (uint32_t)nfds};
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
	size_t total = sizeof h + len, sent = 0;
	ssize_t n;

	if (nfds > 0) {
		struct cmsghdr *c;
		memset(cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	n = sendmsg(s, &mh, MSG_NOSIGNAL);
	if (n < 0)
		return -1;
	sent = (size_t)n;
	/* The rest of a large payload goes as plain stream data. */
	while (sent < total) {
		const char *p = sent < sizeof h ? (const char *)&h + sent
						 : (const char *)payload + (sent - sizeof h);
		size_t chunk = sent < sizeof h ? sizeof h - sent : total - sent;
		n = send(s, p, chunk, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		sent += (size_t)n;
	}
	return 0;
}

/* Reads the lp_result, waiting at most timeout_ms (-1: forever). */
static int read_result(int s, struct lp_result *r, int timeout_ms)
{
	size_t got = 0;

	while (got < sizeof *r) {
		struct pollfd p = {.fd = s, .events = POLLIN};
		ssize_t n;
		int pr = poll(&p, 1, timeout_ms);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return -1;
		n = read(s, (char *)r + got, sizeof *r - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return r->magic == LP_MAGIC ? 0 : -1;
}

static int ping(const char *dir, int timeout_ms)
{
	struct lp_result r;
	struct sbx_err e;
	int s = connect_sock(dir, &e), rc;

	if (s < 0)
		return -1;
	rc = send_req(s, LP_PING, NULL, 0, NULL, 0) < 0 ? -1 : read_result(s, &r, timeout_ms);
	close(s);
	return rc;
}

/* Finds a helper program next to this executable, or in ../libexec/sbx. */
static char *find_helper(const char *env, const char *name)
{
	char exe[PATH_MAX], *slash, *p;
	const char *v = getenv(env);
	ssize_t n;

	if (v && *v)
		return access(v, X_OK) == 0 ? xstrdup(v) : NULL;
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash == NULL)
		return NULL;
	*slash = '\0';
	p = xasprintf("%s/%s", exe, name);
	if (access(p, X_OK) == 0)
		return p;
	free(p);
	p = xasprintf("%s/../libexec/sbx/%s", exe, name);
	if (access(p, X_OK) == 0)
		return p;
	free(p);
	return NULL;
}

static char *find_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *found = NULL;

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 ? xstrdup(prog) : NULL;
	copy = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char *p = xasprintf("%s/%s", dir, prog);
		if (access(p, X_OK) == 0) {
			found = p;
			break;
		}
		free(p);
	}
	free(copy);
	return found;
}

struct argv_b {
	char **v;
	size_t n, cap;
};

static void av_add(struct argv_b *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = xstrdup(s);
	a->v[a->n] = NULL;
}

static void av_free(struct argv_b *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

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

/* What an OCI image adds after the defaults: its Env (the sandbox keeps its own HOME and
 * HOSTNAME; /run/sbx/bin stays on PATH). A later --setenv overrides an earlier one. */
static void image_env(struct argv_b *a, const struct oci_image *img)
{
	size_t i;

	for (i = 0; img->env[i]; i++) {
		const char *eq = strchr(img->env[i], '=');
		char *name = xstrndup(img->env[i], (size_t)(eq - img->env[i]));
		if (strcmp(name, "HOME") != 0 && strcmp(name, "HOSTNAME") != 0) {
			char *val = strcmp(name, "PATH") == 0 ? xasprintf("%s:/run/sbx/bin", eq + 1)
							      : xstrdup(eq + 1);
			av_add(a, "--setenv");
			av_add(a, name);
			av_add(a, val);
			free(val);
		}
		free(name);
	}
}

/* "--size N" for the next tmpfs: from the memory limit, or the default one under
 * -limits none (a tmpfs must never default to half of the host's RAM). */
static void add_size(struct argv_b *a, const struct sbx_spec *spec, enum reslimit_tmpfs which)
{
	char n[32];
	int64_t mem = spec->limits.enforced ? spec->limits.memory : backend_default_memory();

	snprintf(n, sizeof n, "%" PRId64, reslimit_tmpfs_size(mem, which));
	av_add(a, "--size");
	av_add(a, n);
}

/* img (NULL: none) is an OCI image whose rootfs is bound from rootfs_src; its User becomes
 * the sandbox's ids and its WorkingDir the service's (so commands' default) directory. */
static int build_bwrap_argv(struct argv_b *a, const char *bwrap, const struct sbx_spec *spec,
			    const char *home_src, const char *init_src, const char *tool_src,
			    const struct oci_image *img, const char *rootfs_src, struct sbx_err *e)
{
	char link[PATH_MAX], uid[32], gid[32];
	struct stat st;
	size_t i;

	snprintf(uid, sizeof uid, "%lu", img ? (unsigned long)img->uid : 0UL);
	snprintf(gid, sizeof gid, "%lu", img ? (unsigned long)img->gid : 0UL);
	av_add(a, bwrap);
	av_add(a, "--die-with-parent");
	av_add(a, "--new-session");
	av_add(a, "--unshare-user");
	av_add(a, "--uid");
	av_add(a, uid);
	av_add(a, "--gid");
	av_add(a, gid);
	av_add(a, "--unshare-pid");
	av_add(a, "--unshare-ipc");
	av_add(a, "--unshare-uts");
	av_add(a, "--unshare-cgroup-try");
	if (!spec->network)
		av_add(a, "--unshare-net");
	av_add(a, "--hostname");
	av_add(a, spec->name);
	if (img) {
		av_add(a, "--ro-bind");
		av_add(a, rootfs_src);
		av_add(a, "/");
	} else if (spec->image[0] == '/') {
		if (stat(spec->image, &st) < 0 || !S_ISDIR(st.st_mode))
			return err_set(e, SBX_EINVAL, "image %s is not a directory", spec->image);
		av_add(a, "--ro-bind");
		av_add(a, spec->image);
		av_add(a, "/");
	} else {
		av_add(a, "--ro-bind");
		av_add(a, "/usr");
		av_add(a, "/usr");
		for (i = 0; i < sizeof host_dirs / sizeof host_dirs[0]; i++) {
			char src[64];
			ssize_t n;
			snprintf(src, sizeof src, "/%s", host_dirs[i]);
			if (lstat(src, &st) < 0)
				continue;
			if (S_ISLNK(st.st_mode) && (n = readlink(src, link, sizeof link - 1)) > 0) {
				link[n] = '\0';
				av_add(a, "--symlink");
				av_add(a, link);
				av_add(a, src);
			} else if (S_ISDIR(st.st_mode)) {
				av_add(a, "--ro-bind");
				av_add(a, src);
				av_add(a, src);
			}
		}
		av_add(a, "--ro-bind");
		av_add(a, "/etc");
		av_add(a, "/etc");
		for (i = 0; i < sizeof masked_files / sizeof masked_files[0]; i++) {
			if (lstat(masked_files[i], &st) == 0 && S_ISREG(st.st_mode)) {
				av_add(a, "--ro-bind");
				av_add(a, "/dev/null");
				av_add(a, masked_files[i]);
			}
		}
		for (i = 0; i < sizeof masked_dirs / sizeof masked_dirs[0]; i++) {
			if (lstat(masked_dirs[i], &st) == 0 && S_ISDIR(st.st_mode)) {
				add_size(a, spec, RESLIMIT_MASK);
				av_add(a, "--tmpfs");
				av_add(a, masked_dirs[i]);
			}
		}
	}
	av_add(a, "--proc");
	av_add(a, "/proc");
	av_add(a, "--dev");
	av_add(a, "/dev");
	/* Every tmpfs has a size (see reslimit.h); /dev itself, bwrap's, is made read-only. */
	add_size(a, spec, RESLIMIT_SHM);
	av_add(a, "--tmpfs");
	av_add(a, "/dev/shm");
	av_add(a, "--remount-ro");
	av_add(a, "/dev");
	add_size(a, spec, RESLIMIT_TMP);
	av_add(a, "--tmpfs");
	av_add(a, "/tmp");
	add_size(a, spec, RESLIMIT_RUN);
	av_add(a, "--tmpfs");
	av_add(a, "/run");
	add_size(a, spec, RESLIMIT_VAR);
	av_add(a, "--tmpfs");
	av_add(a, "/var");
	av_add(a, "--dir");
	av_add(a, "/var/tmp");
	av_add(a, "--bind");
	av_add(a, home_src);
	av_add(a, spec->homedir);
	av_add(a, "--ro-bind");
	av_add(a, init_src);
	av_add(a, "/run/sbx/sbx-init");
	if (tool_src) {
		av_add(a, "--ro-bind");
		av_add(a, tool_src);
		av_add(a, "/run/sbx/bin/geminicli-toolbox");
	}
	av_add(a, "--chdir");
	av_add(a, img && img->workdir[0] ? img->workdir : "/");
	/* A scrubbed environment: nothing of the caller's (API keys above all) gets in. */
	av_add(a, "--clearenv");
	av_add(a, "--setenv");
	av_add(a, "HOME");
	av_add(a, spec->homedir);
	av_add(a, "--setenv");
	av_add(a, "PATH");
	av_add(a, SANDBOX_PATH);
	av_add(a, "--setenv");
	av_add(a, "LANG");
	av_add(a, "C.UTF-8");
	av_add(a, "--setenv");
	av_add(a, "TERM");
	av_add(a, "dumb");
	av_add(a, "--setenv");
	av_add(a, "HOSTNAME");
	av_add(a, spec->name);
	if (img)
		image_env(a, img);
	av_add(a, "/run/sbx/sbx-init");
	av_add(a, "serve");
	return 0;
}

static int image_check(const char *image, struct sbx_err *e)
{
	if (image[0] == '\0' || strcmp(image, "host") == 0 || image[0] == '/' || oci_is_ref(image))
		return 0;
	return err_set(e, SBX_EINVAL,
		       "the local backend cannot pull image \"%s\": use \"host\" (the default), "
		       "the absolute path of a root filesystem directory, oci-archive:PATH[:TAG] or "
		       "oci:DIR[:TAG]", image);
}

/* Makes a listening socket at dir/sock. */
static int listen_sock(const char *dir, struct sbx_err *e)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), s;

	if (dfd < 0)
		return err_sys(e, errno, "cannot open %s", dir);
	snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/sock", dfd);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s, 128) < 0) {
		err_sys(e, errno, "cannot create the exec socket in %s", dir);
		if (s >= 0)
			close(s);
		s = -1;
	}
	close(dfd);
	return s;
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

static void sandbox_ids(uid_t *uid, gid_t *gid, int *drop)
{
	const char *u = getenv("SBX_SANDBOX_UID"), *g = getenv("SBX_SANDBOX_GID");

	*drop = geteuid() == 0;
	*uid = u && *u ? (uid_t)strtoul(u, NULL, 10) : DEFAULT_SANDBOX_ID;
	*gid = g && *g ? (gid_t)strtoul(g, NULL, 10) : DEFAULT_SANDBOX_ID;
}

/* Reads what bubblewrap said when a sandbox failed to start. */
static void startup_failure(const struct sbx_paths *p, struct sbx_err *e)
{
	char path[PATH_MAX], *log;
	size_t len;

	snprintf(path, sizeof path, "%s/bwrap.log", p->dir);
	log = fs_read_small(path, 4096, &len);
	while (log && len > 0 && (log[len - 1] == '\n' || log[len - 1] == ' '))
		log[--len] = '\0';
	if (log && *log)
		err_set(e, SBX_EIO, "bubblewrap failed: %s", log);
	else
		err_set(e, SBX_EIO, "the sandbox did not become ready within %d s",
			READY_TIMEOUT_MS / 1000);
	free(log);
}

/* Has sbx-image unpack (or find in its cache) the OCI image the spec names, with the home's
 * mount point made in it. NULL on failure. */
static struct oci_image *open_image(const struct sbx_spec *spec, struct sbx_err *e)
{
	char *helper = find_helper("SBX_IMAGE_HELPER", "sbx-image");
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

/* Removes a sandbox directory nobody holds any more, and what its limits hold outside it. */
static int remove_dead(const char *dir)
{
	reslimit_release(dir);
	return fs_remove_tree(dir);
}

/* Puts the spec's limits in force (lib/reslimit) for the sandbox being made in p->dir. */
static int limits_in_force(struct sbx_backend *b, const struct sbx_spec *spec,
			   const struct sbx_paths *p, int drop, uid_t uid, gid_t gid,
			   struct sbx_limits *in_force, struct sbx_err *e)
{
	unsigned char rnd[4];
	char leaf[128], *root, *cache;
	struct reslimit_ctx c = {.dir = p->dir, .leaf = leaf, .can_mount = drop,
				 .uid = drop ? uid : geteuid(), .gid = drop ? gid : getegid()};
	int rc;

	if (!spec->limits.enforced)
		return 0;
	/* A random part: two state directories (two users, two test runs) may hold sandboxes
	 * of the same namespace and name under one parent cgroup. */
	if (getentropy(rnd, sizeof rnd) < 0)
		return err_sys(e, errno, "getentropy");
	snprintf(leaf, sizeof leaf, "sbx-%s-%s-%02x%02x%02x%02x", b->namespace, spec->name, rnd[0],
		 rnd[1], rnd[2], rnd[3]);
	if ((root = paths_state_root(e)) == NULL)
		return -1;
	cache = xasprintf("%s/.homedisk", root);
	c.cache_dir = cache;
	rc = reslimit_setup(&c, &spec->limits, in_force, e);
	free(cache);
	free(root);
	return rc;
}

static int create_new(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_paths *p,
		      struct sbx_info *out, struct sbx_err *e)
{
	char *bwrap = NULL, *init = NULL, *tool = NULL, *home = NULL, *lockp = NULL;
	struct argv_b sv = {0};
	struct oci_image *img = NULL;
	int lsock = -1, rc = -1, drop, fd;
	uid_t uid;
	gid_t gid;
	char us[32], gs[32];
	int64_t deadline;

	bwrap = find_in_path(getenv("SBX_BWRAP") ? getenv("SBX_BWRAP") : "bwrap");
	if (bwrap == NULL) {
		err_set(e, SBX_EUNAVAIL,
			"bubblewrap is not installed: install the Debian package \"bubblewrap\"");
		goto out;
	}
	init = find_helper("SBX_INIT", "sbx-init");
	if (init == NULL) {
		err_set(e, SBX_EUNAVAIL, "cannot find sbx-init next to this program or in "
			"../libexec/sbx (set SBX_INIT)");
		goto out;
	}
	tool = find_helper("SBX_TOOLBOX", "geminicli-toolbox");
	sandbox_ids(&uid, &gid, &drop);
	if (oci_is_ref(spec->image) && (img = open_image(spec, e)) == NULL)
		goto out;

	if (mkdir(p->dir, 0700) < 0) {
		err_sys(e, errno, "cannot create %s", p->dir);
		goto out;
	}
	home = xasprintf("%s/home", p->dir);
	if (mkdir(home, 0755) < 0 || (drop && chown(home, uid, gid) < 0)) {
		err_sys(e, errno, "cannot create %s", home);
		goto out;
	}
	lockp = xasprintf("%s/lock", p->dir);
	fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		err_sys(e, errno, "cannot create %s", lockp);
		goto out;
	}
	close(fd);
	memset(out, 0, sizeof *out);
	if (limits_in_force(b, spec, p, drop, uid, gid, &out->limits, e) < 0)
		goto out;
	snprintf(out->name, sizeof out->name, "%s", spec->name);
	snprintf(out->namespace, sizeof out->namespace, "%s", b->namespace);
	snprintf(out->image, sizeof out->image, "%s", spec->image[0] ? spec->image : "host");
	snprintf(out->homedir, sizeof out->homedir, "%s", spec->homedir);
	snprintf(out->shutdown_policy, sizeof out->shutdown_policy, "Delete");
	out->network = spec->network;
	out->created_ns = time_now_ns();
	deadline = out->created_ns + spec->ttl_ns;
	out->shutdown_ns = deadline;
	out->backend = "local";
	if (write_spec(p->dir, out, e) < 0)
		goto out;
	if ((lsock = listen_sock(p->dir, e)) < 0)
		goto out;

	snprintf(us, sizeof us, "%lu", (unsigned long)uid);
	snprintf(gs, sizeof gs, "%lu", (unsigned long)gid);
	av_add(&sv, init);
	av_add(&sv, "supervise");
	av_add(&sv, p->dir);
	av_add(&sv, p->nslock);
	av_add(&sv, drop ? us : "-");
	av_add(&sv, drop ? gs : "-");
	av_add(&sv, drop ? home : "-");
	av_add(&sv, drop ? init : "-");
	av_add(&sv, drop && tool ? tool : "-");
	av_add(&sv, drop && img ? img->rootfs : "-");
	av_add(&sv, "--");
	if (build_bwrap_argv(&sv, bwrap, spec, drop ? "/run/sbx-stage/home" : home,
			     drop ? "/run/sbx-stage/sbx-init" : init,
			     tool ? (drop ? "/run/sbx-stage/geminicli-toolbox" : tool) : NULL, img,
			     img && drop ? "/run/sbx-stage/rootfs" : img ? img->rootfs : NULL, e) < 0)
		goto out;
	if (spawn_supervisor(sv.v, lsock, e) < 0)
		goto out;
	close(lsock);
	lsock = -1;
	if (ping(p->dir, READY_TIMEOUT_MS) < 0) {
		startup_failure(p, e);
		goto out;
	}
	out->ready = true;
	rc = 0;
out:
	if (lsock >= 0)
		close(lsock);
	oci_image_free(img);
	if (rc < 0 && dir_exists(p->dir) && !is_alive(p->dir))
		remove_dead(p->dir);
	av_free(&sv);
	free(bwrap);
	free(init);
	free(tool);
	free(home);
	free(lockp);
	return rc;
}

static int supervisor_pid(const char *dir)
{
	char path[PATH_MAX], *s;
	int pid;

	snprintf(path, sizeof path, "%s/supervisor.pid", dir);
	s = fs_read_small(path, 64, NULL);
	if (s == NULL)
		return -1;
	pid = atoi(s);
	free(s);
	return pid > 1 ? pid : -1;
}

/* Under the name lock: is there a live sandbox? Cleans a stale directory. */
static int check_live(struct sbx_paths *p)
{
	if (!dir_exists(p->dir))
		return 0;
	if (is_alive(p->dir))
		return 1;
	remove_dead(p->dir);	/* stale: its supervisor is gone (crash, reboot) */
	return 0;
}

/* A sandbox is reused only under the limits asked for (a disk cap no larger). */
static int limits_match(const struct sbx_info *have, const struct sbx_spec *want,
			struct sbx_err *e)
{
	const struct sbx_limits *h = &have->limits, *w = &want->limits;
	char a[32], b[32];

	if (h->enforced != w->enforced)
		return err_set(e, SBX_EEXIST, "sandbox %s exists %s limits", have->name,
			       h->enforced ? "with" : "without");
	if (!h->enforced)
		return 0;
	if (h->memory != w->memory)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with memory limit %s, not %s",
			       have->name, reslimit_size_text(h->memory, a, sizeof a),
			       reslimit_size_text(w->memory, b, sizeof b));
	if (h->pids != w->pids || h->cpus_milli != w->cpus_milli)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with pids %" PRId64 " and cpus %g, "
			       "not %" PRId64 " and %g", have->name, h->pids,
			       (double)h->cpus_milli / 1000, w->pids, (double)w->cpus_milli / 1000);
	/* The cap in force may be below the one asked (the host disk had less free): fine. */
	if (h->disk > w->disk)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with disk %s, not %s", have->name,
			       reslimit_size_text(h->disk, a, sizeof a),
			       reslimit_size_text(w->disk, b, sizeof b));
	return 0;
}

static int spec_matches(const struct sbx_info *have, const struct sbx_spec *want,
			struct sbx_err *e)
{
	const char *img = want->image[0] ? want->image : "host";

	if (strcmp(have->homedir, want->homedir) != 0)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with homedir %s, not %s",
			       have->name, have->homedir, want->homedir);
	if (strcmp(have->image, img) != 0)
		return err_set(e, SBX_EEXIST, "sandbox %s exists with image %s, not %s", have->name,
			       have->image, img);
	if (have->network != want->network)
		return err_set(e, SBX_EEXIST, "sandbox %s exists %s network access", have->name,
			       have->network ? "with" : "without");
	return limits_match(have, want, e);
}

static int set_deadline(struct sbx_paths *p, int64_t ttl_ns, struct sbx_info *out,
			struct sbx_err *e)
{
	int pid;

	if (read_spec(p->dir, out, e) < 0)
		return -1;
	out->shutdown_ns = time_now_ns() + ttl_ns;
	if (write_spec(p->dir, out, e) < 0)
		return -1;
	if ((pid = supervisor_pid(p->dir)) > 0)
		kill(pid, SIGHUP);	/* re-read the deadline now */
	out->ready = true;
	return 0;
}

static int l_create(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_info *out,
		    struct sbx_err *e)
{
	struct sbx_paths p;
	int lk, rc = -1;

	if (image_check(spec->image, e) < 0)
		return -1;
	if (paths_for(b, spec->name, &p, e) < 0)
		return -1;
	if ((lk = lock_name(&p, e)) < 0)
		goto out;
	if (check_live(&p)) {
		if (read_spec(p.dir, out, e) < 0 || spec_matches(out, spec, e) < 0)
			goto out;
		if (ping(p.dir, READY_TIMEOUT_MS) < 0) {
			err_set(e, SBX_EIO, "sandbox %s exists but does not answer", spec->name);
			goto out;
		}
		rc = set_deadline(&p, spec->ttl_ns, out, e);
		out->reused = true;
	} else {
		rc = create_new(b, spec, &p, out, e);
	}
out:
	if (lk >= 0)
		close(lk);
	paths_free(&p);
	return rc;
}

static int not_found(const char *name, struct sbx_err *e)
{
	return err_set(e, SBX_ENOTFOUND, "sandbox %s not found", name);
}

static int l_touch(struct sbx_backend *b, const char *name, int64_t ttl_ns, struct sbx_info *out,
		   struct sbx_err *e)
{
	struct sbx_paths p;
	int lk, rc = -1;

	if (paths_for(b, name, &p, e) < 0)
		return -1;
	if ((lk = lock_name(&p, e)) < 0)
		goto out;
	if (!check_live(&p))
		rc = not_found(name, e);
	else
		rc = set_deadline(&p, ttl_ns, out, e);
out:
	if (lk >= 0)
		close(lk);
	paths_free(&p);
	return rc;
}

static int l_remove(struct sbx_backend *b, const char *name, struct sbx_err *e)
{
	struct sbx_paths p;
	int lk, rc = -1, pid, waited;

	if (paths_for(b, name, &p, e) < 0)
		return -1;
	if ((lk = lock_name(&p, e)) < 0)
		goto out;
	if (check_live(&p) && (pid = supervisor_pid(p.dir)) > 0) {
		kill(pid, SIGTERM);
		for (waited = 0; waited < DELETE_TIMEOUT_MS && is_alive(p.dir); waited += 5)
			usleep(5000);
		if (is_alive(p.dir)) {
			kill(pid, SIGKILL);
			for (waited = 0; waited < 1000 && is_alive(p.dir); waited += 5)
				usleep(5000);
		}
	}
	if (remove_dead(p.dir) < 0)
		err_sys(e, errno, "cannot remove %s", p.dir);
	else
		rc = 0;
out:
	if (lk >= 0)
		close(lk);
	paths_free(&p);
	return rc;
}

static int l_get(struct sbx_backend *b, const char *name, struct sbx_info *out,
		 struct sbx_err *e)
{
	struct sbx_paths p;
	int rc = -1;

	if (paths_for(b, name, &p, e) < 0)
		return -1;
	if (!dir_exists(p.dir) || !is_alive(p.dir))
		rc = not_found(name, e);
	else if (read_spec(p.dir, out, e) == 0) {
		out->ready = true;
		rc = 0;
	}
	paths_free(&p);
	return rc;
}

static int l_list(struct sbx_backend *b, int (*fn)(const struct sbx_info *, void *), void *arg,
		  struct sbx_err *e)
{
	char *root = paths_state_root(e), *nsdir;
	struct dirent **ents = NULL;
	int n, i, rc = 0;

	if (root == NULL)
		return -1;
	nsdir = xasprintf("%s/%s", root, b->namespace);
	free(root);
	n = scandir(nsdir, &ents, NULL, alphasort);
	if (n < 0) {
		rc = errno == ENOENT ? 0 : err_sys(e, errno, "cannot read %s", nsdir);
		free(nsdir);
		return rc;
	}
	for (i = 0; i < n; i++) {
		struct sbx_info info;
		struct sbx_err ign;

		if (rc == 0 && name_check(ents[i]->d_name, &ign) == 0) {
			memset(&info, 0, sizeof info);
			if (l_get(b, ents[i]->d_name, &info, &ign) == 0) {
				if (fn(&info, arg) != 0)
					rc = 1;
			} else if (ign.code == SBX_ENOTFOUND) {
				/* stale: clean it under its lock */
				struct sbx_paths p;
				int lk;
				if (paths_for(b, ents[i]->d_name, &p, &ign) == 0) {
					if ((lk = lock_name(&p, &ign)) >= 0) {
						check_live(&p);
						close(lk);
					}
					paths_free(&p);
				}
			}
		}
		free(ents[i]);
	}
	free(ents);
	free(nsdir);
	return rc > 0 ? 0 : rc;
}

static char *l_home_path(struct sbx_backend *b, const char *name, struct sbx_err *e)
{
	struct sbx_paths p;
	char *home = NULL;

	if (paths_for(b, name, &p, e) < 0)
		return NULL;
	if (!dir_exists(p.dir) || !is_alive(p.dir))
		not_found(name, e);
	else
		home = xasprintf("%s/home", p.dir);
	paths_free(&p);
	return home;
}

/* Encodes workdir, argv and env as the LP_EXEC payload. */
static char *exec_payload(const struct sbx_exec *x, uint32_t *len, struct sbx_err *e)
{
	struct buf b = {0};
	uint32_t argc = 0, envc = 0;
	const char *wd = x->workdir ? x->workdir : "";

	while (x->argv[argc])
		argc++;
	while (x->env && x->env[envc])
		envc++;
	buf_append(&b, &argc, 4);
	buf_append(&b, &envc, 4);
	buf_append(&b, wd, strlen(wd) + 1);
	for (uint32_t i = 0; i < argc; i++)
		buf_append(&b, x->argv[i], strlen(x->argv[i]) + 1);
	for (uint32_t i = 0; i < envc; i++)
		buf_append(&b, x->env[i], strlen(x->env[i]) + 1);
	if (b.len > LP_MAX_PAYLOAD || argc > LP_MAX_ARGS || envc > LP_MAX_ARGS) {
		buf_free(&b);
		err_set(e, SBX_EINVAL, "command line too long (%zu bytes, at most %u)", b.len,
			LP_MAX_PAYLOAD);
		return NULL;
	}
	*len = (uint32_t)b.len;
	return buf_steal(&b);
}

/* A command that ended by SIGKILL (or with 137, its shell's word for it) while the memory
 * limit killed a process in the sandbox was killed by the limit. Another command running at
 * the same moment and killed by someone else would be blamed too: rare, and said in README. */
static void oom_check(const struct sbx_paths *p, long long before, struct sbx_exec_result *r)
{
	struct sbx_info info;
	struct sbx_err ign;

	if (before < 0 || reslimit_oom_kills(p->dir) <= before)
		return;
	r->oom_killed = true;
	memset(&info, 0, sizeof info);
	if (read_spec(p->dir, &info, &ign) == 0)
		r->memory_limit = info.limits.memory;
}

static int l_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
		  struct sbx_exec_result *r, struct sbx_err *e)
{
	struct sbx_paths p;
	struct lp_result res;
	char *payload = NULL;
	uint32_t len;
	int s = -1, null = -1, rc = -1, fds[3], kill_sent = 0;
	int64_t deadline = x->timeout_ns > 0 ? time_mono_ns() + x->timeout_ns : 0;
	long long oom_before;

	if (paths_for(b, name, &p, e) < 0)
		return -1;
	if (!dir_exists(p.dir) || !is_alive(p.dir)) {
		not_found(name, e);
		goto out;
	}
	if ((payload = exec_payload(x, &len, e)) == NULL)
		goto out;
	if ((s = connect_sock(p.dir, e)) < 0) {
		if (!is_alive(p.dir))
			not_found(name, e);
		goto out;
	}
	if (x->in_fd < 0 && (null = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		err_sys(e, errno, "/dev/null");
		goto out;
	}
	fds[0] = x->in_fd >= 0 ? x->in_fd : null;
	fds[1] = x->out_fd;
	fds[2] = x->err_fd;
	oom_before = reslimit_oom_kills(p.dir);
	if (send_req(s, LP_EXEC, payload, len, fds, 3) < 0) {
		err_sys(e, errno, "cannot send the command to sandbox %s", name);
		goto out;
	}
	if (null >= 0) {
		close(null);
		null = -1;
	}
	for (;;) {
		struct pollfd pf[2] = {{.fd = s, .events = POLLIN}, {.fd = x->cancel_fd, .events = POLLIN}};
		int timeout = -1, n;

		if (deadline && !kill_sent) {
			int64_t left = deadline - time_mono_ns();
			timeout = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
		}
		if (kill_sent)
			timeout = KILL_REPLY_TIMEOUT_MS;
		n = poll(pf, x->cancel_fd >= 0 && !kill_sent ? 2 : 1, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0 && pf[0].revents) {
			if (read_result(s, &res, KILL_REPLY_TIMEOUT_MS) < 0) {
				if (!is_alive(p.dir))
					err_set(e, SBX_ENOTFOUND, "sandbox %s went away during the command", name);
				else
					err_set(e, SBX_EIO, "lost the connection to sandbox %s", name);
				goto out;
			}
			break;
		}
		if (kill_sent) {
			err_set(e, SBX_EIO, "sandbox %s did not confirm the command was killed", name);
			goto out;
		}
		if (n == 0 || (n > 0 && pf[1].revents)) {
			char k = LP_KILL;
			if (n == 0)
				r->timed_out = true;
			else
				r->canceled = true;
			if (send(s, &k, 1, MSG_NOSIGNAL) < 0) {
				err_sys(e, errno, "cannot stop the command in sandbox %s", name);
				goto out;
			}
			kill_sent = 1;
		}
	}
	if (res.exec_errno) {
		r->exit_code = res.exec_errno == ENOENT ? 127 : 126;
		if (!res.killed) {
			char msg[512];
			int m = snprintf(msg, sizeof msg, "sbx-exec: cannot run %s: %s%s\n", x->argv[0],
					 strerror(res.exec_errno), res.exec_errno == EAGAIN
					 ? " (the sandbox has as many processes as its -pids limit)" : "");
			if (write(x->err_fd, msg, (size_t)m) < 0) {
				/* the caller's stderr is gone; the status still says it */
			}
		}
	} else if (WIFSIGNALED(res.wstatus)) {
		r->signal = WTERMSIG(res.wstatus);
		r->exit_code = 128 + r->signal;
	} else {
		r->exit_code = WEXITSTATUS(res.wstatus);
	}
	if (r->timed_out)
		r->exit_code = 124;
	else if (r->exit_code == 128 + SIGKILL && !r->canceled)
		oom_check(&p, oom_before, r);
	rc = 0;
out:
	if (s >= 0)
		close(s);
	if (null >= 0)
		close(null);
	free(payload);
	paths_free(&p);
	return rc;
}

const struct backend_ops local_backend_ops = {
	.name = "local",
	.create = l_create,
	.exec = l_exec,
	.touch = l_touch,
	.remove = l_remove,
	.get = l_get,
	.list = l_list,
	.home_path = l_home_path,
};
