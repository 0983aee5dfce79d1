/* kube_state.c — what every part of the Kubernetes backend reaches the cluster through: the API
 * client opened on first use, the Sandbox version served, resource paths, a nap that survives
 * signals. One floor below the backend's operations, readiness and exec. */
#include "kube_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "xalloc.h"

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
