/* proxytls.h — sbx-proxy's TLS for a -secret's hosts: a CONNECT to one of them is not a
 * blind tunnel but two TLS sessions. Upstream, the proxy verifies the real server
 * (SSL_set1_host against the host's trust store and -upstream-ca) before anything is sent;
 * toward the sandbox it presents a certificate for the requested name issued by the
 * sandbox's own CA (lib/util/tlsca.h). In between it reads one HTTP/1.1 request, puts the
 * secret's value in place of its placeholder (lib/local/proxysecret.h), sends it with
 * "Connection: close" and relays the answer. Every other CONNECT stays a tunnel.
 * Ownership: a struct proxytls is the caller's (proxytls_free); it borrows the secrets. */
#ifndef SBX_PROXYTLS_H
#define SBX_PROXYTLS_H

#include "err.h"
#include "proxysecret.h"

/* Leaf certificates kept (one per host name asked for). */
#define PROXYTLS_LEAVES_MAX 64
/* The path logged: enough to tell which call it was. */
#define PROXYTLS_PATH_MAX 256

struct proxytls;

/* What one intercepted connection did, for the decision log. */
struct proxytls_run {
	int code;		/* not 0: answer the CONNECT with this (502: upstream TLS failed) */
	const char *secret, *action;	/* a secret concerned, "substituted" or "refused" */
	const char *reason;	/* why it failed or was refused */
	char why[200];		/* reason, when made up here */
	char method[32], path[PROXYTLS_PATH_MAX];
	long long bytes_out, bytes_in;
};

/* From the secrets' CA and -upstream-ca; NULL with e when they do not load. */
struct proxytls *proxytls_new(const struct proxysecrets *s, struct sbx_err *e);
void proxytls_free(struct proxytls *t);
/* Whether a CONNECT to host:port is one to intercept: a host of some secret. */
int proxytls_wants(const struct proxysecrets *s, const char *host, int port);
/* Serves one CONNECT to host:port: cfd the sandbox's connection (the CONNECT read, nothing
 * after it), ufd the upstream one (connected). Answers the CONNECT itself unless r->code. */
void proxytls_serve(struct proxytls *t, const struct proxysecrets *s, int cfd, int ufd,
		    const char *host, int port, struct proxytls_run *r);

#endif
