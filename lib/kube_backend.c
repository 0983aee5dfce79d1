/* kube_backend.c — sandboxes as agents.x-k8s.io Sandbox resources, made as upstream makes
 * them plus sbx's labels and confinement (a pod template meeting Pod Security "restricted",
 * the RuntimeClass, the limit flags as resources, the home as working directory) and a
 * NetworkPolicy of their own; waited for with a watch (polling as fallback) that gives up at
 * once on a pod that cannot start; kept alive by GET+PUT, and entered over WebSocket exec
 * (lib/kubeexec.c).
 *
 * Wrapped execs. libwebsockets 4.1 formats the upgrade request line into 2 KiB, too little
 * for long command lines, and Kubernetes neither stops a process when its exec stream closes
 * nor (on v4.channel.k8s.io) lets a client close stdin. So unless the command is short and
 * needs nothing else, sbx runs a script holding the real command line (shell-quoted),
 * environment and working directory. A script that fits in the URL is passed as an argument
 * of `sh -c 's=$0; eval "$s"'` (url_boot). A longer one, or one whose command streams stdin,
 * travels ahead of stdin: sbx runs boot_script (`s=$(head -c N)`, then eval) and sends the
 * script, ending in KB_SCRIPT_END, as the first N bytes; the rest of stdin belongs to the
 * command. `head -c N` reads exactly N bytes, so nothing of the command's input is consumed,
 * and a script without its end marker (a stream cut short) is refused. The script then:
 *  - with a deadline or cancel_fd: writes the shell's pid to /tmp/.sbx-exec-<random>, runs
 *    the command under `setsid` (when setsid exists) so that it leads a new session, waits
 *    for it and removes the file. On timeout, cancel or a broken stream a second exec stops
 *    and kills every descendant of that shell (read from /proc/<pid>/stat) and every process
 *    in a session or process group one of them leads, and removes the file: the command and
 *    everything it started die, as on the local backend.
 *  - on v4 with stdin: feeds the command through `head -c M`, M being the exact stdin size (a
 *    regular file's remaining bytes, or the size of a temporary copy of piped input), so the
 *    command sees EOF after M bytes. A server known (from an earlier exec, remembered per
 *    server in the state dir) to choose v5 gets piped stdin streamed and half-closed instead.
 * Standard input that is /dev/null or a regular file already at its end is no input at all:
 * the exec asks for no stdin stream.
 * Wrapped execs need /bin/sh and head in the image (every Debian-based image has them). */
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "kubeapi.h"
#include "kubeexec.h"
#include "paths.h"
#include "timeutil.h"
#include "xalloc.h"

#define KB_GROUP "agents.x-k8s.io"
#define KB_CONTAINER "sandbox"
#define KB_LABEL_KEY "app.kubernetes.io/managed-by"
#define KB_LABEL_VALUE "sbx"
/* On the pod: which Sandbox it belongs to (its NetworkPolicy's selector). */
#define KB_INSTANCE_KEY "app.kubernetes.io/instance"
/* On the Sandbox: the network it was made with ("none" or "internet"), for reuse checks. */
#define KB_NETWORK_KEY "sbx/network"
/* Its NetworkPolicy: this prefix and the Sandbox's name. */
#define KB_NETPOL_PREFIX "sbx-"
/* Upstream waits this long for Ready=True; $SBX_KUBE_READY_TIMEOUT overrides it (tests). */
#define KB_READY_TIMEOUT_NS (INT64_C(180) * 1000000000)
/* Upstream's poll interval, used when a watch is not possible. */
#define KB_POLL_NS (INT64_C(500) * 1000000)
/* client-go retry.DefaultRetry: 5 steps of 10 ms, jitter 0.1. */
#define KB_UPDATE_TRIES 5
#define KB_UPDATE_BACKOFF_NS (INT64_C(10) * 1000000)
/* The kill exec after a timeout is small; it must not hang the caller for long. */
#define KB_KILL_TIMEOUT_NS (INT64_C(30) * 1000000000)
/* Piped stdin copied for a v4 exec may be this large; beyond it, ask for v5. */
#define KB_SPOOL_MAX (INT64_C(16) * 1024 * 1024 * 1024)
/* The script sent ahead of stdin carries the command line and environment: bounded like a
 * kernel's argument space. */
#define KB_SCRIPT_MAX (2 * 1024 * 1024)
/* While a Sandbox is not ready its pod is looked at after this long, then at doubling
 * intervals up to the maximum (a pod stuck pulling its image fails the create at once). */
#define KB_POD_CHECK_NS (INT64_C(1000) * 1000000)
#define KB_POD_CHECK_MAX_NS (INT64_C(8000) * 1000000)
/* Watches that end early (server-side timeouts) are restarted at most this often. */
#define KB_WATCH_RESTARTS 20

struct kstate {
	struct kubeapi *api;
	char version[16];	/* discovered: v1beta1 or v1alpha1 */
};

static struct kubeapi *kb_api(struct sbx_backend *b, struct sbx_err *e)
{
	struct kstate *k = b->priv;

	if (k == NULL) {
		struct kubeapi *api = kubeapi_open(e);
		if (api == NULL)
			return NULL;
		k = b->priv = xcalloc(1, sizeof *k);
		k->api = api;
	}
	return k->api;
}

/* Finds the served Sandbox version: v1beta1, else v1alpha1. */
static const char *kb_version(struct sbx_backend *b, struct sbx_err *e)
{
	struct kstate *k;
	struct json_object *g = NULL, *vs;
	struct kubeapi *api = kb_api(b, e);
	bool beta = false, alpha = false;
	size_t i;

	if (api == NULL)
		return NULL;
	k = b->priv;
	if (k->version[0])
		return k->version;
	if (kubeapi_request(api, "GET", "/apis/" KB_GROUP, NULL, &g, e) < 0) {
		if (e->code == SBX_ENOTFOUND)
			err_set(e, SBX_EUNAVAIL,
				"the API server does not serve %s (is the Agent Sandbox controller installed?)",
				KB_GROUP);
		return NULL;
	}
	if (g && json_object_object_get_ex(g, "versions", &vs) && json_object_is_type(vs, json_type_array)) {
		for (i = 0; i < json_object_array_length(vs); i++) {
			struct json_object *v;
			const char *s;
			if (!json_object_object_get_ex(json_object_array_get_idx(vs, i), "version", &v))
				continue;
			s = json_object_get_string(v);
			beta |= strcmp(s, "v1beta1") == 0;
			alpha |= strcmp(s, "v1alpha1") == 0;
		}
	}
	json_object_put(g);
	if (!beta && !alpha) {
		err_set(e, SBX_EUNAVAIL, "the API server serves %s but neither v1beta1 nor v1alpha1", KB_GROUP);
		return NULL;
	}
	snprintf(k->version, sizeof k->version, "%s", beta ? "v1beta1" : "v1alpha1");
	return k->version;
}

static char *kb_path(struct sbx_backend *b, const char *ver, const char *name)
{
	return xasprintf("/apis/" KB_GROUP "/%s/namespaces/%s/sandboxes%s%s", ver, b->namespace,
			 name ? "/" : "", name ? name : "");
}

/* --- the object --- */

static struct json_object *jpath(struct json_object *o, const char *const *keys)
{
	for (; o && *keys; keys++) {
		struct json_object *v;
		if (json_object_is_type(o, json_type_array)) {
			o = json_object_array_get_idx(o, (size_t)atoi(*keys));
			continue;
		}
		if (!json_object_object_get_ex(o, *keys, &v))
			return NULL;
		o = v;
	}
	return o;
}

static const char *jpstr(struct json_object *o, const char *const *keys)
{
	o = jpath(o, keys);
	return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

#define JP(...) ((const char *const[]){__VA_ARGS__, NULL})

static const char *image_of(const struct sbx_spec *s)
{
	return s->image[0] ? s->image : SBX_DEFAULT_IMAGE;
}

/* The uid and gid the sandbox's processes run as on this backend unless -run-as-root: the
 * first regular user of Debian-based images, so an image that made a user for itself usually
 * made this one. The home volume belongs to this group (fsGroup) and is writable by it. */
#define KB_SANDBOX_UID 1000
#define KB_SANDBOX_GID 1000

/* What a root pod may keep (-run-as-root): the container runtimes' default capabilities less
 * NET_RAW, the set Pod Security "baseline" allows a container to add. */
static const char *const root_caps[] = {
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT", NULL,
};

static struct json_object *jstrs(const char *const *v)
{
	struct json_object *a = json_object_new_array();

	for (; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

static void jset(struct json_object *o, const char *k, struct json_object *v)
{
	json_object_object_add(o, k, v);
}

static struct json_object *jnamed(const char *name)
{
	struct json_object *o = json_object_new_object();

	jset(o, "name", json_object_new_string(name));
	return o;
}

static struct json_object *seccomp_default(void)
{
	struct json_object *o = json_object_new_object();

	jset(o, "type", json_object_new_string("RuntimeDefault"));
	return o;
}

/* The pod's and the container's securityContext: Pod Security "restricted" (non-root uid and
 * gid KB_SANDBOX_*, fsGroup for the home, no privilege escalation, no capabilities, the
 * runtime's default seccomp profile, read-only root filesystem), or with run_as_root "baseline"
 * (root, root_caps, writable root filesystem; still no escalation, still seccomp). */
static void security_contexts(const struct sbx_spec *s, struct json_object *ps,
			      struct json_object *c)
{
	struct json_object *psc = json_object_new_object(), *csc = json_object_new_object(),
			   *caps = json_object_new_object();
	static const char *const all[] = {"ALL", NULL};

	if (s->run_as_root) {
		jset(psc, "runAsUser", json_object_new_int(0));
		jset(psc, "runAsGroup", json_object_new_int(0));
	} else {
		jset(psc, "runAsNonRoot", json_object_new_boolean(1));
		jset(psc, "runAsUser", json_object_new_int(KB_SANDBOX_UID));
		jset(psc, "runAsGroup", json_object_new_int(KB_SANDBOX_GID));
		jset(psc, "fsGroup", json_object_new_int(KB_SANDBOX_GID));
	}
	jset(psc, "seccompProfile", seccomp_default());
	jset(ps, "securityContext", psc);
	jset(csc, "allowPrivilegeEscalation", json_object_new_boolean(0));
	jset(caps, "drop", jstrs(all));
	if (s->run_as_root)
		jset(caps, "add", jstrs(root_caps));
	jset(csc, "capabilities", caps);
	jset(csc, "readOnlyRootFilesystem", json_object_new_boolean(!s->run_as_root));
	if (!s->run_as_root)
		jset(csc, "runAsNonRoot", json_object_new_boolean(1));
	jset(csc, "seccompProfile", seccomp_default());
	jset(c, "securityContext", csc);
}

static struct json_object *mount(const char *name, const char *path)
{
	struct json_object *m = jnamed(name);

	jset(m, "mountPath", json_object_new_string(path));
	return m;
}

/* Requests (what the scheduler reserves) stay modest so idle sandboxes pack onto nodes; the
 * limits are what sbx-create was asked for. A request is never above its limit. */
#define KB_REQUEST_MEMORY (INT64_C(256) << 20)
#define KB_REQUEST_CPU_MILLI 100
#define KB_REQUEST_DISK (INT64_C(1) << 30)

/* A byte count as a Kubernetes quantity: the largest binary suffix that divides it. */
static struct json_object *qbytes(int64_t v)
{
	static const char *const sfx[] = {"Ki", "Mi", "Gi", "Ti", "Pi"};
	char buf[32];
	int i = -1;

	while (i < 4 && v != 0 && v % 1024 == 0) {
		v /= 1024;
		i++;
	}
	snprintf(buf, sizeof buf, "%lld%s", (long long)v, i >= 0 ? sfx[i] : "");
	return json_object_new_string(buf);
}

/* CPU thousandths as a quantity: whole CPUs plainly, otherwise millicores. */
static struct json_object *qcpu(int64_t milli)
{
	char buf[32];

	if (milli % 1000 == 0)
		snprintf(buf, sizeof buf, "%lld", (long long)(milli / 1000));
	else
		snprintf(buf, sizeof buf, "%lldm", (long long)milli);
	return json_object_new_string(buf);
}

/* Parses the quantities sbx writes and the usual others ("2Gi", "512M", "500m", "1.5", "1e3"
 * is not supported); milli: the result in thousandths. -1 when it cannot. */
static int64_t quantity(const char *q, bool milli)
{
	static const struct { const char *s; int64_t mul; } sfx[] = {
		{"Ki", INT64_C(1) << 10}, {"Mi", INT64_C(1) << 20}, {"Gi", INT64_C(1) << 30},
		{"Ti", INT64_C(1) << 40}, {"Pi", INT64_C(1) << 50}, {"k", 1000},
		{"M", 1000000}, {"G", INT64_C(1000000000)}, {"T", INT64_C(1000000000000)},
	};
	char *end;
	double v;

	if (q == NULL || *q == '\0' || !((*q >= '0' && *q <= '9') || *q == '.'))
		return -1;
	v = strtod(q, &end);
	if (end == q)
		return -1;
	if (strcmp(end, "m") == 0)
		return milli ? (int64_t)(v + 0.5) : (int64_t)(v / 1000);
	for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++)
		if (strcmp(end, sfx[i].s) == 0)
			return (int64_t)(v * (double)sfx[i].mul * (milli ? 1000 : 1) + 0.5);
	if (*end != '\0')
		return -1;
	return (int64_t)(v * (milli ? 1000 : 1) + 0.5);
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* The container's resources from the spec's limits (issue 14): memory, cpu (when not
 * unlimited) and ephemeral-storage (-disk: the home and /tmp volumes and the container's
 * own writes); none at all with -limits none. pids has no pod field: it is the kubelet's
 * podPidsLimit, a node setting. */
static void resources(const struct sbx_spec *s, struct json_object *c)
{
	const struct sbx_limits *l = &s->limits;
	struct json_object *r, *lim, *req;

	if (!l->enforced)
		return;
	r = json_object_new_object();
	lim = json_object_new_object();
	req = json_object_new_object();
	if (l->memory > 0) {
		jset(lim, "memory", qbytes(l->memory));
		jset(req, "memory", qbytes(min64(l->memory, KB_REQUEST_MEMORY)));
	}
	if (l->cpus_milli > 0)
		jset(lim, "cpu", qcpu(l->cpus_milli));
	jset(req, "cpu", qcpu(l->cpus_milli > 0 ? min64(l->cpus_milli, KB_REQUEST_CPU_MILLI)
					       : KB_REQUEST_CPU_MILLI));
	if (l->disk > 0) {
		jset(lim, "ephemeral-storage", qbytes(l->disk));
		jset(req, "ephemeral-storage", qbytes(min64(l->disk, KB_REQUEST_DISK)));
	}
	jset(r, "limits", lim);
	jset(r, "requests", req);
	jset(c, "resources", r);
}

/* The limits in force as the Sandbox's pod template states them. */
static void limits_of(struct json_object *o, struct sbx_limits *l)
{
	struct json_object *c = jpath(o, JP("spec", "podTemplate", "spec", "containers", "0"));
	int64_t v;

	memset(l, 0, sizeof *l);
	if (jpath(c, JP("resources", "limits")) == NULL)
		return;
	l->enforced = true;
	if ((v = quantity(jpstr(c, JP("resources", "limits", "memory")), false)) > 0)
		l->memory = v;
	if ((v = quantity(jpstr(c, JP("resources", "limits", "cpu")), true)) > 0)
		l->cpus_milli = v;
	if ((v = quantity(jpstr(c, JP("resources", "limits", "ephemeral-storage")), false)) > 0)
		l->disk = v;
}

/* The labels of a Sandbox's pod and of its NetworkPolicy: sbx's, and which Sandbox. */
static struct json_object *instance_labels(const char *name)
{
	struct json_object *l = json_object_new_object();

	jset(l, KB_LABEL_KEY, json_object_new_string(KB_LABEL_VALUE));
	jset(l, KB_INSTANCE_KEY, json_object_new_string(name));
	return l;
}

/* An emptyDir volume, at most size bytes (0: no sizeLimit). */
static struct json_object *empty_dir(const char *name, int64_t size)
{
	struct json_object *v = jnamed(name), *ed = json_object_new_object();

	if (size > 0)
		jset(ed, "sizeLimit", qbytes(size));
	jset(v, "emptyDir", ed);
	return v;
}

/* The Sandbox as upstream creates it (upstream-behaviour.md §3.1), plus our labels (on the
 * Sandbox and on its pod, which its NetworkPolicy selects), the container's workingDir (the
 * home: commands start there), the securityContexts above, the RuntimeClass, and with a
 * read-only root filesystem an emptyDir of its own at /tmp. */
static struct json_object *kb_object(const char *ver, const char *ns, const struct sbx_spec *s)
{
	struct json_object *o = json_object_new_object(), *md = json_object_new_object(),
			   *labels = json_object_new_object(), *spec = json_object_new_object(),
			   *pt = json_object_new_object(), *pmd = json_object_new_object(),
			   *ps = json_object_new_object(),
			   *cs = json_object_new_array(), *c = jnamed(KB_CONTAINER),
			   *cmd = json_object_new_array(), *env = json_object_new_array(),
			   *ev = jnamed("HOME"), *vms = json_object_new_array(),
			   *vols = json_object_new_array(), *annotations;
	char t[TIME_BUFSZ];
	int64_t disk;

	jset(o, "apiVersion", json_object_new_string(ver[0] ? ver : KB_GROUP "/v1beta1"));
	jset(o, "kind", json_object_new_string("Sandbox"));
	jset(md, "name", json_object_new_string(s->name));
	jset(md, "namespace", json_object_new_string(ns));
	jset(labels, KB_LABEL_KEY, json_object_new_string(KB_LABEL_VALUE));
	jset(md, "labels", labels);
	annotations = json_object_new_object();
	jset(annotations, KB_NETWORK_KEY, json_object_new_string(s->network ? "internet" : "none"));
	jset(md, "annotations", annotations);
	jset(o, "metadata", md);
	jset(pmd, "labels", instance_labels(s->name));
	jset(pt, "metadata", pmd);
	jset(ps, "automountServiceAccountToken", json_object_new_boolean(0));
	jset(ps, "restartPolicy", json_object_new_string("Never"));
	if (s->runtime_class[0])
		jset(ps, "runtimeClassName", json_object_new_string(s->runtime_class));
	jset(c, "image", json_object_new_string(image_of(s)));
	json_object_array_add(cmd, json_object_new_string("sleep"));
	json_object_array_add(cmd, json_object_new_string("infinity"));
	jset(c, "command", cmd);
	jset(c, "workingDir", json_object_new_string(s->homedir));
	jset(ev, "value", json_object_new_string(s->homedir));
	json_object_array_add(env, ev);
	jset(c, "env", env);
	json_object_array_add(vms, mount("home", s->homedir));
	disk = s->limits.enforced ? s->limits.disk : 0;
	json_object_array_add(vols, empty_dir("home", disk));
	if (!s->run_as_root && strcmp(s->homedir, "/tmp") != 0) {
		json_object_array_add(vms, mount("tmp", "/tmp"));
		json_object_array_add(vols, empty_dir("tmp", disk));
	}
	jset(c, "volumeMounts", vms);
	resources(s, c);
	security_contexts(s, ps, c);
	json_object_array_add(cs, c);
	jset(ps, "containers", cs);
	jset(ps, "volumes", vols);
	jset(pt, "spec", ps);
	jset(spec, "podTemplate", pt);
	jset(spec, "shutdownTime",
	     json_object_new_string(time_rfc3339(time_now_ns() + s->ttl_ns, t, sizeof t)));
	jset(spec, "shutdownPolicy", json_object_new_string("Delete"));
	jset(o, "spec", spec);
	return o;
}

/* Exported for the unit tests: the object sbx posts. */
struct json_object *kube_backend_object(const char *api_version, const char *ns,
					const struct sbx_spec *s);
struct json_object *kube_backend_object(const char *api_version, const char *ns,
					const struct sbx_spec *s)
{
	return kb_object(api_version, ns, s);
}

static bool is_ready(struct json_object *o)
{
	struct json_object *conds = jpath(o, JP("status", "conditions"));
	size_t i;

	if (conds == NULL || !json_object_is_type(conds, json_type_array))
		return false;
	for (i = 0; i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = jpstr(c, JP("type")), *st = jpstr(c, JP("status"));
		if (t && st && strcmp(t, "Ready") == 0 && strcmp(st, "True") == 0)
			return true;
	}
	return false;
}

static const char *home_of(struct json_object *o)
{
	struct json_object *env = jpath(o, JP("spec", "podTemplate", "spec", "containers", "0", "env"));
	size_t i;

	for (i = 0; env && json_object_is_type(env, json_type_array) && i < json_object_array_length(env); i++) {
		struct json_object *v = json_object_array_get_idx(env, i);
		const char *n = jpstr(v, JP("name"));
		if (n && strcmp(n, "HOME") == 0)
			return jpstr(v, JP("value"));
	}
	return jpstr(o, JP("spec", "podTemplate", "spec", "containers", "0", "volumeMounts", "0", "mountPath"));
}

static bool jtrue(struct json_object *o, const char *const *keys)
{
	o = jpath(o, keys);
	return o && json_object_is_type(o, json_type_boolean) && json_object_get_boolean(o);
}

/* The Pod Security level a Sandbox's pod template meets, as far as sbx shapes it:
 * "restricted" when it runs as non-root, without privilege escalation, capabilities dropped
 * and a RuntimeDefault or Localhost seccomp profile; otherwise "baseline". */
static const char *pod_security_of(struct json_object *o)
{
	struct json_object *ps = jpath(o, JP("spec", "podTemplate", "spec")),
			   *c = jpath(ps, JP("containers", "0")), *drop;
	const char *sp = jpstr(ps, JP("securityContext", "seccompProfile", "type")),
		   *sc = jpstr(c, JP("securityContext", "seccompProfile", "type"));
	struct json_object *ape = jpath(c, JP("securityContext", "allowPrivilegeEscalation"));
	bool all = false;

	drop = jpath(c, JP("securityContext", "capabilities", "drop"));
	for (size_t i = 0; drop && json_object_is_type(drop, json_type_array) &&
			   i < json_object_array_length(drop); i++)
		all |= strcmp(json_object_get_string(json_object_array_get_idx(drop, i)), "ALL") == 0;
	if (!sc)
		sc = sp;
	if ((jtrue(ps, JP("securityContext", "runAsNonRoot")) ||
	     jtrue(c, JP("securityContext", "runAsNonRoot"))) &&
	    ape && json_object_is_type(ape, json_type_boolean) && !json_object_get_boolean(ape) &&
	    all && sc && (strcmp(sc, "RuntimeDefault") == 0 || strcmp(sc, "Localhost") == 0))
		return "restricted";
	return "baseline";
}

static void fill_info(struct sbx_backend *b, struct json_object *o, struct sbx_info *info)
{
	const char *s;
	int64_t ns;

	memset(info, 0, sizeof *info);
	snprintf(info->name, sizeof info->name, "%s", (s = jpstr(o, JP("metadata", "name"))) ? s : "");
	snprintf(info->namespace, sizeof info->namespace, "%s",
		 (s = jpstr(o, JP("metadata", "namespace"))) ? s : b->namespace);
	info->backend = "kubernetes";
	snprintf(info->image, sizeof info->image, "%s",
		 (s = jpstr(o, JP("spec", "podTemplate", "spec", "containers", "0", "image"))) ? s : "");
	snprintf(info->homedir, sizeof info->homedir, "%s", (s = home_of(o)) ? s : "");
	snprintf(info->shutdown_policy, sizeof info->shutdown_policy, "%s",
		 (s = jpstr(o, JP("spec", "shutdownPolicy"))) ? s : "Retain");
	if ((s = jpstr(o, JP("spec", "shutdownTime"))) && time_parse_rfc3339(s, &ns) == 0)
		info->shutdown_ns = ns;
	if ((s = jpstr(o, JP("metadata", "creationTimestamp"))) && time_parse_rfc3339(s, &ns) == 0)
		info->created_ns = ns;
	info->ready = is_ready(o);
	s = jpstr(o, JP("metadata", "annotations", KB_NETWORK_KEY));
	info->network = s && strcmp(s, "internet") == 0;
	limits_of(o, &info->limits);
	snprintf(info->pod_security, sizeof info->pod_security, "%s", pod_security_of(o));
	snprintf(info->runtime_class, sizeof info->runtime_class, "%s",
		 (s = jpstr(o, JP("spec", "podTemplate", "spec", "runtimeClassName"))) ? s : "");
}

/* Why an existing Sandbox cannot be reused for spec, or NULL if it can. */
static char *mismatch(struct json_object *o, const struct sbx_spec *s)
{
	const char *img = jpstr(o, JP("spec", "podTemplate", "spec", "containers", "0", "image"));
	const char *cn = jpstr(o, JP("spec", "podTemplate", "spec", "containers", "0", "name"));
	const char *home = home_of(o);

	if (cn == NULL || strcmp(cn, KB_CONTAINER) != 0)
		return xasprintf("it has no \"%s\" container", KB_CONTAINER);
	if (img == NULL || strcmp(img, image_of(s)) != 0)
		return xasprintf("it runs image %s, not %s", img ? img : "(none)", image_of(s));
	const char *want = s->run_as_root ? "baseline" : "restricted", *have = pod_security_of(o);
	const char *rc = jpstr(o, JP("spec", "podTemplate", "spec", "runtimeClassName"));

	if (home == NULL || strcmp(home, s->homedir) != 0)
		return xasprintf("its home directory is %s, not %s", home ? home : "(none)", s->homedir);
	if (strcmp(have, want) != 0)
		return xasprintf("its pod meets Pod Security %s, not %s%s", have, want,
				 s->run_as_root ? "" : " (it was made with -run-as-root, or not by this sbx)");
	struct sbx_limits have_l, want_l = s->limits;
	limits_of(o, &have_l);
	if (!want_l.enforced)
		memset(&want_l, 0, sizeof want_l);
	want_l.pids = 0;	/* a node setting: not in the pod */
	if (have_l.enforced != want_l.enforced || have_l.memory != want_l.memory ||
	    have_l.cpus_milli != want_l.cpus_milli || have_l.disk != want_l.disk)
		return xasprintf("its resource limits differ (memory %lld, cpus %.3g, disk %lld "
				 "bytes, not memory %lld, cpus %.3g, disk %lld)",
				 (long long)have_l.memory, (double)have_l.cpus_milli / 1000,
				 (long long)have_l.disk, (long long)want_l.memory,
				 (double)want_l.cpus_milli / 1000, (long long)want_l.disk);
	const char *net = jpstr(o, JP("metadata", "annotations", KB_NETWORK_KEY));
	if (strcmp(net ? net : "none", s->network ? "internet" : "none") != 0)
		return xasprintf("its network is %s, not %s", net ? net : "none",
				 s->network ? "internet (-network)" : "none");
	if (strcmp(rc ? rc : "", s->runtime_class) != 0)
		return xasprintf("its RuntimeClass is %s, not %s", rc ? rc : "(none)",
				 s->runtime_class[0] ? s->runtime_class : "(none)");
	return NULL;
}

/* --- readiness --- */

/* Container states of a pod that will not start by waiting (kubelet's reasons): an image that
 * cannot be pulled or named, a container that cannot be made or keeps crashing. */
static const char *const stuck_waiting[] = {
	"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError",
	"CrashLoopBackOff", NULL,
};

static bool in_list(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

/* The Sandbox's Ready condition (NULL if it has none). */
static struct json_object *ready_condition(struct json_object *o)
{
	struct json_object *conds = jpath(o, JP("status", "conditions"));

	for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = jpstr(c, JP("type"));
		if (t && strcmp(t, "Ready") == 0)
			return c;
	}
	return NULL;
}

/* Why the Sandbox will not become ready by waiting, from its Ready condition, or NULL: its
 * pod ended (PodFailed, PodSucceeded), or the controller cannot make the pod because the API
 * server refuses it (ReconcilerError "... is forbidden: ..." from Pod Security admission, a
 * missing RuntimeClass or a quota; "... is invalid: ..."). New string. */
static char *sandbox_stuck(struct json_object *o)
{
	struct json_object *c = ready_condition(o);
	const char *st = jpstr(c, JP("status")), *r = jpstr(c, JP("reason")),
		   *m = jpstr(c, JP("message"));

	if (c == NULL || st == NULL || strcmp(st, "False") != 0 || r == NULL)
		return NULL;
	if (strcmp(r, "PodFailed") == 0 || strcmp(r, "PodSucceeded") == 0 ||
	    (strcmp(r, "ReconcilerError") == 0 && m &&
	     (strstr(m, " is forbidden: ") || strstr(m, " is invalid: "))))
		return xasprintf("%s: %s", r, m && *m ? m : "(no message)");
	return NULL;
}

/* What the Sandbox's pod shows: *fatal set when it cannot start by waiting (a terminal phase,
 * a container stuck in one of stuck_waiting or terminated); otherwise the latest reason it is
 * not running yet (e.g. Unschedulable), for the timeout message. NULL when nothing to say or
 * no pod yet. New string. */
static char *pod_state(struct kubeapi *api, const char *ns, const char *name, bool *fatal)
{
	char *path = xasprintf("/api/v1/namespaces/%s/pods/%s", ns, name), *why = NULL;
	struct json_object *p = NULL, *cs, *conds;
	struct sbx_err ignored;
	const char *phase, *s;

	*fatal = false;
	if (kubeapi_request(api, "GET", path, NULL, &p, &ignored) < 0 || p == NULL)
		goto out;
	phase = jpstr(p, JP("status", "phase"));
	if (phase && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0)) {
		*fatal = true;
		s = jpstr(p, JP("status", "message"));
		why = xasprintf("pod %s is %s%s%s", name, phase, s ? ": " : "", s ? s : "");
		goto out;
	}
	cs = jpath(p, JP("status", "containerStatuses"));
	for (size_t i = 0; cs && json_object_is_type(cs, json_type_array) &&
			   i < json_object_array_length(cs); i++) {
		struct json_object *c = json_object_array_get_idx(cs, i);
		const char *cn = jpstr(c, JP("name")), *r = jpstr(c, JP("state", "waiting", "reason")),
			   *m = jpstr(c, JP("state", "waiting", "message"));
		if (jpath(c, JP("state", "terminated"))) {
			r = jpstr(c, JP("state", "terminated", "reason"));
			m = jpstr(c, JP("state", "terminated", "message"));
			*fatal = true;
		} else if (in_list(r, stuck_waiting)) {
			*fatal = true;
		} else {
			continue;
		}
		why = xasprintf("pod %s: container %s: %s%s%s", name, cn ? cn : "?",
				r ? r : "Terminated", m ? ": " : "", m ? m : "");
		goto out;
	}
	conds = jpath(p, JP("status", "conditions"));
	for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *st = jpstr(c, JP("status")), *r = jpstr(c, JP("reason"));
		if (st && strcmp(st, "False") == 0 && r) {
			s = jpstr(c, JP("message"));
			why = xasprintf("pod %s: %s%s%s", name, r, s ? ": " : "", s ? s : "");
			break;
		}
	}
out:
	json_object_put(p);
	free(path);
	return why;
}

struct wait {
	const char *name;
	struct json_object *obj;	/* the ready object */
	char *stuck;			/* why it cannot become ready */
	bool deleted, error;
	char why[256];
};

static int on_watch(const char *type, struct json_object *obj, void *arg)
{
	struct wait *w = arg;
	const char *n = jpstr(obj, JP("metadata", "name"));

	if (strcmp(type, "ERROR") == 0) {
		const char *m = jpstr(obj, JP("message"));
		snprintf(w->why, sizeof w->why, "%s", m ? m : "watch error");
		w->error = true;
		return 1;
	}
	if (n == NULL || strcmp(n, w->name) != 0)
		return 0;
	if (strcmp(type, "DELETED") == 0) {
		w->deleted = true;
		return 1;
	}
	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
		if (is_ready(obj)) {
			w->obj = json_object_get(obj);
			return 1;
		}
		if ((w->stuck = sandbox_stuck(obj)) != NULL)
			return 1;
	}
	return 0;
}

static int64_t ready_timeout(void)
{
	const char *s = getenv("SBX_KUBE_READY_TIMEOUT");
	int64_t ns;

	if (s && *s && duration_parse(s, &ns) == 0 && ns > 0)
		return ns;
	return KB_READY_TIMEOUT_NS;
}

static void nap(int64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Waits for Ready=True; *out gets the ready object. Upstream's error texts. A Sandbox that
 * cannot become ready by waiting (sandbox_stuck, pod_state) fails at once; its pod is looked
 * at after KB_POD_CHECK_NS, then at doubling intervals up to KB_POD_CHECK_MAX_NS. */
static int wait_ready(struct sbx_backend *b, const char *ver, const char *name,
		      struct json_object **out, struct sbx_err *e)
{
	struct kubeapi *api = ((struct kstate *)b->priv)->api;
	int64_t limit = ready_timeout(), start = time_mono_ns(), deadline = start + limit;
	int64_t check_every = KB_POD_CHECK_NS, next_check = start + check_every;
	char *path = kb_path(b, ver, name), *coll = kb_path(b, ver, NULL), *sel = NULL;
	char *stuck = NULL, *pending = NULL;
	struct json_object *o = NULL;
	bool polling = getenv("SBX_KUBE_NO_WATCH") != NULL;
	int restarts = 0, rc = -1;
	char dbuf[DURATION_BUFSZ];

	sel = xasprintf("metadata.name=%s", name);
	for (;;) {
		struct sbx_err ge;
		int64_t now = time_mono_ns(), left = deadline - now, slice;
		const char *rv;

		json_object_put(o);
		o = NULL;
		if (kubeapi_request(api, "GET", path, NULL, &o, &ge) < 0) {
			*e = ge;
			err_prefix(e, "error polling state of sandbox");
			goto out;
		}
		if (is_ready(o)) {
			*out = o;
			o = NULL;
			rc = 0;
			goto out;
		}
		if ((stuck = sandbox_stuck(o)) != NULL)
			break;
		if (now >= next_check) {
			bool fatal;
			free(pending);
			pending = pod_state(api, b->namespace, name, &fatal);
			if (fatal) {
				stuck = pending;
				pending = NULL;
				break;
			}
			check_every = check_every * 2 > KB_POD_CHECK_MAX_NS ? KB_POD_CHECK_MAX_NS
									  : check_every * 2;
			next_check = now + check_every;
		}
		if (left <= 0)
			break;
		slice = next_check - now < left ? next_check - now : left;
		if (slice < 1000000)
			slice = 1000000;
		rv = jpstr(o, JP("metadata", "resourceVersion"));
		if (!polling && restarts < KB_WATCH_RESTARTS) {
			struct wait w = {.name = name};
			char *esel = kubeapi_escape(sel);
			char *wp = xasprintf("%s?watch=1&allowWatchBookmarks=false&fieldSelector=%s%s%s&timeoutSeconds=%lld",
					     coll, esel, rv ? "&resourceVersion=" : "", rv ? rv : "",
					     (long long)(left / 1000000000 + 1));
			int64_t t0 = time_mono_ns();
			int r = kubeapi_watch(api, wp, slice / 1000000 + 1, on_watch, &w, &ge);
			free(wp);
			free(esel);
			/* Only a watch the server ended early counts: ours end at each pod check. */
			if (time_mono_ns() - t0 < slice)
				restarts++;
			if (w.obj) {
				*out = w.obj;
				rc = 0;
				goto out;
			}
			if (w.stuck) {
				stuck = w.stuck;
				break;
			}
			if (w.deleted) {
				err_set(e, SBX_ENOTFOUND, "Sandbox %s was deleted while waiting for it to become ready", name);
				goto out;
			}
			if (r < 0 || w.error)
				polling = true;	/* watch refused or broken: upstream's polling */
			continue;
		}
		nap(slice < KB_POLL_NS ? slice : KB_POLL_NS);
	}
	if (stuck)
		err_set(e, SBX_EUNAVAIL, "Sandbox %s cannot become ready: %s", name, stuck);
	else
		err_set(e, SBX_ETIMEDOUT, "timed out waiting for Sandbox %s to become ready (%s)%s%s",
			name, duration_format(limit, dbuf, sizeof dbuf), pending ? ": " : "",
			pending ? pending : "");
out:
	json_object_put(o);
	free(stuck);
	free(pending);
	free(sel);
	free(coll);
	free(path);
	return rc;
}

/* --- the NetworkPolicy --- */

static char *netpol_path(struct sbx_backend *b, const char *name)
{
	return xasprintf("/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies%s%s%s",
			 b->namespace, name ? "/" KB_NETPOL_PREFIX : "", name ? name : "",
			 "");
}

static struct json_object *jports53(void)
{
	struct json_object *a = json_object_new_array();
	static const char *const protos[] = {"UDP", "TCP", NULL};

	for (const char *const *p = protos; *p; p++) {
		struct json_object *o = json_object_new_object();
		jset(o, "protocol", json_object_new_string(*p));
		jset(o, "port", json_object_new_int(53));
		json_object_array_add(a, o);
	}
	return a;
}

static struct json_object *jlabels1(const char *k, const char *v)
{
	struct json_object *sel = json_object_new_object(), *ml = json_object_new_object();

	jset(ml, k, json_object_new_string(v));
	jset(sel, "matchLabels", ml);
	return sel;
}

static struct json_object *ip_block(const char *cidr, const char *const *except)
{
	struct json_object *peer = json_object_new_object(), *blk = json_object_new_object();

	jset(blk, "cidr", json_object_new_string(cidr));
	jset(blk, "except", jstrs(except));
	jset(peer, "ipBlock", blk);
	return peer;
}

/* Addresses a -network Sandbox may not reach (as Agent Sandbox's own default policy for
 * templates): private networks (the cluster's pods and services, the VPC), link-local (the
 * cloud metadata server), CGNAT space, loopback; IPv6 unique-local and link-local. */
static const char *const private_v4[] = {
	"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10",
	"127.0.0.0/8", NULL,
};
static const char *const private_v6[] = {"fc00::/7", "fe80::/10", "::1/128", NULL};

/* The NetworkPolicy of Sandbox s (uid: its owner): no ingress at all; egress only to the
 * cluster's DNS (kube-dns in kube-system, port 53), and with s->network also to every public
 * address. Labelled as sbx's, owned by the Sandbox (deleted with it by the garbage collector). */
static struct json_object *netpol_object(const char *ns, const char *sandbox_api,
					 const struct sbx_spec *s, const char *uid)
{
	struct json_object *o = json_object_new_object(), *md = json_object_new_object(),
			   *owners = json_object_new_array(),
			   *owner = json_object_new_object(), *spec = json_object_new_object(),
			   *sel = json_object_new_object(),
			   *egress = json_object_new_array(), *dns = json_object_new_object(),
			   *to = json_object_new_array(), *peer = json_object_new_object();
	static const char *const types[] = {"Ingress", "Egress", NULL};
	char *name = xasprintf(KB_NETPOL_PREFIX "%s", s->name);

	jset(o, "apiVersion", json_object_new_string("networking.k8s.io/v1"));
	jset(o, "kind", json_object_new_string("NetworkPolicy"));
	jset(md, "name", json_object_new_string(name));
	jset(md, "namespace", json_object_new_string(ns));
	jset(md, "labels", instance_labels(s->name));
	jset(owner, "apiVersion", json_object_new_string(sandbox_api));
	jset(owner, "kind", json_object_new_string("Sandbox"));
	jset(owner, "name", json_object_new_string(s->name));
	jset(owner, "uid", json_object_new_string(uid));
	json_object_array_add(owners, owner);
	jset(md, "ownerReferences", owners);
	jset(o, "metadata", md);
	jset(sel, "matchLabels", instance_labels(s->name));
	jset(spec, "podSelector", sel);
	jset(spec, "policyTypes", jstrs(types));
	jset(spec, "ingress", json_object_new_array());
	jset(peer, "namespaceSelector", jlabels1("kubernetes.io/metadata.name", "kube-system"));
	jset(peer, "podSelector", jlabels1("k8s-app", "kube-dns"));
	json_object_array_add(to, peer);
	jset(dns, "to", to);
	jset(dns, "ports", jports53());
	json_object_array_add(egress, dns);
	if (s->network) {
		struct json_object *out = json_object_new_object(), *pub = json_object_new_array();
		json_object_array_add(pub, ip_block("0.0.0.0/0", private_v4));
		json_object_array_add(pub, ip_block("::/0", private_v6));
		jset(out, "to", pub);
		json_object_array_add(egress, out);
	}
	jset(spec, "egress", egress);
	jset(o, "spec", spec);
	free(name);
	return o;
}

/* Exported for the unit tests: the NetworkPolicy sbx posts. */
struct json_object *kube_backend_netpol(const char *ns, const char *sandbox_api,
					const struct sbx_spec *s, const char *uid);
struct json_object *kube_backend_netpol(const char *ns, const char *sandbox_api,
					const struct sbx_spec *s, const char *uid)
{
	return netpol_object(ns, sandbox_api, s, uid);
}

/* Deletes the NetworkPolicy of Sandbox name if it is sbx's (a policy of that name someone
 * else made stays), with its uid as a precondition. Best effort: the policy names the Sandbox
 * as its owner, so the garbage collector removes it anyway (also after an expiry, when
 * nobody runs sbx-delete). */
static void netpol_remove(struct sbx_backend *b, const char *name)
{
	struct kubeapi *api = ((struct kstate *)b->priv)->api;
	char *path = netpol_path(b, name);
	struct json_object *have = NULL, *opts, *pre;
	struct sbx_err ignored;
	const char *mgr, *inst, *uid;

	if (kubeapi_request(api, "GET", path, NULL, &have, &ignored) == 0 &&
	    (mgr = jpstr(have, JP("metadata", "labels", KB_LABEL_KEY))) &&
	    strcmp(mgr, KB_LABEL_VALUE) == 0 &&
	    (inst = jpstr(have, JP("metadata", "labels", KB_INSTANCE_KEY))) &&
	    strcmp(inst, name) == 0 && (uid = jpstr(have, JP("metadata", "uid")))) {
		opts = json_object_new_object();
		pre = json_object_new_object();
		jset(pre, "uid", json_object_new_string(uid));
		jset(opts, "preconditions", pre);
		jset(opts, "kind", json_object_new_string("DeleteOptions"));
		jset(opts, "apiVersion", json_object_new_string("v1"));
		kubeapi_request(api, "DELETE", path, opts, NULL, &ignored);
		json_object_put(opts);
	}
	json_object_put(have);
	free(path);
}

/* Makes sure Sandbox sandbox (just made or reused) has its NetworkPolicy as spec s wants it:
 * created; one already there that is sbx's and says the same is kept, one that says
 * otherwise is replaced (delete and create: the Role needs no update), and one that is not
 * sbx's is an error. */
static int netpol_ensure(struct sbx_backend *b, const char *sandbox_api, const struct sbx_spec *s,
			 struct json_object *sandbox, struct sbx_err *e)
{
	struct kubeapi *api = ((struct kstate *)b->priv)->api;
	const char *uid = jpstr(sandbox, JP("metadata", "uid"));
	char *coll = netpol_path(b, NULL), *path = netpol_path(b, s->name);
	struct json_object *want, *have = NULL;
	int rc = -1;

	if (uid == NULL) {
		err_set(e, SBX_EIO, "the API server gave Sandbox %s no uid", s->name);
		goto out;
	}
	want = netpol_object(b->namespace, sandbox_api, s, uid);
	for (int attempt = 0; attempt < 2; attempt++) {
		const char *mgr;
		if (kubeapi_request(api, "POST", coll, want, NULL, e) == 0) {
			rc = 0;
			break;
		}
		if (e->code != SBX_ECONFLICT || kubeapi_request(api, "GET", path, NULL, &have, e) < 0)
			break;
		mgr = jpstr(have, JP("metadata", "labels", KB_LABEL_KEY));
		if (mgr == NULL || strcmp(mgr, KB_LABEL_VALUE) != 0) {
			err_set(e, SBX_EEXIST, "a NetworkPolicy named " KB_NETPOL_PREFIX "%s exists in "
				"namespace %s and is not sbx's (no label %s=%s)", s->name,
				b->namespace, KB_LABEL_KEY, KB_LABEL_VALUE);
			break;
		}
		if (json_object_equal(jpath(have, JP("spec")), jpath(want, JP("spec"))) &&
		    json_object_equal(jpath(have, JP("metadata", "ownerReferences")),
				      jpath(want, JP("metadata", "ownerReferences")))) {
			rc = 0;
			break;
		}
		json_object_put(have);
		have = NULL;
		if (kubeapi_request(api, "DELETE", path, NULL, NULL, e) < 0 && e->code != SBX_ENOTFOUND)
			break;
	}
	json_object_put(want);
	if (rc < 0)
		err_prefix(e, "cannot set up the NetworkPolicy " KB_NETPOL_PREFIX "%s that confines it",
			   s->name);
out:
	json_object_put(have);
	free(path);
	free(coll);
	return rc;
}

/* --- operations --- */

static int k_get(struct sbx_backend *b, const char *name, struct sbx_info *info, struct sbx_err *e)
{
	const char *ver = kb_version(b, e);
	struct json_object *o = NULL;
	char *path;
	int rc;

	if (ver == NULL)
		return -1;
	path = kb_path(b, ver, name);
	rc = kubeapi_request(((struct kstate *)b->priv)->api, "GET", path, NULL, &o, e);
	free(path);
	if (rc < 0) {
		if (e->code == SBX_ENOTFOUND)
			err_set(e, SBX_ENOTFOUND, "sandbox %s not found in namespace %s", name, b->namespace);
		return -1;
	}
	fill_info(b, o, info);
	json_object_put(o);
	return 0;
}

/* GET + PUT of spec.shutdownTime, retried on 409 like client-go's RetryOnConflict. */
static int extend(struct sbx_backend *b, const char *ver, const char *name, int64_t ttl_ns,
		  struct json_object **out, struct sbx_err *e)
{
	struct kubeapi *api = ((struct kstate *)b->priv)->api;
	char *path = kb_path(b, ver, name);
	int i, rc = -1;

	for (i = 0; i < KB_UPDATE_TRIES; i++) {
		struct json_object *o = NULL, *spec, *res = NULL;
		char t[TIME_BUFSZ];

		if (i > 0) {
			unsigned r = 0;
			getrandom(&r, sizeof r, 0);
			nap(KB_UPDATE_BACKOFF_NS + (int64_t)((double)KB_UPDATE_BACKOFF_NS * 0.1 * (r % 1000) / 1000.0));
		}
		if (kubeapi_request(api, "GET", path, NULL, &o, e) < 0)
			goto out;
		if (o == NULL || (spec = jpath(o, JP("spec"))) == NULL) {
			json_object_put(o);
			err_set(e, SBX_EIO, "Sandbox %s has no spec", name);
			goto out;
		}
		json_object_object_add(spec, "shutdownTime",
				       json_object_new_string(time_rfc3339(time_now_ns() + ttl_ns, t, sizeof t)));
		rc = kubeapi_request(api, "PUT", path, o, &res, e);
		json_object_put(o);
		if (rc == 0) {
			*out = res;
			goto out;
		}
		if (e->code != SBX_ECONFLICT)
			goto out;
	}
out:
	free(path);
	if (rc < 0 && e->code == SBX_ENOTFOUND)
		err_set(e, SBX_ENOTFOUND, "sandbox %s not found in namespace %s", name, b->namespace);
	return rc;
}

static int k_touch(struct sbx_backend *b, const char *name, int64_t ttl_ns, struct sbx_info *info,
		   struct sbx_err *e)
{
	const char *ver = kb_version(b, e);
	struct json_object *o = NULL;

	if (ver == NULL || extend(b, ver, name, ttl_ns, &o, e) < 0)
		return -1;
	fill_info(b, o, info);
	json_object_put(o);
	return 0;
}

static int k_remove(struct sbx_backend *b, const char *name, struct sbx_err *e)
{
	const char *ver = kb_version(b, e);
	char *path;
	int rc;

	if (ver == NULL)
		return -1;
	path = kb_path(b, ver, name);
	rc = kubeapi_request(((struct kstate *)b->priv)->api, "DELETE", path, NULL, NULL, e);
	free(path);
	if (rc < 0 && e->code == SBX_ENOTFOUND)
		rc = 0;	/* already gone: deleting is idempotent */
	if (rc == 0)
		netpol_remove(b, name);
	return rc;
}

/* Waits (bounded) until a Sandbox that is being deleted has gone. */
static int wait_gone(struct sbx_backend *b, const char *path, struct sbx_err *e)
{
	struct kubeapi *api = ((struct kstate *)b->priv)->api;
	int64_t deadline = time_mono_ns() + ready_timeout();

	while (time_mono_ns() < deadline) {
		struct json_object *o = NULL;
		if (kubeapi_request(api, "GET", path, NULL, &o, e) < 0)
			return e->code == SBX_ENOTFOUND ? 0 : -1;
		json_object_put(o);
		nap(KB_POLL_NS);
	}
	return err_set(e, SBX_ETIMEDOUT, "an earlier Sandbox of this name is still being deleted");
}

static int k_create(struct sbx_backend *b, const struct sbx_spec *s, struct sbx_info *info,
		    struct sbx_err *e)
{
	const char *ver;
	struct json_object *o = NULL, *obj = NULL, *ready = NULL;
	struct kubeapi *api;
	char *path = NULL, *coll = NULL, *why = NULL, full[64];
	bool created = false;
	int attempt, rc = -1;

	if ((ver = kb_version(b, e)) == NULL)
		return err_prefix(e, "failed to create Sandbox");
	api = ((struct kstate *)b->priv)->api;
	path = kb_path(b, ver, s->name);
	coll = kb_path(b, ver, NULL);
	snprintf(full, sizeof full, KB_GROUP "/%s", ver);
	for (attempt = 0; attempt < 2 && !created; attempt++) {
		json_object_put(o);
		o = NULL;
		if (kubeapi_request(api, "GET", path, NULL, &o, e) == 0) {
			if (jpath(o, JP("metadata", "deletionTimestamp"))) {
				if (wait_gone(b, path, e) < 0)
					goto fail;
				continue;
			}
			if ((why = mismatch(o, s)) != NULL) {
				err_set(e, SBX_EEXIST,
					"a Sandbox named %s already exists in namespace %s with another spec (%s); delete it or use another name",
					s->name, b->namespace, why);
				goto out;
			}
			info->reused = true;
			break;
		}
		if (e->code != SBX_ENOTFOUND)
			goto fail;
		obj = kb_object(full, b->namespace, s);
		rc = -1;
		json_object_put(o);
		o = NULL;
		if (kubeapi_request(api, "POST", coll, obj, &o, e) == 0) {
			json_object_put(obj);
			created = true;
			break;
		}
		json_object_put(obj);
		if (e->code != SBX_ECONFLICT)	/* AlreadyExists: someone raced us, look again */
			goto fail;
	}
	if (!created && !info->reused)
		goto fail;
	/* Its NetworkPolicy before anything runs in it (the pod only sleeps until sbx execs). */
	if (netpol_ensure(b, full, s, o, e) < 0) {
		if (created) {
			struct sbx_err ignored;
			k_remove(b, s->name, &ignored);
		}
		goto fail;
	}
	if (wait_ready(b, ver, s->name, &ready, e) < 0) {
		if (created) {
			struct sbx_err ignored;
			k_remove(b, s->name, &ignored);
		}
		goto out;
	}
	json_object_put(ready);
	ready = NULL;
	/* A reused Sandbox gets a fresh shutdown time, as every later tool call would give it. */
	if (extend(b, ver, s->name, s->ttl_ns, &ready, e) < 0)
		goto out;
	{
		bool reused = info->reused;
		fill_info(b, ready, info);
		info->reused = reused;
	}
	rc = 0;
	goto out;
fail:
	err_prefix(e, "failed to create Sandbox");
out:
	json_object_put(ready);
	json_object_put(o);
	free(why);
	free(coll);
	free(path);
	return rc;
}

static int k_list(struct sbx_backend *b, int (*fn)(const struct sbx_info *, void *), void *arg,
		  struct sbx_err *e)
{
	const char *ver = kb_version(b, e);
	struct json_object *o = NULL, *items;
	char *path;
	size_t i;
	int rc = -1;

	if (ver == NULL)
		return -1;
	path = kb_path(b, ver, NULL);
	if (kubeapi_request(((struct kstate *)b->priv)->api, "GET", path, NULL, &o, e) < 0)
		goto out;
	items = jpath(o, JP("items"));
	rc = 0;
	for (i = 0; items && json_object_is_type(items, json_type_array) && i < json_object_array_length(items); i++) {
		struct json_object *it = json_object_array_get_idx(items, i);
		const char *n = jpstr(it, JP("metadata", "name"));
		struct sbx_info info;
		/* Names the sbx tools cannot address are not listed. */
		if (n == NULL || name_check(n, NULL) < 0)
			continue;
		fill_info(b, it, &info);
		if (fn(&info, arg) != 0)
			break;
	}
out:
	json_object_put(o);
	free(path);
	return rc;
}

/* --- exec --- */

/* The command that starts every wrapped exec: it reads a script of exactly $0 bytes from
 * stdin and runs it; the rest of stdin stays for the command. The script ends with the
 * comment KB_SCRIPT_END: a script cut short (a broken stream) is refused, never half run. */
#define KB_SCRIPT_END "#sbx-end"
static const char boot_script[] =
	"s=$(head -c \"$0\"); case $s in *'" KB_SCRIPT_END "') eval \"$s\";; "
	"*) echo 'sbx: the command script arrived incomplete' >&2; exit 126;; esac";

/* The command that starts a wrapped exec whose script fits in the URL: the script is $0. */
static const char url_boot[] = "s=$0; eval \"$s\"";

/* Kills the shell recorded in the pid file $f and everything it started: every descendant
 * (found through the parent pids) and every process in a session or process group one of
 * them leads (so daemons that left the tree die too). The processes are collected, stopped
 * so they cannot fork, collected again and killed. Waits briefly for the file when the
 * command has only just started. */
static const char kill_body[] =
	"i=0\n"
	"while [ ! -s \"$f\" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done\n"
	"p=$(cat \"$f\" 2>/dev/null) || exit 0\n"
	"[ -n \"$p\" ] || exit 0\n"
	"k=\" $p \"\n"
	"collect() {\n"
	"  c=1\n"
	"  while [ $c = 1 ]; do\n"
	"    c=0\n"
	"    for d in /proc/[0-9]*; do\n"
	"      q=${d#/proc/}\n"
	"      case $k in *\" $q \"*) continue;; esac\n"
	"      read -r l <\"$d/stat\" 2>/dev/null || continue\n"
	"      set -- ${l##*) }\n"
	"      case $k in *\" $2 \"*|*\" $3 \"*|*\" $4 \"*) k=\"$k$q \"; c=1;; esac\n"
	"    done\n"
	"  done\n"
	"}\n"
	"collect; kill -STOP $k 2>/dev/null; collect; kill -KILL $k 2>/dev/null\n"
	"rm -f \"$f\"\n";

/* Appends s as one single-quoted sh word. */
static void sh_quote(struct buf *b, const char *s)
{
	buf_puts(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			buf_puts(b, "'\\''");
		else
			buf_append(b, s, 1);
	}
	buf_puts(b, "'");
}

/* How the wrapped command gets its stdin. */
enum in_mode { IN_NONE, IN_STREAM, IN_COUNTED };

/* The script of a wrapped exec (see the top of this file): optional pid file, environment,
 * working directory, then the command with its stdin. */
static char *exec_script(const struct sbx_exec *x, const char *pidfile, enum in_mode in,
			 int64_t count)
{
	struct buf b = {0};
	size_t i;

	buf_puts(&b, "unset s\n");
	if (pidfile) {
		buf_puts(&b, "f=");
		sh_quote(&b, pidfile);
		buf_puts(&b, "; echo $$ >\"$f\"\n");
		/* The command leads a new session the kill script can find; setsid does not fork,
		 * as a child of a shell without job control is no process group leader. */
		buf_puts(&b, "S=; command -v setsid >/dev/null 2>&1 && S=setsid\n");
	}
	for (i = 0; x->env && x->env[i]; i++) {
		buf_puts(&b, "export ");
		sh_quote(&b, x->env[i]);
		buf_puts(&b, "\n");
	}
	if (x->workdir) {
		buf_puts(&b, "cd ");
		sh_quote(&b, x->workdir);
		buf_puts(&b, " || exit 1\n");
	}
	buf_puts(&b, "set --");
	for (i = 0; x->argv[i]; i++) {
		buf_puts(&b, " ");
		sh_quote(&b, x->argv[i]);
	}
	buf_puts(&b, "\n");
	if (in == IN_COUNTED)
		buf_printf(&b, "head -c %lld | %s\"$@\"\n", (long long)count, pidfile ? "$S " : "");
	else if (pidfile)
		buf_printf(&b, "$S \"$@\"%s\n", in == IN_NONE ? " </dev/null" : "");
	else
		buf_printf(&b, "exec \"$@\"%s\n", in == IN_NONE ? " </dev/null" : "");
	if (pidfile)
		buf_puts(&b, "r=$?; rm -f \"$f\"; exit $r\n");
	else if (in == IN_COUNTED)
		buf_puts(&b, "exit $?\n");
	buf_puts(&b, KB_SCRIPT_END);
	return buf_steal(&b);
}

/* True when fd gives no input at all: /dev/null, or a regular file already at its end. */
static bool input_empty(int fd)
{
	struct stat st, null;
	off_t pos;

	if (fstat(fd, &st) < 0)
		return false;
	if (S_ISCHR(st.st_mode))
		return stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) && st.st_rdev == null.st_rdev;
	if (S_ISREG(st.st_mode))
		return (pos = lseek(fd, 0, SEEK_CUR)) >= 0 && pos >= st.st_size;
	return false;
}

/* The per-server file remembering which subprotocol the server chose last time. It lives in
 * <state root>/.kube/: a dot name can never be a namespace of the local backend. */
static char *proto_cache(const char *server)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	char hex[33], *root, *p;
	int i;

	SHA256((const unsigned char *)server, strlen(server), md);
	for (i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	if ((root = paths_state_root(NULL)) == NULL)
		return NULL;
	p = xasprintf("%s/.kube", root);
	free(root);
	if (paths_mkdirs(p, 0700, NULL) < 0) {
		free(p);
		return NULL;
	}
	root = p;
	p = xasprintf("%s/%s.protocol", root, hex);
	free(root);
	return p;
}

static bool proto_known_v5(const char *cache)
{
	char buf[64] = "";
	FILE *f = cache ? fopen(cache, "re") : NULL;

	if (f == NULL)
		return false;
	if (fgets(buf, sizeof buf, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	return strncmp(buf, KUBEEXEC_V5, strlen(KUBEEXEC_V5)) == 0;
}

static void proto_remember(const char *cache, const char *proto)
{
	char *tmp;
	FILE *f;

	if (cache == NULL || proto[0] == '\0' || proto_known_v5(cache) == (strcmp(proto, KUBEEXEC_V5) == 0))
		return;
	tmp = xasprintf("%s.%d", cache, (int)getpid());
	if ((f = fopen(tmp, "we")) != NULL) {
		fprintf(f, "%s\n", proto);
		if (fclose(f) == 0)
			rename(tmp, cache);
		else
			unlink(tmp);
	}
	free(tmp);
}

/* Copies piped stdin into an unlinked temporary file; returns its fd (at offset 0). */
static int spool(int in_fd, int64_t *size, struct sbx_err *e)
{
	const char *td = getenv("TMPDIR");
	char *tmpl = xasprintf("%s/sbx-stdin.XXXXXX", td && *td ? td : "/tmp");
	char chunk[65536];
	int fd = mkostemp(tmpl, O_CLOEXEC);
	int64_t total = 0;

	if (fd < 0) {
		err_sys(e, errno, "cannot create a temporary file for stdin in %s", td && *td ? td : "/tmp");
		free(tmpl);
		return -1;
	}
	unlink(tmpl);
	free(tmpl);
	for (;;) {
		ssize_t n = read(in_fd, chunk, sizeof chunk), w = 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_sys(e, errno, "cannot read stdin");
			goto fail;
		}
		if (n == 0)
			break;
		total += n;
		if (total > KB_SPOOL_MAX) {
			err_set(e, SBX_EINVAL, "stdin is larger than %lld bytes, too large to copy for a v4.channel.k8s.io exec",
				(long long)KB_SPOOL_MAX);
			goto fail;
		}
		while (w < n) {
			ssize_t k = write(fd, chunk + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				err_sys(e, errno, "cannot copy stdin to a temporary file");
				goto fail;
			}
			w += k;
		}
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		err_sys(e, errno, "cannot rewind the stdin copy");
		goto fail;
	}
	*size = total;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Runs the kill script in the sandbox for pid file f (best effort). */
static void kill_remote(struct kubeconfig *kc, const struct sbx_backend *b, const char *pod,
			const char *f, const char *protos)
{
	struct buf script = {0};
	char count[32];
	char *argv[] = {"sh", "-c", (char *)boot_script, count, NULL};
	struct kubeexec_req req = {
		.kc = kc, .namespace = b->namespace, .pod = pod, .container = KB_CONTAINER,
		.argv = argv, .in_fd = -1, .out_fd = -1, .err_fd = -1, .cancel_fd = -1,
		.deadline_ns = time_mono_ns() + KB_KILL_TIMEOUT_NS, .protocols = protos,
	};
	struct kubeexec_result res;
	struct sbx_err ignored;

	buf_puts(&script, "exec </dev/null\nf=");
	sh_quote(&script, f);
	buf_printf(&script, "\n%s%s", kill_body, KB_SCRIPT_END);
	snprintf(count, sizeof count, "%zu", script.len);
	req.in_prefix = script.data;
	req.in_prefix_len = script.len;
	kubeexec_run(&req, &res, &ignored);
	buf_free(&script);
}

/* One exec attempt. Returns 0 or -1, or 2 when the server chose v4 for a stream that needs
 * v5: nothing ran, and the caller tries again with counted stdin (counted_only). */
static int exec_once(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
		     struct sbx_exec_result *r, bool counted_only, struct sbx_err *e)
{
	struct kubeapi *api = kb_api(b, e);
	struct kubeexec_req req;
	struct kubeexec_result res;
	const char *env_protos = getenv("SBX_KUBE_EXEC_PROTOCOL");
	const char *protos = KUBEEXEC_V5 "," KUBEEXEC_V4;
	char *cache = NULL, *script = NULL, *rawpath = NULL, pidfile[64] = "", count[32];
	char *boot[] = {"sh", "-c", (char *)boot_script, count, NULL};
	char *url_argv[] = {"sh", "-c", (char *)url_boot, NULL, NULL};
	bool need_kill = x->timeout_ns > 0 || x->cancel_fd >= 0, v4_possible, wrap;
	int in_fd = x->in_fd >= 0 && !input_empty(x->in_fd) ? x->in_fd : -1, spooled = -1, rc = -1;
	enum in_mode in = in_fd >= 0 ? IN_STREAM : IN_NONE;
	int64_t size = 0;

	if (api == NULL)
		return -1;
	if (env_protos && strcmp(env_protos, "v4") == 0)
		protos = KUBEEXEC_V4;
	else if (env_protos && strcmp(env_protos, "v5") == 0)
		protos = KUBEEXEC_V5;
	cache = proto_cache(kubeapi_config(api)->server);
	v4_possible = counted_only || (strstr(protos, KUBEEXEC_V4) &&
				       !(strstr(protos, KUBEEXEC_V5) && proto_known_v5(cache)));
	if (in_fd >= 0 && v4_possible) {
		/* Without stdin half-close the remote side must know the byte count. */
		struct stat sb;
		off_t pos = lseek(in_fd, 0, SEEK_CUR);
		if (fstat(in_fd, &sb) == 0 && S_ISREG(sb.st_mode) && pos >= 0) {
			size = (int64_t)sb.st_size - (int64_t)pos;
			if (size < 0)
				size = 0;
		} else {
			if ((spooled = spool(in_fd, &size, e)) < 0)
				goto out;
			in_fd = spooled;
		}
		in = IN_COUNTED;
	}
	if (need_kill) {
		unsigned char rnd[12];
		size_t i;
		if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
			err_sys(e, errno, "getrandom");
			goto out;
		}
		strcpy(pidfile, "/tmp/.sbx-exec-");
		for (i = 0; i < sizeof rnd; i++)
			snprintf(pidfile + strlen(pidfile), 3, "%02x", rnd[i]);
	}
	rawpath = kubeexec_path(b->namespace, name, KB_CONTAINER, x->argv, in_fd >= 0);
	/* Streamed stdin is always wrapped: should the server choose v4 after all, the command
	 * has not started when the connection is dropped before its script. */
	wrap = need_kill || in != IN_NONE || x->workdir || (x->env && x->env[0]) || rawpath == NULL;
	memset(&req, 0, sizeof req);
	req.kc = kubeapi_config(api);
	req.namespace = b->namespace;
	req.pod = name;
	req.container = KB_CONTAINER;
	req.argv = x->argv;
	if (wrap) {
		char *urlpath = NULL;
		script = exec_script(x, need_kill ? pidfile : NULL, in, size);
		if (strlen(script) > KB_SCRIPT_MAX) {
			err_set(e, SBX_EINVAL, "the command line and environment are larger than %d bytes",
				KB_SCRIPT_MAX);
			goto out;
		}
		/* In the URL when it fits, sparing a process; never for streamed stdin, so that a
		 * server choosing v4 after all finds nothing started when it is dropped. */
		url_argv[3] = script;
		if (in != IN_STREAM &&
		    (urlpath = kubeexec_path(b->namespace, name, KB_CONTAINER, url_argv, in_fd >= 0))) {
			req.argv = url_argv;
		} else {
			snprintf(count, sizeof count, "%zu", strlen(script));
			req.argv = boot;
			req.in_prefix = script;
			req.in_prefix_len = strlen(script);
		}
		free(urlpath);
	}
	req.in_fd = in_fd;
	req.out_fd = x->out_fd;
	req.err_fd = x->err_fd;
	req.deadline_ns = x->timeout_ns > 0 ? time_mono_ns() + x->timeout_ns : 0;
	req.cancel_fd = x->cancel_fd;
	req.protocols = protos;
	req.require_v5 = in == IN_STREAM;
	if (kubeexec_run(&req, &res, e) < 0) {
		/* A broken stream leaves the command running: stop it like a timeout would. */
		if (res.established && need_kill)
			kill_remote(req.kc, b, name, pidfile, protos);
		if (e->code == SBX_ENOTFOUND)
			err_set(e, SBX_ENOTFOUND, "sandbox %s not found in namespace %s (no pod %s)", name,
				b->namespace, name);
		else
			err_prefix(e, "kubernetes exec failed");
		goto out;
	}
	proto_remember(cache, res.protocol);
	if (res.wrong_protocol) {
		rc = 2;
		goto out;
	}
	if (res.timed_out || res.canceled) {
		if (need_kill)
			kill_remote(req.kc, b, name, pidfile, protos);
		r->timed_out = res.timed_out;
		r->canceled = res.canceled;
		r->exit_code = res.timed_out ? 124 : 130;
		rc = 0;
		goto out;
	}
	if (res.failure) {
		/* The runtime could not start the command: say so where the command's errors go. */
		bool nf = strstr(res.msg, "not found") || strstr(res.msg, "no such file");
		if (x->err_fd >= 0) {
			char *m = xasprintf("%s\n", res.msg);
			ssize_t w = write(x->err_fd, m, strlen(m));
			(void)w;
			free(m);
		}
		r->exit_code = nf ? 127 : 126;
		rc = 0;
		goto out;
	}
	r->exit_code = res.exit_code;
	rc = 0;
out:
	if (spooled >= 0)
		close(spooled);
	free(rawpath);
	free(script);
	free(cache);
	return rc;
}

static int k_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
		  struct sbx_exec_result *r, struct sbx_err *e)
{
	int rc = exec_once(b, name, x, r, false, e);

	if (rc == 2)
		rc = exec_once(b, name, x, r, true, e);
	if (rc == 2)
		rc = err_set(e, SBX_EIO, "kubernetes exec failed: the server keeps choosing %s for a stream that needs %s",
			     KUBEEXEC_V4, KUBEEXEC_V5);
	return rc;
}

static void k_close(struct sbx_backend *b)
{
	struct kstate *k = b->priv;

	if (k == NULL)
		return;
	kubeapi_close(k->api);
	free(k);
	b->priv = NULL;
}

const struct backend_ops kube_backend_ops = {
	.name = "kubernetes",
	.create = k_create,
	.exec = k_exec,
	.touch = k_touch,
	.remove = k_remove,
	.get = k_get,
	.list = k_list,
	.home_path = NULL,
	.close = k_close,
};
