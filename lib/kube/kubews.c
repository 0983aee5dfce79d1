/* kubews.c — the libwebsockets set-up the Kubernetes WebSocket clients share (see kubews.h). */
#include "kubews.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi.h"
#include "kubeexec.h"
#include "xalloc.h"

struct lws_context *kubews_context(const struct kubeconfig *kc,
				   const struct lws_protocols *protocols, void *user,
				   size_t serv_buf, struct sbx_err *e)
{
	struct lws_context_creation_info info;
	struct lws_context *ctx;

	/* lib/ never prints: libwebsockets' own log stays off unless asked for ($SBX_KUBE_LWS_LOG,
	 * an lws log-level mask, for debugging). */
	lws_set_log_level(getenv("SBX_KUBE_LWS_LOG") ? atoi(getenv("SBX_KUBE_LWS_LOG")) : 0, NULL);
	memset(&info, 0, sizeof info);
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protocols;
	info.user = user;
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.max_http_header_data = 0;
	info.max_http_header_data2 = 2 * KUBEEXEC_QUERY_MAX;
	info.pt_serv_buf_size = (unsigned int)serv_buf;
	info.timeout_secs = KUBEAPI_CONNECT_TIMEOUT_MS / 1000;
	if (kc->ca.data) {
		/* Trust only the cluster's CA (and skip parsing the system bundle, ~25 ms). */
		info.options |= LWS_SERVER_OPTION_DISABLE_OS_CA_CERTS;
		info.client_ssl_ca_mem = kc->ca.data;
		info.client_ssl_ca_mem_len = (unsigned int)kc->ca.len;
	}
	if (kc->cert.data) {
		info.client_ssl_cert_mem = kc->cert.data;
		info.client_ssl_cert_mem_len = (unsigned int)kc->cert.len;
		info.client_ssl_key_mem = kc->key.data;
		info.client_ssl_key_mem_len = (unsigned int)kc->key.len;
	}
	if ((ctx = lws_create_context(&info)) == NULL)
		err_set(e, SBX_EUNAVAIL, "cannot set up the WebSocket client (TLS material from %s "
			"rejected?)", kc->source);
	return ctx;
}

int kubews_target(const struct kubeconfig *kc, const char *path, struct kubews_target *t,
		  struct sbx_err *e)
{
	const char *addr = NULL, *base = NULL;

	memset(t, 0, sizeof *t);
	t->url = xstrdup(kc->server);
	if (lws_parse_uri(t->url, &t->prot, &addr, &t->port, &base) || addr == NULL ||
	    *addr == '\0') {
		kubews_target_free(t);
		return err_set(e, SBX_EINVAL, "cannot parse the server URL %s", kc->server);
	}
	/* lws_parse_uri drops the leading '/' of the base path. */
	t->full = xasprintf("%s%s%s", *base ? "/" : "", base, path);
	while (strstr(t->full, "//") == t->full)
		memmove(t->full, t->full + 1, strlen(t->full));
	t->host = xstrdup(addr);
	return 0;
}

void kubews_target_free(struct kubews_target *t)
{
	free(t->url);
	free(t->host);
	free(t->full);
	memset(t, 0, sizeof *t);
}

struct lws *kubews_connect(struct lws_context *ctx, const struct kubeconfig *kc,
			   const struct kubews_target *t, const char *protocols,
			   const char *local_name, void *opaque, struct lws **pwsi)
{
	struct lws_client_connect_info cc;

	memset(&cc, 0, sizeof cc);
	cc.context = ctx;
	cc.address = t->host;
	cc.port = t->port;
	cc.path = t->full;
	cc.host = t->host;
	cc.origin = t->host;
	cc.protocol = protocols;
	cc.local_protocol_name = local_name;
	cc.opaque_user_data = opaque;
	if (strcmp(t->prot, "https") == 0) {
		cc.ssl_connection = LCCSCF_USE_SSL;
		if (kc->insecure)
			cc.ssl_connection |= LCCSCF_ALLOW_SELFSIGNED | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK |
					     LCCSCF_ALLOW_EXPIRED | LCCSCF_ALLOW_INSECURE;
	}
	cc.pwsi = pwsi;
	return lws_client_connect_via_info(&cc);
}

int kubews_auth_header(struct lws *wsi, const char *token, void *in, size_t len)
{
	unsigned char **p = (unsigned char **)in, *end = (*p) + len;
	char *h;
	int rc;

	if (token == NULL)
		return 0;
	h = xasprintf("Bearer %s", token);
	rc = lws_add_http_header_by_name(wsi, (const unsigned char *)"authorization:",
					 (const unsigned char *)h, (int)strlen(h), p, end);
	OPENSSL_cleanse(h, strlen(h));
	free(h);
	return rc ? -1 : 0;
}

int kubews_tls_error(const char *why)
{
	return strstr(why, "certificate") || strstr(why, "SSL") || strstr(why, "ssl") ||
	       strstr(why, "tls");
}
