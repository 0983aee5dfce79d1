/* localnet.h — a local sandbox's network. Every sandbox gets its own network namespace
 * (bubblewrap --unshare-net); what it may reach from there is one of three modes:
 *   none   only its own loopback (the default);
 *   nat    -network: user-mode NAT to the outside through pasta (package passt);
 *   proxy  -allow-host: no route out at all; a loopback port inside leads to sbx-proxy on
 *          the host, which lets through only the listed hosts.
 * sbx-create decides and writes the plan DIR/net.plan; the supervisor (cmd/sbx-init/net.c)
 * starts the helper against the sandbox's namespace before anything runs in it, owns it
 * and stops it with the sandbox. The plan is lines "KEY VALUE": "mode nat|proxy", "helper
 * PATH", "resolv 1" (DIR/resolv.conf becomes the sandbox's /etc/resolv.conf through
 * LOCALNET_RESOLV_FD) and "arg WORD" for each of the helper's own arguments.
 * Ownership: strvec contents are the caller's (pushed copies). */
#ifndef SBX_LOCALNET_H
#define SBX_LOCALNET_H

#include "backend.h"
#include "err.h"
#include "xalloc.h"

#define LOCALNET_PLAN "net.plan"
/* The descriptor the supervisor opens DIR/resolv.conf on for bubblewrap's --ro-bind-data. */
#define LOCALNET_RESOLV_FD 7
/* Where commands find the proxy inside a -allow-host sandbox (squid's well-known port). */
#define LOCALNET_PROXY_PORT 3128
/* The decision log sbx-proxy appends to, one JSON line per connection. */
#define LOCALNET_LOG "net.log"
/* -secret: DIR/ca-bundle.crt (the host's bundle and the sandbox's own CA), which the
 * supervisor opens at LOCALNET_CA_FD (and LOCALNET_CA_FD + 1 with plan line "cabundle 2")
 * for bubblewrap's --ro-bind-data at LOCALNET_CA_BUNDLE (and over LOCALNET_SYSTEM_BUNDLE). */
#define LOCALNET_CA_FILE "ca-bundle.crt"
#define LOCALNET_CA_FD 40
#define LOCALNET_CA_BUNDLE "/run/sbx/ca-certificates.crt"
#define LOCALNET_SYSTEM_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
/* A CA bundle: Debian's is about 200 KiB. */
#define LOCALNET_BUNDLE_MAX (4 << 20)
/* The supervisor's descriptor for the secrets' feed, handed to it by sbx-create. */
#define LOCALNET_SECRETS_FD 5
/* A placeholder: a prefix that names it and 20 random bytes in hex, unguessable and unique
 * per sandbox and secret, shaped like a token so tools that check for one are content. */
#define LOCALNET_PLACEHOLDER_PREFIX "sbxph_"
#define LOCALNET_PLACEHOLDER_BYTES 20
/* Where a helper's own complaints go (read back when a sandbox fails to start). */
#define LOCALNET_HELPER_LOG "net-helper.log"

/* For a sandbox whose root filesystem is at root ("/" for the host's): writes DIR/net.plan
 * (and DIR/resolv.conf) for spec's mode, and pushes onto bwrap what bubblewrap needs for it
 * (placed after the sandbox's own mounts and environment, before its command). Nothing for
 * mode none. SBX_EUNAVAIL when the mode's helper is not installed. With -secret, each
 * secret's placeholder goes into the environment and feed receives what sbx-proxy reads on
 * LOCALNET_SECRETS_FD ("NAME PLACEHOLDER HOSTS HEXVALUE" lines): the caller hands it over
 * through a pipe and wipes it (explicit_bzero), it is never written to a file. */
int localnet_prepare(const struct sbx_spec *spec, const char *dir, const char *root,
		     struct strvec *bwrap, struct buf *feed, struct sbx_err *e);
/* When the network helper of the sandbox at dir said why it failed: sets e and returns 1. */
int localnet_failure(const char *dir, struct sbx_err *e);

#endif
