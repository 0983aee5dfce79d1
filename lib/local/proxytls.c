/* proxytls.c — TLS on both sides of a -secret host's CONNECT (see proxytls.h). */
#include "proxytls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "proxy.h"
#include "proxyreq.h"
#include "tlsca.h"
#include "xalloc.h"

/* A TLS record at most: what one read or write moves. */
#define TLS_CHUNK 16384

struct leaf {
	char host[NETPOLICY_NAME_MAX + 1];
	X509 *cert;
};

struct proxytls {
	X509 *ca;
	EVP_PKEY *ca_key, *leaf_key;
	SSL_CTX *up, *down;
	pthread_mutex_t lock;
	struct leaf leaves[PROXYTLS_LEAVES_MAX];
	size_t nleaves, next;		/* next: the slot reused when full */
};

int proxytls_wants(const struct proxysecrets *s, const char *host, int port)
{
	for (size_t i = 0; i < s->n; i++)
		if (netpolicy_match(&s->v[i].hosts, host, port))
			return 1;
	return 0;
}

/* Toward the sandbox, HTTP/1.1 only: the proxy reads one request of it. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char h1[] = "\x08http/1.1";

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto((unsigned char **)out, outlen, h1, sizeof h1 - 1, in, inlen) ==
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_OK;
	return SSL_TLSEXT_ERR_NOACK;
}

/* A client whose SNI names another server than its CONNECT did is refused during the
 * handshake (the host checked is the one whose leaf it gets). */
static int sni_check(SSL *ssl, int *alert, void *arg)
{
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	const char *host = SSL_get_app_data(ssl);

	(void)arg;
	if (sni && host && strcasecmp(sni, host) != 0) {
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

/* Adds every certificate of PEM text to store. */
static int add_pems(X509_STORE *store, const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;
	int n = 0;

	while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		if (X509_STORE_add_cert(store, x) == 1)
			n++;
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(b);
	return n;
}

struct proxytls *proxytls_new(const struct proxysecrets *s, struct sbx_err *e)
{
	struct proxytls *t = xcalloc(1, sizeof *t);
	BIO *b;

	pthread_mutex_init(&t->lock, NULL);
	if (s->ca_cert == NULL || s->ca_key == NULL)
		goto bad;
	b = BIO_new_mem_buf(s->ca_cert, -1);
	t->ca = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	b = BIO_new_mem_buf(s->ca_key, (int)s->ca_key_len);
	t->ca_key = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	t->leaf_key = tlsca_key();
	t->up = SSL_CTX_new(TLS_client_method());
	t->down = SSL_CTX_new(TLS_server_method());
	if (!t->ca || !t->ca_key || !t->leaf_key || !t->up || !t->down ||
	    SSL_CTX_set_min_proto_version(t->up, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_min_proto_version(t->down, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_default_verify_paths(t->up) != 1 ||
	    (s->upstream_ca && add_pems(SSL_CTX_get_cert_store(t->up), s->upstream_ca) == 0) ||
	    SSL_CTX_set_alpn_protos(t->up, (const unsigned char *)"\x08http/1.1", 9) != 0)
		goto bad;
	SSL_CTX_set_verify(t->up, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_alpn_select_cb(t->down, alpn_select, NULL);
	SSL_CTX_set_tlsext_servername_callback(t->down, sni_check);
	return t;
bad:
	proxytls_free(t);
	err_set(e, SBX_EINVAL, "the sandbox's CA or -upstream-ca does not load");
	return NULL;
}

void proxytls_free(struct proxytls *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->nleaves; i++)
		X509_free(t->leaves[i].cert);
	X509_free(t->ca);
	EVP_PKEY_free(t->ca_key);
	EVP_PKEY_free(t->leaf_key);
	SSL_CTX_free(t->up);
	SSL_CTX_free(t->down);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* The certificate for host, issued once (a reference the caller frees), or NULL. */
static X509 *leaf_for(struct proxytls *t, const char *host)
{
	struct sbx_err e;
	X509 *x = NULL;
	size_t slot;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->nleaves && !x; i++)
		if (strcmp(t->leaves[i].host, host) == 0)
			x = t->leaves[i].cert;
	if (x == NULL && (x = tlsca_issue(t->ca, t->ca_key, t->leaf_key, host, &e)) != NULL) {
		slot = t->nleaves < PROXYTLS_LEAVES_MAX ? t->nleaves++ : t->next++ % PROXYTLS_LEAVES_MAX;
		X509_free(t->leaves[slot].cert);
		snprintf(t->leaves[slot].host, sizeof t->leaves[slot].host, "%s", host);
		t->leaves[slot].cert = x;
	}
	if (x)
		X509_up_ref(x);
	pthread_mutex_unlock(&t->lock);
	return x;
}

static void set_timeouts(int fd, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int ssl_write_all(SSL *ssl, const void *p, size_t len)
{
	size_t done;

	return len == 0 || (SSL_write_ex(ssl, p, len, &done) == 1 && done == len) ? 0 : -1;
}

/* Upstream: TLS to the real server, verified for host. */
static SSL *connect_up(struct proxytls *t, int ufd, const char *host, struct proxytls_run *r)
{
	SSL *ssl = SSL_new(t->up);
	unsigned char bin[16];
	int ip = inet_pton(AF_INET, host, bin) == 1 || inet_pton(AF_INET6, host, bin) == 1;
	long v;

	if (ssl == NULL || SSL_set_fd(ssl, ufd) != 1 ||
	    (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1
		: (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1))) {
		r->reason = "cannot set up TLS to the server";
		goto fail;
	}
	if (SSL_connect(ssl) != 1) {
		v = SSL_get_verify_result(ssl);
		if (v != X509_V_OK)
			snprintf(r->why, sizeof r->why, "the server's certificate is not trusted for "
				 "%s: %s", host, X509_verify_cert_error_string(v));
		else
			snprintf(r->why, sizeof r->why, "TLS to the server failed");
		r->reason = r->why;
		goto fail;
	}
	return ssl;
fail:
	ERR_clear_error();
	SSL_free(ssl);
	r->code = 502;
	return NULL;
}

/* Toward the sandbox: TLS with a certificate for host; a client naming another server in
 * its SNI is refused (the value goes to the host the policy checked, nowhere else). */
static SSL *accept_down(struct proxytls *t, int cfd, const char *host)
{
	SSL *ssl = SSL_new(t->down);
	X509 *leaf = leaf_for(t, host);
	const char *sni;

	if (ssl == NULL || leaf == NULL || SSL_set_fd(ssl, cfd) != 1 ||
	    SSL_set_app_data(ssl, (void *)host) != 1 ||
	    SSL_use_certificate(ssl, leaf) != 1 || SSL_use_PrivateKey(ssl, t->leaf_key) != 1 ||
	    SSL_accept(ssl) != 1 ||
	    ((sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name)) && strcasecmp(sni, host) != 0)) {
		ERR_clear_error();
		SSL_free(ssl);
		ssl = NULL;
	}
	X509_free(leaf);
	return ssl;
}

/* Reads the request head into buf (at most size); its length, with *have all bytes read. */
static long read_head(SSL *ssl, char *buf, size_t size, size_t *have)
{
	long hl;

	*have = 0;
	while ((hl = proxyreq_head_len(buf, *have)) == 0) {
		size_t n;
		if (*have == size || SSL_read_ex(ssl, buf + *have, size - *have, &n) != 1)
			return -1;
		*have += n;
	}
	return hl;
}

/* A field line whose name is hop-by-hop (lib/local/proxyreq.c's list, as for plain HTTP). */
static int is_hop(const char *line, size_t len)
{
	const char *colon = memchr(line, ':', len);

	return colon && proxyreq_hop_by_hop(line, (size_t)(colon - line));
}

/* The head as sent upstream: the request's fields without its connection management, and
 * "Connection: close" (one request per intercepted connection). NULL: not a request head
 * this proxy passes on (malformed, or control bytes in it). */
static char *close_head(const char *head, size_t len, size_t *out_len, struct proxytls_run *r)
{
	struct buf b = {0};
	const char *p = head, *end = head + len;

	for (int first = 1; p < end; first = 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l;
		if (nl == NULL)
			break;
		l = (size_t)(nl - p);
		if (l && p[l - 1] == '\r')
			l--;
		for (size_t i = 0; i < l; i++)
			if (((unsigned char)p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)
				goto bad;
		if (first) {
			const char *sp = memchr(p, ' ', l), *target_end = p + l - 9, *q;
			/* METHOD SP TARGET SP HTTP/1.x: the target lies between the two spaces, and
			 * the path is measured within it, never past the line */
			if (sp == NULL || l < 14 || sp >= target_end ||
			    strncmp(target_end, " HTTP/1.", 8) != 0)
				goto bad;
			for (q = sp + 1; q < target_end && *q != ' ' && *q != '?'; q++)
				;
			snprintf(r->method, sizeof r->method, "%.*s", (int)(sp - p), p);
			snprintf(r->path, sizeof r->path, "%.*s", (int)(q - (sp + 1)), sp + 1);
		}
		if (l == 0)
			break;
		if (first || !is_hop(p, l)) {
			buf_append(&b, p, l);
			buf_puts(&b, "\r\n");
		}
		p = nl + 1;
	}
	buf_puts(&b, "Connection: close\r\n\r\n");
	*out_len = b.len;
	return buf_steal(&b);
bad:
	buf_free(&b);
	return NULL;
}

/* The sandbox gets an HTTP answer inside its TLS session. */
static void reply_in(SSL *ssl, int code, const char *status, const char *body)
{
	char *m = xasprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
			    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			    code, status, strlen(body), body);
	ssl_write_all(ssl, m, strlen(m));
	free(m);
}

/* Relays both ways until the server is done: what the sandbox sends is looked through for
 * placeholders (with the last bytes of what went before, so one split across reads is seen
 * too) before it goes; one found ends both sessions. first/nfirst: bytes already read past
 * the head. Returns 0, or -1 when a placeholder was refused. */
static int relay_tls(SSL *down, SSL *up, int cfd, int ufd, const struct proxysecrets *s,
		     const char *first, size_t nfirst, struct proxytls_run *r)
{
	size_t keep = s->longest ? s->longest - 1 : 0, tail = 0;
	char *buf = xmalloc(keep + (nfirst > TLS_CHUNK ? nfirst : TLS_CHUNK));
	int down_open = 1, rc = 0;

	memcpy(buf, first, nfirst);
	for (size_t n = nfirst;;) {
		struct pollfd p[2] = {{.fd = down_open ? cfd : -1, .events = POLLIN},
				      {.fd = ufd, .events = POLLIN}};
		const struct proxysecret *hit;
		if (n > 0) {
			if ((hit = proxysecrets_find(s, buf, tail + n)) != NULL) {
				r->secret = hit->name;
				rc = -1;
				break;
			}
			if (ssl_write_all(up, buf + tail, n) < 0)
				break;
			r->bytes_out += (long long)n;
			{
				size_t total = tail + n, nt = total > keep ? keep : total;
				memmove(buf, buf + total - nt, nt);
				tail = nt;
			}
			n = 0;
		}
		if (!(down_open && SSL_pending(down)) && !SSL_pending(up) &&
		    poll(p, 2, PROXY_IDLE_TIMEOUT_MS) <= 0)
			break;
		if (SSL_pending(up) || (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			char in[TLS_CHUNK];
			size_t got;
			if (SSL_read_ex(up, in, sizeof in, &got) != 1)
				break;		/* the server is done (Connection: close) */
			if (ssl_write_all(down, in, got) < 0)
				break;
			r->bytes_in += (long long)got;
		}
		if (down_open && (SSL_pending(down) || (p[0].revents & (POLLIN | POLLHUP | POLLERR)))) {
			if (SSL_read_ex(down, buf + tail, TLS_CHUNK, &n) != 1) {
				down_open = 0;
				n = 0;
			}
		}
	}
	free(buf);
	return rc;
}

/* Long: one intercepted connection in order (upstream verified first, then the sandbox's
 * session, its request head, the secrets' verdict, the relay), one exit path. */
void proxytls_serve(struct proxytls *t, const struct proxysecrets *s, int cfd, int ufd,
		    const char *host, int port, struct proxytls_run *r)
{
	static const char est[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	SSL *up = NULL, *down = NULL;
	char *head = xmalloc(PROXYREQ_HEAD_MAX), *out = NULL, *sub = NULL;
	size_t have = 0, out_len = 0, sub_len = 0;
	const struct proxysecret *which = NULL;
	const char *why = NULL;
	long hl;

	set_timeouts(ufd, PROXY_CONNECT_TIMEOUT_MS);
	set_timeouts(cfd, PROXY_HEAD_TIMEOUT_MS);
	if ((up = connect_up(t, ufd, host, r)) == NULL)
		goto out;
	if (send(cfd, est, sizeof est - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof est - 1))
		goto out;
	if ((down = accept_down(t, cfd, host)) == NULL) {
		r->reason = "the sandbox's TLS handshake failed (or named another server)";
		goto out;
	}
	if ((hl = read_head(down, head, PROXYREQ_HEAD_MAX, &have)) < 0 ||
	    (out = close_head(head, (size_t)hl, &out_len, r)) == NULL) {
		r->reason = "no valid HTTP/1.1 request inside TLS";
		reply_in(down, 400, "Bad Request", "sbx-proxy: bad request\n");
		goto out;
	}
	switch (proxysecrets_head(s, out, out_len, host, port, &sub, &sub_len, &which, &why)) {
	case PROXYSECRET_REFUSED: {
		char *body = xasprintf("sbx-proxy: refused: %s (secret %s)\n", why, which->name);
		r->secret = which->name;
		r->action = "refused";
		r->reason = why;
		reply_in(down, 403, "Forbidden", body);
		free(body);
		goto out;
	}
	case PROXYSECRET_REPLACED:
		r->secret = which->name;
		r->action = "substituted";
		break;
	case PROXYSECRET_NONE:
		break;
	}
	set_timeouts(ufd, PROXY_IDLE_TIMEOUT_MS);
	set_timeouts(cfd, PROXY_IDLE_TIMEOUT_MS);
	if (ssl_write_all(up, sub ? sub : out, sub ? sub_len : out_len) < 0)
		goto out;
	r->bytes_out = (long long)(sub ? sub_len : out_len);
	if (relay_tls(down, up, cfd, ufd, s, head + hl, have - (size_t)hl, r) < 0) {
		char *body = xasprintf("sbx-proxy: refused: a placeholder in the request body "
				       "(secret %s)\n", r->secret);
		struct linger lg = {1, 0};
		setsockopt(ufd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		r->action = "refused";
		r->reason = "a placeholder in the request body";
		if (r->bytes_in == 0)
			reply_in(down, 403, "Forbidden", body);
		free(body);
		SSL_free(up);
		up = NULL;
		goto out;
	}
	SSL_shutdown(down);
out:
	if (sub)
		explicit_bzero(sub, sub_len);
	free(sub);
	free(out);
	free(head);
	if (up) {
		SSL_shutdown(up);
		SSL_free(up);
	}
	SSL_free(down);
	ERR_clear_error();
}
