/* toolmsg.c — the texts of toolmsg.h. */
#include "toolmsg.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define ERROR_HEAD "Error calling tool \""

char *toolmsg_error(const char *tool, const char *fmt, ...)
{
	va_list ap;
	char *why, *out;

	va_start(ap, fmt);
	why = xvasprintf(fmt, ap);
	va_end(ap);
	out = xasprintf(ERROR_HEAD "%s\": %s", tool, why);
	free(why);
	return out;
}

char *toolmsg_run_failed(const char *tool, const char *why)
{
	return toolmsg_error(tool, "failed to run tool: %s", why);
}

char *toolmsg_interrupted(const char *tool)
{
	return toolmsg_error(tool, "the call was interrupted before its result was saved; it "
			     "was not run again: check what it did before repeating it");
}

char *toolmsg_denied(const char *tool)
{
	return xasprintf(TOOLMSG_DENIED_FMT, tool);
}

char *toolmsg_cancelled(const char *tool)
{
	return xasprintf(TOOLMSG_CANCELLED_FMT, tool);
}

bool toolmsg_is_harness(const char *tool, const char *content)
{
	char *denied, *cancelled;
	bool f;

	if (strncmp(content, ERROR_HEAD, strlen(ERROR_HEAD)) == 0)
		return true;
	denied = toolmsg_denied(tool);
	cancelled = toolmsg_cancelled(tool);
	f = strcmp(content, denied) == 0 || strcmp(content, cancelled) == 0;
	free(denied);
	free(cancelled);
	return f;
}
