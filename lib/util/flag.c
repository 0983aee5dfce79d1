/* flag.c — a table-driven parser with Go flag semantics. */
#include "flag.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

int flag_parse_size(const char *s, long long *out)
{
	char *end;
	long long v;
	int shift;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case '\0': shift = 0; break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: return -1;
	}
	if (shift) {
		if (v > LLONG_MAX >> shift)
			return -1;	/* would not fit: never a wrapped, smaller size */
		v <<= shift;
		end++;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end != '\0' || v < 0)
		return -1;
	*out = v;
	return 0;
}

static int set_value(const struct flag *f, const char *name, const char *val, struct sbx_err *e)
{
	char *end;

	switch (f->type) {
	case FLAG_BOOL:
		if (strcmp(val, "1") == 0 || strcmp(val, "t") == 0 || strcmp(val, "T") == 0 ||
		    strcmp(val, "true") == 0 || strcmp(val, "TRUE") == 0 || strcmp(val, "True") == 0)
			*(bool *)f->ptr = true;
		else if (strcmp(val, "0") == 0 || strcmp(val, "f") == 0 || strcmp(val, "F") == 0 ||
			 strcmp(val, "false") == 0 || strcmp(val, "FALSE") == 0 ||
			 strcmp(val, "False") == 0)
			*(bool *)f->ptr = false;
		else
			return err_set(e, SBX_EINVAL, "invalid boolean value \"%s\" for -%s: parse error",
				       val, name);
		break;
	case FLAG_STRING:
		*(const char **)f->ptr = val;
		break;
	case FLAG_DURATION:
		if (duration_parse(val, (int64_t *)f->ptr) < 0)
			return err_set(e, SBX_EINVAL, "invalid value \"%s\" for flag -%s: not a "
				       "duration (use a unit: 5s, 2m, 1h)", val, name);
		break;
	case FLAG_INT:
		errno = 0;
		*(long long *)f->ptr = strtoll(val, &end, 0);
		if (errno || *val == '\0' || *end != '\0')
			return err_set(e, SBX_EINVAL, "invalid value \"%s\" for flag -%s: parse error",
				       val, name);
		break;
	case FLAG_LIST: {
		struct flag_list *l = f->ptr;
		if (l->n == FLAG_LIST_MAX)
			return err_set(e, SBX_EINVAL, "flag -%s given more than %d times", name,
				       FLAG_LIST_MAX);
		l->v[l->n++] = val;
		break;
	}
	case FLAG_SIZE:
		if (flag_parse_size(val, (long long *)f->ptr) < 0)
			return err_set(e, SBX_EINVAL, "invalid value \"%s\" for flag -%s: parse error",
				       val, name);
		break;
	}
	if (f->seen)
		*f->seen = true;
	return 0;
}

int flag_parse(const struct flag *flags, int argc, char **argv, struct sbx_err *e)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *val = NULL;
		const struct flag *f;
		char name[128];
		size_t n;

		if (a[0] != '-' || a[1] == '\0')
			break;
		if (strcmp(a, "--") == 0)
			return i + 1;
		a += (a[1] == '-') ? 2 : 1;
		if (*a == '\0' || *a == '-' || *a == '=')
			return err_set(e, SBX_EINVAL, "bad flag syntax: %s", argv[i]);
		eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a) : strlen(a);
		if (n >= sizeof name)
			return err_set(e, SBX_EINVAL, "flag provided but not defined: -%.60s", a);
		memcpy(name, a, n);
		name[n] = '\0';
		if (eq)
			val = eq + 1;
		for (f = flags; f->name; f++)
			if (strcmp(f->name, name) == 0)
				break;
		if (f->name == NULL) {
			if (strcmp(name, "h") == 0 || strcmp(name, "help") == 0)
				return FLAG_HELP;
			return err_set(e, SBX_EINVAL, "flag provided but not defined: -%s", name);
		}
		if (f->type == FLAG_BOOL) {
			if (set_value(f, name, val ? val : "true", e) < 0)
				return -1;
			continue;
		}
		if (val == NULL) {
			if (i + 1 >= argc)
				return err_set(e, SBX_EINVAL, "flag needs an argument: -%s", name);
			val = argv[++i];
		}
		if (set_value(f, name, val, e) < 0)
			return -1;
	}
	return i;
}
