/* mcpclient.h — the client side of the Model Context Protocol for ACP's mcpServers: one stdio
 * MCP server started inside a sandbox (lib/backend/backend.h exec with pipes: the server never runs on
 * this host, and its environment never appears on a command line), spoken to over lib/peer
 * (JSON-RPC, one message per line): initialize (lib/mcp/mcp.h), tools/list, tools/call, ping
 * answered. Its standard error is kept (the last MCPCLIENT_STDERR_MAX bytes) to say why it
 * failed.
 * Threads: three of its own (the exec, the JSON-RPC loop, the stderr drain); calls may come
 * from any thread. Ownership: strings in the config are copied; returned json objects are new
 * references, char * newly allocated. */
#ifndef SBX_MCPCLIENT_H
#define SBX_MCPCLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "err.h"

/* How long initialize and tools/list may take (the server may be installing itself). */
#define MCPCLIENT_START_TIMEOUT_NS (INT64_C(60) * 1000000000)
/* The end of the server's standard error kept for messages. */
#define MCPCLIENT_STDERR_MAX 2048
/* Tools taken from one server (pages of tools/list followed up to this many tools). */
#define MCPCLIENT_TOOLS_MAX 256

struct mcpclient_config {
	const char *name;		/* the server's name in mcpServers (messages) */
	const char *backend, *namespace, *sandbox;
	const char *workdir;		/* NULL: the backend's */
	char *const *argv;		/* command (absolute) and args, NULL-terminated */
	char *const *env;		/* NAME=VALUE, NULL-terminated; may be NULL */
};

struct mcpclient;

/* Starts the server and initializes it; its tools are listed. NULL with e (the server's
 * last words included) when it could not start or answer. */
struct mcpclient *mcpclient_start(const struct mcpclient_config *cfg, struct sbx_err *e);
/* Its tools: MCP Tool objects (borrowed, valid until mcpclient_stop). */
struct json_object *mcpclient_tools(const struct mcpclient *c);
/* tools/call of tool with arguments (JSON text of an object). Returns the result's text with
 * *is_error, or NULL with e: SBX_ECANCELED when *stop became non-zero (see mcpclient_wake),
 * SBX_ETIMEDOUT after timeout_ns (0: none), SBX_EIO when the server is gone. */
char *mcpclient_call(struct mcpclient *c, const char *tool, const char *arguments,
		     const volatile int *stop, int64_t timeout_ns, bool *is_error,
		     struct sbx_err *e);
/* Makes waiting calls recheck their stop flag (any thread). */
void mcpclient_wake(struct mcpclient *c);
/* Whether the server still runs. */
bool mcpclient_alive(struct mcpclient *c);
/* Closes its input, stops it (the exec is cancelled) and frees everything. */
void mcpclient_stop(struct mcpclient *c);

#endif
