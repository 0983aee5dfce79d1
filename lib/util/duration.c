/* duration.c — Go's duration grammar, both ways, so flags and messages match upstream. */
#include "duration.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *unit;
	int64_t ns;
} units[] = {
	{"ns", 1}, {"us", 1000}, {"\xc2\xb5s", 1000}, {"\xce\xbcs", 1000},
	{"ms", DURATION_MS}, {"s", DURATION_S}, {"m", 60 * DURATION_S},
	{"h", 3600 * DURATION_S},
};

int duration_parse(const char *s, int64_t *ns)
{
	int neg = 0;
	double total = 0;

	if (s == NULL || *s == '\0')
		return -1;
	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (strcmp(s, "0") == 0) {
		*ns = 0;
		return 0;
	}
	if (*s == '\0')
		return -1;
	while (*s) {
		double v = 0, scale = 1;
		int digits = 0;
		size_t i, best = 0, bestlen = 0;

		while (*s >= '0' && *s <= '9') {
			v = v * 10 + (*s++ - '0');
			digits++;
		}
		if (*s == '.') {
			s++;
			while (*s >= '0' && *s <= '9') {
				scale /= 10;
				v += (*s++ - '0') * scale;
				digits++;
			}
		}
		if (digits == 0)
			return -1;
		for (i = 0; i < sizeof units / sizeof units[0]; i++) {
			size_t n = strlen(units[i].unit);
			if (strncmp(s, units[i].unit, n) == 0 && n > bestlen) {
				best = i;
				bestlen = n;
			}
		}
		if (bestlen == 0)
			return -1;
		total += v * (double)units[best].ns;
		if (total > 9.2e18)
			return -1;
		s += bestlen;
	}
	*ns = (int64_t)(total + 0.5) * (neg ? -1 : 1);
	return 0;
}

/* Writes v / 10^prec with trailing zeros of the fraction dropped, as Go's fmtFrac+fmtInt. */
static int put_frac(char *out, size_t len, uint64_t v, int prec)
{
	uint64_t p = 1;
	int i, n;
	char frac[24];

	/* Callers pass 0 to 9 (ns to s); bounded here so the fraction's width is known. */
	if (prec < 0 || prec > 9)
		prec = prec < 0 ? 0 : 9;
	for (i = 0; i < prec; i++)
		p *= 10;
	n = snprintf(out, len, "%llu", (unsigned long long)(v / p));
	if (prec > 0 && v % p != 0) {
		uint64_t r = v % p;

		/* prec digits, zero-padded on the left */
		for (i = prec - 1; i >= 0; i--, r /= 10)
			frac[i] = (char)('0' + r % 10);
		frac[prec] = '\0';
		for (i = prec - 1; i > 0 && frac[i] == '0'; i--)
			frac[i] = '\0';
		n += snprintf(out + n, len > (size_t)n ? len - (size_t)n : 0, ".%s", frac);
	}
	return n;
}

char *duration_format(int64_t d, char *buf, size_t len)
{
	uint64_t u = d < 0 ? (uint64_t)(-(d + 1)) + 1 : (uint64_t)d;
	const char *sign = d < 0 ? "-" : "";
	char num[64];

	if (u == 0) {
		snprintf(buf, len, "0s");
	} else if (u < 1000) {
		snprintf(buf, len, "%s%lluns", sign, (unsigned long long)u);
	} else if (u < 1000000) {
		put_frac(num, sizeof num, u, 3);
		snprintf(buf, len, "%s%s\xc2\xb5s", sign, num);
	} else if (u < (uint64_t)DURATION_S) {
		put_frac(num, sizeof num, u, 6);
		snprintf(buf, len, "%s%sms", sign, num);
	} else {
		uint64_t secs = u / (uint64_t)DURATION_S, frac = u % (uint64_t)DURATION_S;
		uint64_t h = secs / 3600, m = (secs / 60) % 60, s = secs % 60;
		put_frac(num, sizeof num, s * (uint64_t)DURATION_S + frac, 9);
		if (h)
			snprintf(buf, len, "%s%lluh%llum%ss", sign, (unsigned long long)h,
				 (unsigned long long)m, num);
		else if (m)
			snprintf(buf, len, "%s%llum%ss", sign, (unsigned long long)m, num);
		else
			snprintf(buf, len, "%s%ss", sign, num);
	}
	return buf;
}

int64_t duration_test_scaled(int64_t ns)
{
	const char *v = getenv("SBX_TEST_TIME_SCALE");
	char *end;
	double f;

	if (v == NULL || *v == '\0')
		return ns;
	f = strtod(v, &end);
	if (*end != '\0' || !(f > 0 && f <= 1))
		return ns;
	return (int64_t)((double)ns * f);
}
