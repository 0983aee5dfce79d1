/* toolset.h — the tools a model may call, grouped in toolsets (basic, geminicli), and the
 * registry rules shared by all of them (upstream pkg/tools/registry.go): unknown name →
 * `tool "<name>" not found`; undecodable arguments → `failed to parse arguments: <why>`;
 * a tool's own failure → `failed to run tool: <why>`; its deadline →
 * `tool "<name>" timed out after <d>: <why>`.
 * Ownership: returned strings are newly allocated (caller frees); json objects returned are
 * new references (caller puts). */
#ifndef SBX_TOOLSET_H
#define SBX_TOOLSET_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "err.h"

struct tool_ctx {
	struct sbx_backend *b;
	const char *sandbox;		/* sandbox name (= session name) */
	const char *homedir;		/* home directory inside the sandbox */
	const char *workdir;		/* the tools' working directory; NULL: the backend's */
	int64_t timeout_ns;		/* per call; 0: none */
	int cancel_fd;			/* -1 or readable to stop */
	/* NULL, or where a tool with an output schema (toolset_output_schema) puts its result as a new JSON object
	 * (MCP's structuredContent) besides the text it returns. */
	struct json_object **structured;
	const char *call_id;		/* the model's id for the call, NULL or "": none (names
					 * the file a cut output is kept in) */
	/* NULL, or where a tool whose result holds inline data (geminicli read_file and
	 * read_many_files of an image, PDF, audio or video file) puts that result as a new
	 * JSON array of Parts (toolparts.h); the text it returns then names each inline part. */
	struct json_object **parts;
};

struct tool {
	const char *name;
	const char *description;
	const char *parameters;		/* JSON Schema text of the arguments object */
	/* Runs the call with decoded arguments. Returns the model-visible content, *len bytes of
	 * valid UTF-8 that may hold NUL bytes, with *failed set when that content reports the
	 * tool's own failure (a file it could not read, a command that exited non-zero or was
	 * killed, a refused edit); or NULL with e set (a harness error: the caller turns it into
	 * `Error calling tool "<name>": <why>`). On a deadline, e->code is SBX_ETIMEDOUT. */
	char *(*run)(const struct tool_ctx *ctx, struct json_object *args, size_t *len,
		     bool *failed, struct sbx_err *e);
};

struct toolset {
	const char *name;
	const char *default_image;	/* NULL: none (the backend's default) */
	const struct tool *tools;	/* sorted by name */
	size_t ntools;
	/* The system prompt for a new session; newly allocated. */
	char *(*system_prompt)(struct sbx_err *e);
	/* The tools check their arguments themselves, with gemini-cli's schema messages; the
	 * registry does not decode them Go-style first. */
	bool own_validation;
};

extern const struct toolset toolset_basic;
extern const struct toolset toolset_geminicli;

/* The toolset name a program was given: given (a -toolset flag's value, even empty), else
 * $TOOLSET, read here only; NULL when neither. */
const char *toolset_pick(const char *given);
/* Finds a toolset by name ("" = basic); else `unknown toolset "<x>" (available: basic, geminicli)`. */
const struct toolset *toolset_find(const char *name, struct sbx_err *e);
/* The `tools` array of a chat request: [{"type":"function","function":{name,description,parameters}}]. */
struct json_object *toolset_declarations(const struct toolset *ts);
/* The tool of that name, or NULL. */
const struct tool *toolset_tool(const struct toolset *ts, const char *name);
/* What a tool does, as ACP's ToolKind names it: "read", "search", "edit", "execute", or
 * "other" for names no toolset has. read and search never change the sandbox's files. */
const char *toolset_tool_kind(const char *name);
/* The JSON Schema text of what the tool of that name puts in tool_ctx.structured, or NULL
 * when it puts nothing there. */
const char *toolset_output_schema(const char *name);
/* Runs one tool call through the registry rules. Returns the content of the tool message
 * (either the tool's result or the `Error calling tool …` text), *len bytes of valid UTF-8
 * that may hold NUL bytes; NULL only for failures that must abort the turn (cancellation,
 * or a sandbox that was not there: SBX_ENOTFOUND, nothing ran, safe to recreate it and call
 * again), with e set. *failed is TOOL_FAILED when the registry or the tool itself reported an
 * error (the one truth behind MCP's isError, sbx-tool's exit status 1, ACP's "failed" status
 * and agent-loop's log), TOOL_SANDBOX_GONE when the sandbox went away while the tool ran (the
 * content says so; the call may have run in part, so it must not be repeated). */
enum { TOOL_OK = 0, TOOL_FAILED = 1, TOOL_SANDBOX_GONE = 2 };
char *toolset_call(const struct toolset *ts, const struct tool_ctx *ctx, const char *name,
		   const char *arguments, size_t *len, int *failed, struct sbx_err *e);
/* What a tool result tells the model when the sandbox's memory limit killed its command
 * ("The command ran out of memory: …, naming the limit"), in buf; "" when it did not. */
const char *toolset_oom_text(const struct sbx_exec_result *r, char *buf, size_t cap);
/* Runs one command of a tool (lib/backend/capture.h) with the call's working directory, deadline and
 * cancel descriptor from ctx: 0, or -1 with e (the deadline: SBX_ETIMEDOUT, "context deadline
 * exceeded"; a cancel: SBX_ECANCELED), c then freed. rq's argv, input and caps are the
 * tool's. */
struct capture_req;
struct capture;
int toolset_capture(const struct tool_ctx *ctx, struct capture_req *rq, struct capture *c,
		    struct sbx_err *e);

#endif
