/* sessions.h — the session store as a whole (~/.local/sandboxed-tools/<session>/): what is in
 * it, and removing a session that nobody uses. One session's history is history.h; its
 * backups, backup.h. Ownership: the info passed to a callback is borrowed for the call. */
#ifndef SBX_SESSIONS_H
#define SBX_SESSIONS_H

#include <stdint.h>

#include "err.h"
#include "name.h"

struct session_info {
	char name[NAME_MAX_LEN + 1];
	uint64_t messages;	/* lines of its history */
	uint64_t backups;	/* complete backups */
	uint64_t bytes;		/* the size of all its files */
	int64_t updated_ns;	/* its history's last change (else its directory's) */
	const char *holder;	/* the process using it ("agent-loop (pid 123)"), or NULL */
};

/* Calls fn for each session, by name; stops at fn's non-zero. No store yet is no session. */
int sessions_list(int (*fn)(const struct session_info *, void *), void *arg, struct sbx_err *e);
/* Removes session name's directory (history, backups, everything) under its lock: a session
 * in use is refused (SBX_EBUSY, naming the holder); one that does not exist is SBX_ENOTFOUND
 * (`session "<name>" does not exist`), as kubectl and docker say of what is not there. */
int sessions_remove(const char *name, struct sbx_err *e);
/* The session the environment names (SESSION_NAME, read here only), or dflt when it is unset
 * or empty; not checked (the caller checks it with any -session flag's value). */
const char *sessions_env_name(const char *dflt);

#endif
