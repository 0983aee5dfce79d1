/* localproto.h — the wire protocol between the local backend (host side) and sbx-init's exec
 * service inside a sandbox, over a Unix stream socket. Header-only: sbx-init is linked
 * statically without libsbx.
 *
 * Client → service: struct lp_hdr with SCM_RIGHTS carrying stdin, stdout, stderr (LP_EXEC) or
 * nothing (LP_PING), followed by `len` payload bytes. LP_EXEC payload: u32 argc, u32 envc, then
 * NUL-terminated strings: workdir ("" = default), argc argv strings, envc NAME=VALUE strings.
 * While the command runs the client may send one byte LP_KILL (or close the connection): every
 * process the command started is killed. Service → client: one struct lp_result. */
#ifndef SBX_LOCALPROTO_H
#define SBX_LOCALPROTO_H

#include <stdint.h>

#define LP_MAGIC 0x53425831u	/* "SBX1" */
#define LP_PING 1u
#define LP_EXEC 2u
#define LP_KILL 'K'

/* Payload bound: Linux caps argv+envp near 2 MiB (ARG_MAX); nothing larger could be exec'd. */
#define LP_MAX_PAYLOAD (2u << 20)
#define LP_MAX_ARGS 65536u

struct lp_hdr {
	uint32_t magic;
	uint32_t type;
	uint32_t len;
	uint32_t nfds;
};

struct lp_result {
	uint32_t magic;
	int32_t wstatus;	/* waitpid status of the command */
	int32_t exec_errno;	/* > 0: exec failed with this errno; < 0: -errno of chdir */
	uint32_t killed;	/* 1: killed on request (LP_KILL or hang-up) */
};

#endif
