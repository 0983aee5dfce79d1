/* test_base64.c — lib/util/base64 against RFC 4648's test vectors (section 10), every byte
 * value, and the length macro. */
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "tap.h"

static void is_b64(const void *in, size_t n, const char *want, const char *what)
{
	char *out = malloc(BASE64_LEN(n) + 1);
	size_t len = base64_encode(in, n, out);

	is_str(out, want, "%s", what);
	ok(len == strlen(want) && len == BASE64_LEN(n), "%s: length %zu", what, len);
	free(out);
}

int main(void)
{
	/* RFC 4648, 10. Test Vectors */
	is_b64("", 0, "", "BASE64(\"\")");
	is_b64("f", 1, "Zg==", "BASE64(\"f\")");
	is_b64("fo", 2, "Zm8=", "BASE64(\"fo\")");
	is_b64("foo", 3, "Zm9v", "BASE64(\"foo\")");
	is_b64("foob", 4, "Zm9vYg==", "BASE64(\"foob\")");
	is_b64("fooba", 5, "Zm9vYmE=", "BASE64(\"fooba\")");
	is_b64("foobar", 6, "Zm9vYmFy", "BASE64(\"foobar\")");
	/* the two last letters of the alphabet and high bits, which a signed char would break */
	is_b64("\xfb\xff\xbf", 3, "+/+/", "high bytes: + and /");
	is_b64("\x00\x00\x00", 3, "AAAA", "NUL bytes are data");
	is_b64("\xff", 1, "/w==", "one high byte");
	{
		unsigned char all[256];
		char *out = malloc(BASE64_LEN(sizeof all) + 1);

		for (int i = 0; i < 256; i++)
			all[i] = (unsigned char)i;
		base64_encode(all, sizeof all, out);
		/* what base64(1) writes for the bytes 0..255: its first and last quanta */
		ok(strncmp(out, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g", 44) == 0,
		   "bytes 0..32");
		ok(strcmp(out + strlen(out) - 8, "/P3+/w==") == 0, "bytes 252..255");
		free(out);
	}
	return done_testing();
}
