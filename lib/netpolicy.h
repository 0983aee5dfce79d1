/* netpolicy.h — a sandbox's egress allowlist (-allow-host): host names, "*." wildcards and IP
 * literals, each with an optional port, and the address classes the proxy refuses unless a
 * host is listed by its exact name. Shared by sbx-create (which checks and normalises the
 * list) and sbx-proxy (which enforces it).
 * Ownership: a struct netpolicy owns its rules; netpolicy_free releases them. */
#ifndef SBX_NETPOLICY_H
#define SBX_NETPOLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "err.h"

/* Longest list text: a few hundred host names is already an unusual policy. */
#define NETPOLICY_TEXT_MAX 4096
/* Most rules in one list. */
#define NETPOLICY_RULES_MAX 256
/* A DNS name is at most 253 characters (RFC 1035), a label at most 63. */
#define NETPOLICY_NAME_MAX 253

struct netpolicy_rule {
	char host[NETPOLICY_NAME_MAX + 1];	/* lowercase; for a wildcard, the part after "*." */
	bool wildcard;				/* "*.example.com": subdomains only */
	bool literal;				/* an IP address */
	int port;				/* 0: any port */
};

struct netpolicy {
	struct netpolicy_rule *rules;
	size_t n;
};

/* Parses a comma-separated list; SBX_EINVAL naming the bad entry. p is zeroed first. */
int netpolicy_parse(const char *text, struct netpolicy *p, struct sbx_err *e);
void netpolicy_free(struct netpolicy *p);
/* Writes the normalised list (lowercase, no spaces) to out; -1 if it does not fit. */
int netpolicy_format(const struct netpolicy *p, char *out, size_t size);
/* Normalises a requested host in place (lowercase, no trailing dot, IPv6 brackets gone, IP
 * literals in canonical form); size is host's buffer, at least INET6_ADDRSTRLEN. -1 when it
 * is not a plausible host name or literal. */
int netpolicy_host_normalise(char *host, size_t size);
/* The rule that allows host:port, or NULL. An exact (or literal) rule wins over a wildcard. */
const struct netpolicy_rule *netpolicy_match(const struct netpolicy *p, const char *host,
					     int port);
/* Writes a rule back as its text ("*.example.com:443"). */
void netpolicy_rule_text(const struct netpolicy_rule *r, char *out, size_t size);
/* Why an address may not be reached unless listed by exact name: "loopback",
 * "link-local", "unspecified", "multicast" or "broadcast"; NULL for an ordinary address.
 * IPv4-mapped IPv6 addresses are judged as the IPv4 address. The host's own interface
 * addresses are checked separately (netpolicy_is_local_addr). */
const char *netpolicy_addr_class(const struct sockaddr *sa);
/* 1 when sa is one of this host's interface addresses, 0 when not, -1 on error. */
int netpolicy_is_local_addr(const struct sockaddr *sa);

#endif
