/* init.h — sbx-init's two roles. */
#ifndef SBX_INIT_H
#define SBX_INIT_H

/* Accepts exec requests on listen_fd forever (see lib/localproto.h). */
int init_serve(int listen_fd);
/* Runs bwrap_argv as the sandbox and removes dir when it ends. Returns the exit status. */
int init_supervise(const char *dir, const char *nslock, const char *uid, const char *gid,
		   const char *const stage_src[4], char **bwrap_argv);

#endif
