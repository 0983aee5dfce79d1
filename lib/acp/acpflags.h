/* acpflags.h — acp-server's own flags and the ranges they may take, checked in one place (the
 * limits are acp.h's). Ownership: the strings point into argv; nothing is allocated. */
#ifndef SBX_ACPFLAGS_H
#define SBX_ACPFLAGS_H

#include <stdbool.h>

#include "err.h"

/* What the command line gave (long long: checked before any is narrowed to an int). */
struct acp_flags {
	const char *cert, *key, *token_file, *images;
	bool stdio, no_auth;
	long long conns_per_source, auth_fails, auth_fail_rate, max_sessions, max_tool_rounds;
	long long context_window;
};

/* 0 if the flags go together and each is in its range; else -1 with e (SBX_EINVAL) naming
 * the flag, in acp-server(1)'s order: TLS pair, exclusions, limits, -images, -context-window. */
int acp_flags_check(const struct acp_flags *f, struct sbx_err *e);
/* -images as acp_config.images: 1 yes, 0 no, -1 auto (by the model's name). */
int acp_flags_images(const struct acp_flags *f);

#endif
