/* netpolicy.c — parsing and matching the -allow-host list, and the address classes the proxy
 * keeps a name from reaching (the host's own services and addresses, internal networks, cloud
 * metadata), whatever the name resolves to. */
#include "netpolicy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* 1 when s is a valid DNS name of letters, digits, '-' and '_' (underscores appear in real
 * internal names), labels 1-63 characters, not starting or ending with '-'. */
static int valid_name(const char *s)
{
	size_t len = strlen(s), label = 0;

	if (len == 0 || len > NETPOLICY_NAME_MAX)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		char c = s[i];
		if (c == '.' || c == '\0') {
			if (label == 0 || label > 63 || s[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!(isalnum((unsigned char)c) || c == '-' || c == '_'))
			return 0;
		if (label == 0 && c == '-')
			return 0;
		label++;
	}
	return 1;
}

/* Rewrites an IP literal in its canonical text (size: s's buffer, at least INET6_ADDRSTRLEN
 * or the text is cut); 1 if s was one. */
static int canon_literal(char *s, size_t size)
{
	unsigned char a[16];
	char out[INET6_ADDRSTRLEN];

	if (inet_pton(AF_INET, s, a) == 1)
		inet_ntop(AF_INET, a, out, sizeof out);
	else if (inet_pton(AF_INET6, s, a) == 1)
		inet_ntop(AF_INET6, a, out, sizeof out);
	else
		return 0;
	snprintf(s, size, "%s", out);
	return 1;
}

int netpolicy_host_normalise(char *host, size_t size)
{
	size_t len = strlen(host);

	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		memmove(host, host + 1, len - 2);
		host[len - 2] = '\0';
		return canon_literal(host, size) && strchr(host, ':') ? 0 : -1;
	}
	if (len > 1 && host[len - 1] == '.')
		host[--len] = '\0';
	for (char *p = host; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if (canon_literal(host, size))
		return 0;
	return valid_name(host) ? 0 : -1;
}

/* Splits "ADDR/LEN" in host (an IP entry's block) into the address, masked to its prefix, and
 * r->prefix; without "/" the prefix is the whole address. -1 when it is no block. */
static int parse_block(char *host, size_t size, struct netpolicy_rule *r)
{
	char *slash = strchr(host, '/'), *end;
	unsigned char a[16];
	long len;
	int af, bits;

	if (slash)
		*slash = '\0';
	af = strchr(host, ':') ? AF_INET6 : AF_INET;
	bits = af == AF_INET ? 32 : 128;
	if (inet_pton(af, host, a) != 1)
		return slash ? -1 : 0;
	r->prefix = bits;
	if (slash == NULL)
		return 0;
	len = strtol(slash + 1, &end, 10);
	if (!isdigit((unsigned char)slash[1]) || *end != '\0' || len < 0 || len > bits)
		return -1;
	r->prefix = (int)len;
	for (int i = 0; i < bits / 8; i++)
		if (i * 8 >= len)
			a[i] = 0;
		else if (i * 8 + 8 > len)
			a[i] &= (unsigned char)(0xff << (8 - (len - i * 8)));
	inet_ntop(af, a, host, (socklen_t)size);
	return 0;
}

/* Parses one entry (no surrounding spaces) into r. */
static int parse_entry(const char *entry, struct netpolicy_rule *r, struct sbx_err *e)
{
	char host[NETPOLICY_NAME_MAX + 8];
	const char *colon = NULL, *h, *text = entry;
	size_t hlen;

	memset(r, 0, sizeof *r);
	if (entry[0] == '+') {
		r->internal = true;
		entry++;
	}
	h = entry;
	if (entry[0] == '[') {
		const char *close = strchr(entry, ']');
		if (close == NULL)
			return err_set(e, SBX_EINVAL, "\"%s\": unclosed [", text);
		if (close[1] == ':')
			colon = close + 1;
		else if (close[1] != '\0')
			return err_set(e, SBX_EINVAL, "\"%s\": junk after ]", text);
		hlen = (size_t)(close + 1 - entry);
	} else {
		colon = strchr(entry, ':');
		if (colon && strchr(colon + 1, ':'))
			return err_set(e, SBX_EINVAL, "\"%s\": write an IPv6 address as [ADDR]:PORT",
				       text);
		hlen = colon ? (size_t)(colon - entry) : strlen(entry);
	}
	if (colon) {
		char *end;
		long port = strtol(colon + 1, &end, 10);
		if (colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535 ||
		    !isdigit((unsigned char)colon[1]))
			return err_set(e, SBX_EINVAL, "\"%s\": the port must be 1-65535", text);
		r->port = (int)port;
	}
	if (hlen >= 2 && h[0] == '*' && h[1] == '.') {
		r->wildcard = true;
		h += 2;
		hlen -= 2;
	}
	if (hlen == 0 || hlen >= sizeof host)
		return err_set(e, SBX_EINVAL, "\"%s\": not a host name", text);
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (strchr(host, '*'))
		return err_set(e, SBX_EINVAL, "\"%s\": a wildcard is only allowed as a leading \"*.\"",
			       text);
	if (strchr(host, '/')) {
		/* A CIDR block: "10.0.0.0/8", "[fd00::/8]:443". */
		if (host[0] == '[') {
			memmove(host, host + 1, hlen - 2);
			host[hlen - 2] = '\0';
		}
		if (r->wildcard || parse_block(host, sizeof host, r) < 0)
			return err_set(e, SBX_EINVAL, "\"%s\": not an address block (ADDR/LEN)", text);
		r->literal = true;
	} else if (netpolicy_host_normalise(host, sizeof host) < 0) {
		return err_set(e, SBX_EINVAL, "\"%s\": not a host name or IP address", text);
	} else {
		r->literal = canon_literal(host, sizeof host);
		if (r->literal)
			parse_block(host, sizeof host, r);
	}
	if (r->wildcard && r->literal)
		return err_set(e, SBX_EINVAL, "\"%s\": a wildcard needs a domain name", text);
	if (r->internal && r->literal)
		return err_set(e, SBX_EINVAL, "\"%s\": \"+\" is for names; an IP entry reaches "
			       "what it names already", text);
	if (r->wildcard && strchr(host, '.') == NULL)
		return err_set(e, SBX_EINVAL, "\"%s\": a wildcard must name a domain with a dot "
			       "(\"*.example.com\")", text);
	if (strlen(host) >= sizeof r->host)
		return err_set(e, SBX_EINVAL, "\"%s\": a host name has at most %d characters", text,
			       NETPOLICY_NAME_MAX);
	memcpy(r->host, host, strlen(host) + 1);
	return 0;
}

int netpolicy_parse(const char *text, struct netpolicy *p, struct sbx_err *e)
{
	char *copy, *tok, *save = NULL;

	memset(p, 0, sizeof *p);
	if (strlen(text) > NETPOLICY_TEXT_MAX)
		return err_set(e, SBX_EINVAL, "the list is longer than %d bytes", NETPOLICY_TEXT_MAX);
	copy = xstrdup(text);
	p->rules = xcalloc(NETPOLICY_RULES_MAX, sizeof *p->rules);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end = tok + strlen(tok);
		while (*tok == ' ' || *tok == '\t')
			tok++;
		while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (*tok == '\0')
			continue;
		if (p->n == NETPOLICY_RULES_MAX) {
			err_set(e, SBX_EINVAL, "more than %d entries", NETPOLICY_RULES_MAX);
			goto fail;
		}
		if (parse_entry(tok, &p->rules[p->n], e) < 0)
			goto fail;
		p->n++;
	}
	free(copy);
	if (p->n == 0) {
		netpolicy_free(p);
		return err_set(e, SBX_EINVAL, "no host named (give NAME[:PORT],...)");
	}
	return 0;
fail:
	free(copy);
	netpolicy_free(p);
	return -1;
}

void netpolicy_free(struct netpolicy *p)
{
	free(p->rules);
	memset(p, 0, sizeof *p);
}

void netpolicy_rule_text(const struct netpolicy_rule *r, char *out, size_t size)
{
	int v6 = r->literal && strchr(r->host, ':');
	char port[16] = "";

	if (r->port)
		snprintf(port, sizeof port, ":%d", r->port);
	char block[8] = "";

	if (r->literal && r->prefix != (v6 ? 128 : 32))
		snprintf(block, sizeof block, "/%d", r->prefix);
	snprintf(out, size, "%s%s%s%s%s%s%s", r->internal ? "+" : "", r->wildcard ? "*." : "",
		 v6 ? "[" : "", r->host, block, v6 ? "]" : "", port);
}

int netpolicy_format(const struct netpolicy *p, char *out, size_t size)
{
	size_t used = 0;

	if (size == 0)
		return -1;
	out[0] = '\0';
	for (size_t i = 0; i < p->n; i++) {
		char one[NETPOLICY_NAME_MAX + 32];
		int n;
		netpolicy_rule_text(&p->rules[i], one, sizeof one);
		n = snprintf(out + used, size - used, "%s%s", i ? "," : "", one);
		if (n < 0 || (size_t)n >= size - used)
			return -1;
		used += (size_t)n;
	}
	return 0;
}

/* 1 when the IP literal host lies in r's block. */
static int block_holds(const struct netpolicy_rule *r, const char *host)
{
	unsigned char a[16], b[16];
	int af = strchr(r->host, ':') ? AF_INET6 : AF_INET, full = r->prefix / 8;

	if (inet_pton(af, r->host, a) != 1 || inet_pton(af, host, b) != 1)
		return 0;
	if (memcmp(a, b, (size_t)full) != 0)
		return 0;
	return r->prefix % 8 == 0 ||
	       ((a[full] ^ b[full]) & (unsigned char)(0xff << (8 - r->prefix % 8))) == 0;
}

static int rule_matches(const struct netpolicy_rule *r, const char *host, int port)
{
	size_t hl = strlen(host), rl = strlen(r->host);

	if (r->port && r->port != port)
		return 0;
	if (r->literal)
		return block_holds(r, host);
	if (!r->wildcard)
		return strcmp(host, r->host) == 0;
	return hl > rl + 1 && host[hl - rl - 1] == '.' && strcmp(host + hl - rl, r->host) == 0;
}

const struct netpolicy_rule *netpolicy_match(const struct netpolicy *p, const char *host,
					     int port)
{
	const struct netpolicy_rule *wild = NULL;

	for (size_t i = 0; i < p->n; i++) {
		if (!rule_matches(&p->rules[i], host, port))
			continue;
		if (!p->rules[i].wildcard)
			return &p->rules[i];
		if (wild == NULL)
			wild = &p->rules[i];
	}
	return wild;
}

/* Address blocks and their classes, IPv4 as a number and a prefix length. The metadata
 * services: AWS, GCP, Azure, Oracle (169.254.169.254), Alibaba (100.100.100.200), Oracle's
 * other (192.0.0.192), Azure's wire server (168.63.129.16). */
static const struct v4_block {
	uint32_t net;
	int len;
	const char *cls;
	enum netpolicy_reach reach;
} v4_blocks[] = {
	{0xa9fea9feu, 32, "cloud metadata", NETPOLICY_METADATA},
	{0x646464c8u, 32, "cloud metadata", NETPOLICY_METADATA},
	{0xc00000c0u, 32, "cloud metadata", NETPOLICY_METADATA},
	{0xa83f8110u, 32, "cloud metadata", NETPOLICY_METADATA},
	{0xffffffffu, 32, "broadcast", NETPOLICY_NEVER},
	{0x00000000u, 8, "unspecified", NETPOLICY_NEVER},
	{0xe0000000u, 4, "multicast", NETPOLICY_NEVER},
	{0x7f000000u, 8, "loopback", NETPOLICY_INTERNAL},
	{0xa9fe0000u, 16, "link-local", NETPOLICY_INTERNAL},
	{0x0a000000u, 8, "private", NETPOLICY_INTERNAL},
	{0xac100000u, 12, "private", NETPOLICY_INTERNAL},
	{0xc0a80000u, 16, "private", NETPOLICY_INTERNAL},
	{0x64400000u, 10, "carrier-grade NAT", NETPOLICY_INTERNAL},
	{0xc0000000u, 24, "IETF protocol assignments", NETPOLICY_INTERNAL},
	{0xf0000000u, 4, "reserved", NETPOLICY_INTERNAL},
};

static const char *v4_class(uint32_t a, enum netpolicy_reach *reach)
{
	for (size_t i = 0; i < sizeof v4_blocks / sizeof v4_blocks[0]; i++) {
		const struct v4_block *b = &v4_blocks[i];
		if ((a >> (32 - b->len)) == (b->net >> (32 - b->len))) {
			*reach = b->reach;
			return b->cls;
		}
	}
	*reach = NETPOLICY_PUBLIC;
	return NULL;
}

static uint32_t v4_at(const struct in6_addr *a, int off)
{
	return (uint32_t)a->s6_addr[off] << 24 | (uint32_t)a->s6_addr[off + 1] << 16 |
	       (uint32_t)a->s6_addr[off + 2] << 8 | a->s6_addr[off + 3];
}

/* An IPv6 address carrying an IPv4 one: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d),
 * 6to4 (2002:AABB:CCDD::/48) and NAT64 (64:ff9b::/96, 64:ff9b:1::/48 — the IPv4 address in
 * the last 32 bits of the well-known prefix; the local-use one is internal whatever it
 * carries). 1 with *v4 set when it is one; *nat64 says which kind. */
static int v6_carries_v4(const struct in6_addr *a, uint32_t *v4, int *nat64)
{
	static const unsigned char wkp[12] = {0, 0x64, 0xff, 0x9b};
	static const unsigned char local[6] = {0, 0x64, 0xff, 0x9b, 0, 1};

	*nat64 = 0;
	if (IN6_IS_ADDR_V4MAPPED(a) || (IN6_IS_ADDR_V4COMPAT(a) && v4_at(a, 12) > 1)) {
		*v4 = v4_at(a, 12);
		return 1;
	}
	if (a->s6_addr[0] == 0x20 && a->s6_addr[1] == 0x02) {
		*v4 = v4_at(a, 2);
		return 1;
	}
	if (memcmp(a->s6_addr, wkp, sizeof wkp) == 0 || memcmp(a->s6_addr, local, sizeof local) == 0) {
		*v4 = v4_at(a, 12);
		*nat64 = 1;
		return 1;
	}
	return 0;
}

static const char *v6_class(const struct in6_addr *a, enum netpolicy_reach *reach)
{
	static const unsigned char ec2[16] = {0xfd, 0, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02};
	uint32_t v4;
	int nat64;

	*reach = NETPOLICY_INTERNAL;
	if (v6_carries_v4(a, &v4, &nat64)) {
		const char *c = v4_class(v4, reach);
		if (!nat64 || *reach == NETPOLICY_METADATA)
			return c;
		*reach = NETPOLICY_INTERNAL;	/* whatever it carries, a NAT64 gateway is local */
		return "NAT64";
	}
	if (memcmp(a->s6_addr, ec2, 16) == 0) {
		*reach = NETPOLICY_METADATA;
		return "cloud metadata";
	}
	if (IN6_IS_ADDR_LOOPBACK(a))
		return "loopback";
	if (IN6_IS_ADDR_LINKLOCAL(a))
		return "link-local";
	if (IN6_IS_ADDR_SITELOCAL(a))
		return "site-local";
	if ((a->s6_addr[0] & 0xfe) == 0xfc)
		return "unique local";
	*reach = NETPOLICY_NEVER;
	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return "unspecified";
	if (IN6_IS_ADDR_MULTICAST(a))
		return "multicast";
	*reach = NETPOLICY_PUBLIC;
	return NULL;
}

const char *netpolicy_addr_class(const struct sockaddr *sa, enum netpolicy_reach *reach)
{
	enum netpolicy_reach r = NETPOLICY_NEVER;
	const char *c = "unspecified";

	if (sa->sa_family == AF_INET)
		c = v4_class(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr), &r);
	else if (sa->sa_family == AF_INET6)
		c = v6_class(&((const struct sockaddr_in6 *)sa)->sin6_addr, &r);
	if (reach)
		*reach = r;
	return c;
}

int netpolicy_may_connect(const struct netpolicy_rule *r, const struct sockaddr *sa, int own,
			  const char **why, const char **who)
{
	enum netpolicy_reach reach;
	int full = strchr(r->host, ':') ? 128 : 32;

	*why = netpolicy_addr_class(sa, &reach);
	*who = NULL;
	if (*why == NULL && own) {
		*why = "one of this host's own addresses";
		reach = NETPOLICY_INTERNAL;
	}
	/* An IP entry names its addresses itself: no resolution could have chosen them. Only
	 * a metadata service asks for its exact address, not a block that happens to hold it. */
	if (r->literal && (reach != NETPOLICY_METADATA || r->prefix == full))
		return 1;
	switch (reach) {
	case NETPOLICY_PUBLIC:
		return 1;
	case NETPOLICY_INTERNAL:
		if (r->internal)
			return 1;
		*who = "only an entry marked \"+\" or an IP entry may reach";
		return 0;
	case NETPOLICY_METADATA:
		*who = "only an IP entry naming that address may reach";
		return 0;
	case NETPOLICY_NEVER:
		break;
	}
	*who = "only an IP entry may reach";
	return 0;
}

/* The address part of sa as 16 bytes (IPv4 as mapped IPv6), for comparison. */
static void addr16(const struct sockaddr *sa, unsigned char out[16])
{
	memset(out, 0, 16);
	if (sa->sa_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

int netpolicy_is_local_addr(const struct sockaddr *sa)
{
	struct ifaddrs *ifs, *i;
	unsigned char want[16], have[16];
	int found = 0;

	if (getifaddrs(&ifs) < 0)
		return -1;
	addr16(sa, want);
	for (i = ifs; i && !found; i = i->ifa_next) {
		if (i->ifa_addr == NULL ||
		    (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		addr16(i->ifa_addr, have);
		found = memcmp(want, have, 16) == 0;
	}
	freeifaddrs(ifs);
	return found;
}
