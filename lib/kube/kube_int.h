/* kube_int.h — what the parts of the kubernetes backend share (lib/kube/kube_backend.c with
 * kube_object.c, kube_netpol.c, kube_ready.c, kube_wrapexec.c and kube_suspend.c): its
 * state, the Sandbox API's paths and labels. Nothing outside the plugin includes it.
 * Ownership as in lib/backend/backend.h: returned strings and json_object references are
 * the caller's. */
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
/* The claim template of a home on a PersistentVolumeClaim (-idle pause); the claim the
 * controller makes from it is KB_HOME_CLAIM "-" NAME. */
#define KB_HOME_CLAIM "home"
/* On a Sandbox whose home is on a claim: its ttl in seconds, for the shutdown time a resume
 * gives it back. */
#define KB_TTL_KEY "sbx/ttl"
/* On the same Sandbox: its -paused-ttl in seconds (a suspended Sandbox is deleted this long
 * after the pause unless something resumes it). */
#define KB_PAUSED_TTL_KEY "sbx/paused-ttl"
/* Upstream's poll interval, used when a watch is not possible. */
#define KB_POLL_NS (INT64_C(500) * 1000000)

/* b->priv of a kubernetes backend. */
struct kstate {
	struct kubeapi *api;
	char version[16];	/* discovered: v1beta1 or v1alpha1 */
	char xversion[16];	/* the extensions group's, once asked; "-" not served */
};

/* kube_backend.c: the API connection (opened on first use), the served Sandbox version,
 * a Sandbox's path (the collection's when name is NULL), a sleep, and an update: GET, edit
 * of the spec (given the object o it is in; edit returns non-zero to leave it as it is),
 * PUT, retried on 409. */
struct kubeapi *kb_api(struct sbx_backend *b, struct sbx_err *e);
int kb_update(struct sbx_backend *b, const char *ver, const char *name,
	      int (*edit)(struct json_object *o, struct json_object *spec, void *arg), void *arg,
	      struct json_object **out, struct sbx_err *e);
const char *kb_version(struct sbx_backend *b, struct sbx_err *e);
/* The end of the operation under way (time_mono_ns; 0 when it ends): retries stop there. */
void kb_deadline(struct sbx_backend *b, int64_t deadline_ns);
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
/* Whether condition type is True. */
bool kb_cond_true(struct json_object *o, const char *type);
/* Whether spec s asks for a home on a PersistentVolumeClaim, so that the Sandbox can be
 * suspended without losing it (-idle pause). */
bool kb_idle_pause(const struct sbx_spec *s);
/* Annotation key of Sandbox o as a count of seconds, in ns; dflt_ns when absent or bad. The
 * -paused-ttl o was made with (KB_PAUSED_TTL_KEY), else the default. */
int64_t kb_secs_annotation(struct json_object *o, const char *key, int64_t dflt_ns);
int64_t kb_paused_ttl_of(struct json_object *o);
/* The claim template of Sandbox o's home, or NULL when its home is not on a claim. */
struct json_object *kb_home_template(struct json_object *o);
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
/* The same for condition "Suspended" after a pause. */
int kb_wait_suspended(struct sbx_backend *b, const char *ver, const char *name,
		      struct json_object **out, struct sbx_err *e);

/* kube_suspend.c: suspend and resume (backend_ops.pause), whether a Sandbox is suspended
 * (spec or its spec object), its mode set (edit for kb_update), auto-resume (1 when it was
 * suspended and is ready now, 0 when it was not suspended), and why its home's claim keeps
 * its pod from starting (*fatal: not by waiting; NULL: nothing to say; new string). */
int kb_pause(struct sbx_backend *b, const char *name, bool paused, struct sbx_info *info,
	     struct sbx_err *e);
bool kb_suspended(struct json_object *o);
bool kb_spec_suspended(struct json_object *spec);
void kb_set_running(struct json_object *o, struct json_object *spec);
int kb_wake(struct sbx_backend *b, const char *name, struct sbx_err *e);
/* -idle pause on this backend: at its shutdown time the controller tears down the pod of a
 * Sandbox with shutdownPolicy Retain and keeps the Sandbox and its claim; sbx counts such a
 * Sandbox (its home on a claim, not suspended, its shutdown time passed) as paused
 * (kb_idle_expired) and resumes it by giving it a new shutdown time. The controller has no
 * paused ttl: one kept past its shutdown time + -paused-ttl is overdue (kb_overdue), and the
 * next sbx call that reads it deletes it (kb_delete_overdue: SBX_ENOTFOUND, as if gone). A
 * suspended one (sbx-pause) has shutdownPolicy Delete and its shutdown time at the pause +
 * -paused-ttl instead: the controller deletes it then. */
bool kb_idle_expired(struct json_object *o);
bool kb_overdue(struct json_object *o);
int kb_delete_overdue(struct sbx_backend *b, const char *name, struct sbx_err *e);
/* When a paused Sandbox o is deleted (0: not paused, or not by sbx's -idle pause). */
int64_t kb_delete_time(struct json_object *o);
char *kb_claims_state(struct sbx_backend *b, struct json_object *o, bool *fatal);

/* kube_object.c, for a SandboxTemplate as for a Sandbox (both have spec.podTemplate): the
 * home its first container gets, and the Pod Security level its pod meets. */
const char *kb_home_of(struct json_object *o);
const char *kb_pod_security_of(struct json_object *o);

/* kube_claim.c: a sandbox claimed from a SandboxWarmPool (-warm-pool): a SandboxClaim named
 * as the sandbox, bound to a Sandbox of another name whose pod runs the commands. create
 * claims and waits; the others return 1 when name is no claim (the caller goes on with a
 * Sandbox of that name), 0 done, -1 error. kb_claim_pod copies the bound Sandbox's name. */
int kb_claim_create(struct sbx_backend *b, const struct sbx_spec *s, struct sbx_info *info,
		    struct sbx_err *e);
int kb_claim_get(struct sbx_backend *b, const char *name, struct sbx_info *info,
		 struct sbx_err *e);
int kb_claim_touch(struct sbx_backend *b, const char *name, int64_t ttl_ns,
		   struct sbx_info *info, struct sbx_err *e);
int kb_claim_remove(struct sbx_backend *b, const char *name, struct sbx_err *e);
int kb_claim_pod(struct sbx_backend *b, const char *name, char *pod, size_t len);
/* Whether Sandbox o is controlled by a SandboxClaim (then the claim owns its expiry). */
bool kb_claimed(struct json_object *o);

/* kube_wrapexec.c: backend_ops.exec. */
int kb_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
	    struct sbx_exec_result *r, struct sbx_err *e);

/* kube_portfwd.c: backend_ops.port (pf: portfwd.h). */
struct portfwd;
int kb_port(struct sbx_backend *b, struct portfwd *pf, int lfd, int cancel_fd,
	    void (*note)(void *, const char *), void *arg, struct sbx_err *e);

#endif
