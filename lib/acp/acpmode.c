/* acpmode.c — the rules a session's mode and model follow: the modes ACP offers, a mode by id,
 * which models may be chosen. Read by sessions (acpsess.c) and config options (acpconfig.c). */
#include <string.h>

#include "acp_int.h"

const struct acp_mode_info acp_modes[ACP_MODE_COUNT] = {
	{"ask", "Ask", "Ask before every tool call"},
	{"auto-read", "Ask for changes",
	 "Ask before edits and commands; tools that only read or search run without asking"},
	{"never-ask", "Never ask", "Run every tool call without asking"},
};

bool acp_model_allowed(const struct acp_server *srv, const char *model, const char *dflt)
{
	char *const *m;

	if (strcmp(model, dflt) == 0)
		return true;
	for (m = srv->cfg.models; m && *m; m++)
		if (strcmp(*m, model) == 0)
			return true;
	return false;
}

enum acp_mode acp_mode_of(const char *id)
{
	int i;

	for (i = 0; id && i < ACP_MODE_COUNT; i++)
		if (strcmp(acp_modes[i].id, id) == 0)
			return (enum acp_mode)i;
	return ACP_MODE_COUNT;
}
