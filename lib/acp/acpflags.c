/* acpflags.c — acp-server's flags checked against each other and their ranges. */
#include "acpflags.h"

#include <string.h>

#include "acp.h"

#define ACP_AUTH_FAILS_FLAG_MAX 1000000	/* -max-auth-failures and -auth-failure-rate */
#define ACP_TOOL_ROUNDS_MAX 100000

int acp_flags_check(const struct acp_flags *f, struct sbx_err *e)
{
	if ((f->cert == NULL) != (f->key == NULL))
		return err_set(e, SBX_EINVAL, "-tls-cert and -tls-key go together");
	if (f->stdio && f->cert)
		return err_set(e, SBX_EINVAL, "-stdio and TLS exclude each other");
	if (f->no_auth && f->token_file)
		return err_set(e, SBX_EINVAL, "-no-auth and -auth-token-file exclude each other");
	if (f->conns_per_source < 0 || f->conns_per_source > ACP_CONN_MAX || f->auth_fails < 0 ||
	    f->auth_fails > ACP_AUTH_FAILS_FLAG_MAX)
		return err_set(e, SBX_EINVAL, "-max-conns-per-source is 0-%d, -max-auth-failures 0-%d",
			       ACP_CONN_MAX, ACP_AUTH_FAILS_FLAG_MAX);
	if (f->auth_fail_rate < 0 || f->auth_fail_rate > ACP_AUTH_FAILS_FLAG_MAX)
		return err_set(e, SBX_EINVAL, "-auth-failure-rate is 0-%d", ACP_AUTH_FAILS_FLAG_MAX);
	if (f->max_sessions < 1 || f->max_sessions > ACP_SESSIONS_MAX)
		return err_set(e, SBX_EINVAL, "-max-sessions is 1-%d", ACP_SESSIONS_MAX);
	if (f->max_tool_rounds < 1 || f->max_tool_rounds > ACP_TOOL_ROUNDS_MAX)
		return err_set(e, SBX_EINVAL, "-max-tool-rounds is 1-%d", ACP_TOOL_ROUNDS_MAX);
	if (strcmp(f->images, "auto") != 0 && strcmp(f->images, "yes") != 0 &&
	    strcmp(f->images, "no") != 0)
		return err_set(e, SBX_EINVAL, "-images is auto, yes or no");
	if (f->context_window < 0)
		return err_set(e, SBX_EINVAL, "-context-window must not be negative");
	return 0;
}

int acp_flags_images(const struct acp_flags *f)
{
	return strcmp(f->images, "yes") == 0 ? 1 : strcmp(f->images, "no") == 0 ? 0 : -1;
}
