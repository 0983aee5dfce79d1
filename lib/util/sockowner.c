/* sockowner.c — the owner of a local TCP connection's other end, from NETLINK_SOCK_DIAG. */
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "sockowner.h"

/* One answer of the kernel: a header, an inet_diag_msg and a few attributes. */
#define SOCKOWNER_ANSWER_MAX 8192

/* The family and the 4- or 16-byte address of a socket address (v4-mapped made IPv4, as the
 * peer's own socket is then an IPv4 one). */
static int addr_of(const struct sockaddr_storage *ss, __be32 out[4], __be16 *port)
{
	memset(out, 0, 4 * sizeof out[0]);
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		memcpy(out, &s4->sin_addr, 4);
		*port = s4->sin_port;
		return AF_INET;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		*port = s6->sin6_port;
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			memcpy(out, &s6->sin6_addr.s6_addr[12], 4);
			return AF_INET;
		}
		memcpy(out, &s6->sin6_addr, 16);
		return AF_INET6;
	}
	return -1;
}

bool sockowner_peer_uid(int fd, uid_t *uid)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof me, pl = sizeof peer;
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req;
	union {
		struct nlmsghdr h;
		char b[SOCKOWNER_ANSWER_MAX];
	} ans;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct timeval tv = {.tv_sec = 1};
	struct nlmsghdr *h;
	ssize_t n;
	bool ok = false;
	int nl, fam;

	memset(&me, 0, sizeof me);
	memset(&peer, 0, sizeof peer);
	memset(&req, 0, sizeof req);
	if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
		return false;
	/* The peer's socket: its source is the peer's address, its destination ours. */
	if ((fam = addr_of(&peer, req.r.id.idiag_src, &req.r.id.idiag_sport)) < 0 ||
	    addr_of(&me, req.r.id.idiag_dst, &req.r.id.idiag_dport) != fam)
		return false;
	req.h.nlmsg_len = sizeof req;
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = (__u8)fam;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0U;
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if ((nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) < 0)
		return false;
	/* The kernel answers at once; the bound only guards against a kernel that never does. */
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) !=
	    (ssize_t)sizeof req)
		goto out;
	if ((n = recv(nl, &ans, sizeof ans, 0)) <= 0)
		goto out;
	for (h = &ans.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		const struct inet_diag_msg *m = NLMSG_DATA(h);
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		    h->nlmsg_len < NLMSG_LENGTH(sizeof *m))
			break;
		*uid = m->idiag_uid;
		ok = true;
		break;
	}
out:
	close(nl);
	return ok;
}
