/* toolmsg.h — every text the model receives in place of a tool's own result: a registry or
 * harness failure (`Error calling tool "<name>": <why>`, upstream's wording), a denial, a
 * cancellation. Written here once; the agent turn, the tool registry, ACP (its replay tells
 * them apart from tool results) and sbx-mcp all take them from here. Every result is newly
 * allocated. */
#ifndef SBX_TOOLMSG_H
#define SBX_TOOLMSG_H

#include <stdbool.h>

/* The denial text (upstream's exact string, %s = tool name). */
#define TOOLMSG_DENIED_FMT "The user denied permission to run tool \"%s\"."
/* The synthetic result of a tool call interrupted by cancellation. */
#define TOOLMSG_CANCELLED_FMT "Tool \"%s\" was not run to completion: the user cancelled the turn."

/* `Error calling tool "<tool>": ` followed by fmt's text. */
char *toolmsg_error(const char *tool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `Error calling tool "<tool>": failed to run tool: <why>`: the tool could not be run (no
 * sandbox, the runner failed). */
char *toolmsg_run_failed(const char *tool, const char *why);
char *toolmsg_denied(const char *tool);
/* `Error calling tool "<tool>": the call was interrupted …`: the answer a resumed session gives
 * a call whose process died before its result was saved (it is never run again). */
char *toolmsg_interrupted(const char *tool);
char *toolmsg_cancelled(const char *tool);
/* Whether content is one of the texts above for tool (so the harness's, not the tool's). */
bool toolmsg_is_harness(const char *tool, const char *content);

#endif
