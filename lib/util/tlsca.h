/* tlsca.h — a certificate authority made for one sandbox (-secret): its key and self-signed
 * certificate (EC P-256), and leaf certificates it issues for a host name on demand, so
 * sbx-proxy can terminate TLS for a secret's hosts with a certificate the sandbox trusts and
 * nobody else does. OpenSSL does the cryptography.
 * Ownership: PEM strings are new, the caller frees them (wiping the key's); an X509 or
 * EVP_PKEY returned is the caller's to free with OpenSSL's own calls. */
#ifndef SBX_TLSCA_H
#define SBX_TLSCA_H

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "err.h"

/* A sandbox's CA lives as long as a sandbox may (its shutdown time is a year at most). */
#define TLSCA_CA_DAYS 400
/* A leaf is issued again each time the proxy starts: a week is plenty. */
#define TLSCA_LEAF_DAYS 7

/* Makes a CA whose subject names cn: its certificate and private key as PEM. */
int tlsca_make(const char *cn, char **cert_pem, char **key_pem, struct sbx_err *e);
/* Issues a certificate for host (a DNS name or an IP literal) with key's public half, signed
 * by ca/ca_key. NULL with e on failure. */
X509 *tlsca_issue(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *key, const char *host,
		  struct sbx_err *e);
/* A fresh EC P-256 key, or NULL. */
EVP_PKEY *tlsca_key(void);

#endif
