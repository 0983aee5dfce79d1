/* util.c — buffers, parameter validation and path helpers shared by the toolbox's tools. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb.h"
#include "gemini_path.h"

int tb_fail(struct tb_call *c, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	c->err.len = 0;
	buf_puts(&c->err, s);
	free(s);
	return -1;
}

/* ---- parameters ---- */

static struct json_object *param(struct tb_call *c, const char *name)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(c->params, name, &v))
		return NULL;
	return v;	/* NULL also for a JSON null: treated as absent */
}

/* AJV's integer: a number with no fractional part. */
static bool is_integer(struct json_object *v, int64_t *out)
{
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return true;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (isfinite(d) && floor(d) == d && fabs(d) < 9e18) {
			*out = (int64_t)d;
			return true;
		}
	}
	return false;
}

static int check_filtering(struct tb_call *c, const char *name, struct json_object *v)
{
	static const char *const keys[] = {"respect_git_ignore", "respect_gemini_ignore"};
	struct json_object *s;
	if (!json_object_is_type(v, json_type_object))
		return tb_fail(c, "params/%s must be object", name);
	for (size_t i = 0; i < 2; i++)
		if (json_object_object_get_ex(v, keys[i], &s) && s &&
		    !json_object_is_type(s, json_type_boolean))
			return tb_fail(c, "params/%s/%s must be boolean", name, keys[i]);
	return 0;
}

static int check_one(struct tb_call *c, const struct tb_param *p, struct json_object *v)
{
	int64_t n;
	switch (p->type) {
	case TB_STRING:
		if (!json_object_is_type(v, json_type_string))
			return tb_fail(c, "params/%s must be string", p->name);
		return 0;
	case TB_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return tb_fail(c, "params/%s must be boolean", p->name);
		return 0;
	case TB_INT:
		if (!is_integer(v, &n))
			return tb_fail(c, "params/%s must be integer", p->name);
		if (p->min >= 0 && n < p->min)
			return tb_fail(c, "params/%s must be >= %d", p->name, p->min);
		return 0;
	case TB_STRARRAY: {
		size_t len;
		if (!json_object_is_type(v, json_type_array))
			return tb_fail(c, "params/%s must be array", p->name);
		len = json_object_array_length(v);
		if (p->min >= 0 && len < (size_t)p->min)
			return tb_fail(c, "params/%s must NOT have fewer than %d items", p->name,
				       p->min);
		for (size_t i = 0; i < len; i++) {
			struct json_object *it = json_object_array_get_idx(v, i);
			if (!it || !json_object_is_type(it, json_type_string))
				return tb_fail(c, "params/%s/%zu must be string", p->name, i);
			if (p->nonempty_items && json_object_get_string_len(it) == 0)
				return tb_fail(c, "params/%s/%zu must NOT have fewer than 1 characters",
					       p->name, i);
		}
		return 0;
	}
	case TB_FILTERING:
		return check_filtering(c, p->name, v);
	}
	return 0;
}

int tb_validate(struct tb_call *c, const struct tb_param *params)
{
	const struct tb_param *p;
	struct json_object *v;
	if (!json_object_is_type(c->params, json_type_object))
		return tb_fail(c, "params must be object");
	for (p = params; p->name; p++)
		if (p->required && !json_object_object_get_ex(c->params, p->name, NULL))
			return tb_fail(c, "params must have required property '%s'", p->name);
	/* a null is present and of no type, as AJV sees it */
	for (p = params; p->name; p++)
		if (json_object_object_get_ex(c->params, p->name, &v) && check_one(c, p, v) < 0)
			return -1;
	return 0;
}

const char *tb_str(struct tb_call *c, const char *name)
{
	struct json_object *v = param(c, name);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

bool tb_bool(struct tb_call *c, const char *name, bool dflt)
{
	struct json_object *v = param(c, name);
	return v && json_object_is_type(v, json_type_boolean) ? json_object_get_boolean(v) : dflt;
}

bool tb_int(struct tb_call *c, const char *name, int64_t *out)
{
	struct json_object *v = param(c, name);
	return v && is_integer(v, out);
}

bool tb_filtering(struct tb_call *c, const char *key)
{
	struct json_object *o = param(c, "file_filtering_options"), *v;
	if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) &&
	    json_object_is_type(v, json_type_boolean))
		return json_object_get_boolean(v);
	return true;
}

const char **tb_strs(struct tb_call *c, const char *name, size_t *n)
{
	struct json_object *v = param(c, name);
	size_t len = v && json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
	const char **out = xmalloc((len + 1) * sizeof *out);
	for (size_t i = 0; i < len; i++)
		out[i] = json_object_get_string(json_object_array_get_idx(v, i));
	out[len] = NULL;
	*n = len;
	return out;
}

/* ---- paths ---- */

/* Lexical normalisation of an absolute path: `.`, `..`, repeated and trailing slashes. */
static char *normalize(const char *abs)
{
	size_t n = strlen(abs);
	char *out = xmalloc(n + 2);
	size_t o = 0;
	const char *p = abs;
	out[o++] = '/';
	while (*p) {
		const char *s;
		size_t len;
		while (*p == '/')
			p++;
		s = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - s);
		if (len == 0 || (len == 1 && s[0] == '.'))
			continue;
		if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (o > 1 && out[o - 1] != '/')
				o--;
			if (o > 1)
				o--;
			continue;
		}
		if (o > 1)
			out[o++] = '/';
		memcpy(out + o, s, len);
		o += len;
	}
	out[o] = '\0';
	return out;
}

char *tb_resolve(const char *workdir, const char *p)
{
	char *joined, *r;
	if (p[0] == '/')
		return normalize(p);
	joined = xasprintf("%s/%s", workdir, p);
	r = normalize(joined);
	free(joined);
	return r;
}

char *tb_relative(const char *from, const char *to)
{
	struct buf b = {0};
	size_t i = 0, common = 0;
	/* the longest common prefix that ends at a component boundary of both paths */
	while (from[i] && from[i] == to[i])
		i++;
	if ((!from[i] && (to[i] == '/' || !to[i])) || (!to[i] && from[i] == '/'))
		common = i;
	else
		while (i > 0 && from[--i] != '/')
			;
	if (i > common)
		common = i;
	if (strcmp(from, "/") == 0)
		common = 0;
	for (const char *q = from + common; *q; q++)
		if (*q == '/' && q[1])
			buf_puts(&b, b.len ? "/.." : "..");
	for (const char *q = to + common; *q == '/'; q++)
		common++;
	if (to[common]) {
		if (b.len)
			buf_puts(&b, "/");
		buf_puts(&b, to + common);
	}
	return b.data ? b.data : xstrdup("");
}

/* decodeURIComponent: %XX escapes of valid UTF-8 decoded; NULL when malformed (a lone `%`,
 * bad hex, an invalid or overlong sequence), where JavaScript throws a URIError. */
static int hex_byte(const char *s, unsigned *out)
{
	unsigned v = 0;
	if (s[0] != '%')
		return -1;
	for (int k = 1; k <= 2; k++) {
		char ch = s[k];
		v <<= 4;
		if (ch >= '0' && ch <= '9')
			v |= (unsigned)(ch - '0');
		else if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
			v |= (unsigned)((ch | 0x20) - 'a' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *uri_decode(const char *s)
{
	struct buf b = {0};
	for (size_t i = 0; s[i];) {
		unsigned c[4], n, cp;
		if (s[i] != '%') {
			buf_append(&b, s + i++, 1);
			continue;
		}
		if (hex_byte(s + i, &c[0]) < 0)
			goto bad;
		i += 3;
		n = c[0] < 0x80 ? 1 : c[0] >= 0xc2 && c[0] <= 0xdf ? 2 : c[0] >= 0xe0 && c[0] <= 0xef ? 3
		  : c[0] >= 0xf0 && c[0] <= 0xf4 ? 4 : 0;
		if (n == 0)
			goto bad;
		cp = n == 1 ? c[0] : c[0] & (0x7fu >> n);
		for (unsigned k = 1; k < n; k++) {
			if (hex_byte(s + i, &c[k]) < 0 || (c[k] & 0xc0) != 0x80)
				goto bad;
			i += 3;
			cp = cp << 6 | (c[k] & 0x3f);
		}
		if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			goto bad;
		for (unsigned k = 0; k < n; k++) {
			char ch = (char)c[k];
			buf_append(&b, &ch, 1);
		}
	}
	if (!b.data)
		buf_append(&b, "", 0);
	return b.data;
bad:
	buf_free(&b);
	return NULL;
}

/* gemini-cli's robustRealpath: realpath; for a missing path, a dangling link is followed by
 * hand and otherwise the real parent gets the last component back. visited catches loops. */
static char *robust_realpath(const char *p, struct buf *visited, char **err)
{
	char *r = realpath(p, NULL), *out;
	const char *slash;
	struct stat st;
	int e = errno;
	if (r)
		return r;
	for (size_t i = 0; i < visited->len; i += strlen(visited->data + i) + 1)
		if (!strcmp(visited->data + i, p)) {
			*err = xasprintf("Infinite recursion detected in robustRealpath: %s", p);
			return NULL;
		}
	buf_append(visited, p, strlen(p) + 1);
	if (e != ENOENT && e != ENOTDIR && e != ENAMETOOLONG && e != EISDIR) {
		/* Node's realpathSync walks the path with lstat and ends with a stat */
		*err = tb_node_err(e, e == ELOOP ? "stat" : "lstat", p);
		return NULL;
	}
	if (lstat(p, &st) < 0) {
		if (errno != ENOENT && errno != ENOTDIR && errno != ENAMETOOLONG && errno != EISDIR) {
			*err = tb_node_err(errno, "lstat", p);
			return NULL;
		}
	} else if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX + 1], *dir, *next;
		ssize_t n = readlink(p, target, PATH_MAX);
		if (n >= 0) {
			target[n] = '\0';
			slash = strrchr(p, '/');
			dir = xasprintf("%.*s", slash && slash != p ? (int)(slash - p) : 1, slash ? p : "/");
			next = tb_resolve(dir, target);
			out = robust_realpath(next, visited, err);
			free(dir);
			free(next);
			return out;
		}
	}
	slash = strrchr(p, '/');
	if (!slash || (slash == p && !p[1]))
		return xstrdup(p);
	{
		char *parent = xasprintf("%.*s", slash == p ? 1 : (int)(slash - p), p);
		char *rp = robust_realpath(parent, visited, err);
		free(parent);
		if (!rp)
			return NULL;
		out = xasprintf("%s%s", strcmp(rp, "/") ? rp : "", slash);
		free(rp);
	}
	return out;
}

char *tb_realpath(const char *p, char **err)
{
	struct buf visited = {0};
	char *dec = uri_decode(p), *abs, *out;
	*err = NULL;
	abs = tb_resolve("/", dec ? dec : p);
	out = robust_realpath(abs, &visited, err);
	free(dec);
	free(abs);
	buf_free(&visited);
	return out;
}

char *tb_real_or_same(const char *p)
{
	char *err, *r = tb_realpath(p, &err);
	free(err);
	return r ? r : xstrdup(p);
}

int tb_check_path(struct tb_call *c, const char *abs)
{
	char buf[256];
	const char *why = gemini_path_invalid(abs, buf, sizeof buf);
	return why ? tb_fail(c, "Invalid path: %s", why) : 0;
}

char *tb_tool_literal(struct tb_call *c, const char *p)
{
	struct stat st;
	char *lit = tb_resolve(c->workdir, p), *out = NULL;
	const char *stripped = p + 1;
	/* resolveDefensiveToolPath: a leading `@` is dropped unless the path (or its first
	 * segment) exists with it */
	if (stat(lit, &st) == 0 || p[0] != '@' || !p[1]) {
		free(lit);
		return xstrdup(p);
	}
	free(lit);
	while (*stripped == '/' || *stripped == '\\')
		stripped++;
	if (p[1] != '/' && p[1] != '\\') {
		size_t n = strcspn(stripped, "/\\");
		char *first = xasprintf("@%.*s", (int)n, stripped);
		char *firstabs = tb_resolve(c->workdir, first);
		if (n > 0 && stat(firstabs, &st) == 0)
			out = xstrdup(p);
		free(first);
		free(firstabs);
	}
	return out ? out : xstrdup(*stripped ? stripped : p);
}

char *tb_tool_path(struct tb_call *c, const char *p)
{
	char *use = tb_tool_literal(c, p), *abs = tb_resolve(c->workdir, use), *real;
	real = tb_real_or_same(abs);
	free(abs);
	free(use);
	if (tb_check_path(c, real) < 0) {
		free(real);
		return NULL;
	}
	return real;
}

const char *tb_basename(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

const char *tb_extname(const char *p, char *buf, size_t n)
{
	const char *base = tb_basename(p), *dot = strrchr(base, '.');
	size_t i;
	buf[0] = '\0';
	if (!dot || dot == base || strlen(dot) >= n)
		return buf;
	for (i = 0; dot[i]; i++)
		buf[i] = (dot[i] >= 'A' && dot[i] <= 'Z') ? (char)(dot[i] + 32) : dot[i];
	buf[i] = '\0';
	return buf;
}

char *tb_node_err(int errnum, const char *syscall, const char *path)
{
	static const struct {
		int num;
		const char *code, *text;
	} tab[] = {
		{ENOENT, "ENOENT", "no such file or directory"},
		{EACCES, "EACCES", "permission denied"},
		{ENOTDIR, "ENOTDIR", "not a directory"},
		{EISDIR, "EISDIR", "illegal operation on a directory"},
		{ELOOP, "ELOOP", "too many symbolic links encountered"},
		{ENAMETOOLONG, "ENAMETOOLONG", "name too long"},
		{EPERM, "EPERM", "operation not permitted"},
		{ENOSPC, "ENOSPC", "no space left on device"},
		{EROFS, "EROFS", "read-only file system"},
		{EEXIST, "EEXIST", "file already exists"},
		{EIO, "EIO", "i/o error"},
		{EINVAL, "EINVAL", "invalid argument"},
		{EAGAIN, "EAGAIN", "resource temporarily unavailable"},
		{EFBIG, "EFBIG", "file too large"},
	};
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (tab[i].num == errnum)
			return xasprintf("%s: %s, %s '%s'", tab[i].code, tab[i].text, syscall,
					    path);
	return xasprintf("E%d: %s, %s '%s'", errnum, strerror(errnum), syscall, path);
}

void tb_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}
