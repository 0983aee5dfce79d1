/* fuzz_proxyreq.c — what a sandbox sends its egress proxy: the HTTP request head (found in a
 * stream, then parsed) and a SOCKS5 handshake. A parsed request must name a host that the
 * policy code can normalise or refuse, a port in range, and an upstream head that is itself
 * a complete, parseable head; nothing may read past the input. The address classifier judges
 * an IPv4 address and its mapped form alike. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"
#include "proxyreq.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	struct proxyreq r, again;
	struct socksreq s;
	struct sbx_err e;
	long hl;
	int reply;

	memcpy(copy, data, size);
	hl = proxyreq_head_len(copy, size);
	if (hl > (long)size)
		abort();
	if (hl > 0 && proxyreq_parse(copy, (size_t)hl, &r, &e) == 0) {
		char host[512];
		if (r.port < 1 || r.port > 65535 || r.host == NULL || strlen(r.host) > 300)
			abort();
		snprintf(host, sizeof host, "%s", r.host);
		netpolicy_host_normalise(host, sizeof host);
		if (!r.connect) {
			/* What goes upstream must be one well-formed head, no more. */
			if (proxyreq_head_len(r.upstream, r.upstream_len) != (long)r.upstream_len)
				abort();
			if (r.upstream_len < PROXYREQ_HEAD_MAX - 64 &&
			    strncmp(r.upstream, r.method, strlen(r.method)) != 0)
				abort();
		}
		proxyreq_free(&r);
	}
	(void)again;
	/* SOCKS5: a greeting, then a request, each never longer than the input. */
	{
		long g = socks_greeting_len(data, size);
		if (g > (long)size)
			abort();
		if (g > 0) {
			long q = socks_request_parse(data + g, size - (size_t)g, &s, &reply);
			if (q > (long)(size - (size_t)g))
				abort();
			if (q > 0 && (s.port < 1 || s.port > 65535 || strlen(s.host) >= sizeof s.host))
				abort();
		}
	}
	/* The address classifier: an IPv4 address and its mapped form are one class. */
	if (size >= 4) {
		struct sockaddr_in s4 = {.sin_family = AF_INET};
		struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
		enum netpolicy_reach r4, r6;
		const char *c4, *c6;
		memcpy(&s4.sin_addr, data, 4);
		s6.sin6_addr.s6_addr[10] = s6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(s6.sin6_addr.s6_addr + 12, data, 4);
		c4 = netpolicy_addr_class((struct sockaddr *)&s4, &r4);
		c6 = netpolicy_addr_class((struct sockaddr *)&s6, &r6);
		if (r4 != r6 || (c4 == NULL) != (c6 == NULL) || (c4 && strcmp(c4, c6) != 0))
			abort();
	}
	/* The allowlist parser too: it reads sbx-create's flag and the environment. */
	if (size < 8192) {
		char *text = malloc(size + 1);
		struct netpolicy p;
		memcpy(text, data, size);
		text[size] = '\0';
		if (netpolicy_parse(text, &p, &e) == 0) {
			char out[NETPOLICY_TEXT_MAX + 1];
			if (netpolicy_format(&p, out, sizeof out) == 0) {
				struct netpolicy p2;
				if (netpolicy_parse(out, &p2, &e) != 0 || p2.n != p.n)
					abort();
				netpolicy_free(&p2);
			}
			netpolicy_free(&p);
		}
		free(text);
	}
	free(copy);
	return 0;
}
