/* net.c — TCP sockets by address string and OpenSSL contexts. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "net.h"
#include "sockowner.h"

/* Splits "host:port" / "[v6]:port" / ":port" into host (may be "") and port. */
static int split(const char *addr, char *host, size_t hn, char *port, size_t pn,
		 struct sbx_err *e)
{
	const char *colon;
	size_t hl;

	if (strlen(addr) >= NET_ADDR_MAX)
		return err_set(e, SBX_EINVAL, "address too long");
	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');
		if (end == NULL || end[1] != ':')
			return err_set(e, SBX_EINVAL, "address %s: want [host]:port", addr);
		hl = (size_t)(end - addr - 1);
		if (hl >= hn)
			return err_set(e, SBX_EINVAL, "address %s: host too long", addr);
		memcpy(host, addr + 1, hl);
		host[hl] = '\0';
		colon = end + 1;
	} else {
		colon = strrchr(addr, ':');
		if (colon == NULL)
			return err_set(e, SBX_EINVAL, "address %s: missing port", addr);
		hl = (size_t)(colon - addr);
		if (hl >= hn || memchr(addr, ':', hl) != NULL)
			return err_set(e, SBX_EINVAL, "address %s: want host:port", addr);
		memcpy(host, addr, hl);
		host[hl] = '\0';
	}
	if (colon[1] == '\0' || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    strlen(colon + 1) >= pn || atoi(colon + 1) > 65535)
		return err_set(e, SBX_EINVAL, "address %s: invalid port", addr);
	snprintf(port, pn, "%s", colon + 1);
	return 0;
}

int net_split_host(const char *addr, char *out, size_t n, struct sbx_err *e)
{
	char port[8];

	return split(addr, out, n, port, sizeof port, e);
}

int net_listen(const char *addr, struct sbx_err *e)
{
	char host[NET_ADDR_MAX], port[8];
	struct addrinfo hints = {0}, *res = NULL, *ai;
	int fd = -1, one = 1, rc;

	err_clear(e);
	if (split(addr, host, sizeof host, port, sizeof port, e) < 0)
		return -1;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	/* ":port" means every interface (only when asked for explicitly). */
	if ((rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res)) != 0)
		return err_set(e, SBX_EINVAL, "address %s: %s", addr, gai_strerror(rc));
	/* With no host, prefer the IPv6 wildcard (it takes IPv4 too). */
	for (ai = res; ai; ai = ai->ai_next) {
		if (!host[0] && ai->ai_family != AF_INET6 && ai->ai_next)
			continue;
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, NET_BACKLOG) == 0)
			break;
		err_sys(e, errno, "listen on %s", addr);
		close(fd);
		fd = -1;
	}
	if (fd < 0 && ai == NULL && e->msg[0] == '\0')
		err_set(e, SBX_EIO, "listen on %s: no usable address", addr);
	freeaddrinfo(res);
	return fd;
}

static void fmt_addr(const struct sockaddr_storage *ss, char *out, size_t n)
{
	char h[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, h, sizeof h);
		snprintf(out, n, "%s:%u", h, ntohs(s4->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, h, sizeof h);
		snprintf(out, n, "[%s]:%u", h, ntohs(s6->sin6_port));
	} else {
		snprintf(out, n, "?");
	}
}

void net_local_addr(int fd, char *out, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	memset(&ss, 0, sizeof ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	fmt_addr(&ss, out, n);
}

void net_peer_addr(int fd, char *out, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	memset(&ss, 0, sizeof ss);
	getpeername(fd, (struct sockaddr *)&ss, &len);
	fmt_addr(&ss, out, n);
}

/* Whether an address is this host's loopback: 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104. */
static bool addr_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

void net_peer_source(int fd, char *out, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	char h[INET6_ADDRSTRLEN] = "?";
	uid_t uid;

	memset(&ss, 0, sizeof ss);
	getpeername(fd, (struct sockaddr *)&ss, &len);
	if (addr_is_loopback(&ss)) {
		/* Every loopback address is this host: 16 M of them must not be 16 M sources.
		 * Its users are told apart by who owns the other end, so one local user can never
		 * use up (or get blocked) what another's client needs. */
		if (sockowner_peer_uid(fd, &uid))
			snprintf(out, n, "local uid %lu", (unsigned long)uid);
		else
			snprintf(out, n, "loopback");
		return;
	}
	if (ss.ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, h, sizeof h);
	} else if (ss.ss_family == AF_INET6) {
		struct in6_addr a = ((struct sockaddr_in6 *)&ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(&a)) {
			inet_ntop(AF_INET, &a.s6_addr[12], h, sizeof h);
		} else {
			/* One host usually holds a whole /64: counting addresses inside it
			 * separately would let it rotate past every cap. */
			memset(&a.s6_addr[8], 0, 8);
			inet_ntop(AF_INET6, &a, h, sizeof h);
			snprintf(out, n, "%s/64", h);
			return;
		}
	}
	snprintf(out, n, "%s", h);
}

bool net_is_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	memset(&ss, 0, sizeof ss);
	return getsockname(fd, (struct sockaddr *)&ss, &len) == 0 && addr_is_loopback(&ss);
}

int net_dial(const char *addr, int timeout_ms, struct sbx_err *e)
{
	char host[NET_ADDR_MAX], port[8];
	struct addrinfo hints = {0}, *res = NULL, *ai;
	int fd = -1, rc, one = 1;

	if (split(addr, host, sizeof host, port, sizeof port, e) < 0)
		return -1;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host[0] ? host : "localhost", port, &hints, &res)) != 0)
		return err_set(e, SBX_EINVAL, "address %s: %s", addr, gai_strerror(rc));
	err_set(e, SBX_EIO, "connect to %s: no usable address", addr);
	for (ai = res; ai; ai = ai->ai_next) {
		struct pollfd pfd;
		int soerr = 0;
		socklen_t sl = sizeof soerr;

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			err_sys(e, errno, "connect to %s", addr);
			goto next;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, timeout_ms) <= 0) {
			err_set(e, SBX_ETIMEDOUT, "connect to %s: timed out", addr);
			goto next;
		}
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr != 0) {
			err_sys(e, soerr, "connect to %s", addr);
			goto next;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		err_clear(e);
		break;
next:
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static int tls_err(struct sbx_err *e, const char *what)
{
	unsigned long code = ERR_get_error();
	char buf[256] = "unknown error";

	if (code)
		ERR_error_string_n(code, buf, sizeof buf);
	ERR_clear_error();
	return err_set(e, SBX_EIO, "%s: %s", what, buf);
}

SSL_CTX *net_tls_server(const char *cert, const char *key, struct sbx_err *e)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL) {
		tls_err(e, "TLS");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		tls_err(e, "cannot load TLS certificate");
		goto bad;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		tls_err(e, "cannot load TLS key");
		goto bad;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		tls_err(e, "TLS key does not match the certificate");
		goto bad;
	}
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	return ctx;
bad:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL_CTX *net_tls_client(const char *ca, bool insecure, struct sbx_err *e)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL) {
		tls_err(e, "TLS");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (insecure) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
		return ctx;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if ((ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL)
		: SSL_CTX_set_default_verify_paths(ctx)) != 1) {
		tls_err(e, "cannot load TLS CA certificates");
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

SSL *net_tls_connect(SSL_CTX *ctx, int fd, const char *host, bool insecure, struct sbx_err *e)
{
	SSL *ssl = SSL_new(ctx);

	if (ssl == NULL) {
		tls_err(e, "TLS");
		return NULL;
	}
	SSL_set_fd(ssl, fd);
	if (host[0] && !insecure) {
		SSL_set_tlsext_host_name(ssl, host);
		/* Check the name (or IP address) in the certificate, not just its chain. */
		if (SSL_set1_host(ssl, host) != 1) {
			tls_err(e, "TLS host name");
			SSL_free(ssl);
			return NULL;
		}
	}
	if (SSL_connect(ssl) != 1) {
		long vr = SSL_get_verify_result(ssl);
		if (vr != X509_V_OK)
			err_set(e, SBX_EIO, "TLS handshake: certificate verification failed: %s",
				X509_verify_cert_error_string(vr));
		else
			tls_err(e, "TLS handshake");
		ERR_clear_error();
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}
