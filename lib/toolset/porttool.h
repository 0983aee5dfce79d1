/* porttool.h — a sandbox's port opened for the person an agent works for: the open_port tool
 * (offered only in a toolset named with "+open_port", such as "basic+open_port", never by
 * default) and agent-loop's /port command. Both open a detached forward as `sbx-port -d` does
 * (the same program, so the same lifetime: it ends with the sandbox) and give back its URL.
 * Ownership: returned strings are newly allocated (caller frees); JSON objects returned are new
 * references. */
#ifndef SBX_PORTTOOL_H
#define SBX_PORTTOOL_H

#include <stdbool.h>

#include <json-c/json.h>

#include "err.h"
#include "toolset.h"

/* What a toolset's name adds to offer open_port ("basic+open_port"). */
#define PORTTOOL_SUFFIX "+open_port"

/* How many base toolsets porttool_toolset can extend. */
#define PORTTOOL_BASES_MAX 4

/* The toolset base (one of base[0..nbase), toolset.c's table, the same on every call) with
 * open_port added, for a name ending in PORTTOOL_SUFFIX; NULL with SBX_EINVAL for any other
 * name with a '+'. */
const struct toolset *porttool_toolset(const char *name, const struct toolset *const *base,
				       size_t nbase, struct sbx_err *e);

/* How porttool_open ended. */
enum porttool_result {
	PORTTOOL_ERROR = -1,	/* e says why (SBX_ENOTFOUND: no such sandbox) */
	PORTTOOL_OPEN = 0,	/* *url is the forward's URL */
	PORTTOOL_NOTHING = 1,	/* nothing listens on the port in the sandbox (e says so) */
};
/* Opens a detached forward from the user's loopback to port of sandbox name (backend,
 * namespace ns) with bindir's sbx-port (NULL: next to this program, else on PATH), after
 * checking on the local backend that something listens there. cancel_fd: -1 or readable to
 * stop. */
enum porttool_result porttool_open(const char *backend, const char *ns, const char *name,
				   int port, const char *bindir, int cancel_fd, char **url,
				   struct sbx_err *e);

/* ACP's tool call content for an open_port result: a resource_link to the URL its text starts
 * with, wrapped as ToolCallContent; NULL when content is not such a result. */
struct json_object *porttool_link(const char *name, const char *content, bool failed);

#endif
