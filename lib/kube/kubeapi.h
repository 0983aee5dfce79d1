/* kubeapi.h — a small Kubernetes REST client over libcurl: JSON requests, watch streams,
 * and error responses (metav1.Status) turned into messages that say what went wrong.
 * Ownership: kubeapi_open's result is freed with kubeapi_close; json_object results are new
 * references the caller puts; the kubeconfig returned by kubeapi_config stays the client's. */
#ifndef SBX_KUBEAPI_H
#define SBX_KUBEAPI_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "kubeconfig.h"

/* A response body larger than this is not one we asked for (lists of a few Sandboxes). */
#define KUBEAPI_BODY_MAX (64 * 1024 * 1024)
/* One watch event is one object; larger lines are refused. */
#define KUBEAPI_EVENT_MAX (4 * 1024 * 1024)
/* Connecting to the API server: longer means it is unreachable. */
#define KUBEAPI_CONNECT_TIMEOUT_MS 10000
/* One ordinary request (not a watch) may take this long. */
#define KUBEAPI_REQUEST_TIMEOUT_MS 60000
/* A 429, or a 5xx with Retry-After, is tried again: at most this many tries in all, each wait
 * as Retry-After asks but at most KUBEAPI_RETRY_WAIT_MAX_MS, all waits within
 * KUBEAPI_RETRY_TOTAL_MS, and never past the operation's deadline (kubeapi_set_deadline). */
#define KUBEAPI_RETRY_TRIES 5
#define KUBEAPI_RETRY_WAIT_MAX_MS 10000
#define KUBEAPI_RETRY_TOTAL_MS 30000

struct kubeapi;

/* Loads the configuration (kubeconfig.h) and prepares a client. */
struct kubeapi *kubeapi_open(struct sbx_err *e);
/* A client over an already loaded configuration (taken over: kc is emptied). */
struct kubeapi *kubeapi_new(struct kubeconfig *kc);
void kubeapi_close(struct kubeapi *api);
struct kubeconfig *kubeapi_config(struct kubeapi *api);
/* The end of the operation the next requests serve (time_mono_ns; 0: none): no retry waits
 * past it. */
void kubeapi_set_deadline(struct kubeapi *api, int64_t deadline_ns);

/* One request. body (may be NULL) is sent as JSON. On 2xx, *out (if out is not NULL) gets the
 * parsed response (NULL when empty). 429, and 5xx with Retry-After, are tried again (bounded,
 * see KUBEAPI_RETRY_TRIES, and within the deadline). Other statuses become errors: 404 SBX_ENOTFOUND, 409
 * SBX_ECONFLICT, 401/403 SBX_EPERM, 422/400 SBX_EINVAL, unreachable SBX_EUNAVAIL. */
int kubeapi_request(struct kubeapi *api, const char *method, const char *path,
		    struct json_object *body, struct json_object **out, struct sbx_err *e);

/* A PATCH with body patch in media type ctype ("application/json-patch+json",
 * "application/merge-patch+json"); otherwise as kubeapi_request. */
int kubeapi_patch(struct kubeapi *api, const char *path, const char *ctype,
		  struct json_object *patch, struct json_object **out, struct sbx_err *e);

/* Event callback for kubeapi_watch: type is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
 * Returns 1 to stop watching, 0 to go on. */
typedef int (*kubeapi_watch_fn)(const char *type, struct json_object *obj, void *arg);
/* Streams a watch (path includes ?watch=1&...). Returns 1 when fn stopped it, 0 when the
 * stream ended or timeout_ms passed, -1 on error (the caller may fall back to polling). */
int kubeapi_watch(struct kubeapi *api, const char *path, int64_t timeout_ms, kubeapi_watch_fn fn,
		  void *arg, struct sbx_err *e);

/* Turns a non-2xx response into an error (exported for tests). */
int kubeapi_status_error(long http, const char *body, size_t len, const char *method,
			 const char *path, struct sbx_err *e);
/* RBAC terms for a request: verb (get, list, watch, create, update, delete), resource
 * ("sandboxes.agents.x-k8s.io", "pods/exec") and namespace ("" when cluster-wide). */
void kubeapi_describe(const char *method, const char *path, char *verb, size_t verb_len,
		      char *resource, size_t res_len, char *ns, size_t ns_len);
/* Percent-encodes a query value. Caller frees. */
char *kubeapi_escape(const char *s);

#endif
