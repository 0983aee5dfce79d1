/* netpolicy.c — parsing and matching the -allow-host list, and the address classes the proxy
 * keeps a sandbox away from (the host's loopback and link-local services, its own addresses). */
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

/* Parses one entry (no surrounding spaces) into r. */
static int parse_entry(const char *entry, struct netpolicy_rule *r, struct sbx_err *e)
{
	char host[NETPOLICY_NAME_MAX + 8];
	const char *colon = NULL, *h = entry;
	size_t hlen;

	memset(r, 0, sizeof *r);
	if (entry[0] == '[') {
		const char *close = strchr(entry, ']');
		if (close == NULL)
			return err_set(e, SBX_EINVAL, "\"%s\": unclosed [", entry);
		if (close[1] == ':')
			colon = close + 1;
		else if (close[1] != '\0')
			return err_set(e, SBX_EINVAL, "\"%s\": junk after ]", entry);
		hlen = (size_t)(close + 1 - entry);
	} else {
		colon = strchr(entry, ':');
		if (colon && strchr(colon + 1, ':'))
			return err_set(e, SBX_EINVAL, "\"%s\": write an IPv6 address as [ADDR]:PORT",
				       entry);
		hlen = colon ? (size_t)(colon - entry) : strlen(entry);
	}
	if (colon) {
		char *end;
		long port = strtol(colon + 1, &end, 10);
		if (colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535 ||
		    !isdigit((unsigned char)colon[1]))
			return err_set(e, SBX_EINVAL, "\"%s\": the port must be 1-65535", entry);
		r->port = (int)port;
	}
	if (hlen >= 2 && h[0] == '*' && h[1] == '.') {
		r->wildcard = true;
		h += 2;
		hlen -= 2;
	}
	if (hlen == 0 || hlen >= sizeof host)
		return err_set(e, SBX_EINVAL, "\"%s\": not a host name", entry);
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (strchr(host, '*'))
		return err_set(e, SBX_EINVAL, "\"%s\": a wildcard is only allowed as a leading \"*.\"",
			       entry);
	if (netpolicy_host_normalise(host, sizeof host) < 0)
		return err_set(e, SBX_EINVAL, "\"%s\": not a host name or IP address", entry);
	r->literal = canon_literal(host, sizeof host);
	if (r->wildcard && r->literal)
		return err_set(e, SBX_EINVAL, "\"%s\": a wildcard needs a domain name", entry);
	if (r->wildcard && strchr(host, '.') == NULL)
		return err_set(e, SBX_EINVAL, "\"%s\": a wildcard must name a domain with a dot "
			       "(\"*.example.com\")", entry);
	if (strlen(host) >= sizeof r->host)
		return err_set(e, SBX_EINVAL, "\"%s\": a host name has at most %d characters", entry,
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
	snprintf(out, size, "%s%s%s%s%s", r->wildcard ? "*." : "", v6 ? "[" : "", r->host,
		 v6 ? "]" : "", port);
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

static int rule_matches(const struct netpolicy_rule *r, const char *host, int port)
{
	size_t hl = strlen(host), rl = strlen(r->host);

	if (r->port && r->port != port)
		return 0;
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

static const char *v4_class(uint32_t a)
{
	if ((a >> 24) == 127)
		return "loopback";
	if ((a >> 16) == 0xa9fe)	/* 169.254.0.0/16 */
		return "link-local";
	if ((a >> 24) == 0)
		return "unspecified";
	if ((a >> 28) == 0xe)
		return "multicast";
	if (a == 0xffffffffu)
		return "broadcast";
	return NULL;
}

const char *netpolicy_addr_class(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_class(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
			uint32_t v4;
			memcpy(&v4, a->s6_addr + 12, 4);
			if (IN6_IS_ADDR_V4MAPPED(a) || v4 != 0)
				return v4_class(ntohl(v4));
		}
		if (IN6_IS_ADDR_LOOPBACK(a))
			return "loopback";
		if (IN6_IS_ADDR_UNSPECIFIED(a))
			return "unspecified";
		if (IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_SITELOCAL(a))
			return "link-local";
		if (IN6_IS_ADDR_MULTICAST(a))
			return "multicast";
		return NULL;
	}
	return "unspecified";
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
