/* proxy.h — sbx-proxy's server: the only way out of a -allow-host sandbox. It accepts on a
 * listening socket that lives on the sandbox's loopback (made by the supervisor), speaks HTTP
 * proxy (CONNECT tunnels and plain http:// forwarding) and SOCKS5 (CONNECT, no auth) on the
 * same port, lets through only what the policy allows, resolves names itself and logs every
 * decision as one JSON line. One thread per connection, every input and wait bounded.
 * Ownership: the config and its policy stay the caller's. */
#ifndef SBX_PROXY_H
#define SBX_PROXY_H

#include <netinet/in.h>

#include "err.h"
#include "netpolicy.h"
#include "proxysecret.h"
#include "proxytls.h"

/* Connections served at once; more get 503 (a sandbox opening thousands is attacking). */
#define PROXY_CONNS_MAX 256
/* How long a client may take to send its request head or SOCKS5 handshake. */
#define PROXY_HEAD_TIMEOUT_MS 30000
/* How long one upstream connect may take. */
#define PROXY_CONNECT_TIMEOUT_MS 10000
/* A tunnel with no traffic either way for this long is closed. */
#define PROXY_IDLE_TIMEOUT_MS 600000
/* Addresses tried for one name. */
#define PROXY_ADDRS_MAX 8
/* The decision log stops growing here (a sandbox must not fill the host's disk). */
#define PROXY_LOG_MAX (INT64_C(64) << 20)
/* A request body is looked through for placeholders this much at a time. */
#define PROXY_SCAN_BUF (64 * 1024)
/* Nameservers given with -nameserver. */
#define PROXY_NAMESERVERS_MAX 3

struct proxy_config {
	const char *sandbox;		/* its name, for the log */
	struct netpolicy policy;
	const char *policy_text;	/* the list as given, for 403 bodies */
	struct sockaddr_in nameservers[PROXY_NAMESERVERS_MAX];	/* none: the host's resolver */
	int nnameservers;
	int listen_fd, log_fd;
	struct proxysecrets secrets;	/* -secret: none when n is 0 */
	struct proxytls *tls;		/* -secret: TLS for the secrets' hosts, or NULL */
};

/* Serves until the listening socket fails; returns -1 with e. */
int proxy_serve(struct proxy_config *c, struct sbx_err *e);

#endif
