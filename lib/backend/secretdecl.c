/* secretdecl.c — parsing -secret declarations and reading their values (see secretdecl.h). */
#include "secretdecl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "netpolicy.h"
#include "xalloc.h"

/* Names the sandbox's own environment sets (lib/local/local_bwrap.c, localnet.c): a secret
 * there would either be overwritten or break the sandbox's own plumbing. */
static const char *const reserved[] = {
	"HOME", "PATH", "LANG", "TERM", "HOSTNAME", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
	"https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "SSL_CERT_FILE",
	"REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE",
};

static int check_name(const char *name, size_t len, struct sbx_err *e)
{
	if (len == 0 || len > SECRETDECL_NAME_MAX || isdigit((unsigned char)name[0]))
		return err_set(e, SBX_EINVAL, "a secret's name is an environment variable's: "
			       "letters, digits and '_', not starting with a digit, at most %d",
			       SECRETDECL_NAME_MAX);
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return err_set(e, SBX_EINVAL, "a secret's name is an environment variable's: "
				       "letters, digits and '_', not starting with a digit, at most %d",
				       SECRETDECL_NAME_MAX);
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		if (strlen(reserved[i]) == len && strncmp(reserved[i], name, len) == 0)
			return err_set(e, SBX_EINVAL, "%s is set by the sandbox itself and cannot be "
				       "a secret", reserved[i]);
	return 0;
}

/* One "NAME[=@FILE]@HOSTS" (len bytes at w) into s. */
static int parse_one(const char *w, size_t len, struct secretdecl *s, struct sbx_err *e)
{
	const char *at = NULL, *name_end;
	char *hosts;
	struct netpolicy p;
	char norm[NETPOLICY_TEXT_MAX + 1];

	for (size_t i = len; i > 0; i--)
		if (w[i - 1] == '@') {
			at = w + i - 1;
			break;
		}
	if (at == NULL || at + 1 == w + len)
		return err_set(e, SBX_EINVAL, "\"%.*s\" is not NAME@HOSTS or NAME=@FILE@HOSTS",
			       (int)len, w);
	name_end = memchr(w, '=', (size_t)(at - w));
	if (name_end == NULL) {
		name_end = at;
	} else {
		if (name_end[1] != '@' || name_end + 2 >= at)
			return err_set(e, SBX_EINVAL, "\"%.*s\": a file is given as NAME=@FILE@HOSTS",
				       (int)len, w);
		s->file = xstrndup(name_end + 2, (size_t)(at - name_end - 2));
	}
	if (check_name(w, (size_t)(name_end - w), e) < 0)
		return -1;
	memcpy(s->name, w, (size_t)(name_end - w));
	s->name[name_end - w] = '\0';
	hosts = xstrndup(at + 1, (size_t)(w + len - at - 1));
	if (netpolicy_parse(hosts, &p, e) < 0) {
		free(hosts);
		return err_prefix(e, "secret %s's hosts", s->name);
	}
	free(hosts);
	if (netpolicy_format(&p, norm, sizeof norm) < 0) {
		netpolicy_free(&p);
		return err_set(e, SBX_EINVAL, "secret %s's host list is too long", s->name);
	}
	netpolicy_free(&p);
	s->hosts = xstrdup(norm);
	return 0;
}

int secretdecls_parse(const char *text, struct secretdecls *d, struct sbx_err *e)
{
	const char *p = text;

	memset(d, 0, sizeof *d);
	for (;;) {
		size_t len;
		p += strspn(p, " \t\n");
		if (*p == '\0')
			break;
		len = strcspn(p, " \t\n");
		if (d->n == SECRETDECL_MAX) {
			err_set(e, SBX_EINVAL, "at most %d secrets", SECRETDECL_MAX);
			goto fail;
		}
		if (parse_one(p, len, &d->v[d->n], e) < 0) {
			d->n++;
			goto fail;
		}
		for (size_t i = 0; i < d->n; i++)
			if (strcmp(d->v[i].name, d->v[d->n].name) == 0) {
				err_set(e, SBX_EINVAL, "secret %s is declared twice", d->v[i].name);
				d->n++;
				goto fail;
			}
		d->n++;
		p += len;
	}
	if (d->n == 0) {
		err_set(e, SBX_EINVAL, "no secret declared (NAME@HOSTS)");
		goto fail;
	}
	return 0;
fail:
	secretdecls_free(d);
	return -1;
}

void secretdecls_free(struct secretdecls *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].hosts);
	}
	memset(d, 0, sizeof *d);
}

int secretdecls_format(const struct secretdecls *d, char *out, size_t size)
{
	size_t used = 0;

	for (size_t i = 0; i < d->n; i++) {
		const struct secretdecl *s = &d->v[i];
		int n = snprintf(out + used, size - used, "%s%s%s%s@%s", i ? " " : "", s->name,
				 s->file ? "=@" : "", s->file ? s->file : "", s->hosts);
		if (n < 0 || (size_t)n >= size - used)
			return -1;
		used += (size_t)n;
	}
	return 0;
}

unsigned char *secretdecl_value(const struct secretdecl *s, size_t *len, struct sbx_err *e)
{
	unsigned char *v;
	size_t n, held;

	if (s->file) {
		char *text = fs_read_small(s->file, SECRETDECL_VALUE_MAX + 2, &n);
		if (text == NULL) {
			err_sys(e, errno, "cannot read secret %s from %s", s->name, s->file);
			return NULL;
		}
		v = (unsigned char *)text;
		held = n;
		if (n > 0 && v[n - 1] == '\n')
			n--;
		if (n > 0 && v[n - 1] == '\r')
			n--;
	} else {
		const char *env = getenv(s->name);
		if (env == NULL || *env == '\0') {
			err_set(e, SBX_EINVAL, "secret %s: the environment variable %s is unset or "
				"empty (or give a file: %s=@FILE@HOSTS)", s->name, s->name, s->name);
			return NULL;
		}
		n = strlen(env);
		v = (unsigned char *)xstrndup(env, n > SECRETDECL_VALUE_MAX ? SECRETDECL_VALUE_MAX + 1 : n);
		if (n > SECRETDECL_VALUE_MAX)
			n = SECRETDECL_VALUE_MAX + 1;
		held = n;
	}
	if (n == 0 || n > SECRETDECL_VALUE_MAX) {
		err_set(e, SBX_EINVAL, "secret %s is %s", s->name,
			n ? "longer than 8 KiB" : "empty");
		goto bad;
	}
	for (size_t i = 0; i < n; i++)
		if (v[i] < 0x20 || v[i] == 0x7f) {
			err_set(e, SBX_EINVAL, "secret %s holds control characters (a value must fit "
				"in an HTTP header field)", s->name);
			goto bad;
		}
	*len = n;
	return v;
bad:
	explicit_bzero(v, held);
	free(v);
	return NULL;
}
