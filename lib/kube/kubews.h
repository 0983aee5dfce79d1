/* kubews.h — what the Kubernetes WebSocket clients (exec: kubeexec.c, port forwarding:
 * kube_portfwd.c) share: a libwebsockets context trusting the cluster's CA with its client
 * certificate, the bearer token in the upgrade request, and the connection to the API server.
 * Ownership: the kubeconfig stays the caller's and must outlive the context; the context is
 * destroyed with lws_context_destroy. */
#ifndef SBX_KUBEWS_H
#define SBX_KUBEWS_H

#include <libwebsockets.h>

#include "err.h"
#include "kubeconfig.h"

/* The server URL split for lws (kubews_target_free frees it). */
struct kubews_target {
	char *url, *host, *full;	/* full: the server's base path joined with the request's */
	const char *prot;		/* "https" or "http" */
	int port;
};

/* A context with no listener, the cluster's TLS material, lws's log off (unless
 * $SBX_KUBE_LWS_LOG), user as its user pointer; serv_buf: lws's per-thread buffer (the
 * handshake and each TLS record read go through it). NULL with e. */
struct lws_context *kubews_context(const struct kubeconfig *kc,
				   const struct lws_protocols *protocols, void *user,
				   size_t serv_buf, struct sbx_err *e);
/* Splits kc->server and joins its base path with path. 0 or -1 with e. */
int kubews_target(const struct kubeconfig *kc, const char *path, struct kubews_target *t,
		  struct sbx_err *e);
void kubews_target_free(struct kubews_target *t);
/* Starts the upgrade of path to a WebSocket offering protocols (comma-separated), served by
 * local protocol local_name; opaque becomes the wsi's opaque user data, *pwsi its handle
 * (cleared by lws when it closes). The new wsi, or NULL when it failed at once. */
struct lws *kubews_connect(struct lws_context *ctx, const struct kubeconfig *kc,
			   const struct kubews_target *t, const char *protocols,
			   const char *local_name, void *opaque, struct lws **pwsi);
/* LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: "Authorization: Bearer token" (none when token
 * is NULL); its copy is wiped. 0 or -1. */
int kubews_auth_header(struct lws *wsi, const char *token, void *in, size_t len);
/* Whether an lws connection error reads as a TLS failure. */
int kubews_tls_error(const char *why);

#endif
