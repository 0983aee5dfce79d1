/* proxyreq.h — the request head an HTTP proxy client sends (RFC 9112 request line and header
 * fields), and a SOCKS5 greeting and request (RFC 1928), parsed from bytes a sandbox controls.
 * Every input is bounded; anything unusual is refused rather than guessed at.
 * Ownership: a struct proxyreq owns its strings; proxyreq_free releases them. */
#ifndef SBX_PROXYREQ_H
#define SBX_PROXYREQ_H

#include <stddef.h>

#include "err.h"

/* The longest request line: long URLs exist, 8 KiB is what common servers accept. */
#define PROXYREQ_LINE_MAX 8192
/* The whole head (request line and header fields). */
#define PROXYREQ_HEAD_MAX 65536
/* Header fields in one request. */
#define PROXYREQ_FIELDS_MAX 128
/* Digits in a Content-Length: 15 is 999 TB, past any upload and any overflow. */
#define PROXYREQ_LENGTH_DIGITS 15

struct proxyreq {
	char method[32];
	char *host;		/* as the client wrote it (brackets removed for IPv6) */
	int port;
	int connect;		/* CONNECT: a tunnel; else plain HTTP forwarding */
	/* For plain HTTP: the head to send upstream (origin-form target, hop-by-hop fields
	 * dropped, Host from the URL whatever the client wrote, "Connection: close"), and its
	 * length. */
	char *upstream;
	size_t upstream_len;
	/* Plain HTTP: the body's length from Content-Length (0 without one): the proxy carries
	 * one request per connection, and not a byte after it. chunked: the request has a
	 * Transfer-Encoding, whose end the proxy does not look for (it answers 411). */
	long long body_len;
	int chunked;
};

/* Length of the head at the start of buf (through the blank line), 0 when not complete yet,
 * -1 when it cannot be a valid head within PROXYREQ_HEAD_MAX. */
long proxyreq_head_len(const char *buf, size_t len);
/* Parses a complete head of len bytes. SBX_EINVAL with a cause fit for a 400 response. */
int proxyreq_parse(const char *head, size_t len, struct proxyreq *r, struct sbx_err *e);
void proxyreq_free(struct proxyreq *r);

/* SOCKS5: what a CONNECT request names. */
struct socksreq {
	char host[256];		/* a name, or an address in text */
	int port;
};
/* Parses a SOCKS5 greeting at buf: its length, 0 when incomplete, -1 when invalid or when it
 * does not offer "no authentication". */
long socks_greeting_len(const unsigned char *buf, size_t len);
/* Parses a SOCKS5 request at buf: its length, 0 when incomplete, -1 when invalid; *reply is
 * the SOCKS reply code to send on failure (7: command not supported, 8: address type). */
long socks_request_parse(const unsigned char *buf, size_t len, struct socksreq *r, int *reply);

/* Whether the field name (len bytes) is hop-by-hop, never forwarded by a proxy (RFC 9110
 * 7.6.1), or the proxy's own (Proxy-Authorization, Proxy-Connection). */
int proxyreq_hop_by_hop(const char *name, size_t len);

#endif
