/* paths.h — where sbx keeps things on the host. All returned strings are newly allocated and
 * owned by the caller. */
#ifndef SBX_PATHS_H
#define SBX_PATHS_H

#include "err.h"

/* $XDG_STATE_HOME/sbx, else $HOME/.local/state/sbx: the local backend's sandboxes. */
char *paths_state_root(struct sbx_err *e);
/* $HOME/.local/sandboxed-tools: upstream's session root (backups, history). */
char *paths_session_root(struct sbx_err *e);
/* $HOME/.local/sandboxed-tools/<session>/<leaf>, the leaf directory created 0700 (with its
 * parents) on every call, as upstream does. */
char *paths_session_dir(const char *session, const char *leaf, struct sbx_err *e);
/* mkdir -p with the given mode for each created component. */
int paths_mkdirs(const char *path, unsigned mode, struct sbx_err *e);
/* Writes token and a newline to path with mode 0600, atomically (fs_write_atomic: a new file
 * renamed over the old, so no reader sees half a token), its directory made 0700: the token
 * files of acp-server and sbx-mcp. */
int paths_token_write(const char *path, const char *token, struct sbx_err *e);
/* A helper program: $env if set (NULL unless executable), else NAME next to this executable,
 * else ../libexec/sbx/NAME from it; NULL when none is found. */
char *paths_helper(const char *env, const char *name);
/* prog looked up on $PATH (or taken as is when it holds a slash); NULL when not executable. */
char *paths_which(const char *prog);

#endif
