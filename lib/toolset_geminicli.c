/* toolset_geminicli.c — placeholder until the geminicli toolset lands (issue 7). */
#include "toolset.h"

#include "xalloc.h"

static char *no_prompt(struct sbx_err *e)
{
	err_set(e, SBX_EUNAVAIL, "the geminicli toolset is not built yet");
	return NULL;
}

const struct toolset toolset_geminicli = {
	.name = "geminicli",
	.default_image = "geminicli-toolbox:latest",
	.tools = NULL,
	.ntools = 0,
	.system_prompt = no_prompt,
};
