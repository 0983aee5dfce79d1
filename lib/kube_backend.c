/* kube_backend.c — sandboxes as agents.x-k8s.io Sandbox resources, made as upstream makes
 * them plus sbx's labels and confinement and a NetworkPolicy of their own; waited for until
 * ready; kept alive by GET+PUT; entered over WebSocket exec. This file is the backend's state
 * and operations; the parts it composes: the object (kube_object.c), its NetworkPolicy
 * (kube_netpol.c), readiness (kube_ready.c), the wrapped-exec design (kube_wrapexec.c). */
#include "kube_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "name.h"
#include "timeutil.h"
#include "xalloc.h"

/* client-go retry.DefaultRetry: 5 steps of 10 ms, jitter 0.1. */
#define KB_UPDATE_TRIES 5
#define KB_UPDATE_BACKOFF_NS (INT64_C(10) * 1000000)

struct kubeapi *kb_api(struct sbx_backend *b, struct sbx_err *e)
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
const char *kb_version(struct sbx_backend *b, struct sbx_err *e)
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

char *kb_path(struct sbx_backend *b, const char *ver, const char *name)
{
	return xasprintf("/apis/" KB_GROUP "/%s/namespaces/%s/sandboxes%s%s", ver, b->namespace,
			 name ? "/" : "", name ? name : "");
}

void kb_nap(int64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
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
	rc = kubeapi_request(kb_conn(b), "GET", path, NULL, &o, e);
	free(path);
	if (rc < 0) {
		if (e->code == SBX_ENOTFOUND)
			err_set(e, SBX_ENOTFOUND, "sandbox %s not found in namespace %s", name, b->namespace);
		return -1;
	}
	kb_fill_info(b, o, info);
	json_object_put(o);
	return 0;
}

/* GET + PUT of spec.shutdownTime, retried on 409 like client-go's RetryOnConflict. */
static int extend(struct sbx_backend *b, const char *ver, const char *name, int64_t ttl_ns,
		  struct json_object **out, struct sbx_err *e)
{
	struct kubeapi *api = kb_conn(b);
	char *path = kb_path(b, ver, name);
	int i, rc = -1;

	for (i = 0; i < KB_UPDATE_TRIES; i++) {
		struct json_object *o = NULL, *spec, *res = NULL;
		char t[TIME_BUFSZ];

		if (i > 0) {
			unsigned r = 0;
			getrandom(&r, sizeof r, 0);
			kb_nap(KB_UPDATE_BACKOFF_NS + (int64_t)((double)KB_UPDATE_BACKOFF_NS * 0.1 * (r % 1000) / 1000.0));
		}
		if (kubeapi_request(api, "GET", path, NULL, &o, e) < 0)
			goto out;
		if (o == NULL || (spec = jsonfield_path(o, JPATH("spec"))) == NULL) {
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
			if (jsonfield_path(*o, JPATH("metadata", "deletionTimestamp"))) {
				if (wait_gone(b, path, e) < 0)
					goto out;
				continue;
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

	if ((ver = kb_version(b, e)) == NULL)
		return err_prefix(e, "failed to create Sandbox");
	snprintf(full, sizeof full, KB_GROUP "/%s", ver);
	if ((rc = find_or_post(b, ver, s, info, &created, &o, e)) < 0) {
		if (rc == -1)
			err_prefix(e, "failed to create Sandbox");
		rc = -1;
		goto out;
	}
	rc = -1;
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
	if (extend(b, ver, s->name, s->ttl_ns, &ready, e) < 0)
		goto out;
	reused = info->reused;
	kb_fill_info(b, ready, info);
	info->reused = reused;
	rc = 0;
out:
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
		/* Names the sbx tools cannot address are not listed. */
		if (n == NULL || name_check(n, NULL) < 0)
			continue;
		kb_fill_info(b, it, &info);
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
	.home_path = NULL,
	.port = kb_port,
	.close = k_close,
};

