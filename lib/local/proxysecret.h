/* proxysecret.h — sbx-proxy's secrets (-secret): read once from the feed sbx-create handed
 * over, held only in the proxy's memory, and looked for in what a sandbox sends. A request
 * to one of a secret's hosts that carries its placeholder in a header field (also inside
 * "Authorization: Basic base64(user:password)") gets the real value there; a placeholder
 * anywhere else (the URL, a body, a header to any other host) makes the request refused.
 * Ownership: a struct proxysecrets owns its secrets (the values wiped on free); rewritten
 * heads are new strings the caller frees. */
#ifndef SBX_PROXYSECRET_H
#define SBX_PROXYSECRET_H

#include <stddef.h>

#include "err.h"
#include "netpolicy.h"

/* The feed: 16 secrets of at most 8 KiB each, hex-encoded, with their host lists. */
#define PROXYSECRET_FEED_MAX (1 << 20)
/* Basic credentials longer than this are not looked into (a user name and a token). */
#define SECRET_BASIC_MAX 16384

struct proxysecret {
	char name[72];
	char placeholder[64];
	struct netpolicy hosts;
	unsigned char *value;
	size_t value_len;
};

struct proxysecrets {
	struct proxysecret *v;
	size_t n;
	size_t longest;		/* the longest placeholder: what a scan must keep back */
	/* The sandbox's CA (PEM; the key wiped on free) and -upstream-ca's certificates, or
	 * NULL; each of its length. */
	char *ca_cert, *ca_key, *upstream_ca;
	size_t ca_key_len;
};

/* Reads the feed on fd until its end, then closes it. */
int proxysecrets_read(int fd, struct proxysecrets *s, struct sbx_err *e);
void proxysecrets_free(struct proxysecrets *s);

enum proxysecret_verdict {
	PROXYSECRET_NONE,	/* no placeholder: send as it is */
	PROXYSECRET_REPLACED,	/* *out is the head with the values in place */
	PROXYSECRET_REFUSED,	/* a placeholder where it may not go: refuse the request */
};

/* Looks at a request head (request line and header fields, as sent upstream) bound for
 * host:port. *which is the secret concerned and *why (REFUSED) says where it was found. */
enum proxysecret_verdict proxysecrets_head(const struct proxysecrets *s, const char *head,
					   size_t len, const char *host, int port, char **out,
					   size_t *out_len, const struct proxysecret **which,
					   const char **why);
/* The secret whose placeholder occurs in buf (a body, or part of one), or NULL. */
const struct proxysecret *proxysecrets_find(const struct proxysecrets *s, const char *buf,
					    size_t len);

#endif
