/* test_net.c — lib/backend/netpolicy.c (the -allow-host list) and lib/local/proxyreq.c (what a sandbox
 * sends its proxy). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"
#include "proxyreq.h"
#include "tap.h"

static const char *matched(const struct netpolicy *p, const char *host, int port)
{
	static char out[300];
	const struct netpolicy_rule *r = netpolicy_match(p, host, port);

	if (r == NULL)
		return "(none)";
	netpolicy_rule_text(r, out, sizeof out);
	return out;
}

/* An address in text as a socket address. */
static struct sockaddr_storage sa_of(const char *a)
{
	struct sockaddr_storage s = {0};

	if (inet_pton(AF_INET, a, &((struct sockaddr_in *)&s)->sin_addr) == 1)
		s.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, a, &((struct sockaddr_in6 *)&s)->sin6_addr) == 1)
		s.ss_family = AF_INET6;
	return s;
}

/* "class/who": the class of a and who may reach it. */
static const char *cls(const char *a)
{
	static const char *const who[] = {"public", "internal", "metadata", "never"};
	static char out[96];
	struct sockaddr_storage s = sa_of(a);
	enum netpolicy_reach r;
	const char *c = netpolicy_addr_class((struct sockaddr *)&s, &r);

	snprintf(out, sizeof out, "%s/%s", c ? c : "ordinary", who[r]);
	return out;
}

/* Whether the entry text (one rule) may connect to address a: "yes" or the refusal. */
static const char *may(const char *entry, const char *a, int own)
{
	static char out[sizeof ((struct sbx_err *)0)->msg];
	struct netpolicy p;
	struct sbx_err e;
	struct sockaddr_storage s = sa_of(a);
	const char *why, *who;

	if (netpolicy_parse(entry, &p, &e) < 0) {
		snprintf(out, sizeof out, "%s", e.msg);
		return out;
	}
	if (netpolicy_may_connect(&p.rules[0], (struct sockaddr *)&s, own, &why, &who))
		snprintf(out, sizeof out, "yes");
	else
		snprintf(out, sizeof out, "%s: %s", why, who);
	netpolicy_free(&p);
	return out;
}

int main(void)
{
	struct netpolicy p;
	struct proxyreq r;
	struct sbx_err e;
	char out[512];
	static const char *const bad[] = {"", " , ", "*", "*.com", "a..b", "-a.com", "a-.com",
					  "x:0", "x:65536", "x:", "::1", "[::1", "ex*ample.com",
					  "*.*.a.com", "*.10.0.0.1", "a b", "a_%"};

	ok(netpolicy_parse(" PyPI.org. , *.GitHub.com:443,[::1]:80, 10.0.0.1 ", &p, &e) == 0,
	   "a list parses");
	ok(netpolicy_format(&p, out, sizeof out) == 0, "and formats");
	is_str(out, "pypi.org,*.github.com:443,[::1]:80,10.0.0.1", "normalised");
	is_str(matched(&p, "pypi.org", 443), "pypi.org", "exact name, any port");
	is_str(matched(&p, "files.pypi.org", 443), "(none)", "an exact name is not its subdomains");
	is_str(matched(&p, "api.github.com", 443), "*.github.com:443", "wildcard, its port");
	is_str(matched(&p, "a.b.github.com", 443), "*.github.com:443", "wildcard, deeper");
	is_str(matched(&p, "github.com", 443), "(none)", "a wildcard is not the domain itself");
	is_str(matched(&p, "api.github.com", 80), "(none)", "wildcard, other port");
	is_str(matched(&p, "evilgithub.com", 443), "(none)", "a suffix is not a subdomain");
	is_str(matched(&p, "::1", 80), "[::1]:80", "IPv6 literal");
	is_str(matched(&p, "10.0.0.1", 5), "10.0.0.1", "IPv4 literal");
	netpolicy_free(&p);
	ok(netpolicy_parse("*.example.com,www.example.com", &p, &e) == 0, "wildcard and exact");
	is_str(matched(&p, "www.example.com", 1), "www.example.com", "the exact entry wins");
	netpolicy_free(&p);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ok(netpolicy_parse(bad[i], &p, &e) < 0, "refused: \"%s\" (%s)", bad[i], e.msg);

	{
		/* The address classifier: address, class/who may reach it. */
		static const char *const cases[][2] = {
			{"127.0.0.1", "loopback/internal"}, {"127.255.0.9", "loopback/internal"},
			{"169.254.1.1", "link-local/internal"},
			{"169.254.169.254", "cloud metadata/metadata"},
			{"100.100.100.200", "cloud metadata/metadata"},
			{"192.0.0.192", "cloud metadata/metadata"},
			{"168.63.129.16", "cloud metadata/metadata"},
			{"10.0.0.1", "private/internal"}, {"10.255.255.255", "private/internal"},
			{"172.16.0.1", "private/internal"}, {"172.31.255.254", "private/internal"},
			{"172.32.0.1", "ordinary/public"}, {"172.15.255.255", "ordinary/public"},
			{"192.168.1.1", "private/internal"}, {"192.169.0.1", "ordinary/public"},
			{"100.64.0.1", "carrier-grade NAT/internal"},
			{"100.127.255.255", "carrier-grade NAT/internal"},
			{"100.128.0.0", "ordinary/public"}, {"100.63.255.255", "ordinary/public"},
			{"192.0.0.8", "IETF protocol assignments/internal"},
			{"240.0.0.1", "reserved/internal"},
			{"0.0.0.0", "unspecified/never"}, {"0.1.2.3", "unspecified/never"},
			{"224.0.0.1", "multicast/never"}, {"255.255.255.255", "broadcast/never"},
			{"198.18.1.2", "ordinary/public"}, {"192.0.2.1", "ordinary/public"},
			{"198.51.100.7", "ordinary/public"}, {"203.0.113.9", "ordinary/public"},
			{"8.8.8.8", "ordinary/public"},
			{"::1", "loopback/internal"}, {"::", "unspecified/never"},
			{"fe80::1", "link-local/internal"}, {"fec0::1", "site-local/internal"},
			{"fc00::1", "unique local/internal"}, {"fd12:3456::1", "unique local/internal"},
			{"fd00:ec2::254", "cloud metadata/metadata"},
			{"fd00:ec2::253", "unique local/internal"},
			{"64:ff9b::a00:1", "NAT64/internal"}, {"64:ff9b::808:808", "NAT64/internal"},
			{"64:ff9b:1::1", "NAT64/internal"},
			{"64:ff9b::a9fe:a9fe", "cloud metadata/metadata"},
			{"::ffff:10.0.0.1", "private/internal"}, {"::ffff:127.0.0.1", "loopback/internal"},
			{"::ffff:169.254.169.254", "cloud metadata/metadata"},
			{"::ffff:8.8.8.8", "ordinary/public"}, {"::10.0.0.1", "private/internal"},
			{"2002:a00:1::1", "private/internal"}, {"2002:808:808::1", "ordinary/public"},
			{"ff02::1", "multicast/never"}, {"2001:db8::1", "ordinary/public"},
			{"2606:4700::1111", "ordinary/public"},
		};
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
			is_str(cls(cases[i][0]), cases[i][1], "%s", cases[i][0]);
	}
	{
		/* Who reaches what: entry, address, host's own?, answer. */
		static const char *const cases[][4] = {
			{"a.test", "203.0.113.5", "0", "yes"},
			{"a.test", "10.1.2.3", "0", "private: only an entry marked \"+\" or an IP entry may reach"},
			{"*.a.test", "192.168.0.1", "0", "private: only an entry marked \"+\" or an IP entry may reach"},
			{"a.test", "203.0.113.5", "1", "one of this host's own addresses: only an entry marked \"+\" or an IP entry may reach"},
			{"+a.test", "10.1.2.3", "0", "yes"}, {"+*.a.test", "fd00::1", "0", "yes"},
			{"+a.test", "127.0.0.1", "0", "yes"}, {"+a.test", "203.0.113.5", "1", "yes"},
			{"+a.test", "169.254.169.254", "0", "cloud metadata: only an IP entry naming that address may reach"},
			{"+a.test", "fd00:ec2::254", "0", "cloud metadata: only an IP entry naming that address may reach"},
			{"+a.test", "0.0.0.0", "0", "unspecified: only an IP entry may reach"},
			{"a.test", "224.0.0.1", "0", "multicast: only an IP entry may reach"},
			{"10.1.2.3", "10.1.2.3", "0", "yes"}, {"10.0.0.0/8", "10.1.2.3", "0", "yes"},
			{"169.254.169.254", "169.254.169.254", "0", "yes"},
			{"[fd00:ec2::254]:80", "fd00:ec2::254", "0", "yes"},
			{"169.254.0.0/16", "169.254.169.254", "0", "cloud metadata: only an IP entry naming that address may reach"},
			{"169.254.0.0/16", "169.254.1.1", "0", "yes"},
		};
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
			is_str(may(cases[i][0], cases[i][1], cases[i][2][0] == '1'), cases[i][3],
			       "%s -> %s%s", cases[i][0], cases[i][1], cases[i][2][0] == '1' ? " (own)" : "");
	}
	ok(netpolicy_parse("+Wiki.Corp.example:8080, +*.corp.example , 10.1.2.3/8, [FD00::1/8]:443, 192.0.2.0/24, [::1]",
			   &p, &e) == 0, "\"+\" entries and CIDR blocks parse");
	ok(netpolicy_format(&p, out, sizeof out) == 0, "and format");
	is_str(out, "+wiki.corp.example:8080,+*.corp.example,10.0.0.0/8,[fd00::/8]:443,192.0.2.0/24,[::1]",
	       "normalised: a block's address masked to its prefix");
	is_str(matched(&p, "10.200.3.4", 1), "10.0.0.0/8", "an address in a block");
	is_str(matched(&p, "11.0.0.1", 1), "(none)", "an address outside it");
	is_str(matched(&p, "192.0.2.255", 1), "192.0.2.0/24", "the block's last address");
	is_str(matched(&p, "192.0.3.0", 1), "(none)", "the next one");
	is_str(matched(&p, "fdff::1", 443), "[fd00::/8]:443", "an IPv6 block, its port");
	is_str(matched(&p, "fdff::1", 80), "(none)", "another port");
	is_str(matched(&p, "::ffff:10.0.0.1", 1), "(none)", "a mapped address is not the IPv4 block's");
	is_str(matched(&p, "x.corp.example", 1), "+*.corp.example", "a \"+\" wildcard");
	netpolicy_free(&p);
	{
		static const char *const more[] = {"+10.0.0.1", "+[::1]", "10.0.0.0/33", "10.0.0.0/",
						   "a.test/8", "*.10.0.0.0/8", "[fd00::/129]", "++a.test",
						   "+", "10.0.0.0/8/8", "fd00::/8"};
		for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
			ok(netpolicy_parse(more[i], &p, &e) < 0, "refused: \"%s\" (%s)", more[i], e.msg);
	}

	{
		static const char get[] = "GET http://Web.Test:8080/a?b HTTP/1.1\r\nHost: web.test\r\n"
					  "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\n"
					  "X-A: 1\r\n\r\nBODY";
		long hl = proxyreq_head_len(get, sizeof get - 1);
		ok(hl == (long)(sizeof get - 1 - 4), "the head ends at the blank line");
		ok(proxyreq_parse(get, (size_t)hl, &r, &e) == 0, "GET parses");
		is_str(r.host, "Web.Test", "host");
		ok(r.port == 8080 && !r.connect, "port, not CONNECT");
		is_str(r.upstream, "GET /a?b HTTP/1.1\r\nX-A: 1\r\nHost: Web.Test:8080\r\nConnection: close\r\n\r\n",
		       "origin-form, hop-by-hop fields dropped, Host from the URL (the client said web.test)");
		proxyreq_free(&r);
	}
	{
		/* The body's framing: where the one request a connection carries ends. */
		static const struct {
			const char *head;
			long long len;
			int chunked;
		} bodies[] = {
			{"GET http://x/ HTTP/1.1\r\n\r\n", 0, 0},
			{"POST http://x/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n", 5, 0},
			{"POST http://x/ HTTP/1.1\r\ncontent-length:\t 123456789012345 \r\n\r\n",
			 123456789012345LL, 0},
			{"POST http://x/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 1},
		};
		static const char *const refused[] = {
			"POST http://x/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
			"POST http://x/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
			"POST http://x/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
			"POST http://x/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
			"POST http://x/ HTTP/1.1\r\nContent-Length:\r\n\r\n",
			"POST http://x/ HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\n",
			"POST http://x/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
			"POST http://x/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
		};
		for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
			ok(proxyreq_parse(bodies[i].head, strlen(bodies[i].head), &r, &e) == 0 &&
			   r.body_len == bodies[i].len && r.chunked == bodies[i].chunked,
			   "body framing %zu: %lld bytes%s", i, bodies[i].len,
			   bodies[i].chunked ? ", chunked" : "");
			proxyreq_free(&r);
		}
		for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
			ok(proxyreq_parse(refused[i], strlen(refused[i]), &r, &e) < 0,
			   "ambiguous framing %zu refused (%s)", i, e.msg);
	}
	{
		static const char c[] = "CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n";
		ok(proxyreq_parse(c, sizeof c - 1, &r, &e) == 0, "CONNECT to an IPv6 literal");
		is_str(r.host, "2001:db8::1", "brackets removed");
		ok(r.port == 443 && r.connect, "port 443, CONNECT");
		proxyreq_free(&r);
	}
	{
		static const char *const heads[] = {
			"GET /local HTTP/1.1\r\n\r\n", "GET https://x/ HTTP/1.1\r\n\r\n",
			"CONNECT x HTTP/1.1\r\n\r\n", "GET http://u@x/ HTTP/1.1\r\n\r\n",
			"GET http://x/ HTTP/2\r\n\r\n", "GET http://x/ HTTP/1.1\r\n folded\r\n\r\n",
			"GET http://x/ HTTP/1.1\r\nBad Name: v\r\n\r\n",
			"GET http://x:99999/ HTTP/1.1\r\n\r\n", "GET  http://x/ HTTP/1.1\r\n\r\n",
		};
		for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
			ok(proxyreq_parse(heads[i], strlen(heads[i]), &r, &e) < 0, "refused head %zu (%s)",
			   i, e.msg);
	}
	{
		static const unsigned char g[] = {5, 2, 2, 0}, q[] = {5, 1, 0, 3, 3, 'a', '.', 'b', 0x01, 0xbb};
		struct socksreq s;
		int rep;
		ok(socks_greeting_len(g, sizeof g) == 4, "SOCKS5 greeting offering no-auth");
		ok(socks_greeting_len(g, 3) == 0, "incomplete greeting");
		ok(socks_request_parse(q, sizeof q, &s, &rep) == (long)sizeof q, "SOCKS5 CONNECT by name");
		is_str(s.host, "a.b", "its host");
		ok(s.port == 443, "its port");
	}
	return done_testing();
}
