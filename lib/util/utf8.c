/* utf8.c — WHATWG UTF-8 decoding and UTF-16 lengths (see utf8.h). */
#include "utf8.h"

size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char b = s[0], lo = 0x80, hi = 0xbf;
	size_t need, i;
	uint32_t v;

	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if (b >= 0xc2 && b <= 0xdf) {
		need = 1;
		v = b & 0x1f;
	} else if (b >= 0xe0 && b <= 0xef) {
		need = 2;
		v = b & 0x0f;
		if (b == 0xe0)
			lo = 0xa0;
		if (b == 0xed)
			hi = 0x9f;	/* no surrogates */
	} else if (b >= 0xf0 && b <= 0xf4) {
		need = 3;
		v = b & 0x07;
		if (b == 0xf0)
			lo = 0x90;
		if (b == 0xf4)
			hi = 0x8f;	/* nothing above U+10FFFF */
	} else {
		*cp = 0xfffd;
		return 1;
	}
	/* the maximal subpart: every byte that could still start a valid sequence is taken */
	for (i = 1; i <= need; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*cp = 0xfffd;
			return i;
		}
		v = v << 6 | (s[i] & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	*cp = v;
	return need + 1;
}

size_t utf8_encode(uint32_t cp, char *out)
{
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

size_t utf8_repair(const char *s, size_t n, char *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0;

	while (i < n) {
		uint32_t cp;
		size_t k;
		if (p[i] < 0x80) {
			out[o++] = s[i++];
			continue;
		}
		k = utf8_decode(p + i, n - i, &cp);
		if (cp == 0xfffd && !(k == 3 && p[i] == 0xef && p[i + 1] == 0xbf && p[i + 2] == 0xbd)) {
			o += utf8_encode(0xfffd, out + o);
		} else {
			for (size_t j = 0; j < k; j++)
				out[o++] = s[i + j];
		}
		i += k;
	}
	return o;
}

bool utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		uint32_t cp;
		size_t k;
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		k = utf8_decode(p + i, n - i, &cp);
		if (cp == 0xfffd && !(k == 3 && p[i] == 0xef))
			return false;
		i += k;
	}
	return true;
}

size_t utf8_repair_room(const char *s, size_t n)
{
	return utf8_valid(s, n) ? n : UTF8_REPAIR_MAX(n);
}

size_t utf8_utf16_len(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t units = 0;

	for (size_t i = 0; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			units += p[i] >= 0xf0 ? 2 : 1;
	return units;
}

size_t utf8_utf16_prefix(const char *s, size_t n, size_t units, bool *split)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, u = 0;

	*split = false;
	while (i < n) {
		size_t w = p[i] >= 0xf0 ? 2 : 1, len = p[i] >= 0xf0 ? 4 : p[i] >= 0xe0 ? 3 : p[i] >= 0xc0 ? 2 : 1;
		if (u + w > units) {
			*split = u < units;
			break;
		}
		u += w;
		i += len;
	}
	return i < n ? i : n;
}

size_t utf8_utf16_suffix(const char *s, size_t n, size_t units, bool *split)
{
	size_t total = utf8_utf16_len(s, n), skip, off;

	*split = false;
	if (units >= total)
		return 0;
	skip = total - units;
	off = utf8_utf16_prefix(s, n, skip, split);
	if (*split)
		off += 4;	/* the character whose second half starts the suffix */
	return off;
}
