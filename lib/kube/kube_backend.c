/* kube_backend.c — sandboxes as agents.x-k8s.io Sandbox resources, made as upstream makes
 * them plus sbx's labels and confinement and a NetworkPolicy of their own; waited for until
 * ready; kept alive by GET+PUT; entered over WebSocket exec. This file is the backend's state
 * and operations; the parts it composes: the object (kube_object.c), its NetworkPolicy
 * (kube_netpol.c), readiness (kube_ready.c), the wrapped-exec design (kube_wrapexec.c),
 * suspend and resume (kube_suspend.c). */
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "name.h"
#include "timeutil.h"
#include "xalloc.h"


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
	rc = kubeapi_request(kb_conn(b), "GET", path, NULL, &o, e);
	free(path);
	if ((rc < 0 && e->code == SBX_ENOTFOUND) || (rc == 0 && kb_claimed(o))) {
		/* a sandbox claimed from a warm pool: its claim tells */
		struct sbx_err ce;
		int c = kb_claim_get(b, name, info, &ce);
		if (c <= 0) {
			json_object_put(o);
			if (c < 0)
				*e = ce;
			return c;
		}
	}
	if (rc < 0) {
		if (e->code == SBX_ENOTFOUND)
			err_set(e, SBX_ENOTFOUND, "sandbox %s not found in namespace %s", name, b->namespace);
		return -1;
	}
	kb_fill_info(b, o, info);
	json_object_put(o);
	return 0;
}

/* What extend does to a spec: the shutdown time, and a paused Sandbox (suspended, or kept at
 * its shutdown time by -idle pause) set running: every use of a sandbox resumes it first. One
 * paused past its -paused-ttl is left as it is (overdue: the caller deletes it). */
struct extension {
	int64_t ttl_ns;
	bool woke, overdue, claimed;
};

static int extend_spec(struct json_object *o, struct json_object *spec, void *arg)
{
	struct extension *x = arg;
	char t[TIME_BUFSZ];

	if ((x->claimed = kb_claimed(o)) || (x->overdue = kb_overdue(o)))
		return 1;
	x->woke = kb_suspended(o) || kb_idle_expired(o);
	json_object_object_add(spec, "shutdownTime",
			       json_object_new_string(time_rfc3339(time_now_ns() + x->ttl_ns, t, sizeof t)));
	if (x->woke)
		kb_set_running(o, spec);
	return 0;
}

static struct json_object *patch_op(const char *op, const char *path, struct json_object *value)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "op", json_object_new_string(op));
	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "value", value);
	return o;
}

/* The common case in one request: a JSON patch moving spec.shutdownTime, whose tests (in the
 * same patch, applied all or nothing) make sure the Sandbox keeps its home on the pod's
 * emptyDir and is deleted at its shutdown time (no -idle pause: nothing to resume, nothing
 * overdue that moving the time would hide). A merge patch could not carry that condition.
 * 0 done (*out), 1 the object must be read (kb_update: a Sandbox of -idle pause, one
 * suspended, or a Role without "patch"), -1 error. */
static int patch_shutdown(struct sbx_backend *b, const char *ver, const char *name,
			  int64_t ttl_ns, struct json_object **out, struct sbx_err *e)
{
	struct json_object *ops = json_object_new_array(), *res = NULL;
	char t[TIME_BUFSZ], *path = kb_path(b, ver, name);
	int rc;

	json_object_array_add(ops, patch_op("test", "/spec/podTemplate/spec/volumes/0/name",
					    json_object_new_string("home")));
	json_object_array_add(ops, patch_op("test", "/spec/shutdownPolicy", json_object_new_string("Delete")));
	json_object_array_add(ops, patch_op("add", "/spec/shutdownTime",
					    json_object_new_string(time_rfc3339(time_now_ns() + ttl_ns, t, sizeof t))));
	rc = kubeapi_patch(kb_conn(b), path, "application/json-patch+json", ops, &res, e);
	json_object_put(ops);
	free(path);
	if (rc == 0 && res != NULL && !kb_suspended(res)) {
		*out = res;
		return 0;
	}
	json_object_put(res);
	if (rc == 0 || e->code == SBX_EINVAL || e->code == SBX_EPERM || e->code == SBX_ECONFLICT)
		return 1;	/* a test failed, or the Role allows only "update" */
	if (e->code == SBX_ENOTFOUND)
		err_set(e, SBX_ENOTFOUND, "sandbox %s not found in namespace %s", name, b->namespace);
	return -1;
}

/* Moves spec.shutdownTime to now + ttl and resumes a paused Sandbox; *woke (may be NULL)
 * says whether it was paused (then it is not ready yet). One paused past its -paused-ttl is
 * deleted instead: SBX_ENOTFOUND, as if it had gone by itself. One a SandboxClaim controls is
 * left as it is: 2 (the claim owns its expiry). */
static int extend(struct sbx_backend *b, const char *ver, const char *name, int64_t ttl_ns,
		  struct json_object **out, bool *woke, struct sbx_err *e)
{
	struct extension x = {.ttl_ns = ttl_ns};
	int rc = patch_shutdown(b, ver, name, ttl_ns, out, e);

	if (woke)
		*woke = false;
	if (rc <= 0)
		return rc;
	*out = NULL;
	rc = kb_update(b, ver, name, extend_spec, &x, out, e);

	if (woke)
		*woke = x.woke;
	if (rc == 0 && x.claimed) {
		json_object_put(*out);
		*out = NULL;
		return 2;
	}
	if (rc == 0 && x.overdue) {
		json_object_put(*out);
		*out = NULL;
		return kb_delete_overdue(b, name, e);
	}
	return rc;
}

static int k_touch(struct sbx_backend *b, const char *name, int64_t ttl_ns, struct sbx_info *info,
		   struct sbx_err *e)
{
	const char *ver = kb_version(b, e);
	struct json_object *o = NULL;
	struct sbx_err ce;
	bool woke;
	int rc;

	if (ver == NULL)
		return -1;
	rc = extend(b, ver, name, ttl_ns, &o, &woke, e);
	if ((rc < 0 && e->code == SBX_ENOTFOUND) || rc == 2) {
		/* a sandbox claimed from a warm pool: the claim's shutdownTime moves */
		int c = kb_claim_touch(b, name, ttl_ns, info, &ce);
		if (c <= 0) {
			if (c < 0)
				*e = ce;
			return c;
		}
		if (rc == 2)
			return err_set(e, SBX_EIO, "Sandbox %s is controlled by a SandboxClaim of "
				       "another name", name);
	}
	if (rc < 0)
		return -1;
	if (woke) {	/* auto-resume: back when it is ready again */
		json_object_put(o);
		o = NULL;
		if (kb_wait_ready(b, ver, name, &o, e) < 0)
			return -1;
	}
	kb_fill_info(b, o, info);
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
	/* a sandbox claimed from a warm pool: deleting its claim deletes its Sandbox */
	if ((rc = kb_claim_remove(b, name, e)) <= 0)
		return rc;
	path = kb_path(b, ver, name);
	rc = kubeapi_request(kb_conn(b), "DELETE", path, NULL, NULL, e);
	free(path);
	if (rc < 0 && e->code == SBX_ENOTFOUND)
		rc = 0;	/* already gone: deleting is idempotent */
	if (rc == 0)
		kb_netpol_remove(b, name);
	return rc;
}

/* Waits (bounded) until a Sandbox that is being deleted has gone. */
static int wait_gone(struct sbx_backend *b, const char *path, struct sbx_err *e)
{
	struct kubeapi *api = kb_conn(b);
	int64_t deadline = time_mono_ns() + kb_ready_timeout();

	while (time_mono_ns() < deadline) {
		struct json_object *o = NULL;
		if (kubeapi_request(api, "GET", path, NULL, &o, e) < 0)
			return e->code == SBX_ENOTFOUND ? 0 : -1;
		json_object_put(o);
		kb_nap(KB_POLL_NS);
	}
	return err_set(e, SBX_ETIMEDOUT, "an earlier Sandbox of this name is still being deleted");
}

/* Finds Sandbox s->name (reusable for s: info->reused) or posts a new one (*created); *o
 * gets the object either way. An earlier Sandbox of that name still being deleted is waited
 * for; one made meanwhile by someone else is looked at again. -1 with e on failure, -2 when
 * one of that name exists with another spec (e says how it differs). */
static int find_or_post(struct sbx_backend *b, const char *ver, const struct sbx_spec *s,
			struct sbx_info *info, bool *created, struct json_object **o,
			struct sbx_err *e)
{
	char *path = kb_path(b, ver, s->name), *coll = kb_path(b, ver, NULL), *why = NULL;
	char full[64];
	struct json_object *obj;
	int rc = -1;

	snprintf(full, sizeof full, KB_GROUP "/%s", ver);
	for (int attempt = 0; attempt < 2 && !*created && !info->reused; attempt++) {
		json_object_put(*o);
		*o = NULL;
		if (kubeapi_request(kb_conn(b), "GET", path, NULL, o, e) == 0) {
			if (kb_overdue(*o)) {	/* paused past its -paused-ttl: gone, as it should be */
				if (kube_backend_ops.remove(b, s->name, e) < 0 || wait_gone(b, path, e) < 0)
					goto out;
				continue;
			}
			if (jsonfield_path(*o, JPATH("metadata", "deletionTimestamp"))) {
				if (wait_gone(b, path, e) < 0)
					goto out;
				continue;
			}
			if (kb_claimed(*o)) {
				err_set(e, SBX_EEXIST, "the Sandbox named %s in namespace %s belongs to "
					"a SandboxClaim; give -warm-pool to use the claim, or another name",
					s->name, b->namespace);
				rc = -2;
				goto out;
			}
			if ((why = kb_mismatch(*o, s)) != NULL) {
				err_set(e, SBX_EEXIST, "a Sandbox named %s already exists in namespace %s "
					"with another spec (%s); delete it or use another name", s->name,
					b->namespace, why);
				rc = -2;
				goto out;
			}
			info->reused = true;
			break;
		}
		if (e->code != SBX_ENOTFOUND)
			goto out;
		obj = kb_object(full, b->namespace, s);
		json_object_put(*o);
		*o = NULL;
		*created = kubeapi_request(kb_conn(b), "POST", coll, obj, o, e) == 0;
		json_object_put(obj);
		if (!*created && e->code != SBX_ECONFLICT)	/* AlreadyExists: someone raced us */
			goto out;
	}
	rc = *created || info->reused ? 0 : -1;
out:
	free(why);
	free(coll);
	free(path);
	return rc;
}

static int k_create(struct sbx_backend *b, const struct sbx_spec *s, struct sbx_info *info,
		    struct sbx_err *e)
{
	const char *ver;
	struct json_object *o = NULL, *ready = NULL;
	struct sbx_err ignored;
	bool created = false, reused;
	char full[64];
	int rc = -1;

	kb_deadline(b, time_mono_ns() + kb_ready_timeout());
	if ((ver = kb_version(b, e)) == NULL) {
		kb_deadline(b, 0);
		return err_prefix(e, "failed to create Sandbox");
	}
	if (s->warm_pool[0]) {
		if ((rc = kb_claim_create(b, s, info, e)) < 0)
			err_prefix(e, "failed to claim a Sandbox of warm pool %s", s->warm_pool);
		goto out;
	}
	if (s->storage_class[0] && !kb_idle_pause(s)) {
		err_set(e, SBX_EINVAL, "-storage-class is the class of the home's "
			"PersistentVolumeClaim, which only a sandbox made with -idle pause has "
			"(its home is an emptyDir otherwise)");
		goto out;
	}
	snprintf(full, sizeof full, KB_GROUP "/%s", ver);
	if ((rc = find_or_post(b, ver, s, info, &created, &o, e)) < 0) {
		if (rc == -1)
			err_prefix(e, "failed to create Sandbox");
		rc = -1;
		goto out;
	}
	rc = -1;
	/* A reused Sandbox that is paused is resumed (its home comes back from its volume). */
	if (info->reused && (kb_suspended(o) || kb_idle_expired(o))) {
		if (extend(b, ver, s->name, s->ttl_ns, &ready, NULL, e) < 0)
			goto out;
		json_object_put(ready);
		ready = NULL;
	}
	/* Its NetworkPolicy before anything runs in it (the pod only sleeps until sbx execs). */
	if (kb_netpol_ensure(b, full, s, o, e) < 0) {
		if (created)
			k_remove(b, s->name, &ignored);
		err_prefix(e, "failed to create Sandbox");
		goto out;
	}
	if (kb_wait_ready(b, ver, s->name, &ready, e) < 0) {
		if (created)
			k_remove(b, s->name, &ignored);
		goto out;
	}
	json_object_put(ready);
	ready = NULL;
	/* A reused Sandbox gets a fresh shutdown time, as every later tool call would give it. */
	if (extend(b, ver, s->name, s->ttl_ns, &ready, NULL, e) < 0)
		goto out;
	reused = info->reused;
	kb_fill_info(b, ready, info);
	info->reused = reused;
	rc = 0;
out:
	kb_deadline(b, 0);
	json_object_put(ready);
	json_object_put(o);
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
	if (kubeapi_request(kb_conn(b), "GET", path, NULL, &o, e) < 0)
		goto out;
	items = jsonfield_path(o, JPATH("items"));
	rc = 0;
	for (i = 0; items && json_object_is_type(items, json_type_array) && i < json_object_array_length(items); i++) {
		struct json_object *it = json_object_array_get_idx(items, i);
		const char *n = jsonfield_path_str(it, JPATH("metadata", "name"));
		struct sbx_info info;
		const char *owner = jsonfield_path_str(it, JPATH("metadata", "ownerReferences", "0", "kind"));
		const char *claim = jsonfield_path_str(it, JPATH("metadata", "ownerReferences", "0", "name"));
		/* A warm pool's Sandboxes are nobody's sandbox yet; a claimed one is listed under
		 * its claim's name, the name the sbx tools address it by. */
		if (owner && strcmp(owner, "SandboxWarmPool") == 0)
			continue;
		if (kb_claimed(it) && claim)
			n = claim;
		/* Names the sbx tools cannot address are not listed. */
		if (n == NULL || name_check(n, NULL) < 0)
			continue;
		kb_fill_info(b, it, &info);
		if (strcmp(n, info.name) != 0) {
			snprintf(info.claimed_sandbox, sizeof info.claimed_sandbox, "%s", info.name);
			snprintf(info.name, sizeof info.name, "%s", n);
		}
		if (fn(&info, arg) != 0)
			break;
	}
out:
	json_object_put(o);
	free(path);
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
	.exec = kb_exec,
	.touch = k_touch,
	.remove = k_remove,
	.get = k_get,
	.list = k_list,
	.pause = kb_pause,
	.home_path = NULL,
	.port = kb_port,
	.close = k_close,
};

