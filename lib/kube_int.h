/* kube_int.h — what the parts of the kubernetes backend share (lib/kube_backend.c with
 * kube_object.c, kube_netpol.c, kube_ready.c and kube_wrapexec.c): its state, the Sandbox
 * API's paths and labels. Nothing outside the plugin includes it. Ownership as in
 * lib/backend.h: returned strings and json_object references are the caller's. */
#ifndef SBX_KUBE_INT_H
#define SBX_KUBE_INT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "jsonfield.h"
#include "kubeapi.h"

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
/* Upstream's poll interval, used when a watch is not possible. */
#define KB_POLL_NS (INT64_C(500) * 1000000)

/* b->priv of a kubernetes backend. */
struct kstate {
	struct kubeapi *api;
	char version[16];	/* discovered: v1beta1 or v1alpha1 */
};

/* kube_backend.c: the API connection (opened on first use), the served Sandbox version,
 * a Sandbox's path (the collection's when name is NULL), a sleep. */
struct kubeapi *kb_api(struct sbx_backend *b, struct sbx_err *e);
const char *kb_version(struct sbx_backend *b, struct sbx_err *e);
char *kb_path(struct sbx_backend *b, const char *ver, const char *name);
void kb_nap(int64_t ns);
/* The connection of a backend kb_api has opened. */
static inline struct kubeapi *kb_conn(struct sbx_backend *b)
{
	return ((struct kstate *)b->priv)->api;
}

static inline void jset(struct json_object *o, const char *k, struct json_object *v)
{
	json_object_object_add(o, k, v);
}

/* kube_object.c: the Sandbox sbx posts for spec s (api_version "group/version"), and what it
 * reads from one. */
struct json_object *kb_object(const char *api_version, const char *ns, const struct sbx_spec *s);
const char *kb_image_of(const struct sbx_spec *s);
struct json_object *kb_strs(const char *const *v);
/* The labels of a Sandbox's pod and of its NetworkPolicy: sbx's, and which Sandbox. */
struct json_object *kb_instance_labels(const char *name);
bool kb_is_ready(struct json_object *o);
void kb_fill_info(struct sbx_backend *b, struct json_object *o, struct sbx_info *info);
/* Why an existing Sandbox cannot be reused for spec s, or NULL if it can. */
char *kb_mismatch(struct json_object *o, const struct sbx_spec *s);

/* kube_netpol.c: the NetworkPolicy of a Sandbox made or reused, and its removal. */
int kb_netpol_ensure(struct sbx_backend *b, const char *sandbox_api, const struct sbx_spec *s,
		     struct json_object *sandbox, struct sbx_err *e);
void kb_netpol_remove(struct sbx_backend *b, const char *name);

/* kube_ready.c: how long to wait for readiness, and the wait; *out gets the ready object. */
int64_t kb_ready_timeout(void);
int kb_wait_ready(struct sbx_backend *b, const char *ver, const char *name,
		  struct json_object **out, struct sbx_err *e);

/* kube_wrapexec.c: backend_ops.exec. */
int kb_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
	    struct sbx_exec_result *r, struct sbx_err *e);

/* kube_portfwd.c: backend_ops.port (pf: portfwd.h). */
struct portfwd;
int kb_port(struct sbx_backend *b, struct portfwd *pf, int lfd, int cancel_fd,
	    void (*note)(void *, const char *), void *arg, struct sbx_err *e);

#endif
