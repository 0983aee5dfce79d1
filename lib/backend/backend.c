/* backend.c — picks a backend (by name, or the default one), the defaults the environment
 * gives (SANDBOX_*), and checks what every backend would check. */
#include "backend.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backup.h"
#include "flag.h"
#include "xalloc.h"

const char *const backend_names[] = {"local", "kubernetes", NULL};

/* ---- the environment's defaults, read here only ---- */

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

const char *backend_env_homedir(void)
{
	const char *h = env_nonempty("SANDBOX_HOME_DIR");

	return h ? h : SBX_DEFAULT_HOMEDIR;
}

const char *backend_env_namespace(void)
{
	const char *ns = env_nonempty("SANDBOX_NAMESPACE");

	return ns ? ns : SBX_DEFAULT_NAMESPACE;
}

const char *backend_env_image(void)
{
	return env_nonempty("SANDBOX_IMAGE");
}

int backend_env_backup_budget(long long *bytes)
{
	const char *v = getenv("SANDBOX_BACKUP_BUDGET");

	return v ? flag_parse_size(v, bytes) : 0;
}

static bool file_exists(const char *p)
{
	struct stat st;

	return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

bool backend_kube_config(const char **why)
{
	const char *kc = getenv("KUBECONFIG"), *home = getenv("HOME"), *w;
	bool found = false;

	if (why == NULL)
		why = &w;
	if (getenv("KUBERNETES_SERVICE_HOST") && *getenv("KUBERNETES_SERVICE_HOST")) {
		*why = "in-cluster configuration found";
		return true;
	}
	if (kc && *kc) {
		char *list = xstrdup(kc), *save = NULL, *p;
		for (p = strtok_r(list, ":", &save); p && !found; p = strtok_r(NULL, ":", &save))
			found = file_exists(p);
		free(list);
		*why = found ? "KUBECONFIG names a configuration" : "no Kubernetes configuration found";
		return found;
	}
	if (home && *home) {
		char *p = xasprintf("%s/.kube/config", home);
		found = file_exists(p);
		free(p);
	}
	*why = found ? "~/.kube/config found" : "no Kubernetes configuration found";
	return found;
}

const char *backend_default(const char **why)
{
	const char *env = env_nonempty("SANDBOX_BACKEND"), *w;

	if (why == NULL)
		why = &w;
	if (env) {
		*why = "SANDBOX_BACKEND";
		return strcmp(env, "kubernetes") == 0 ? "kubernetes"
		       : strcmp(env, "local") == 0 ? "local" : env;
	}
	return backend_kube_config(why) ? "kubernetes" : "local";
}

/* The Kubernetes backend lives in the plugin sbx-kube.so (next to this program, or in
 * ../libexec/sbx), loaded on first use so the local fast path never loads libcurl & co. */
static const struct backend_ops *load_kube(struct sbx_err *e)
{
	static const struct backend_ops *ops;
	char exe[PATH_MAX], *slash, *path = NULL;
	const char *env = getenv("SBX_KUBE_PLUGIN");
	void *h;
	ssize_t n;

	if (ops)
		return ops;
	if (env && *env) {
		path = xstrdup(env);
	} else if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/')) != NULL) {
			*slash = '\0';
			path = xasprintf("%s/sbx-kube.so", exe);
			if (access(path, R_OK) < 0) {
				free(path);
				path = xasprintf("%s/../libexec/sbx/sbx-kube.so", exe);
			}
		}
	}
	if (path == NULL) {
		err_set(e, SBX_EUNAVAIL, "cannot locate the kubernetes backend plugin sbx-kube.so");
		return NULL;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		err_set(e, SBX_EUNAVAIL, "cannot load the kubernetes backend (%s): %s", path, dlerror());
		free(path);
		return NULL;
	}
	free(path);
	ops = dlsym(h, "kube_backend_ops");
	if (ops == NULL)
		err_set(e, SBX_EUNAVAIL, "the kubernetes backend plugin has no kube_backend_ops");
	return ops;
}

struct sbx_backend *backend_open(const char *kind, const char *namespace, struct sbx_err *e)
{
	const struct backend_ops *ops;
	struct sbx_backend *b;

	if (kind == NULL || *kind == '\0')
		kind = env_nonempty("SANDBOX_BACKEND");
	if (kind == NULL)
		kind = "local";
	if (namespace == NULL || *namespace == '\0')
		namespace = backend_env_namespace();
	if (namespace_check(namespace, e) < 0)
		return NULL;
	if (strcmp(kind, "local") == 0) {
		ops = &local_backend_ops;
	} else if (strcmp(kind, "kubernetes") == 0) {
		if ((ops = load_kube(e)) == NULL)
			return NULL;
	} else {
		err_set(e, SBX_EINVAL, "unknown backend \"%s\" (available: local, kubernetes)", kind);
		return NULL;
	}
	b = xcalloc(1, sizeof *b);
	b->ops = ops;
	snprintf(b->namespace, sizeof b->namespace, "%s", namespace);
	return b;
}

void backend_close(struct sbx_backend *b)
{
	if (b == NULL)
		return;
	if (b->ops->close)
		b->ops->close(b);
	free(b);
}

void backend_spec_init(struct sbx_spec *spec)
{
	memset(spec, 0, sizeof *spec);
	snprintf(spec->homedir, sizeof spec->homedir, "%s", backend_env_homedir());
	spec->ttl_ns = SBX_DEFAULT_TTL_NS;
	spec->limits.enforced = true;
	spec->limits.memory = backend_default_memory();
	spec->limits.pids = SBX_DEFAULT_PIDS;
	spec->limits.disk = SBX_DEFAULT_DISK;
	spec->idle = SBX_IDLE_DELETE;
	spec->paused_ttl = SBX_DEFAULT_PAUSED_TTL_NS;
	spec->root_size = SBX_DEFAULT_ROOT_SIZE;
}

int64_t backend_default_memory_of(const struct sbx_backend *b)
{
	/* A pod runs on a node, not on the machine that asks for it: this machine's RAM says
	 * nothing there, and a default that followed it would make the same Sandbox look
	 * different (so not reusable) from two machines. */
	return b->ops == &local_backend_ops ? backend_default_memory() : SBX_DEFAULT_MEMORY;
}

int backend_spec_check(const char *kind, const struct sbx_spec *spec, struct sbx_err *e)
{
	bool kube = kind && strcmp(kind, "kubernetes") == 0, local = kind && strcmp(kind, "local") == 0;

	if (kube && spec->secrets[0])
		return err_set(e, SBX_EINVAL, "-secret is not available on the kubernetes backend "
			       "yet: its value would have to live in a proxy container of the pod, "
			       "which sbx does not make; use the local backend, or mount a scoped "
			       "credential yourself");
	if (kube && spec->allow_hosts[0])
		return err_set(e, SBX_EINVAL, "-allow-host is not available on the kubernetes backend: "
			       "its proxy runs on the sandbox's host, which a pod does not share; use "
			       "-network (public addresses only, through the Sandbox's NetworkPolicy) "
			       "and, for a list of hosts, the cluster's own egress control (an "
			       "FQDN-aware network policy such as Cilium's or Calico's, or an egress "
			       "gateway)");
	if (local && spec->idle == SBX_IDLE_PAUSE && !spec->limits.enforced)
		return err_set(e, SBX_EINVAL, "-idle pause cannot be used with -limits none: a local "
			       "sandbox is paused by freezing its cgroup, and -limits none gives it "
			       "none");
	if (local && spec->runtime_class[0])
		return err_set(e, SBX_EINVAL, "-runtime-class is a kubernetes setting: a local "
			       "sandbox always runs under bubblewrap on this machine's kernel, so "
			       "there is no runtime to choose (use -backend kubernetes, or leave "
			       "-runtime-class and SANDBOX_RUNTIME_CLASS unset)");
	if (local && spec->warm_pool[0])
		return err_set(e, SBX_EINVAL, "-warm-pool is a kubernetes setting: it names a "
			       "SandboxWarmPool of the Agent Sandbox extensions (use -backend "
			       "kubernetes, or leave -warm-pool and SANDBOX_WARM_POOL unset)");
	if (kube && spec->warm_pool[0] && (spec->idle == SBX_IDLE_PAUSE || spec->storage_class[0] ||
					   spec->runtime_class[0]))
		return err_set(e, SBX_EINVAL, "-warm-pool takes the pod from the pool's "
			       "SandboxTemplate: -idle pause, -storage-class and -runtime-class "
			       "belong in that template, not in the claim");
	if (local && spec->storage_class[0])
		return err_set(e, SBX_EINVAL, "-storage-class is a kubernetes setting: a local "
			       "sandbox's home is a directory (or a disk image) on this machine, made "
			       "by no provisioner (use -backend kubernetes, or leave -storage-class and "
			       "SANDBOX_STORAGE_CLASS unset)");
	return 0;
}

static int check_homedir(const char *h, struct sbx_err *e)
{
	if (h[0] != '/')
		return err_set(e, SBX_EINVAL, "invalid homedir \"%s\": must be an absolute path", h);
	if (strcmp(h, "/") == 0 || strstr(h, "/../") || strstr(h, "/./") ||
	    (strlen(h) >= 3 && strcmp(h + strlen(h) - 3, "/..") == 0))
		return err_set(e, SBX_EINVAL, "invalid homedir \"%s\": must be a plain directory below /",
			       h);
	return 0;
}

int sbx_create(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_info *out,
	       struct sbx_err *e)
{
	bool wrote;
	int rc;

	memset(out, 0, sizeof *out);
	if (sandbox_name_check(spec->name, e) < 0 || check_homedir(spec->homedir, e) < 0)
		return -1;
	if (spec->ttl_ns <= 0)
		return err_set(e, SBX_EINVAL, "ttl must be positive");
	if (backend_spec_check(b->ops == &local_backend_ops ? "local" : "kubernetes", spec, e) < 0)
		return -1;
	/* A new sandbox of a session with backups owes them a restore: marked before the
	 * sandbox can exist, so no crash leaves an empty home that looks restored. */
	if (backup_owed_begin(spec->name, &wrote, e) < 0)
		return err_prefix(e, "cannot mark the restore a new sandbox owes");
	rc = b->ops->create(b, spec, out, e);
	backup_owed_settle(spec->name, wrote, rc == 0 && out->reused);
	return rc;
}

int sbx_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
	     struct sbx_exec_result *r, struct sbx_err *e)
{
	memset(r, 0, sizeof *r);
	if (sandbox_name_check(name, e) < 0)
		return -1;
	if (x->argv == NULL || x->argv[0] == NULL || x->argv[0][0] == '\0')
		return err_set(e, SBX_EINVAL, "no command given");
	return b->ops->exec(b, name, x, r, e);
}

int sbx_touch(struct sbx_backend *b, const char *name, int64_t ttl_ns, struct sbx_info *out,
	      struct sbx_err *e)
{
	memset(out, 0, sizeof *out);
	if (sandbox_name_check(name, e) < 0)
		return -1;
	if (ttl_ns <= 0)
		return err_set(e, SBX_EINVAL, "ttl must be positive");
	return b->ops->touch(b, name, ttl_ns, out, e);
}

int sbx_remove(struct sbx_backend *b, const char *name, struct sbx_err *e)
{
	if (sandbox_name_check(name, e) < 0)
		return -1;
	return b->ops->remove(b, name, e);
}

int sbx_get(struct sbx_backend *b, const char *name, struct sbx_info *out, struct sbx_err *e)
{
	memset(out, 0, sizeof *out);
	if (sandbox_name_check(name, e) < 0)
		return -1;
	return b->ops->get(b, name, out, e);
}

int sbx_pause(struct sbx_backend *b, const char *name, bool paused, struct sbx_info *out,
	      struct sbx_err *e)
{
	memset(out, 0, sizeof *out);
	if (sandbox_name_check(name, e) < 0)
		return -1;
	if (b->ops->pause == NULL)
		return err_set(e, SBX_EUNAVAIL, "the %s backend cannot %s a sandbox", b->ops->name,
			       paused ? "pause" : "resume");
	return b->ops->pause(b, name, paused, out, e);
}
