/* acptool.h — how a tool call looks to an ACP client, from the call's name and arguments and
 * its result text: a human title ("Run `make test`", "Read src/a.c"), its kind, the files it
 * touches (locations, in the client's paths), diff content for edits, rawInput and rawOutput,
 * and its final status (failed when the registry reported an error or a command exited
 * non-zero). Live turns and session/load's replay both use it, so a replayed call looks as it
 * did. Also the mapping between the client's cwd and the tools' directory in the sandbox.
 * Ownership: fields are added to the caller's object; returned char * are newly allocated. */
#ifndef SBX_ACPTOOL_H
#define SBX_ACPTOOL_H

#include <stdbool.h>

#include <json-c/json.h>

/* Titles quote at most this much of a command or pattern (the rest is "…"). */
#define ACPTOOL_TITLE_QUOTE_MAX 80

/* The client's working directory and the sandbox directory it maps to (both absolute, or
 * both NULL: paths are shown as the sandbox has them). */
struct acp_pathmap {
	const char *client, *sandbox;
};

/* The sandbox directory for a client cwd: the cwd itself when it lies in the sandbox home,
 * the home for "/", else <home>/<last component of cwd>. */
char *acptool_workdir(const char *homedir, const char *client_cwd);
/* A sandbox path (relative ones against pm->sandbox) as the client names it: under the mapped
 * directory it moves to the client's cwd, elsewhere it stays. */
char *acptool_client_path(const struct acp_pathmap *pm, const char *path);

/* Adds title, kind, locations and rawInput (arguments: raw JSON text, possibly invalid). */
void acptool_describe(struct json_object *o, const char *name, const char *arguments,
		      const struct acp_pathmap *pm);
/* Whether a result kept in history reports a failure, for a replay where the live flag is
 * gone: a harness text (lib/toolset/toolmsg.h), a tool's own failure text, or an execute tool's
 * non-zero exit code or signal. Live calls use toolset_call's flag instead. */
bool acptool_failed_text(const char *name, const char *content);
/* Adds the final status ("failed" when failed, else "completed"), content (a diff for a
 * completed edit, then the result text) and rawOutput. */
void acptool_result(struct json_object *o, const char *name, const char *arguments,
		    const char *content, bool failed, const struct acp_pathmap *pm);

#endif
