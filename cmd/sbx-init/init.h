/* init.h — sbx-init's two roles. */
#ifndef SBX_INIT_H
#define SBX_INIT_H

#include "exitcode.h"	/* the statuses sbx-init and its children exit with */

/* Accepts exec requests on listen_fd forever (see lib/local/localproto.h). */
int init_serve(int listen_fd);
/* Runs bwrap_argv as the sandbox and removes dir when it ends. ids: the sandbox's first host
 * uid and gid and "COUNT:UID:GID" (its number of ids and the image's user inside), or "-"
 * (a user's sandbox: bubblewrap maps the caller's own ids). Returns the exit status. */
int init_supervise(const char *dir, const char *nslock, const char *const ids[3],
		   const char *const stage_src[4], char **bwrap_argv);

/* net.c: the sandbox's network helper (lib/local/localnet.h), in the supervisor. */
/* Reads DIR/net.plan: 0 no plan (no network), 1 loaded, -1 unusable. */
int net_load(const char *dir);
/* argv with bubblewrap's --info-fd/--block-fd added when a plan is loaded (else argv). */
char **net_bwrap_argv(char **argv);
/* In bubblewrap's child, just before exec: the descriptors the added options name. */
int net_child_fds(void);
/* After bubblewrap started: connects its namespace and lets it go on. -1: it must go. */
int net_start(const char *dir, const char *uid, const char *gid);
/* Kills and reaps the helper, if any. */
void net_stop(void);
/* Keeps fd, the secrets' feed (close-on-exec), for sbx-proxy; closed once handed over. */
void net_secrets(int fd);

#endif
