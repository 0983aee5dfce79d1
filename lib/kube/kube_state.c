/* kube_state.c — what every part of the Kubernetes backend reaches the cluster through: the API
 * client opened on first use, the Sandbox version served, resource paths, a nap that survives
 * signals. One floor below the backend's operations, readiness and exec. */
#include "kube_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "kubeapi.h"
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

void kb_deadline(struct sbx_backend *b, int64_t deadline_ns)
{
	struct sbx_err ignored;	/* a connection that cannot open is reported by the operation */
	struct kubeapi *api = kb_api(b, &ignored);

	if (api)
		kubeapi_set_deadline(api, deadline_ns);
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

/* GET, edit, PUT of a Sandbox's spec, retried on 409 like client-go's RetryOnConflict. An
 * edit that returns non-zero leaves the object as it is (no PUT; *out gets it). */
int kb_update(struct sbx_backend *b, const char *ver, const char *name,
	      int (*edit)(struct json_object *o, struct json_object *spec, void *arg), void *arg,
	      struct json_object **out, struct sbx_err *e)
{
	struct kubeapi *api = kb_conn(b);
	char *path = kb_path(b, ver, name);
	int i, rc = -1;

	for (i = 0; i < KB_UPDATE_TRIES; i++) {
		struct json_object *o = NULL, *spec, *res = NULL;

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
		if (edit(o, spec, arg) != 0) {
			*out = o;
			rc = 0;
			goto out;
		}
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
