/* local_bwrap.h — the sandbox half of lib/local/local_bwrap.c: what sbx-init carries out of the
 * plan, every change of identity or privilege after bubblewrap's own. That half is compiled
 * into the static sbx-init only (with SBX_INIT defined; libc and libseccomp), the host half
 * into libsbx (lib/local/local.h). */
#ifndef SBX_LOCAL_BWRAP_H
#define SBX_LOCAL_BWRAP_H

#include <sys/types.h>
#include <linux/filter.h>

/* The commands' namespaces in a sandbox: one pid namespace with its own /proc (in a mount
 * namespace of its own) that every command of the sandbox shares, whose init the service
 * made. The service, its shepherds and bubblewrap stay outside it, unseen. */
struct local_cmdns {
	pid_t init;		/* its init, as the service sees it */
	int init_fd;		/* a pidfd of that init: readable when it dies */
	int pidns;		/* the pid namespace, for setns */
};

/* What marks every process one command started, however it daemonized: a UTS namespace of
 * its own, which they all inherit and none can leave. */
struct local_mark {
	dev_t dev;
	ino_t ino;
};

/* Supervisor: becomes uid:gid with no supplementary groups (root's sandboxes). 0 or -1. */
int local_bwrap_become(uid_t uid, gid_t gid);
/* Service, first thing: makes itself non-dumpable (no ptrace, pidfd_getfd,
 * process_vm_readv or /proc/PID/environ by anything without CAP_SYS_PTRACE over it). */
int local_bwrap_harden(void);
/* Service: makes the commands' namespaces, moves itself into their mount namespace (procfd:
 * an open /proc of the service's own pid namespace, for what it must still see) and empties
 * its bounding set (so no exec of a command regains a capability). 0 or -1 (errno). */
int local_bwrap_cmdns_start(int procfd, struct local_cmdns *ns);
/* Shepherd, before starting the command: gives it its mark and its pid namespace. procfd as
 * above. Returns 0 or -1. */
int local_bwrap_shepherd(int procfd, const struct local_cmdns *ns, struct local_mark *mark);
/* 1 when the process procfd/pid (a decimal string) carries mark. */
int local_bwrap_marked(int procfd, const char *pid, const struct local_mark *mark);
/* The command, between fork and exec: drops every capability it holds but root's over its own
 * ids (cmd_caps in local_bwrap.c; the bounding set holds no other), sets no_new_privs and
 * loads the commands' filter. 0 or -errno. */
int local_bwrap_confine(const struct sock_fprog *filter);

/* A syscall filter (cmds 0: the sandbox's, for bubblewrap's --seccomp; 1: the commands')
 * as a BPF program in a new memory file (close-on-exec), read from its start. fd or -1. */
int local_bwrap_filter_fd(int cmds);
/* Reads the commands' filter into prog (prog->filter malloc'd), once, by the service. */
int local_bwrap_filter_load(struct sock_fprog *prog);

#endif
