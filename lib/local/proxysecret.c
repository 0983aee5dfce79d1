/* proxysecret.c — sbx-proxy's secrets: the feed, and placeholders found and replaced in
 * request heads (see proxysecret.h). */
#include "proxysecret.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "xalloc.h"

/* Wipes what may have held a value (nothing when it was never allocated). */
static void wipe(void *p, size_t n)
{
	if (p)
		explicit_bzero(p, n);
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One feed line "NAME PLACEHOLDER HOSTS HEX" (NUL-terminated, no newline) into s. */
static int parse_line(char *line, struct proxysecret *s, struct sbx_err *e)
{
	char *f[4], *save = NULL;
	size_t hl;

	for (int i = 0; i < 4; i++)
		if ((f[i] = strtok_r(i ? NULL : line, " ", &save)) == NULL)
			return err_set(e, SBX_EINVAL, "a malformed secrets feed");
	if (strlen(f[0]) >= sizeof s->name || strlen(f[1]) >= sizeof s->placeholder ||
	    strlen(f[1]) < 16 || (hl = strlen(f[3])) % 2 || hl == 0)
		return err_set(e, SBX_EINVAL, "a malformed secrets feed");
	snprintf(s->name, sizeof s->name, "%s", f[0]);
	snprintf(s->placeholder, sizeof s->placeholder, "%s", f[1]);
	if (netpolicy_parse(f[2], &s->hosts, e) < 0)
		return -1;
	s->value = xmalloc(hl / 2);
	s->value_len = hl / 2;
	for (size_t i = 0; i < hl / 2; i++) {
		int hi = hexval(f[3][2 * i]), lo = hexval(f[3][2 * i + 1]);
		if (hi < 0 || lo < 0)
			return err_set(e, SBX_EINVAL, "a malformed secrets feed");
		s->value[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* Decodes hex text into a new NUL-terminated string, or NULL. */
static char *unhex(const char *h, size_t *len)
{
	size_t n = strlen(h);
	char *out;

	if (n % 2)
		return NULL;
	out = xmalloc(n / 2 + 1);
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			explicit_bzero(out, n / 2);	/* half a key is still a key */
			free(out);
			return NULL;
		}
		out[i] = (char)(hi << 4 | lo);
	}
	out[n / 2] = '\0';
	*len = n / 2;
	return out;
}

/* "ca CERTHEX KEYHEX" or "upstream-ca HEX". */
static int pem_line(char *line, struct proxysecrets *s, struct sbx_err *e)
{
	char *save = NULL, *kind = strtok_r(line, " ", &save), *a = strtok_r(NULL, " ", &save);
	char *b = strtok_r(NULL, " ", &save);
	size_t n;

	if (strcmp(kind, "ca") == 0 && a && b && !s->ca_cert) {
		s->ca_cert = unhex(a, &n);
		s->ca_key = unhex(b, &s->ca_key_len);
		if (s->ca_cert && s->ca_key)
			return 0;
	} else if (strcmp(kind, "upstream-ca") == 0 && a && !b && !s->upstream_ca) {
		if ((s->upstream_ca = unhex(a, &n)) != NULL)
			return 0;
	}
	return err_set(e, SBX_EINVAL, "a malformed secrets feed");
}

int proxysecrets_read(int fd, struct proxysecrets *s, struct sbx_err *e)
{
	struct buf b = {0};
	char chunk[4096], *line, *save = NULL;
	int rc = -1;

	memset(s, 0, sizeof *s);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_sys(e, errno, "reading the secrets feed");
			goto out;
		}
		if (n == 0)
			break;
		if (b.len + (size_t)n > PROXYSECRET_FEED_MAX) {
			err_set(e, SBX_EINVAL, "the secrets feed is too long");
			goto out;
		}
		buf_append(&b, chunk, (size_t)n);
	}
	explicit_bzero(chunk, sizeof chunk);
	buf_append(&b, "", 1);
	for (line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct proxysecret *p;
		if (strncmp(line, "ca ", 3) == 0 || strncmp(line, "upstream-ca ", 12) == 0) {
			if (pem_line(line, s, e) < 0)
				goto out;
			continue;
		}
		s->v = xrealloc(s->v, (s->n + 1) * sizeof *s->v);
		p = &s->v[s->n++];
		memset(p, 0, sizeof *p);
		if (parse_line(line, p, e) < 0)
			goto out;
		if (strlen(p->placeholder) > s->longest)
			s->longest = strlen(p->placeholder);
	}
	rc = 0;
out:
	wipe(b.data, b.len);
	buf_free(&b);
	close(fd);
	if (rc < 0)
		proxysecrets_free(s);
	return rc;
}

void proxysecrets_free(struct proxysecrets *s)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].value)
			explicit_bzero(s->v[i].value, s->v[i].value_len);
		free(s->v[i].value);
		netpolicy_free(&s->v[i].hosts);
	}
	free(s->v);
	if (s->ca_key)
		explicit_bzero(s->ca_key, s->ca_key_len);
	free(s->ca_key);
	free(s->ca_cert);
	free(s->upstream_ca);
	memset(s, 0, sizeof *s);
}

const struct proxysecret *proxysecrets_find(const struct proxysecrets *s, const char *buf,
					    size_t len)
{
	for (size_t i = 0; i < s->n; i++)
		if (memmem(buf, len, s->v[i].placeholder, strlen(s->v[i].placeholder)))
			return &s->v[i];
	return NULL;
}

/* Appends p (len bytes) to out with every placeholder of sec replaced by its value. */
static void put_replaced(struct buf *out, const char *p, size_t len, const struct proxysecret *sec)
{
	size_t pl = strlen(sec->placeholder);
	const char *hit;

	while ((hit = memmem(p, len, sec->placeholder, pl)) != NULL) {
		buf_append(out, p, (size_t)(hit - p));
		buf_append(out, sec->value, sec->value_len);
		len -= (size_t)(hit - p) + pl;
		p = hit + pl;
	}
	buf_append(out, p, len);
}

/* Appends p with every secret's placeholder replaced (each a pass of its own). */
static void put_replaced_all(struct buf *out, const char *p, size_t len,
			     const struct proxysecrets *s)
{
	struct buf cur = {0}, next = {0};

	buf_append(&cur, p, len);
	for (size_t i = 0; i < s->n; i++) {
		put_replaced(&next, cur.data, cur.len, &s->v[i]);
		wipe(cur.data, cur.len);
		buf_free(&cur);
		cur = next;
		next = (struct buf){0};
	}
	buf_append(out, cur.data, cur.len);
	wipe(cur.data, cur.len);
	buf_free(&cur);
}

/* The user:password of "Basic TOKEN" in v (vlen bytes), decoded into a new buffer of *n
 * bytes, or NULL when v is not Basic credentials. */
static unsigned char *basic_decode(const char *v, size_t vlen, size_t *n)
{
	unsigned char *out;
	int got, pad = 0;

	if (vlen < 7 || strncasecmp(v, "Basic ", 6) != 0)
		return NULL;
	v += 6;
	vlen -= 6;
	while (vlen && v[0] == ' ')
		v++, vlen--;
	if (vlen == 0 || vlen % 4 || vlen > 4 * SECRET_BASIC_MAX / 3)
		return NULL;
	pad = (v[vlen - 1] == '=') + (v[vlen - 2] == '=');
	out = xmalloc(vlen / 4 * 3 + 1);
	got = EVP_DecodeBlock(out, (const unsigned char *)v, (int)vlen);
	if (got < pad) {
		free(out);
		return NULL;
	}
	*n = (size_t)(got - pad);
	return out;
}

/* A header field with every placeholder replaced, into out (name and ": " too). */
static void put_field(struct buf *out, const char *line, size_t nlen, const char *v, size_t vlen,
		      const struct proxysecrets *s, int basic)
{
	buf_append(out, line, nlen + 1);
	buf_puts(out, " ");
	if (basic) {
		size_t n = 0;
		unsigned char *dec = basic_decode(v, vlen, &n), *enc;
		struct buf plain = {0};
		put_replaced_all(&plain, (const char *)dec, n, s);
		enc = xmalloc(4 * (plain.len / 3 + 1) + 1);
		EVP_EncodeBlock(enc, (const unsigned char *)plain.data, (int)plain.len);
		buf_printf(out, "Basic %s", (char *)enc);
		explicit_bzero(enc, strlen((char *)enc));
		wipe(plain.data, plain.len);
		explicit_bzero(dec, n);
		free(enc);
		free(dec);
		buf_free(&plain);
	} else {
		put_replaced_all(out, v, vlen, s);
	}
	buf_puts(out, "\r\n");
}

/* Whether a header value carries placeholders (plainly, or in Basic credentials: *basic):
 * the first secret found, and in *denied one that may not go to host:port (else NULL). */
static const struct proxysecret *field_secrets(const struct proxysecrets *s, const char *name,
					       size_t nlen, const char *v, size_t vlen,
					       const char *host, int port, int *basic,
					       const struct proxysecret **denied)
{
	const struct proxysecret *first = NULL;
	size_t n = 0;
	unsigned char *dec = NULL;

	*basic = 0;
	*denied = NULL;
	if (nlen == 13 && strncasecmp(name, "authorization", 13) == 0)
		dec = basic_decode(v, vlen, &n);
	for (size_t i = 0; i < s->n; i++) {
		const struct proxysecret *sec = &s->v[i];
		size_t pl = strlen(sec->placeholder);
		int plain = memmem(v, vlen, sec->placeholder, pl) != NULL;
		int inbasic = dec && memmem(dec, n, sec->placeholder, pl) != NULL;
		if (!plain && !inbasic)
			continue;
		*basic |= inbasic && !plain;
		if (first == NULL)
			first = sec;
		if (*denied == NULL && netpolicy_match(&sec->hosts, host, port) == NULL)
			*denied = sec;
	}
	if (dec)
		explicit_bzero(dec, n);
	free(dec);
	return first;
}

/* Long: one pass over the head's lines, each of which may refuse the request. */
enum proxysecret_verdict proxysecrets_head(const struct proxysecrets *s, const char *head,
					   size_t len, const char *host, int port, char **out,
					   size_t *out_len, const struct proxysecret **which,
					   const char **why)
{
	const char *p = head, *end = head + len;
	struct buf b = {0};
	int replaced = 0;

	*which = NULL;
	if (s->n == 0)
		return PROXYSECRET_NONE;
	for (int first = 1; p < end; first = 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *colon, *v;
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p), vlen;
		const struct proxysecret *sec, *denied;
		int basic;

		if (l && p[l - 1] == '\r')
			l--;
		colon = first ? NULL : memchr(p, ':', l);
		if (first || l == 0 || colon == NULL) {
			if ((sec = proxysecrets_find(s, p, l)) != NULL) {
				*which = sec;
				*why = first ? "a placeholder in the URL" : "a placeholder in the head";
				goto refuse;
			}
			buf_append(&b, p, nl ? (size_t)(nl + 1 - p) : l);
			p = nl ? nl + 1 : end;
			continue;
		}
		if ((sec = proxysecrets_find(s, p, (size_t)(colon - p))) != NULL) {
			*which = sec;
			*why = "a placeholder in a header field's name";
			goto refuse;
		}
		for (v = colon + 1; v < p + l && (*v == ' ' || *v == '\t'); v++)
			;
		vlen = (size_t)(p + l - v);
		while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			vlen--;
		sec = field_secrets(s, p, (size_t)(colon - p), v, vlen, host, port, &basic, &denied);
		if (denied) {
			*which = denied;
			*why = "a placeholder sent to a host not listed for it";
			goto refuse;
		} else if (sec == NULL) {
			buf_append(&b, p, nl ? (size_t)(nl + 1 - p) : l);
		} else {
			put_field(&b, p, (size_t)(colon - p), v, vlen, s, basic);
			*which = sec;
			replaced = 1;
		}
		p = nl ? nl + 1 : end;
	}
	if (!replaced) {
		buf_free(&b);
		return PROXYSECRET_NONE;
	}
	*out_len = b.len;
	*out = buf_steal(&b);
	return PROXYSECRET_REPLACED;
refuse:
	wipe(b.data, b.len);
	buf_free(&b);
	return PROXYSECRET_REFUSED;
}
