/* test_net.c — lib/netpolicy.c (the -allow-host list) and lib/proxyreq.c (what a sandbox
 * sends its proxy). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

#include "../../lib/netpolicy.h"
#include "../../lib/proxyreq.h"
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

static const char *cls4(const char *a)
{
	struct sockaddr_in s = {.sin_family = AF_INET};
	const char *c;

	inet_pton(AF_INET, a, &s.sin_addr);
	c = netpolicy_addr_class((struct sockaddr *)&s);
	return c ? c : "ordinary";
}

static const char *cls6(const char *a)
{
	struct sockaddr_in6 s = {.sin6_family = AF_INET6};
	const char *c;

	inet_pton(AF_INET6, a, &s.sin6_addr);
	c = netpolicy_addr_class((struct sockaddr *)&s);
	return c ? c : "ordinary";
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

	is_str(cls4("127.0.0.1"), "loopback", "127/8");
	is_str(cls4("127.255.0.9"), "loopback", "all of 127/8");
	is_str(cls4("169.254.169.254"), "link-local", "the cloud metadata address");
	is_str(cls4("0.0.0.0"), "unspecified", "0.0.0.0");
	is_str(cls4("224.0.0.1"), "multicast", "multicast");
	is_str(cls4("198.18.1.2"), "ordinary", "an ordinary address");
	is_str(cls6("::1"), "loopback", "::1");
	is_str(cls6("::ffff:127.0.0.1"), "loopback", "IPv4-mapped loopback");
	is_str(cls6("fe80::1"), "link-local", "fe80::/10");
	is_str(cls6("2001:db8::1"), "ordinary", "an ordinary IPv6 address");

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
