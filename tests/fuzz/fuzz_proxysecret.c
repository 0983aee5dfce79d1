/* fuzz_proxysecret.c — sbx-proxy's look at a request head for -secret placeholders (lib/local/
 * proxysecret.c), on heads a sandbox controls: plain, in Basic credentials, split across
 * fields. The value only ever goes out to the secret's own host; a refused head yields
 * nothing; nothing reads past the input. The first byte picks the host asked for. */
#include <stdlib.h>
#include <string.h>

#include "proxysecret.h"

#define PH "sbxph_0123456789abcdef0123456789abcdef01234567"
#define VALUE "VALUE-never-elsewhere"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static struct proxysecret one;
	static struct proxysecrets s;
	const struct proxysecret *which;
	const char *why, *host;
	struct sbx_err e;
	char *out = NULL;
	size_t len = 0;

	if (s.n == 0) {
		strcpy(one.name, "TOKEN");
		strcpy(one.placeholder, PH);
		if (netpolicy_parse("api.test", &one.hosts, &e) < 0)
			abort();
		one.value = (unsigned char *)VALUE;
		one.value_len = strlen(VALUE);
		s.v = &one;
		s.n = 1;
		s.longest = strlen(PH);
	}
	if (size < 1)
		return 0;
	host = data[0] & 1 ? "api.test" : "other.test";
	switch (proxysecrets_head(&s, (const char *)data + 1, size - 1, host, 80, &out, &len,
				  &which, &why)) {
	case PROXYSECRET_REPLACED:
		if (out == NULL || which != &one || strcmp(host, "api.test") != 0)
			abort();
		break;
	case PROXYSECRET_REFUSED:
		if (out != NULL || which == NULL || why == NULL)
			abort();
		break;
	case PROXYSECRET_NONE:
		if (out != NULL)
			abort();
		break;
	}
	free(out);
	return 0;
}
