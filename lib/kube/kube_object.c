/* kube_object.c — the Sandbox object of the kubernetes backend: the one sbx posts (upstream's,
 * plus sbx's labels, a pod template meeting Pod Security "restricted", the RuntimeClass, the
 * limit flags as resources, the home as working directory) and what sbx reads back from one
 * (the handle, the limits in force, whether it can be reused for a spec, readiness). */
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil.h"
#include "xalloc.h"

const char *kb_image_of(const struct sbx_spec *s)
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

struct json_object *kb_strs(const char *const *v)
{
	struct json_object *a = json_object_new_array();

	for (; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
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
	jset(caps, "drop", kb_strs(all));
	if (s->run_as_root)
		jset(caps, "add", kb_strs(root_caps));
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
	struct json_object *c = jsonfield_path(o, JPATH("spec", "podTemplate", "spec", "containers", "0"));
	int64_t v;

	memset(l, 0, sizeof *l);
	if (jsonfield_path(c, JPATH("resources", "limits")) == NULL)
		return;
	l->enforced = true;
	if ((v = quantity(jsonfield_path_str(c, JPATH("resources", "limits", "memory")), false)) > 0)
		l->memory = v;
	if ((v = quantity(jsonfield_path_str(c, JPATH("resources", "limits", "cpu")), true)) > 0)
		l->cpus_milli = v;
	if ((v = quantity(jsonfield_path_str(c, JPATH("resources", "limits", "ephemeral-storage")), false)) > 0)
		l->disk = v;
}

/* The labels of a Sandbox's pod and of its NetworkPolicy: sbx's, and which Sandbox. */
struct json_object *kb_instance_labels(const char *name)
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

static struct json_object *home_claim_template(const struct sbx_spec *s);

/* The Sandbox as upstream creates it (upstream-behaviour.md §3.1), plus our labels (on the
 * Sandbox and on its pod, which its NetworkPolicy selects), the container's workingDir (the
 * home: commands start there), the securityContexts above, the RuntimeClass, and with a
 * read-only root filesystem an emptyDir of its own at /tmp. */
struct json_object *kb_object(const char *ver, const char *ns, const struct sbx_spec *s)
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
	jset(pmd, "labels", kb_instance_labels(s->name));
	jset(pt, "metadata", pmd);
	jset(ps, "automountServiceAccountToken", json_object_new_boolean(0));
	jset(ps, "restartPolicy", json_object_new_string("Never"));
	if (s->runtime_class[0])
		jset(ps, "runtimeClassName", json_object_new_string(s->runtime_class));
	jset(c, "image", json_object_new_string(kb_image_of(s)));
	json_object_array_add(cmd, json_object_new_string("sleep"));
	json_object_array_add(cmd, json_object_new_string("infinity"));
	jset(c, "command", cmd);
	jset(c, "workingDir", json_object_new_string(s->homedir));
	jset(ev, "value", json_object_new_string(s->homedir));
	json_object_array_add(env, ev);
	jset(c, "env", env);
	json_object_array_add(vms, mount("home", s->homedir));
	disk = s->limits.enforced ? s->limits.disk : 0;
	/* -idle pause: the home is the claim the controller makes from the template below (its
	 * pod gets a volume "home" for it), so it outlives a suspended pod. */
	if (!kb_idle_pause(s))
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
	/* -idle pause: the shutdown time tears down the pod and keeps the Sandbox and its claim
	 * (kube_suspend.c: sbx counts it as paused). */
	jset(spec, "shutdownPolicy", json_object_new_string(kb_idle_pause(s) ? "Retain" : "Delete"));
	if (kb_idle_pause(s)) {
		char ttl[32];
		snprintf(ttl, sizeof ttl, "%lld", (long long)(s->ttl_ns / 1000000000));
		jset(annotations, KB_TTL_KEY, json_object_new_string(ttl));
		snprintf(ttl, sizeof ttl, "%lld", (long long)(s->paused_ttl / 1000000000));
		jset(annotations, KB_PAUSED_TTL_KEY, json_object_new_string(ttl));
		jset(spec, "volumeClaimTemplates", home_claim_template(s));
	}
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

bool kb_cond_true(struct json_object *o, const char *type)
{
	struct json_object *conds = jsonfield_path(o, JPATH("status", "conditions"));
	size_t i;

	if (conds == NULL || !json_object_is_type(conds, json_type_array))
		return false;
	for (i = 0; i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = jsonfield_path_str(c, JPATH("type")), *st = jsonfield_path_str(c, JPATH("status"));
		if (t && st && strcmp(t, type) == 0 && strcmp(st, "True") == 0)
			return true;
	}
	return false;
}

bool kb_is_ready(struct json_object *o)
{
	return kb_cond_true(o, "Ready");
}

bool kb_idle_pause(const struct sbx_spec *s)
{
	return s->idle == SBX_IDLE_PAUSE;
}

int64_t kb_secs_annotation(struct json_object *o, const char *key, int64_t dflt_ns)
{
	const char *s = jsonfield_path_str(o, JPATH("metadata", "annotations", key));
	char *end;
	long long v = s ? strtoll(s, &end, 10) : 0;

	if (s == NULL || *end || v <= 0 || v > INT64_MAX / 1000000000)
		return dflt_ns;
	return (int64_t)v * 1000000000;
}

int64_t kb_paused_ttl_of(struct json_object *o)
{
	return kb_secs_annotation(o, KB_PAUSED_TTL_KEY, SBX_DEFAULT_PAUSED_TTL_NS);
}

/* The claim template of the home: ReadWriteOnce, as large as -disk (the default disk cap
 * when there is none: a claim needs a size), of -storage-class or the cluster's default. */
static struct json_object *home_claim_template(const struct sbx_spec *s)
{
	struct json_object *t = json_object_new_object(), *md = jnamed(KB_HOME_CLAIM),
			   *spec = json_object_new_object(), *res = json_object_new_object(),
			   *req = json_object_new_object(), *list = json_object_new_array();
	static const char *const rwo[] = {"ReadWriteOnce", NULL};
	int64_t size = s->limits.enforced && s->limits.disk > 0 ? s->limits.disk : SBX_DEFAULT_DISK;

	jset(md, "labels", kb_instance_labels(s->name));
	jset(t, "metadata", md);
	jset(spec, "accessModes", kb_strs(rwo));
	jset(req, "storage", qbytes(size));
	jset(res, "requests", req);
	jset(spec, "resources", res);
	if (s->storage_class[0])
		jset(spec, "storageClassName", json_object_new_string(s->storage_class));
	jset(t, "spec", spec);
	json_object_array_add(list, t);
	return list;
}

struct json_object *kb_home_template(struct json_object *o)
{
	struct json_object *ts = jsonfield_path(o, JPATH("spec", "volumeClaimTemplates"));

	for (size_t i = 0; ts && json_object_is_type(ts, json_type_array) &&
			   i < json_object_array_length(ts); i++) {
		struct json_object *t = json_object_array_get_idx(ts, i);
		const char *n = jsonfield_path_str(t, JPATH("metadata", "name"));
		if (n && strcmp(n, KB_HOME_CLAIM) == 0)
			return t;
	}
	return NULL;
}

static const char *home_of(struct json_object *o)
{
	struct json_object *env = jsonfield_path(o, JPATH("spec", "podTemplate", "spec", "containers", "0", "env"));
	size_t i;

	for (i = 0; env && json_object_is_type(env, json_type_array) && i < json_object_array_length(env); i++) {
		struct json_object *v = json_object_array_get_idx(env, i);
		const char *n = jsonfield_path_str(v, JPATH("name"));
		if (n && strcmp(n, "HOME") == 0)
			return jsonfield_path_str(v, JPATH("value"));
	}
	return jsonfield_path_str(o, JPATH("spec", "podTemplate", "spec", "containers", "0", "volumeMounts", "0", "mountPath"));
}

static bool jtrue(struct json_object *o, const char *const *keys)
{
	o = jsonfield_path(o, keys);
	return o && json_object_is_type(o, json_type_boolean) && json_object_get_boolean(o);
}

/* The Pod Security level a Sandbox's pod template meets, as far as sbx shapes it:
 * "restricted" when it runs as non-root, without privilege escalation, capabilities dropped
 * and a RuntimeDefault or Localhost seccomp profile; otherwise "baseline". */
static const char *pod_security_of(struct json_object *o)
{
	struct json_object *ps = jsonfield_path(o, JPATH("spec", "podTemplate", "spec")),
			   *c = jsonfield_path(ps, JPATH("containers", "0")), *drop;
	const char *sp = jsonfield_path_str(ps, JPATH("securityContext", "seccompProfile", "type")),
		   *sc = jsonfield_path_str(c, JPATH("securityContext", "seccompProfile", "type"));
	struct json_object *ape = jsonfield_path(c, JPATH("securityContext", "allowPrivilegeEscalation"));
	bool all = false;

	drop = jsonfield_path(c, JPATH("securityContext", "capabilities", "drop"));
	for (size_t i = 0; drop && json_object_is_type(drop, json_type_array) &&
			   i < json_object_array_length(drop); i++) {
		const char *d = json_object_get_string(json_object_array_get_idx(drop, i));
		all |= d && strcmp(d, "ALL") == 0;	/* a null element is no capability */
	}
	if (!sc)
		sc = sp;
	if ((jtrue(ps, JPATH("securityContext", "runAsNonRoot")) ||
	     jtrue(c, JPATH("securityContext", "runAsNonRoot"))) &&
	    ape && json_object_is_type(ape, json_type_boolean) && !json_object_get_boolean(ape) &&
	    all && sc && (strcmp(sc, "RuntimeDefault") == 0 || strcmp(sc, "Localhost") == 0))
		return "restricted";
	return "baseline";
}

void kb_fill_info(struct sbx_backend *b, struct json_object *o, struct sbx_info *info)
{
	const char *s;
	int64_t ns;

	memset(info, 0, sizeof *info);
	snprintf(info->name, sizeof info->name, "%s", (s = jsonfield_path_str(o, JPATH("metadata", "name"))) ? s : "");
	snprintf(info->namespace, sizeof info->namespace, "%s",
		 (s = jsonfield_path_str(o, JPATH("metadata", "namespace"))) ? s : b->namespace);
	info->backend = "kubernetes";
	snprintf(info->image, sizeof info->image, "%s",
		 (s = jsonfield_path_str(o, JPATH("spec", "podTemplate", "spec", "containers", "0", "image"))) ? s : "");
	snprintf(info->homedir, sizeof info->homedir, "%s", (s = home_of(o)) ? s : "");
	snprintf(info->shutdown_policy, sizeof info->shutdown_policy, "%s",
		 (s = jsonfield_path_str(o, JPATH("spec", "shutdownPolicy"))) ? s : "Retain");
	if ((s = jsonfield_path_str(o, JPATH("spec", "shutdownTime"))) && time_parse_rfc3339(s, &ns) == 0)
		info->shutdown_ns = ns;
	if ((s = jsonfield_path_str(o, JPATH("metadata", "creationTimestamp"))) && time_parse_rfc3339(s, &ns) == 0)
		info->created_ns = ns;
	info->ready = kb_is_ready(o);
	s = jsonfield_path_str(o, JPATH("metadata", "annotations", KB_NETWORK_KEY));
	info->network = s && strcmp(s, "internet") == 0;
	limits_of(o, &info->limits);
	snprintf(info->pod_security, sizeof info->pod_security, "%s", pod_security_of(o));
	snprintf(info->runtime_class, sizeof info->runtime_class, "%s",
		 (s = jsonfield_path_str(o, JPATH("spec", "podTemplate", "spec", "runtimeClassName"))) ? s : "");
	/* Paused or running where it can be paused (its home on a claim) or is suspended. */
	if (kb_home_template(o)) {
		snprintf(info->home_volume, sizeof info->home_volume, KB_HOME_CLAIM "-%s", info->name);
		info->idle = SBX_IDLE_PAUSE;
		info->paused_ttl = kb_paused_ttl_of(o);
	}
	if (kb_home_template(o) || kb_suspended(o))
		snprintf(info->state, sizeof info->state, "%s",
			 kb_suspended(o) || kb_idle_expired(o) ? "paused" : "running");
	info->delete_ns = kb_delete_time(o);
}

const char *kb_home_of(struct json_object *o)
{
	return home_of(o);
}

const char *kb_pod_security_of(struct json_object *o)
{
	return pod_security_of(o);
}

/* Why an existing Sandbox cannot be reused for spec, or NULL if it can. */
char *kb_mismatch(struct json_object *o, const struct sbx_spec *s)
{
	const char *img = jsonfield_path_str(o, JPATH("spec", "podTemplate", "spec", "containers", "0", "image"));
	const char *cn = jsonfield_path_str(o, JPATH("spec", "podTemplate", "spec", "containers", "0", "name"));
	const char *home = home_of(o);

	if (cn == NULL || strcmp(cn, KB_CONTAINER) != 0)
		return xasprintf("it has no \"%s\" container", KB_CONTAINER);
	if (img == NULL || strcmp(img, kb_image_of(s)) != 0)
		return xasprintf("it runs image %s, not %s", img ? img : "(none)", kb_image_of(s));
	const char *want = s->run_as_root ? "baseline" : "restricted", *have = pod_security_of(o);
	const char *rc = jsonfield_path_str(o, JPATH("spec", "podTemplate", "spec", "runtimeClassName"));

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
	const char *net = jsonfield_path_str(o, JPATH("metadata", "annotations", KB_NETWORK_KEY));
	if (strcmp(net ? net : "none", s->network ? "internet" : "none") != 0)
		return xasprintf("its network is %s, not %s", net ? net : "none",
				 s->network ? "internet (-network)" : "none");
	if (strcmp(rc ? rc : "", s->runtime_class) != 0)
		return xasprintf("its RuntimeClass is %s, not %s", rc ? rc : "(none)",
				 s->runtime_class[0] ? s->runtime_class : "(none)");
	struct json_object *ht = kb_home_template(o);
	const char *sc = jsonfield_path_str(ht, JPATH("spec", "storageClassName"));
	if (kb_idle_pause(s) && ht == NULL)
		return xasprintf("its home is an emptyDir, not a PersistentVolumeClaim (it was made "
				 "without -idle pause, so suspending it would lose the home)");
	if (ht && s->storage_class[0] && strcmp(sc ? sc : "", s->storage_class) != 0)
		return xasprintf("its home's claim has StorageClass %s, not %s",
				 sc ? sc : "(the default)", s->storage_class);
	return NULL;
}

/* ---- a Sandbox paused (suspended, or kept past its shutdown time by -idle pause) ---- */

bool kb_spec_suspended(struct json_object *spec)
{
	const char *mode = jsonfield_path_str(spec, JPATH("operatingMode"));
	struct json_object *r = jsonfield_path(spec, JPATH("replicas"));

	return (mode && strcmp(mode, "Suspended") == 0) ||
	       (r && json_object_is_type(r, json_type_int) && json_object_get_int64(r) == 0);
}

bool kb_suspended(struct json_object *o)
{
	return kb_spec_suspended(jsonfield_path(o, JPATH("spec")));
}

static int64_t shutdown_of(struct json_object *o)
{
	const char *s = jsonfield_path_str(o, JPATH("spec", "shutdownTime"));
	int64_t ns;

	return s && time_parse_rfc3339(s, &ns) == 0 ? ns : 0;
}

bool kb_idle_expired(struct json_object *o)
{
	int64_t st = shutdown_of(o);

	return kb_home_template(o) && !kb_suspended(o) && st && st <= time_now_ns();
}

int64_t kb_delete_time(struct json_object *o)
{
	const char *policy = jsonfield_path_str(o, JPATH("spec", "shutdownPolicy"));
	int64_t st = shutdown_of(o);

	if (kb_home_template(o) == NULL || st == 0)
		return 0;
	if (kb_suspended(o) && policy && strcmp(policy, "Delete") == 0)
		return st;
	return st + kb_paused_ttl_of(o);
}

bool kb_overdue(struct json_object *o)
{
	int64_t dt = kb_delete_time(o);

	return dt && dt <= time_now_ns();
}
