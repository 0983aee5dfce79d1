/* sockowner.h — who owns the other end of a loopback TCP connection: the kernel's socket
 * diagnostics (NETLINK_SOCK_DIAG, what ss(8) reads) looked up by the connection's addresses. */
#ifndef SBX_SOCKOWNER_H
#define SBX_SOCKOWNER_H

#include <stdbool.h>
#include <sys/types.h>

/* The user id owning the peer socket of fd, a TCP connection whose peer is on this host (in
 * this network namespace). False when the kernel does not say (no such socket, no netlink). */
bool sockowner_peer_uid(int fd, uid_t *uid);

#endif
