/* proxyreq.c — parsing what a sandbox sends its egress proxy: an HTTP/1.x request head or a
 * SOCKS5 handshake. The parser refuses what a careful proxy should not interpret (folded or
 * malformed fields, control bytes, absolute URLs of other schemes) so a request cannot mean
 * one thing to the policy check and another to the server it reaches. */
#include "proxyreq.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xalloc.h"

long proxyreq_head_len(const char *buf, size_t len)
{
	size_t lim = len < PROXYREQ_HEAD_MAX ? len : PROXYREQ_HEAD_MAX;
	const char *nl = memchr(buf, '\n', lim);

	if (nl == NULL && lim > PROXYREQ_LINE_MAX)
		return -1;
	for (size_t i = 0; i + 1 < lim; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return (long)(i + 2);
		if (buf[i + 1] == '\r' && i + 2 < lim && buf[i + 2] == '\n')
			return (long)(i + 3);
	}
	return len >= PROXYREQ_HEAD_MAX ? -1 : 0;
}

static int is_tchar(int c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Splits "host[:port]" or "[v6]:port" (port required when need_port) into r. */
static int parse_authority(const char *a, size_t len, int need_port, int def_port,
			   struct proxyreq *r, struct sbx_err *e)
{
	const char *colon = NULL, *hs = a, *he;

	if (len == 0 || len > 300)
		return err_set(e, SBX_EINVAL, "bad host");
	if (a[0] == '[') {
		const char *close = memchr(a, ']', len);
		if (close == NULL)
			return err_set(e, SBX_EINVAL, "bad host");
		hs = a + 1;
		he = close;
		if (close + 1 < a + len) {
			if (close[1] != ':')
				return err_set(e, SBX_EINVAL, "bad host");
			colon = close + 1;
		}
	} else {
		colon = memchr(a, ':', len);
		he = colon ? colon : a + len;
	}
	if (he == hs)
		return err_set(e, SBX_EINVAL, "bad host");
	for (const char *p = hs; p < he; p++)
		if (!(isalnum((unsigned char)*p) || strchr(".-_:", *p)))
			return err_set(e, SBX_EINVAL, "bad host");
	r->port = def_port;
	if (colon) {
		long port = 0;
		const char *p = colon + 1;
		if (p == a + len || a + len - p > 5)
			return err_set(e, SBX_EINVAL, "bad port");
		for (; p < a + len; p++) {
			if (!isdigit((unsigned char)*p))
				return err_set(e, SBX_EINVAL, "bad port");
			port = port * 10 + (*p - '0');
		}
		if (port < 1 || port > 65535)
			return err_set(e, SBX_EINVAL, "bad port");
		r->port = (int)port;
	} else if (need_port) {
		return err_set(e, SBX_EINVAL, "CONNECT needs host:port");
	}
	r->host = xstrndup(hs, (size_t)(he - hs));
	return 0;
}

int proxyreq_hop_by_hop(const char *name, size_t len)
{
	static const char *const drop[] = {"connection", "proxy-connection", "keep-alive",
					   "proxy-authorization", "proxy-authenticate", "te",
					   "trailer", "upgrade"};
	for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
		if (strlen(drop[i]) == len && strncasecmp(name, drop[i], len) == 0)
			return 1;
	return 0;
}

static int is_field(const char *name, size_t len, const char *want)
{
	return len == strlen(want) && strncasecmp(name, want, len) == 0;
}

/* The body's framing from a Content-Length or Transfer-Encoding field (value v, vlen bytes
 * with its surrounding spaces): a second Content-Length, or one that is not all digits, is
 * refused, so the proxy and the server never disagree on where the request ends. */
static int body_field(const char *name, size_t nlen, const char *v, size_t vlen,
		      struct proxyreq *r, struct sbx_err *e)
{
	if (is_field(name, nlen, "transfer-encoding")) {
		r->chunked = 1;
		return 0;
	}
	if (!is_field(name, nlen, "content-length"))
		return 0;
	while (vlen && (*v == ' ' || *v == '\t'))
		v++, vlen--;
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	if (r->body_len >= 0 || vlen == 0 || vlen > PROXYREQ_LENGTH_DIGITS)
		return err_set(e, SBX_EINVAL, "bad or repeated Content-Length");
	r->body_len = 0;
	for (size_t i = 0; i < vlen; i++) {
		if (!isdigit((unsigned char)v[i]))
			return err_set(e, SBX_EINVAL, "bad or repeated Content-Length");
		r->body_len = r->body_len * 10 + (v[i] - '0');
	}
	return 0;
}

/* Parses the request line; *path is the origin-form target for plain HTTP. */
static int parse_line(const char *l, size_t len, struct proxyreq *r, const char **path,
		      size_t *plen, const char **ver, struct sbx_err *e)
{
	const char *sp1 = memchr(l, ' ', len), *sp2, *t;
	size_t mlen, tlen;

	if (len > PROXYREQ_LINE_MAX)
		return err_set(e, SBX_EINVAL, "request line too long");
	if (sp1 == NULL)
		return err_set(e, SBX_EINVAL, "bad request line");
	sp2 = memchr(sp1 + 1, ' ', (size_t)(l + len - sp1 - 1));
	if (sp2 == NULL || memchr(sp2 + 1, ' ', (size_t)(l + len - sp2 - 1)))
		return err_set(e, SBX_EINVAL, "bad request line");
	mlen = (size_t)(sp1 - l);
	if (mlen == 0 || mlen >= sizeof r->method)
		return err_set(e, SBX_EINVAL, "bad method");
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar((unsigned char)l[i]))
			return err_set(e, SBX_EINVAL, "bad method");
	memcpy(r->method, l, mlen);
	r->method[mlen] = '\0';
	*ver = sp2 + 1;
	if ((size_t)(l + len - *ver) != 8 || strncmp(*ver, "HTTP/1.", 7) != 0 ||
	    ((*ver)[7] != '0' && (*ver)[7] != '1'))
		return err_set(e, SBX_EINVAL, "not HTTP/1.x");
	t = sp1 + 1;
	tlen = (size_t)(sp2 - t);
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
			return err_set(e, SBX_EINVAL, "bad request target");
	if (strcmp(r->method, "CONNECT") == 0) {
		r->connect = 1;
		return parse_authority(t, tlen, 1, 0, r, e);
	}
	if (tlen < 7 || strncasecmp(t, "http://", 7) != 0)
		return err_set(e, SBX_EINVAL, "a proxy request needs an absolute http:// URL "
			       "(use CONNECT for https)");
	t += 7;
	tlen -= 7;
	{
		const char *slash = memchr(t, '/', tlen), *q = memchr(t, '?', tlen);
		const char *end = slash ? slash : t + tlen;
		if (q && q < end)
			end = q;
		if (memchr(t, '@', (size_t)(end - t)))
			return err_set(e, SBX_EINVAL, "user information in the URL is not allowed");
		if (parse_authority(t, (size_t)(end - t), 0, 80, r, e) < 0)
			return -1;
		*path = end;
		*plen = (size_t)(t + tlen - end);
	}
	return 0;
}

int proxyreq_parse(const char *head, size_t len, struct proxyreq *r, struct sbx_err *e)
{
	const char *p = head, *end = head + len, *path = NULL, *ver = NULL;
	size_t plen = 0, fields = 0;
	struct buf up = {0};

	memset(r, 0, sizeof *r);
	r->body_len = -1;
	if (len > PROXYREQ_HEAD_MAX)
		return err_set(e, SBX_EINVAL, "request head too long");
	if (memchr(head, '\0', len))
		return err_set(e, SBX_EINVAL, "NUL in the request head");
	for (int first = 1; p < end; first = 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l;
		if (nl == NULL)
			goto bad;
		l = (size_t)(nl - p);
		if (l && p[l - 1] == '\r')
			l--;
		if (memchr(p, '\r', l))
			goto bad;
		if (first) {
			if (parse_line(p, l, r, &path, &plen, &ver, e) < 0)
				goto fail;
			if (!r->connect) {
				buf_printf(&up, "%s ", r->method);
				if (plen == 0 || path[0] == '?')
					buf_puts(&up, "/");
				buf_append(&up, path, plen);
				buf_printf(&up, " %.8s\r\n", ver);
			}
		} else if (l == 0) {
			break;
		} else {
			const char *colon = memchr(p, ':', l);
			size_t nlen;
			if (++fields > PROXYREQ_FIELDS_MAX) {
				err_set(e, SBX_EINVAL, "too many header fields");
				goto fail;
			}
			if (p[0] == ' ' || p[0] == '\t' || colon == NULL || colon == p)
				goto bad;	/* folded or nameless field */
			nlen = (size_t)(colon - p);
			for (size_t i = 0; i < nlen; i++)
				if (!is_tchar((unsigned char)p[i]))
					goto bad;
			for (size_t i = nlen + 1; i < l; i++)
				if ((unsigned char)p[i] < 0x20 && p[i] != '\t')
					goto bad;
			/* The Host the server sees is the URL's, the one the policy checked: a
			 * client's own could name another site on the same address. */
			if (!r->connect && body_field(p, nlen, colon + 1, (size_t)(p + l - colon - 1), r,
						      e) < 0)
				goto fail;
			if (!r->connect && !is_field(p, nlen, "host") && !proxyreq_hop_by_hop(p, nlen)) {
				buf_append(&up, p, l);
				buf_puts(&up, "\r\n");
			}
		}
		p = nl + 1;
	}
	if (ver == NULL)
		goto bad;
	if (r->chunked && r->body_len >= 0) {
		err_set(e, SBX_EINVAL, "both Content-Length and Transfer-Encoding");
		goto fail;
	}
	if (r->body_len < 0)
		r->body_len = 0;
	if (!r->connect) {
		int v6 = strchr(r->host, ':') != NULL;
		buf_printf(&up, "Host: %s%s%s", v6 ? "[" : "", r->host, v6 ? "]" : "");
		if (r->port != 80)
			buf_printf(&up, ":%d", r->port);
		buf_puts(&up, "\r\nConnection: close\r\n\r\n");
		r->upstream_len = up.len;
		r->upstream = buf_steal(&up);
	}
	return 0;
bad:
	err_set(e, SBX_EINVAL, "malformed request head");
fail:
	buf_free(&up);
	proxyreq_free(r);
	return -1;
}

void proxyreq_free(struct proxyreq *r)
{
	free(r->host);
	free(r->upstream);
	r->host = r->upstream = NULL;
}

long socks_greeting_len(const unsigned char *buf, size_t len)
{
	size_t n;

	if (len < 2)
		return 0;
	if (buf[0] != 5 || buf[1] == 0)
		return -1;
	n = 2 + (size_t)buf[1];
	if (len < n)
		return 0;
	return memchr(buf + 2, 0, buf[1]) ? (long)n : -1;
}

long socks_request_parse(const unsigned char *buf, size_t len, struct socksreq *r, int *reply)
{
	size_t need;

	*reply = 1;
	if (len < 5)
		return 0;
	if (buf[0] != 5 || buf[2] != 0)
		return -1;
	if (buf[1] != 1) {
		*reply = 7;	/* only CONNECT */
		return -1;
	}
	switch (buf[3]) {
	case 1:
		need = 4 + 4 + 2;
		if (len < need)
			return 0;
		inet_ntop(AF_INET, buf + 4, r->host, sizeof r->host);
		break;
	case 3:
		need = 4 + 1 + (size_t)buf[4] + 2;
		if (buf[4] == 0) {
			*reply = 1;
			return -1;
		}
		if (len < need)
			return 0;
		memcpy(r->host, buf + 5, buf[4]);
		r->host[buf[4]] = '\0';
		if (strlen(r->host) != buf[4])
			return -1;
		break;
	case 4:
		need = 4 + 16 + 2;
		if (len < need)
			return 0;
		inet_ntop(AF_INET6, buf + 4, r->host, sizeof r->host);
		break;
	default:
		*reply = 8;
		return -1;
	}
	r->port = (buf[need - 2] << 8) | buf[need - 1];
	if (r->port == 0)
		return -1;
	return (long)need;
}
