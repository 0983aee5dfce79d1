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
	int64_t timeout_ns;		/* per call; 0: none */
	int cancel_fd;			/* -1 or readable to stop */
	const char *call_id;		/* the model's id for the call, NULL or "": none (names
					 * the file a cut output is kept in) */
};

struct tool {
	const char *name;
	const char *description;
	const char *parameters;		/* JSON Schema text of the arguments object */
	/* Runs the call with decoded arguments. Returns the model-visible content, *len bytes of
	 * valid UTF-8 that may hold NUL bytes, or NULL with e set (a harness error: the caller
	 * turns it into `Error calling tool "<name>": <why>`). On a deadline, e->code is
	 * SBX_ETIMEDOUT. */
	char *(*run)(const struct tool_ctx *ctx, struct json_object *args, size_t *len,
		     struct sbx_err *e);
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

/* Finds a toolset by name ("" = basic); else `unknown toolset "<x>" (available: basic, geminicli)`. */
const struct toolset *toolset_find(const char *name, struct sbx_err *e);
/* The `tools` array of a chat request: [{"type":"function","function":{name,description,parameters}}]. */
struct json_object *toolset_declarations(const struct toolset *ts);
/* Runs one tool call through the registry rules. Returns the content of the tool message
 * (either the tool's result or the `Error calling tool …` text), *len bytes of valid UTF-8
 * that may hold NUL bytes; NULL only for failures that must abort the turn (cancellation),
 * with e set. *failed is set when the registry reported an error (ACP's "failed" status). */
char *toolset_call(const struct toolset *ts, const struct tool_ctx *ctx, const char *name,
		   const char *arguments, size_t *len, int *failed, struct sbx_err *e);

#endif
