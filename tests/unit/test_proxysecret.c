/* test_proxysecret.c — lib/local/proxysecret.c: the feed sbx-proxy reads, and what it does to
 * request heads that carry a placeholder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proxysecret.h"
#include "tap.h"

#define PH "sbxph_0123456789abcdef0123456789abcdef01234567"

/* A feed with one secret, TOKEN = "s3cret" for api.test:80, read back through a pipe. */
static int load(struct proxysecrets *s, const char *feed, struct sbx_err *e)
{
	int p[2];

	if (pipe(p) < 0 || write(p[1], feed, strlen(feed)) != (ssize_t)strlen(feed))
		return -1;
	close(p[1]);
	return proxysecrets_read(p[0], s, e);
}

static enum proxysecret_verdict run(const struct proxysecrets *s, const char *head,
				    const char *host, char **out, const char **why)
{
	const struct proxysecret *which;
	size_t len;

	*out = NULL;
	return proxysecrets_head(s, head, strlen(head), host, 80, out, &len, &which, why);
}

int main(void)
{
	struct proxysecrets s;
	struct sbx_err e;
	const char *why;
	char *out;

	ok(load(&s, "TOKEN " PH " api.test:80 733363726574\n", &e) == 0, "a feed loads");
	ok(s.n == 1 && strcmp(s.v[0].name, "TOKEN") == 0 && s.v[0].value_len == 6, "one secret");
	ok(run(&s, "GET / HTTP/1.1\r\nAuthorization: Bearer " PH "\r\n\r\n", "api.test", &out, &why) ==
	   PROXYSECRET_REPLACED, "a Bearer header to the listed host");
	is_str(out, "GET / HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n", "the value in place");
	free(out);
	/* "u:" PH in base64, and "u:s3cret" in base64 */
	ok(run(&s, "GET / HTTP/1.1\r\nauthorization: Basic dTpzYnhwaF8wMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3\r\n\r\n",
	       "api.test", &out, &why) == PROXYSECRET_REPLACED, "Basic credentials to the listed host");
	is_str(out, "GET / HTTP/1.1\r\nauthorization: Basic dTpzM2NyZXQ=\r\n\r\n", "decoded, replaced, encoded");
	free(out);
	ok(run(&s, "GET / HTTP/1.1\r\nX-Key: " PH "\r\n\r\n", "other.test", &out, &why) ==
	   PROXYSECRET_REFUSED && out == NULL, "another host: refused");
	is_str(why, "a placeholder sent to a host not listed for it", "why");
	ok(run(&s, "GET /?k=" PH " HTTP/1.1\r\n\r\n", "api.test", &out, &why) == PROXYSECRET_REFUSED,
	   "in the URL, even to the listed host: refused");
	ok(run(&s, "GET / HTTP/1.1\r\n" PH ": x\r\n\r\n", "api.test", &out, &why) == PROXYSECRET_REFUSED,
	   "as a field's name: refused");
	ok(run(&s, "GET / HTTP/1.1\r\nX-Key: nothing\r\n\r\n", "other.test", &out, &why) ==
	   PROXYSECRET_NONE, "no placeholder: untouched");
	ok(proxysecrets_find(&s, "a=" PH "&b", strlen(PH) + 4) == &s.v[0], "found in a body");
	proxysecrets_free(&s);
	ok(load(&s, "TOKEN short api.test 73\n", &e) < 0, "a malformed feed is refused");
	ok(load(&s, "TOKEN " PH " api.test 7g\n", &e) < 0, "a value that is not hex is refused");
	return done_testing();
}
