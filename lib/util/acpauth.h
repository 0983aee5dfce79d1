/* acpauth.h — who may talk to acp-server: the principals of a token file (`name token` lines),
 * constant-time token lookup, the token the server generates when none is given, and the
 * per-source-address guard (concurrent connections, failed authentications per minute with a
 * growing back-off).
 * Ownership: acp_auth owns its strings; returned char * are newly allocated (caller frees);
 * principal names handed out are borrowed from the acp_auth for its lifetime. */
#ifndef SBX_ACPAUTH_H
#define SBX_ACPAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* A token file is a handful of lines; a bigger one is a mistake, not a list to scan. */
#define ACP_TOKEN_FILE_MAX ((size_t)1 << 20)
/* Longest token and principal name accepted. */
#define ACP_TOKEN_MAX 1024
#define ACP_PRINCIPAL_MAX 64
/* Principals in one file (each token is compared on every authenticate). */
#define ACP_PRINCIPALS_MAX 1000
/* Bytes of randomness in a generated token (shown as hex): 256 bits. */
#define ACP_TOKEN_RANDOM_BYTES 32
/* The principal of a line holding only a token, of the generated token and of stdio. */
#define ACP_PRINCIPAL_OPERATOR "operator"
/* The principal of connections to a server run with -no-auth. */
#define ACP_PRINCIPAL_ANONYMOUS "anonymous"

struct acp_principal {
	char *name, *token;
};

struct acp_auth {
	struct acp_principal *v;
	size_t n;
};

/* Reads a token file: blank lines and lines starting with '#' skipped; each other line is
 * `TOKEN` (principal "operator") or `NAME TOKEN`. Names are [A-Za-z0-9._-]{1,64}, tokens
 * printable ASCII without spaces; both unique. *loose (may be NULL) is set when the file can be
 * read by other users. */
int acp_auth_load(struct acp_auth *a, const char *path, bool *loose, struct sbx_err *e);
/* The one token of a token file (a client's: TOKEN or NAME TOKEN; several are an error).
 * Newly allocated. */
char *acp_read_token(const char *path, struct sbx_err *e);
/* One principal with this token (the generated-token case). */
void acp_auth_single(struct acp_auth *a, const char *name, const char *token);
void acp_auth_free(struct acp_auth *a);
/* The principal whose token this is, or NULL. Every token is compared, in constant time, so
 * neither the answer's timing nor the tokens' lengths tell anything. */
const char *acp_auth_check(const struct acp_auth *a, const char *token);
/* Constant-time comparison of two strings (their digests). */
bool acp_token_equal(const char *a, const char *b);
/* A new random token: ACP_TOKEN_RANDOM_BYTES as lowercase hex. */
char *acp_token_generate(struct sbx_err *e);
/* Written to its file with paths_token_write (lib/util/paths.h). */

/* ---- the per-source guard ---- */

/* Sources remembered at once; the least recently seen idle one is forgotten for a new one. */
#define ACP_GUARD_SOURCES_MAX 4096
/* The window failed authentications are counted in. */
#define ACP_GUARD_WINDOW_NS (INT64_C(60) * 1000000000)
/* The first block after too many failures, doubled by each further block up to the maximum. */
#define ACP_GUARD_BACKOFF_NS (INT64_C(10) * 1000000000)
#define ACP_GUARD_BACKOFF_MAX_NS (INT64_C(900) * 1000000000)
/* A source that stayed out of trouble this long after its last block starts over. */
#define ACP_GUARD_FORGIVE_NS (INT64_C(900) * 1000000000)

struct acp_guard;

/* conns_max: concurrent connections per source (<= 0: no cap); fails_max: failed
 * authentications per source within ACP_GUARD_WINDOW_NS before it is blocked (<= 0: never). */
struct acp_guard *acp_guard_new(int conns_max, int fails_max);
void acp_guard_free(struct acp_guard *g);
/* Seconds of refill the server-wide bucket of failed authentications holds. */
#define ACP_GUARD_BURST_S 2
/* Failed authentications, server-wide, are a token bucket refilled per_s a second (holding
 * ACP_GUARD_BURST_S seconds' worth); <= 0: no bucket. */
void acp_guard_set_rate(struct acp_guard *g, int per_s);

enum acp_guard_verdict {
	ACP_GUARD_OK,		/* counted: call acp_guard_disconnect when it ends */
	ACP_GUARD_TOO_MANY,	/* conns_max connections from this source are open */
	ACP_GUARD_BLOCKED,	/* blocked after failed authentications; *wait_ns left */
};

/* A connection from src (a source key, see net_peer_source) at time now (monotonic ns). *log
 * is set when this refusal should be logged (the first of a block, at most one a second). */
enum acp_guard_verdict acp_guard_connect(struct acp_guard *g, const char *src, int64_t now,
					 int64_t *wait_ns, bool *log);
void acp_guard_disconnect(struct acp_guard *g, const char *src);
/* Records a failed authentication. Returns the length of the block it started (0: none yet);
 * *count gets the failures in the current window. */
int64_t acp_guard_fail(struct acp_guard *g, const char *src, int64_t now, int *count);
/* Whether src is blocked at now; *wait_ns what is left. */
bool acp_guard_blocked(struct acp_guard *g, const char *src, int64_t now, int64_t *wait_ns);

/* Whether an authentication from src may be compared now: false while the server-wide bucket
 * is empty and src failed within ACP_GUARD_WINDOW_NS (*wait_ns: until the next token). */
bool acp_guard_may_try(struct acp_guard *g, const char *src, int64_t now, int64_t *wait_ns);

#endif
