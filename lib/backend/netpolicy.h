/* netpolicy.h — a sandbox's egress allowlist (-allow-host): host names, "*." wildcards, IP
 * addresses and CIDR blocks, each with an optional port, and the address classes the proxy
 * keeps a name from reaching: the host's own, internal networks and cloud metadata. A name
 * entry marked with a leading "+" may reach internal addresses (an intranet host named on
 * purpose); only an IP entry reaches metadata. Shared by sbx-create (which checks and
 * normalises the list) and sbx-proxy (which enforces it).
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
	bool literal;				/* an IP address or CIDR block */
	bool internal;				/* "+NAME": may resolve to internal addresses */
	int prefix;				/* literal: the block's prefix length */
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
/* The rule that allows host:port, or NULL. An exact (or literal) rule wins over a wildcard;
 * an IP literal host matches an IP entry that names it or a CIDR entry that holds it. */
const struct netpolicy_rule *netpolicy_match(const struct netpolicy *p, const char *host,
					     int port);
/* Writes a rule back as its text ("+*.example.com:443", "[fd00::/8]:80"). */
void netpolicy_rule_text(const struct netpolicy_rule *r, char *out, size_t size);

/* Who may reach an address, from most to least open. */
enum netpolicy_reach {
	NETPOLICY_PUBLIC,	/* any entry that matches */
	NETPOLICY_INTERNAL,	/* an IP entry, or a name entry marked "+" */
	NETPOLICY_METADATA,	/* a cloud metadata service: an IP entry naming that address */
	NETPOLICY_NEVER,	/* unspecified, multicast, broadcast: an IP entry only */
};
/* The class of an address ("loopback", "private", "carrier-grade NAT", "unique local",
 * "NAT64", "cloud metadata", …), NULL for a public one; *reach (may be NULL) says who may
 * reach it. IPv4-mapped, -compatible, 6to4 and NAT64 forms are judged by the IPv4 address
 * they carry as well. The host's own addresses are found by netpolicy_is_local_addr. */
const char *netpolicy_addr_class(const struct sockaddr *sa, enum netpolicy_reach *reach);
/* 1 when rule r (which matched the request) may connect to sa, else 0 with *why the
 * address's class and *who what entry could reach it (static strings). own: sa is one of
 * this host's addresses (an internal address whatever its class). */
int netpolicy_may_connect(const struct netpolicy_rule *r, const struct sockaddr *sa, int own,
			  const char **why, const char **who);
/* 1 when sa is one of this host's interface addresses, 0 when not, -1 on error. */
int netpolicy_is_local_addr(const struct sockaddr *sa);

#endif
