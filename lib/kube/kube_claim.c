/* kube_claim.c — sandboxes claimed from an Agent Sandbox SandboxWarmPool (-warm-pool): the
 * pool and its SandboxTemplate checked before anything is made, a SandboxClaim posted (named
 * as the sandbox, sbx's labels, the claim's own lifecycle), watched until it names its
 * Sandbox and is Ready, as upstream's Python client does; then touch moves the claim's
 * shutdownTime, delete deletes the claim (the controller deletes its Sandbox), and commands go
 * to the bound Sandbox's pod. Group extensions.agents.x-k8s.io, v1beta1 (spec.warmPoolRef),
 * else v1alpha1 (spec.sandboxTemplateRef and spec.warmpool). */
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "timeutil.h"
#include "xalloc.h"

#define KB_XGROUP "extensions.agents.x-k8s.io"
/* A watch of the claim is cut into slices this long, so a broken stream is noticed. */
#define KB_CLAIM_SLICE_NS (INT64_C(5) * 1000000000)

/* The served version of the extensions group ("v1beta1", else "v1alpha1"), or NULL (e says
 * why, SBX_EUNAVAIL when it is not served). */
static const char *xversion(struct sbx_backend *b, struct sbx_err *e)
{
	struct kubeapi *api = kb_api(b, e);
	struct json_object *g = NULL, *vs;
	struct kstate *k;
	bool beta = false, alpha = false;

	if (api == NULL)
		return NULL;
	k = b->priv;
	if (k->xversion[0] == '\0') {
		if (kubeapi_request(api, "GET", "/apis/" KB_XGROUP, NULL, &g, e) < 0 &&
		    e->code != SBX_ENOTFOUND)
			return NULL;
		vs = jsonfield_path(g, JPATH("versions"));
		for (size_t i = 0; vs && json_object_is_type(vs, json_type_array) &&
				   i < json_object_array_length(vs); i++) {
			const char *v = jsonfield_path_str(json_object_array_get_idx(vs, i),
							   JPATH("version"));
			beta |= v && strcmp(v, "v1beta1") == 0;
			alpha |= v && strcmp(v, "v1alpha1") == 0;
		}
		json_object_put(g);
		snprintf(k->xversion, sizeof k->xversion, "%s",
			 beta ? "v1beta1" : alpha ? "v1alpha1" : "-");
	}
	if (strcmp(k->xversion, "-") == 0) {
		err_set(e, SBX_EUNAVAIL, "the API server does not serve %s v1beta1 or v1alpha1 (are "
			"the Agent Sandbox extensions installed?)", KB_XGROUP);
		return NULL;
	}
	return k->xversion;
}

static char *xpath(struct sbx_backend *b, const char *ver, const char *plural, const char *name)
{
	return xasprintf("/apis/" KB_XGROUP "/%s/namespaces/%s/%s%s%s", ver, b->namespace, plural,
			 name ? "/" : "", name ? name : "");
}

/* GET of one extension object; ENOTFOUND when it is not there. */
static int xget(struct sbx_backend *b, const char *ver, const char *plural, const char *name,
		struct json_object **out, struct sbx_err *e)
{
	char *path = xpath(b, ver, plural, name);
	int rc = kubeapi_request(kb_conn(b), "GET", path, NULL, out, e);

	free(path);
	return rc;
}

bool kb_claimed(struct json_object *o)
{
	struct json_object *refs = jsonfield_path(o, JPATH("metadata", "ownerReferences"));

	for (size_t i = 0; refs && json_object_is_type(refs, json_type_array) &&
			   i < json_object_array_length(refs); i++) {
		struct json_object *r = json_object_array_get_idx(refs, i), *c;
		const char *kind = jsonfield_path_str(r, JPATH("kind"));
		if (kind && strcmp(kind, "SandboxClaim") == 0 &&
		    (c = jsonfield_path(r, JPATH("controller"))) && json_object_get_boolean(c))
			return true;
	}
	return false;
}

/* Whether the template's pod has what sbx needs: a container named KB_CONTAINER (exec goes
 * there) first, with the home mounted; a NetworkPolicy the controller manages (sbx makes
 * none for a claim: a second policy could only widen or fight the template's), unless
 * -network says an unconfined pod is meant; the Pod Security level sbx asks for
 * ("restricted", or "baseline" with -run-as-root). */
static int template_check(struct json_object *tpl, const struct sbx_spec *s, const char *pool,
			  struct sbx_err *e)
{
	const char *tname = jsonfield_path_str(tpl, JPATH("metadata", "name"));
	const char *cn = jsonfield_path_str(tpl, JPATH("spec", "podTemplate", "spec", "containers",
						       "0", "name"));
	const char *home = kb_home_of(tpl), *ps = kb_pod_security_of(tpl);
	const char *npm = jsonfield_path_str(tpl, JPATH("spec", "networkPolicyManagement"));
	struct json_object *mounts = jsonfield_path(tpl, JPATH("spec", "podTemplate", "spec",
							       "containers", "0", "volumeMounts"));
	bool mounted = false;

	for (size_t i = 0; home && mounts && json_object_is_type(mounts, json_type_array) &&
			   i < json_object_array_length(mounts); i++) {
		const char *mp = jsonfield_path_str(json_object_array_get_idx(mounts, i),
						    JPATH("mountPath"));
		mounted |= mp && strcmp(mp, home) == 0;
	}
	if (cn == NULL || strcmp(cn, KB_CONTAINER) != 0)
		return err_set(e, SBX_EINVAL, "SandboxTemplate %s of warm pool %s has no \"%s\" "
			       "container first, where sbx runs its commands", tname, pool,
			       KB_CONTAINER);
	if (!mounted)
		return err_set(e, SBX_EINVAL, "SandboxTemplate %s of warm pool %s mounts no volume at "
			       "the home (%s): the first container needs one there (an emptyDir, "
			       "as sbx's own pods have), or HOME set to where one is mounted", tname,
			       pool, home ? home : "no HOME and no mount");
	if (npm && strcmp(npm, "Unmanaged") == 0 && !s->network)
		return err_set(e, SBX_EINVAL, "SandboxTemplate %s of warm pool %s has "
			       "networkPolicyManagement Unmanaged: no NetworkPolicy keeps its pod off "
			       "the network, as a sandbox without -network must be; give -network to "
			       "accept that, or let the controller manage the policy (Managed)",
			       tname, pool);
	if (strcmp(ps, "restricted") != 0 && !s->run_as_root)
		return err_set(e, SBX_EINVAL, "SandboxTemplate %s of warm pool %s is not Pod Security "
			       "\"restricted\" (it must run as non-root, without privilege "
			       "escalation, all capabilities dropped, a RuntimeDefault or Localhost "
			       "seccomp profile); give -run-as-root to accept a \"baseline\" pod",
			       tname, pool);
	return 0;
}

static struct json_object *claim_object(const char *ver, const char *ns, const struct sbx_spec *s,
					const char *tname)
{
	struct json_object *o = json_object_new_object(), *md = json_object_new_object(),
			   *spec = json_object_new_object(), *lc = json_object_new_object();
	char t[TIME_BUFSZ], av[64];

	snprintf(av, sizeof av, KB_XGROUP "/%s", ver);
	jset(o, "apiVersion", json_object_new_string(av));
	jset(o, "kind", json_object_new_string("SandboxClaim"));
	jset(md, "name", json_object_new_string(s->name));
	jset(md, "namespace", json_object_new_string(ns));
	jset(md, "labels", kb_instance_labels(s->name));
	jset(o, "metadata", md);
	if (strcmp(ver, "v1beta1") == 0) {
		struct json_object *ref = json_object_new_object();
		jset(ref, "name", json_object_new_string(s->warm_pool));
		jset(spec, "warmPoolRef", ref);
	} else {
		struct json_object *ref = json_object_new_object();
		jset(ref, "name", json_object_new_string(tname));
		jset(spec, "sandboxTemplateRef", ref);
		jset(spec, "warmpool", json_object_new_string(s->warm_pool));
	}
	jset(lc, "shutdownTime", json_object_new_string(time_rfc3339(time_now_ns() + s->ttl_ns, t,
								    sizeof t)));
	jset(lc, "shutdownPolicy", json_object_new_string("Delete"));
	jset(spec, "lifecycle", lc);
	jset(o, "spec", spec);
	return o;
}

/* What a claim says: bound (its Sandbox's name in *sandbox) and Ready; or stuck: a reason
 * upstream's controller gives when waiting cannot help (a new string in *stuck). */
struct claim_state {
	const char *name;
	char sandbox[SBX_OBJECT_NAME_MAX];
	bool ready, deleted;
	char *stuck, *last;	/* why it cannot become ready; its latest reason and message */
};

static const char *const fatal_reasons[] = {
	"ReconcilerError", "WarmPoolNotFound", "TemplateNotFound", "InvalidMetadata",
	"EnvVarsInjectionRejected", "VolumeClaimTemplatesError", "ClaimExpired", NULL,
};

static void claim_read(struct claim_state *cs, struct json_object *o)
{
	struct json_object *conds = jsonfield_path(o, JPATH("status", "conditions"));
	const char *sb = jsonfield_path_str(o, JPATH("status", "sandbox", "name"));

	snprintf(cs->sandbox, sizeof cs->sandbox, "%s", sb ? sb : "");
	cs->ready = false;
	for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *type = jsonfield_path_str(c, JPATH("type"));
		const char *st = jsonfield_path_str(c, JPATH("status"));
		const char *reason = jsonfield_path_str(c, JPATH("reason"));
		const char *msg = jsonfield_path_str(c, JPATH("message"));
		if (type == NULL || strcmp(type, "Ready") != 0)
			continue;
		cs->ready = st && strcmp(st, "True") == 0;
		free(cs->last);
		cs->last = xasprintf("%s: %s", reason ? reason : "", msg ? msg : "");
		for (const char *const *f = fatal_reasons; !cs->ready && reason && *f; f++)
			if (strcmp(reason, *f) == 0) {
				free(cs->stuck);
				cs->stuck = xstrdup(cs->last);
			}
	}
}

static int on_claim_event(const char *type, struct json_object *obj, void *arg)
{
	struct claim_state *cs = arg;
	const char *n = jsonfield_path_str(obj, JPATH("metadata", "name"));

	if (n == NULL || strcmp(n, cs->name) != 0)
		return 0;
	if (strcmp(type, "DELETED") == 0) {
		cs->deleted = true;
		return 1;
	}
	if (strcmp(type, "ADDED") != 0 && strcmp(type, "MODIFIED") != 0)
		return 0;
	claim_read(cs, obj);
	return (cs->ready && cs->sandbox[0]) || cs->stuck ? 1 : 0;
}

/* Waits (up to the ready timeout) until claim name is bound and Ready: a GET, then a watch
 * from its resourceVersion, in slices; a watch the server refuses turns into polling. */
static int claim_wait(struct sbx_backend *b, const char *ver, const char *name,
		      struct claim_state *cs, struct sbx_err *e)
{
	int64_t limit = kb_ready_timeout(), deadline = time_mono_ns() + limit;
	char *coll = xpath(b, ver, "sandboxclaims", NULL), *sel = xasprintf("metadata.name=%s", name);
	char *esel = kubeapi_escape(sel), dbuf[DURATION_BUFSZ];
	bool polling = getenv("SBX_KUBE_NO_WATCH") != NULL;
	int rc = -1;

	cs->name = name;
	for (;;) {
		struct json_object *o = NULL;
		int64_t left = deadline - time_mono_ns(), slice;
		if (xget(b, ver, "sandboxclaims", name, &o, e) < 0) {
			if (e->code == SBX_ENOTFOUND)
				err_set(e, SBX_ENOTFOUND, "SandboxClaim %s was deleted while waiting for "
					"it to become ready", name);
			goto out;
		}
		claim_read(cs, o);
		if ((cs->ready && cs->sandbox[0]) || cs->stuck || left <= 0) {
			json_object_put(o);
			break;
		}
		slice = left < KB_CLAIM_SLICE_NS ? left : KB_CLAIM_SLICE_NS;
		if (!polling) {
			const char *rv = jsonfield_path_str(o, JPATH("metadata", "resourceVersion"));
			char *wp = xasprintf("%s?watch=1&fieldSelector=%s&resourceVersion=%s"
					     "&timeoutSeconds=%lld", coll, esel, rv ? rv : "",
					     (long long)(slice / 1000000000 + 1));
			struct sbx_err we;
			if (kubeapi_watch(kb_conn(b), wp, slice / 1000000 + 1, on_claim_event, cs, &we) < 0)
				polling = true;
			free(wp);
		} else {
			kb_nap(slice < KB_POLL_NS ? slice : KB_POLL_NS);
		}
		json_object_put(o);
		if (cs->deleted) {
			err_set(e, SBX_ENOTFOUND, "SandboxClaim %s was deleted while waiting for it to "
				"become ready", name);
			goto out;
		}
	}
	if (cs->ready && cs->sandbox[0])
		rc = 0;
	else if (cs->stuck)
		err_set(e, SBX_EIO, "SandboxClaim %s cannot become ready: %s", name, cs->stuck);
	else
		err_set(e, SBX_ETIMEDOUT, "timed out waiting for SandboxClaim %s to become ready "
			"(%s)%s%s", name, duration_format(limit, dbuf, sizeof dbuf),
			cs->last ? ": " : "", cs->last ? cs->last : "");
out:
	free(esel);
	free(sel);
	free(coll);
	return rc;
}

/* info from claim c and its bound Sandbox sb: the Sandbox's pod, the claim's name and expiry. */
static void claim_info(struct sbx_backend *b, struct json_object *c, struct json_object *sb,
		       struct sbx_info *info)
{
	const char *s;
	int64_t ns;

	kb_fill_info(b, sb, info);
	snprintf(info->claimed_sandbox, sizeof info->claimed_sandbox, "%s", info->name);
	snprintf(info->name, sizeof info->name, "%s",
		 (s = jsonfield_path_str(c, JPATH("metadata", "name"))) ? s : "");
	s = jsonfield_path_str(c, JPATH("spec", "warmPoolRef", "name"));
	if (s == NULL)
		s = jsonfield_path_str(c, JPATH("spec", "warmpool"));
	snprintf(info->warm_pool, sizeof info->warm_pool, "%s", s ? s : "");
	info->shutdown_ns = 0;
	if ((s = jsonfield_path_str(c, JPATH("spec", "lifecycle", "shutdownTime"))) &&
	    time_parse_rfc3339(s, &ns) == 0)
		info->shutdown_ns = ns;
	snprintf(info->shutdown_policy, sizeof info->shutdown_policy, "%s",
		 (s = jsonfield_path_str(c, JPATH("spec", "lifecycle", "shutdownPolicy"))) ? s : "Retain");
}

/* Claim c (bound) and its Sandbox as info; -1 when the Sandbox cannot be read. */
static int claim_fill(struct sbx_backend *b, struct json_object *c, struct sbx_info *info,
		      struct sbx_err *e)
{
	const char *sbn = jsonfield_path_str(c, JPATH("status", "sandbox", "name"));
	const char *ver = kb_version(b, e);
	struct json_object *sb = NULL;
	char *path;
	int rc;

	if (ver == NULL)
		return -1;
	if (sbn == NULL)
		return err_set(e, SBX_EIO, "SandboxClaim %s is bound to no Sandbox yet",
			       jsonfield_path_str(c, JPATH("metadata", "name")));
	path = kb_path(b, ver, sbn);
	rc = kubeapi_request(kb_conn(b), "GET", path, NULL, &sb, e);
	free(path);
	if (rc == 0)
		claim_info(b, c, sb, info);
	json_object_put(sb);
	return rc;
}

/* The pool and its template, checked; *tname gets the template's name (new string). */
static int pool_check(struct sbx_backend *b, const char *ver, const struct sbx_spec *s,
		      char **tname, struct sbx_err *e)
{
	struct json_object *pool = NULL, *tpl = NULL;
	const char *t;
	int rc = -1;

	if (xget(b, ver, "sandboxwarmpools", s->warm_pool, &pool, e) < 0) {
		if (e->code == SBX_ENOTFOUND)
			err_set(e, SBX_EINVAL, "SandboxWarmPool %s not found in namespace %s",
				s->warm_pool, b->namespace);
		goto out;
	}
	t = jsonfield_path_str(pool, JPATH("spec", "sandboxTemplateRef", "name"));
	if (t == NULL) {
		err_set(e, SBX_EINVAL, "SandboxWarmPool %s names no SandboxTemplate", s->warm_pool);
		goto out;
	}
	if (xget(b, ver, "sandboxtemplates", t, &tpl, e) < 0) {
		if (e->code == SBX_ENOTFOUND)
			err_set(e, SBX_EINVAL, "SandboxTemplate %s of warm pool %s not found in "
				"namespace %s", t, s->warm_pool, b->namespace);
		goto out;
	}
	if (template_check(tpl, s, s->warm_pool, e) < 0)
		goto out;
	*tname = xstrdup(t);
	rc = 0;
out:
	json_object_put(tpl);
	json_object_put(pool);
	return rc;
}

int kb_claim_create(struct sbx_backend *b, const struct sbx_spec *s, struct sbx_info *info,
		    struct sbx_err *e)
{
	const char *ver = xversion(b, e);
	struct json_object *obj = NULL, *c = NULL;
	struct claim_state cs = {0};
	struct sbx_err ignored;
	char *tname = NULL, *coll = NULL, *path = NULL;
	bool created = false;
	int rc = -1;

	if (ver == NULL || pool_check(b, ver, s, &tname, e) < 0)
		goto out;
	coll = xpath(b, ver, "sandboxclaims", NULL);
	path = xpath(b, ver, "sandboxclaims", s->name);
	obj = claim_object(ver, b->namespace, s, tname);
	created = kubeapi_request(kb_conn(b), "POST", coll, obj, NULL, e) == 0;
	if (!created) {
		const char *p, *q;
		if (e->code != SBX_ECONFLICT || xget(b, ver, "sandboxclaims", s->name, &c, e) < 0)
			goto out;
		p = jsonfield_path_str(c, JPATH("spec", "warmPoolRef", "name"));
		q = jsonfield_path_str(c, JPATH("spec", "warmpool"));
		if (!(p && strcmp(p, s->warm_pool) == 0) && !(q && strcmp(q, s->warm_pool) == 0)) {
			err_set(e, SBX_EEXIST, "a SandboxClaim named %s already exists in namespace %s "
				"and claims from another pool; delete it or use another name",
				s->name, b->namespace);
			goto out;
		}
		json_object_put(c);
		c = NULL;
	}
	if (claim_wait(b, ver, s->name, &cs, e) < 0)
		goto fail;
	if (kb_claim_touch(b, s->name, s->ttl_ns, info, e) != 0)
		goto fail;
	info->reused = !created;
	rc = 0;
	goto out;
fail:
	if (created && kubeapi_request(kb_conn(b), "DELETE", path, NULL, NULL, &ignored) < 0)
		err_prefix(e, "(the SandboxClaim %s could not be deleted)", s->name);
out:
	free(cs.stuck);
	free(cs.last);
	json_object_put(c);
	json_object_put(obj);
	free(path);
	free(coll);
	free(tname);
	return rc;
}

/* Whether a failed request on claim NAME means "no claim of that name": none there, or a
 * Role with no rights on claims (a cluster with the extensions whose users make Sandboxes
 * only: their sandboxes must keep working, and such a Role can have made no claim). */
static bool not_a_claim(const struct sbx_err *e)
{
	return e->code == SBX_ENOTFOUND || e->code == SBX_EPERM;
}

/* The claim of that name (*out), or 1 when there is none (or no extensions API). */
static int claim_lookup(struct sbx_backend *b, const char *name, const char **ver,
			struct json_object **out, struct sbx_err *e)
{
	if ((*ver = xversion(b, e)) == NULL)
		return e->code == SBX_EUNAVAIL ? 1 : -1;
	if (xget(b, *ver, "sandboxclaims", name, out, e) < 0)
		return not_a_claim(e) ? 1 : -1;
	return 0;
}

int kb_claim_get(struct sbx_backend *b, const char *name, struct sbx_info *info,
		 struct sbx_err *e)
{
	struct json_object *c = NULL;
	const char *ver;
	int rc = claim_lookup(b, name, &ver, &c, e);

	if (rc == 0)
		rc = claim_fill(b, c, info, e);
	json_object_put(c);
	return rc;
}

int kb_claim_touch(struct sbx_backend *b, const char *name, int64_t ttl_ns,
		   struct sbx_info *info, struct sbx_err *e)
{
	const char *ver = xversion(b, e);
	struct json_object *patch, *spec, *lc, *c = NULL;
	char t[TIME_BUFSZ], *path;
	int rc;

	if (ver == NULL)
		return e->code == SBX_EUNAVAIL ? 1 : -1;
	patch = json_object_new_object();
	spec = json_object_new_object();
	lc = json_object_new_object();
	jset(lc, "shutdownTime", json_object_new_string(time_rfc3339(time_now_ns() + ttl_ns, t,
								    sizeof t)));
	jset(spec, "lifecycle", lc);
	jset(patch, "spec", spec);
	path = xpath(b, ver, "sandboxclaims", name);
	rc = kubeapi_patch(kb_conn(b), path, "application/merge-patch+json", patch, &c, e);
	free(path);
	json_object_put(patch);
	if (rc < 0)
		rc = not_a_claim(e) ? 1 : -1;
	else
		rc = claim_fill(b, c, info, e);
	json_object_put(c);
	return rc;
}

int kb_claim_remove(struct sbx_backend *b, const char *name, struct sbx_err *e)
{
	const char *ver = xversion(b, e);
	char *path;
	int rc;

	if (ver == NULL)
		return e->code == SBX_EUNAVAIL ? 1 : -1;
	path = xpath(b, ver, "sandboxclaims", name);
	rc = kubeapi_request(kb_conn(b), "DELETE", path, NULL, NULL, e);
	free(path);
	if (rc < 0)
		return not_a_claim(e) ? 1 : -1;
	return 0;	/* sbx makes no NetworkPolicy for a claim: nothing else to remove */
}

int kb_claim_pod(struct sbx_backend *b, const char *name, char *pod, size_t len)
{
	struct json_object *c = NULL;
	struct sbx_err ignored;
	const char *ver, *sbn;
	int rc = claim_lookup(b, name, &ver, &c, &ignored);

	if (rc == 0) {
		sbn = jsonfield_path_str(c, JPATH("status", "sandbox", "name"));
		rc = sbn && strlen(sbn) < len;
		if (rc)
			memcpy(pod, sbn, strlen(sbn) + 1);
	} else {
		rc = 0;
	}
	json_object_put(c);
	return rc;
}
