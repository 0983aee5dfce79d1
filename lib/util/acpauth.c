/* acpauth.c — token files, constant-time lookup, generated tokens, the per-source guard. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "acpauth.h"
#include "paths.h"
#include "randhex.h"
#include "xalloc.h"

/* ---- token files ---- */

static bool name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > ACP_PRINCIPAL_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static bool token_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > ACP_TOKEN_MAX)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

/* Reads the whole file, at most ACP_TOKEN_FILE_MAX bytes. */
static char *slurp(const char *path, bool *loose, struct sbx_err *e)
{
	struct buf b = {0};
	struct stat st;
	char chunk[4096];
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		err_sys(e, errno, "cannot open token file %s", path);
		e->code = SBX_EINVAL;	/* a configuration mistake, not a missing sandbox */
		return NULL;
	}
	if (loose)
		*loose = fstat(fd, &st) == 0 && (st.st_mode & 077) != 0;
	while ((r = read(fd, chunk, sizeof chunk)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err_sys(e, errno, "cannot read token file %s", path);
			goto bad;
		}
		if (b.len + (size_t)r > ACP_TOKEN_FILE_MAX) {
			err_set(e, SBX_EINVAL, "token file %s is larger than %zu bytes", path,
				ACP_TOKEN_FILE_MAX);
			goto bad;
		}
		buf_append(&b, chunk, (size_t)r);
	}
	close(fd);
	buf_append(&b, "", 1);
	return buf_steal(&b);
bad:
	close(fd);
	buf_free(&b);
	return NULL;
}

static int add_line(struct acp_auth *a, const char *path, int lineno, char *line,
		    struct sbx_err *e)
{
	char *name = NULL, *tok = line, *sp;
	size_t i;

	if ((sp = strpbrk(line, " \t")) != NULL) {
		*sp++ = '\0';
		name = line;
		tok = sp + strspn(sp, " \t");
		if (strpbrk(tok, " \t"))
			return err_set(e, SBX_EINVAL, "token file %s line %d: want TOKEN or NAME TOKEN",
				       path, lineno);
	}
	if (name && !name_ok(name, strlen(name)))
		return err_set(e, SBX_EINVAL, "token file %s line %d: a principal name is 1-%d "
			       "letters, digits, '.', '_' or '-'", path, lineno, ACP_PRINCIPAL_MAX);
	if (!token_ok(tok, strlen(tok)))
		return err_set(e, SBX_EINVAL, "token file %s line %d: a token is 1-%d printable "
			       "characters without spaces", path, lineno, ACP_TOKEN_MAX);
	if (name == NULL)
		name = ACP_PRINCIPAL_OPERATOR;
	for (i = 0; i < a->n; i++) {
		if (strcmp(a->v[i].name, name) == 0)
			return err_set(e, SBX_EINVAL, "token file %s line %d: principal \"%s\" is "
				       "already defined", path, lineno, name);
		if (strcmp(a->v[i].token, tok) == 0)
			return err_set(e, SBX_EINVAL, "token file %s line %d: the same token as "
				       "principal \"%s\"", path, lineno, a->v[i].name);
	}
	if (a->n >= ACP_PRINCIPALS_MAX)
		return err_set(e, SBX_EINVAL, "token file %s holds more than %d principals", path,
			       ACP_PRINCIPALS_MAX);
	a->v = xrealloc(a->v, (a->n + 1) * sizeof *a->v);
	a->v[a->n].name = xstrdup(name);
	a->v[a->n].token = xstrdup(tok);
	a->n++;
	return 0;
}

int acp_auth_load(struct acp_auth *a, const char *path, bool *loose, struct sbx_err *e)
{
	char *text = slurp(path, loose, e), *line, *save = NULL;
	int lineno = 0, rc = 0;

	memset(a, 0, sizeof *a);
	if (text == NULL)
		return -1;
	for (line = text; line && rc == 0; line = save) {
		size_t n;
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		lineno++;
		line += strspn(line, " \t\r");
		n = strlen(line);
		while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		rc = add_line(a, path, lineno, line, e);
	}
	OPENSSL_cleanse(text, strlen(text));
	free(text);
	if (rc == 0 && a->n == 0)
		rc = err_set(e, SBX_EINVAL, "token file %s is empty", path);
	if (rc < 0)
		acp_auth_free(a);
	return rc;
}

char *acp_read_token(const char *path, struct sbx_err *e)
{
	struct acp_auth a;
	char *tok;

	if (acp_auth_load(&a, path, NULL, e) < 0)
		return NULL;
	if (a.n != 1) {
		err_set(e, SBX_EINVAL, "token file %s holds %zu tokens: a client's holds one", path, a.n);
		acp_auth_free(&a);
		return NULL;
	}
	tok = xstrdup(a.v[0].token);
	acp_auth_free(&a);
	return tok;
}

void acp_auth_single(struct acp_auth *a, const char *name, const char *token)
{
	a->v = xcalloc(1, sizeof *a->v);
	a->v[0].name = xstrdup(name);
	a->v[0].token = xstrdup(token);
	a->n = 1;
}

void acp_auth_free(struct acp_auth *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		free(a->v[i].name);
		OPENSSL_cleanse(a->v[i].token, strlen(a->v[i].token));
		free(a->v[i].token);
	}
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

bool acp_token_equal(const char *a, const char *b)
{
	unsigned char ha[SHA256_DIGEST_LENGTH], hb[SHA256_DIGEST_LENGTH];

	/* Comparing digests keeps the time independent of where, or whether, lengths differ. */
	SHA256((const unsigned char *)a, strlen(a), ha);
	SHA256((const unsigned char *)b, strlen(b), hb);
	return CRYPTO_memcmp(ha, hb, sizeof ha) == 0;
}

const char *acp_auth_check(const struct acp_auth *a, const char *token)
{
	const char *who = NULL;
	size_t i;

	/* No early exit: the time does not depend on which principal matched, or whether one did. */
	for (i = 0; i < a->n; i++)
		if (acp_token_equal(token, a->v[i].token) && who == NULL)
			who = a->v[i].name;
	return who;
}

char *acp_token_generate(struct sbx_err *e)
{
	char *out = xmalloc(2 * ACP_TOKEN_RANDOM_BYTES + 1);

	if (randhex(out, ACP_TOKEN_RANDOM_BYTES, e) < 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* ---- the per-source guard ---- */

struct source {
	char key[64];
	int conns;
	int fails;			/* failures in the window starting at window */
	int64_t window, blocked_until, backoff, last_seen, last_log;
	int64_t last_failed;		/* the last failed authentication; 0: none */
	bool logged_block;
};

struct acp_guard {
	pthread_mutex_t mu;
	int conns_max, fails_max;
	/* The server-wide bucket of failed authentications: holds up to burst, refills rate a
	 * second (0: no bucket); tokens as of refilled (monotonic ns). */
	int rate, burst;
	double tokens;
	int64_t refilled;
	struct source *v;
	size_t n;
};

struct acp_guard *acp_guard_new(int conns_max, int fails_max)
{
	struct acp_guard *g = xcalloc(1, sizeof *g);

	pthread_mutex_init(&g->mu, NULL);
	g->conns_max = conns_max;
	g->fails_max = fails_max;
	g->v = xcalloc(ACP_GUARD_SOURCES_MAX, sizeof *g->v);
	return g;
}

void acp_guard_set_rate(struct acp_guard *g, int per_s)
{
	pthread_mutex_lock(&g->mu);
	g->rate = per_s;
	g->burst = per_s * ACP_GUARD_BURST_S;
	g->tokens = g->burst;
	g->refilled = 0;
	pthread_mutex_unlock(&g->mu);
}

/* Tops the bucket up to now. Caller holds g->mu. */
static void refill(struct acp_guard *g, int64_t now)
{
	if (g->rate <= 0)
		return;
	if (g->refilled != 0 && now > g->refilled)
		g->tokens += (double)(now - g->refilled) * g->rate / 1e9;
	if (g->tokens > g->burst)
		g->tokens = g->burst;
	g->refilled = now;
}

void acp_guard_free(struct acp_guard *g)
{
	if (g == NULL)
		return;
	pthread_mutex_destroy(&g->mu);
	free(g->v);
	free(g);
}

/* The entry of src, made (or recycled from the least recently seen idle one) when create. */
static struct source *lookup(struct acp_guard *g, const char *src, int64_t now, bool create)
{
	struct source *s, *old = NULL;
	size_t i;

	for (i = 0; i < g->n; i++)
		if (strcmp(g->v[i].key, src) == 0)
			return &g->v[i];
	if (!create)
		return NULL;
	if (g->n < ACP_GUARD_SOURCES_MAX) {
		s = &g->v[g->n++];
	} else {
		/* Full: forget the idle, unblocked source seen longest ago. With every entry busy
		 * or blocked the newcomer goes uncounted (it cannot have failed yet). */
		for (i = 0; i < g->n; i++) {
			s = &g->v[i];
			if (s->conns == 0 && s->blocked_until <= now &&
			    (old == NULL || s->last_seen < old->last_seen))
				old = s;
		}
		if (old == NULL)
			return NULL;
		s = old;
	}
	memset(s, 0, sizeof *s);
	snprintf(s->key, sizeof s->key, "%s", src);
	s->backoff = ACP_GUARD_BACKOFF_NS;
	return s;
}

enum acp_guard_verdict acp_guard_connect(struct acp_guard *g, const char *src, int64_t now,
					 int64_t *wait_ns, bool *log)
{
	enum acp_guard_verdict v = ACP_GUARD_OK;
	struct source *s;

	*wait_ns = 0;
	*log = false;
	pthread_mutex_lock(&g->mu);
	s = lookup(g, src, now, true);
	if (s == NULL)
		goto out;
	s->last_seen = now;
	if (s->blocked_until > now) {
		v = ACP_GUARD_BLOCKED;
		*wait_ns = s->blocked_until - now;
		*log = !s->logged_block;
		s->logged_block = true;
	} else if (g->conns_max > 0 && s->conns >= g->conns_max) {
		v = ACP_GUARD_TOO_MANY;
		/* A flood of refusals must not become a flood of log lines. */
		*log = now - s->last_log >= 1000000000 || s->last_log == 0;
		if (*log)
			s->last_log = now;
	} else {
		s->conns++;
	}
out:
	pthread_mutex_unlock(&g->mu);
	return v;
}

void acp_guard_disconnect(struct acp_guard *g, const char *src)
{
	struct source *s;

	pthread_mutex_lock(&g->mu);
	if ((s = lookup(g, src, 0, false)) != NULL && s->conns > 0)
		s->conns--;
	pthread_mutex_unlock(&g->mu);
}

int64_t acp_guard_fail(struct acp_guard *g, const char *src, int64_t now, int *count)
{
	struct source *s;
	int64_t block = 0;

	*count = 0;
	pthread_mutex_lock(&g->mu);
	refill(g, now);
	if (g->rate > 0)
		g->tokens = g->tokens >= 1 ? g->tokens - 1 : 0;
	if ((s = lookup(g, src, now, true)) == NULL)
		goto out;
	s->last_failed = now;
	if (g->fails_max <= 0)
		goto out;
	s->last_seen = now;
	if (s->blocked_until && now - s->blocked_until > ACP_GUARD_FORGIVE_NS)
		s->backoff = ACP_GUARD_BACKOFF_NS;
	if (now - s->window > ACP_GUARD_WINDOW_NS || s->fails == 0) {
		s->window = now;
		s->fails = 0;
	}
	*count = ++s->fails;
	if (s->fails >= g->fails_max) {
		block = s->backoff;
		s->blocked_until = now + block;
		s->logged_block = false;
		s->backoff = s->backoff * 2 > ACP_GUARD_BACKOFF_MAX_NS ? ACP_GUARD_BACKOFF_MAX_NS
								       : s->backoff * 2;
		s->fails = 0;
	}
out:
	pthread_mutex_unlock(&g->mu);
	return block;
}

bool acp_guard_blocked(struct acp_guard *g, const char *src, int64_t now, int64_t *wait_ns)
{
	struct source *s;
	bool b = false;

	*wait_ns = 0;
	pthread_mutex_lock(&g->mu);
	if ((s = lookup(g, src, now, false)) != NULL && s->blocked_until > now) {
		b = true;
		*wait_ns = s->blocked_until - now;
	}
	pthread_mutex_unlock(&g->mu);
	return b;
}

bool acp_guard_may_try(struct acp_guard *g, const char *src, int64_t now, int64_t *wait_ns)
{
	struct source *s;
	bool ok = true;

	*wait_ns = 0;
	pthread_mutex_lock(&g->mu);
	refill(g, now);
	/* A source with no recent failure is always heard, so guessing from one source never
	 * shuts out another's right token; the rest share what the bucket holds. */
	if (g->rate > 0 && g->tokens < 1 && (s = lookup(g, src, now, false)) != NULL &&
	    s->last_failed != 0 && now - s->last_failed < ACP_GUARD_WINDOW_NS) {
		ok = false;
		*wait_ns = (int64_t)((1 - g->tokens) * 1e9 / g->rate);
	}
	pthread_mutex_unlock(&g->mu);
	return ok;
}
