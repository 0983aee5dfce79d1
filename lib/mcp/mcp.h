/* mcp.h — the Model Context Protocol pieces both sides share, over lib/jsonrpc: the revisions
 * spoken and their negotiation, initialize (the client's params, the server's result, the
 * client's check of it), toolset tools ⇄ MCP Tool objects, tools/call params read and results
 * built (text content, structuredContent, isError) and read back, progress and cancellation.
 * sbx-mcp serves with it; ACP's mcpServers side calls MCP servers with it.
 * Ownership: every json_object returned is a new reference (caller puts); objects passed in
 * stay the caller's unless a parameter says "taken"; char * results are newly allocated. */
#ifndef SBX_MCP_H
#define SBX_MCP_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "err.h"
#include "toolset.h"

/* The current revision and the previous one; a client asking for another gets the current
 * one (the specification's rule) and decides whether it can go on. 2025-03-26 too, for the
 * clients that still ask for it (Zed): tools without outputSchema, results without
 * structuredContent (JSON-RPC batches, which it allowed, stay refused). */
#define MCP_VERSION_LATEST "2025-11-25"
#define MCP_VERSION_PREVIOUS "2025-06-18"
#define MCP_VERSION_OLDEST "2025-03-26"

/* Methods and notifications used. */
#define MCP_INITIALIZE "initialize"
#define MCP_INITIALIZED "notifications/initialized"
#define MCP_PING "ping"
#define MCP_TOOLS_LIST "tools/list"
#define MCP_TOOLS_CALL "tools/call"
#define MCP_CANCELLED "notifications/cancelled"
#define MCP_PROGRESS "notifications/progress"

/* A tool name is 1–128 characters of [A-Za-z0-9_.-] (2025-11-25 "Tool names"). */
#define MCP_TOOL_NAME_MAX 128

/* One revision and what it carries. */
struct mcp_version {
	const char *name;
	bool structured;	/* outputSchema and structuredContent (2025-06-18 on) */
	bool titles;		/* Tool.title, Implementation.title (2025-06-18 on) */
};

/* The revision named, or NULL when it is not spoken. */
const struct mcp_version *mcp_version_find(const char *name);
/* Server side: the revision to answer an initialize that asked for `requested` (NULL or
 * unknown: the latest). Never NULL. */
const struct mcp_version *mcp_negotiate(const char *requested);
/* "2025-11-25, 2025-06-18", for messages. */
const char *mcp_versions_text(void);

struct mcp_impl {
	const char *name, *title, *version;
};

/* Server side: the initialize result for revision v: protocolVersion, capabilities (tools,
 * listChanged false: the toolset never changes), serverInfo, and instructions (NULL: none). */
struct json_object *mcp_initialize_result(const struct mcp_version *v, const struct mcp_impl *info,
					  const char *instructions);
/* Client side: initialize params asking for the latest revision. */
struct json_object *mcp_initialize_params(const struct mcp_impl *client);
/* Client side: the revision an initialize result settled on; -1 with e when the server
 * answered one not spoken here or a malformed result. */
const struct mcp_version *mcp_initialize_check(struct json_object *result, struct sbx_err *e);

/* The MCP Tool for one toolset tool: name, description, inputSchema, outputSchema when the
 * tool has one and v carries it, title, and annotations (readOnlyHint etc.) from its kind. */
struct json_object *mcp_tool(const struct tool *t, const struct mcp_version *v);
/* The tools/list result for a toolset: {"tools":[…]}, no nextCursor (one page). */
struct json_object *mcp_tools_list(const struct toolset *ts, const struct mcp_version *v);
/* Client side: an MCP Tool as a chat-request declaration
 * {"type":"function","function":{"name","description","parameters"}}; NULL with e when the
 * tool has no valid name or its inputSchema is not an object. */
struct json_object *mcp_tool_declaration(struct json_object *tool, struct sbx_err *e);

/* Server side: reads tools/call params. *name is borrowed from params; *arguments is the
 * arguments object as JSON text ("{}" when absent; newly allocated); *progress_token is
 * borrowed (NULL when the client sent none). -1 with e (a -32602 matter) when name is missing
 * or arguments is not an object. */
int mcp_call_params(struct json_object *params, const char **name, char **arguments,
		    struct json_object **progress_token, struct sbx_err *e);
/* Server side: a tools/call result: one text block, isError, and structuredContent (taken;
 * NULL: none; dropped for revisions without it). */
struct json_object *mcp_call_result(const struct mcp_version *v, const char *text, bool is_error,
				    struct json_object *structured);
/* Client side: the text blocks of a tools/call result joined by newlines (other block types
 * named in brackets), and *is_error. NULL with e when result has no content array. */
char *mcp_call_result_text(struct json_object *result, bool *is_error, struct sbx_err *e);

/* notifications/progress params. message may be NULL. */
struct json_object *mcp_progress_params(struct json_object *token, int64_t progress,
					const char *message);
/* A usable progress token or request id: a string or an integer. */
bool mcp_id_ok(struct json_object *id);
/* Whether two ids (or tokens) are the same: same JSON type and value. */
bool mcp_id_equal(struct json_object *a, struct json_object *b);

#endif
