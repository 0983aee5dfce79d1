/* net.h — TCP listening and dialling by "host:port" address, and OpenSSL TLS contexts for the
 * ACP server and client. Ownership: returned SSL_CTX are freed with SSL_CTX_free; descriptors
 * are the caller's to close. */
#ifndef SBX_NET_H
#define SBX_NET_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* Room for "[v6 address]:port" and a host name. */
#define NET_ADDR_MAX 300
/* Connections waiting in the kernel for accept. */
#define NET_BACKLOG 256

/* Listens on addr: "host:port", "[v6]:port", or ":port" for every interface. Returns the
 * descriptor (close-on-exec) or -1. */
int net_listen(const char *addr, struct sbx_err *e);
/* The local address of a listening socket as "host:port" (for logs and ":0" ports). */
void net_local_addr(int fd, char *out, size_t n);
/* The peer of a connected socket as "host:port". */
void net_peer_addr(int fd, char *out, size_t n);
/* The source a connection is counted under: the peer's IPv4 address, the /64 prefix of its
 * IPv6 address ("2001:db8:1:2::/64"), or for any loopback peer (127.0.0.0/8, ::1, ::ffff:127.x)
 * "local uid N", the user owning the other end ("loopback" when the kernel does not say). */
void net_peer_source(int fd, char *out, size_t n);
/* Whether a listening socket is bound to a loopback address (127.0.0.0/8, ::1). */
bool net_is_loopback(int fd);
/* Connects to "host:port" (timeout_ms bounds the whole attempt). Returns the socket or -1. */
int net_dial(const char *addr, int timeout_ms, struct sbx_err *e);

/* A server context with this certificate chain and key (PEM files), TLS 1.2 or newer. */
SSL_CTX *net_tls_server(const char *cert, const char *key, struct sbx_err *e);
/* A client context verifying the server against ca (PEM file; NULL: the system store), or not
 * at all when insecure. */
SSL_CTX *net_tls_client(const char *ca, bool insecure, struct sbx_err *e);
/* Wraps a connected socket; host is checked against the certificate unless insecure. Performs
 * the handshake (blocking). Returns the SSL object or NULL. */
SSL *net_tls_connect(SSL_CTX *ctx, int fd, const char *host, bool insecure, struct sbx_err *e);
/* The host part of "host:port" (brackets removed), into out. */
int net_split_host(const char *addr, char *out, size_t n, struct sbx_err *e);

#endif
