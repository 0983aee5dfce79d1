/* base64.c — RFC 4648 base64 encoding. */
#include "base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *p = in;
	size_t o = 0;

	for (; n >= 3; n -= 3, p += 3) {
		out[o++] = alphabet[p[0] >> 2];
		out[o++] = alphabet[(p[0] & 0x03) << 4 | p[1] >> 4];
		out[o++] = alphabet[(p[1] & 0x0f) << 2 | p[2] >> 6];
		out[o++] = alphabet[p[2] & 0x3f];
	}
	if (n > 0) {	/* one or two bytes left: the quantum is padded with '=' */
		out[o++] = alphabet[p[0] >> 2];
		out[o++] = alphabet[(p[0] & 0x03) << 4 | (n == 2 ? p[1] >> 4 : 0)];
		out[o++] = n == 2 ? alphabet[(p[1] & 0x0f) << 2] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}
