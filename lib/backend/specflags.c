/* specflags.c — what each sandbox-shaping flag does to a struct sbx_spec.
 * To add one: a row in SPECFLAGS_ROWS (specflags.h: name, variable, synopsis, help) and here
 * its apply_ function, which checks the text and sets the spec field. */
#include "specflags.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "fsutil.h"
#include "netpolicy.h"
#include "secretdecl.h"
#include "xalloc.h"

struct specflag_def {
	const char *name;
	bool boolean;
	const char *env;		/* NULL: no environment variable */
	/* Sets the spec from the text ("true"/"false" for a boolean); -1 with e on bad text. */
	int (*apply)(struct sbx_spec *spec, const char *text, struct sbx_err *e);
};

static int apply_network(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	if (strcmp(text, "true") == 0 || strcmp(text, "1") == 0)
		spec->network = true;
	else if (strcmp(text, "false") == 0 || strcmp(text, "0") == 0)
		spec->network = false;
	else
		return err_set(e, SBX_EINVAL, "want true or false");
	return 0;
}

/* Checks and normalises the -allow-host list (lib/backend/netpolicy.c). */
static int apply_allow_hosts(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	struct netpolicy p;
	int rc;

	if (netpolicy_parse(text, &p, e) < 0)
		return -1;
	rc = netpolicy_format(&p, spec->allow_hosts, sizeof spec->allow_hosts);
	netpolicy_free(&p);
	return rc < 0 ? err_set(e, SBX_EINVAL, "the list is too long") : 0;
}

/* Checks the -secret declarations (each value must be there now: a sandbox whose
 * credential is missing would fail at its first request) and adds their hosts to the
 * allowlist, which the -allow-host row before this one has set. */
static int apply_secrets(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	struct secretdecls d;
	struct netpolicy p;
	struct buf all = {0};
	int rc = -1;

	if (secretdecls_parse(text, &d, e) < 0)
		return -1;
	for (size_t i = 0; i < d.n; i++) {
		size_t len;
		unsigned char *v = secretdecl_value(&d.v[i], &len, e);
		if (v == NULL)
			goto out;
		explicit_bzero(v, len);
		free(v);
	}
	if (secretdecls_format(&d, spec->secrets, sizeof spec->secrets) < 0) {
		err_set(e, SBX_EINVAL, "the declarations are too long");
		goto out;
	}
	buf_puts(&all, spec->allow_hosts);
	for (size_t i = 0; i < d.n; i++)
		buf_printf(&all, "%s%s", all.len ? "," : "", d.v[i].hosts);
	buf_append(&all, "", 1);
	if (netpolicy_parse(all.data, &p, e) < 0)
		goto out;
	rc = netpolicy_format(&p, spec->allow_hosts, sizeof spec->allow_hosts);
	netpolicy_free(&p);
	if (rc < 0)
		err_set(e, SBX_EINVAL, "the allowlist with the secrets' hosts is too long");
out:
	buf_free(&all);
	secretdecls_free(&d);
	return rc;
}

/* A PEM file of CA certificates for the secrets' hosts: read by sbx-create (so by whoever
 * may read it) and handed to the proxy with the secrets. */
static int apply_upstream_ca(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	size_t n;
	char *pem;

	if (strlen(text) >= sizeof spec->upstream_ca)
		return err_set(e, SBX_EINVAL, "the path is too long");
	if ((pem = fs_read_small(text, SPECF_UPSTREAM_CA_MAX, &n)) == NULL)
		return err_sys(e, errno, "cannot read %s", text);
	if (strstr(pem, "-----BEGIN CERTIFICATE-----") == NULL) {
		free(pem);
		return err_set(e, SBX_EINVAL, "%s holds no PEM certificate", text);
	}
	free(pem);
	memcpy(spec->upstream_ca, text, strlen(text) + 1);
	return 0;
}

/* Parses SIZE ("512M", "2G", bytes) within [min, SPECF_SIZE_MAX]. */
static int parse_size(const char *text, int64_t min, int64_t *out, struct sbx_err *e)
{
	long long v;

	if (flag_parse_size(text, &v) < 0 || strlen(text) > 20)
		return err_set(e, SBX_EINVAL, "not a size such as 512M or 2G");
	if (v < min || v > SPECF_SIZE_MAX)
		return err_set(e, SBX_EINVAL, "must be between %" PRId64 "M and %" PRId64 "T",
			       min >> 20, SPECF_SIZE_MAX >> 40);
	*out = v;
	return 0;
}

static int apply_memory(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	return parse_size(text, SPECF_MEMORY_MIN, &spec->limits.memory, e);
}

/* 0: no cap on the home (the other limits stay). */
static int apply_disk(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	spec->limits.disk_asked = true;
	if (strcmp(text, "0") == 0) {
		spec->limits.disk = 0;
		return 0;
	}
	if (parse_size(text, SPECF_DISK_MIN, &spec->limits.disk, e) == 0)
		return 0;
	return err_set(e, SBX_EINVAL, "must be 0 (no cap) or a size between %" PRId64 "M and %"
		       PRId64 "T such as 10G", SPECF_DISK_MIN >> 20, SPECF_SIZE_MAX >> 40);
}

static int apply_pids(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || end == text || *end || *text < '0' || *text > '9')
		return err_set(e, SBX_EINVAL, "not a whole number");
	if (v < SPECF_PIDS_MIN || v > SPECF_PIDS_MAX)
		return err_set(e, SBX_EINVAL, "must be between %d and %d", SPECF_PIDS_MIN,
			       SPECF_PIDS_MAX);
	spec->limits.pids = v;
	return 0;
}

/* CPUs as a plain decimal ("0.5", "2": digits and at most one point, so neither strtod's
 * exponents nor its hexadecimal); 0 is unlimited, the default. */
static int apply_cpus(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	size_t digits = strspn(text, "0123456789"), frac = 0;
	char *end;
	double v;

	if (text[digits] == '.')
		frac = strspn(text + digits + 1, "0123456789") + 1;
	errno = 0;
	v = strtod(text, &end);
	if (text[digits + frac] || digits + frac - (frac > 0) == 0 || errno || *end || !isfinite(v))
		return err_set(e, SBX_EINVAL, "not a number of CPUs such as 0.5 or 2");
	if (v != 0 && (v < 0.01 || v * 1000 > SPECF_CPUS_MAX_MILLI))
		return err_set(e, SBX_EINVAL, "must be 0 (unlimited) or between 0.01 and %d",
			       SPECF_CPUS_MAX_MILLI / 1000);
	spec->limits.cpus_milli = (int64_t)(v * 1000 + 0.5);
	return 0;
}

static int apply_limits(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	if (strcmp(text, "on") == 0)
		spec->limits.enforced = true;
	else if (strcmp(text, "none") == 0)
		spec->limits.enforced = false;
	else
		return err_set(e, SBX_EINVAL, "must be on or none");
	return 0;
}

/* A boolean from a flag ("true"/"false") or its environment variable (also 1/0). */
static int parse_bool(const char *text, bool *out, struct sbx_err *e)
{
	if (strcmp(text, "true") == 0 || strcmp(text, "1") == 0)
		*out = true;
	else if (strcmp(text, "false") == 0 || strcmp(text, "0") == 0)
		*out = false;
	else
		return err_set(e, SBX_EINVAL, "want true or false");
	return 0;
}

static int apply_run_as_root(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	return parse_bool(text, &spec->run_as_root, e);
}

/* A RuntimeClass or StorageClass name (what; example shown) is a DNS-1123 subdomain:
 * lower-case alphanumerics, '-' and '.', each dot-separated label starting and ending with an
 * alphanumeric. Copied to out (size bytes). */
static int apply_subdomain(char *out, size_t size, const char *what, const char *example,
			   const char *text, struct sbx_err *e)
{
	size_t n = strlen(text);
	bool edge = true;	/* at the start of a label */

	if (n == 0 || n >= size)
		return err_set(e, SBX_EINVAL, "a %s name has 1 to %zu characters", what, size - 1);
	for (size_t i = 0; i < n; i++) {
		char c = text[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		bool last = i + 1 == n || text[i + 1] == '.';
		if (!alnum && !(c == '-' && !edge && !last) && !(c == '.' && !edge && i + 1 < n))
			return err_set(e, SBX_EINVAL, "a %s name is a DNS-1123 subdomain "
				       "(lower-case letters, digits, '-' and '.', e.g. %s)", what,
				       example);
		edge = c == '.';
	}
	memcpy(out, text, n + 1);
	return 0;
}

static int apply_runtime_class(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	return apply_subdomain(spec->runtime_class, sizeof spec->runtime_class, "RuntimeClass",
			       "gvisor", text, e);
}

static int apply_storage_class(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	return apply_subdomain(spec->storage_class, sizeof spec->storage_class, "StorageClass",
			       "premium-rwo", text, e);
}

static int apply_warm_pool(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	return apply_subdomain(spec->warm_pool, sizeof spec->warm_pool, "SandboxWarmPool",
			       "python-pool", text, e);
}

static int apply_idle(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	if (strcmp(text, "pause") == 0)
		spec->idle = SBX_IDLE_PAUSE;
	else if (strcmp(text, "delete") == 0)
		spec->idle = SBX_IDLE_DELETE;
	else
		return err_set(e, SBX_EINVAL, "must be pause or delete");
	return 0;
}

static int apply_paused_ttl(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	int64_t v;

	if (strlen(text) > 32 || duration_parse(text, &v) < 0)
		return err_set(e, SBX_EINVAL, "not a duration such as 30m or 24h");
	if (v < SPECF_PAUSED_TTL_MIN || v > SPECF_PAUSED_TTL_MAX)
		return err_set(e, SBX_EINVAL, "must be between 1s and %" PRId64 "h",
			       SPECF_PAUSED_TTL_MAX / (INT64_C(3600) * 1000000000));
	spec->paused_ttl = v;
	return 0;
}

static int apply_root_size(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	return parse_size(text, SPECF_ROOT_MIN, &spec->root_size, e);
}

static int apply_readonly_root(struct sbx_spec *spec, const char *text, struct sbx_err *e)
{
	return parse_bool(text, &spec->readonly_root, e);
}

#define SPECF_DEF_(a, id, fn, name_, boolean_, env_, syn, at, help) \
	[SPECF_##id] = {.name = name_, .boolean = boolean_, .env = env_, .apply = apply_##fn},
static const struct specflag_def defs[SPECF_COUNT] = {SPECFLAGS_ROWS(SPECF_DEF_, ~)};

/* Flags that may be given more than once: their values are joined by spaces. */
static bool repeatable(size_t id)
{
	return id == SPECF_SECRETS;
}

/* The flags that set one limit: meaningless, so refused, beside -limits none. */
static const enum specflag_id limit_ids[] = {SPECF_MEMORY, SPECF_PIDS, SPECF_CPUS, SPECF_DISK};

size_t specflags_table(struct specflags *sf, struct flag *tbl)
{
	for (size_t i = 0; i < SPECF_COUNT; i++) {
		tbl[i].name = defs[i].name;
		tbl[i].type = defs[i].boolean ? FLAG_BOOL : repeatable(i) ? FLAG_LIST : FLAG_STRING;
		tbl[i].ptr = defs[i].boolean ? (void *)&sf->on[i]
			     : repeatable(i) ? (void *)&sf->list[i] : (void *)&sf->val[i];
		tbl[i].seen = &sf->seen[i];
	}
	return SPECF_COUNT;
}

static char *join_list(const struct flag_list *l)
{
	struct buf b = {0};

	for (size_t k = 0; k < l->n; k++)
		buf_printf(&b, "%s%s", k ? " " : "", l->v[k]);
	buf_append(&b, "", 1);
	return buf_steal(&b);
}

int specflags_apply(const struct specflags *sf, struct sbx_spec *spec, struct sbx_err *e)
{
	for (size_t i = 0; i < SPECF_COUNT; i++) {
		const struct specflag_def *d = &defs[i];
		const char *text = NULL;
		char *joined = NULL;
		bool from_env = false;
		int rc;

		if (sf->seen[i] && repeatable(i))
			text = joined = join_list(&sf->list[i]);
		else if (sf->seen[i])
			text = d->boolean ? (sf->on[i] ? "true" : "false") : sf->val[i];
		else if (d->env && getenv(d->env) && *getenv(d->env)) {
			text = getenv(d->env);
			from_env = true;
		}
		if (text == NULL)
			continue;
		rc = d->apply(spec, text, e);
		if (rc < 0 && from_env)
			err_prefix(e, "invalid %s", d->env);
		else if (rc < 0)
			err_prefix(e, "invalid value \"%s\" for flag -%s", text, d->name);
		free(joined);
		if (rc < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof limit_ids / sizeof limit_ids[0]; i++)
		if (!spec->limits.enforced && sf->seen[limit_ids[i]])
			return err_set(e, SBX_EINVAL, "-%s cannot be used with -limits none",
				       defs[limit_ids[i]].name);
	if (spec->upstream_ca[0] && !spec->secrets[0])
		return err_set(e, SBX_EINVAL, "-upstream-ca needs -secret (or SANDBOX_SECRETS): only "
			       "a secret's hosts are reached through the proxy's own TLS");
	if (spec->idle != SBX_IDLE_PAUSE && sf->seen[SPECF_PAUSED_TTL])
		return err_set(e, SBX_EINVAL, "-paused-ttl needs -idle pause (or SANDBOX_IDLE=pause): "
			       "a sandbox that is deleted at its shutdown time is never paused");
	return 0;
}

int specflags_check(const struct specflags *sf, struct sbx_err *e)
{
	return specflags_check_backend(sf, NULL, e);
}

int specflags_check_backend(const struct specflags *sf, const char *backend, struct sbx_err *e)
{
	struct sbx_spec scratch;

	backend_spec_init(&scratch);
	if (specflags_apply(sf, &scratch, e) < 0)
		return -1;
	return backend ? backend_spec_check(backend, &scratch, e) : 0;
}

bool specflags_given(const struct specflags *sf, enum specflag_id id)
{
	const char *env = defs[id].env ? getenv(defs[id].env) : NULL;

	return sf->seen[id] || (env && *env);
}

char **specflags_argv(const struct specflags *sf)
{
	char **v = xcalloc(SPECF_COUNT + FLAG_LIST_MAX + 1, sizeof *v);
	size_t n = 0;

	for (size_t i = 0; i < SPECF_COUNT; i++) {
		if (!sf->seen[i])
			continue;
		if (repeatable(i))
			for (size_t k = 0; k < sf->list[i].n; k++)
				v[n++] = xasprintf("-%s=%s", defs[i].name, sf->list[i].v[k]);
		else if (defs[i].boolean)
			v[n++] = xasprintf("-%s=%s", defs[i].name, sf->on[i] ? "true" : "false");
		else
			v[n++] = xasprintf("-%s=%s", defs[i].name, sf->val[i]);
	}
	return v;
}

void specflags_argv_free(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}
