/* mcphttp_int.h — the parts of lib/mcphttp shared between its files: the connection guard of
 * mcphttp_conns.c (caps, the authorization deadline, the failed-token bucket). */
#ifndef SBX_MCPHTTP_INT_H
#define SBX_MCPHTTP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "logfn.h"

struct mcphttp_conns;

struct mcphttp_conns *mcphttp_conns_new(logfn log, void *log_arg);
void mcphttp_conns_free(struct mcphttp_conns *g);
/* MHD_OPTION_NOTIFY_CONNECTION (cls: the guard): counts a new connection in, making room or
 * refusing it (its socket shut down), and out when it closes. */
void mcphttp_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe);
/* Whether c's token may be compared now (false: its source failed lately and the server-wide
 * bucket is empty; *wait_ns until the next token). */
bool mcphttp_conns_may_try(struct mcphttp_conns *g, struct MHD_Connection *c, int64_t *wait_ns);
/* A request on c carried the right token (authorized) or a wrong one (not). */
void mcphttp_conns_verdict(struct mcphttp_conns *g, struct MHD_Connection *c, bool authorized);
/* Closes connections with no authorized request within MCPHTTP_AUTH_NS; returns the poll
 * timeout (ms) until the next deadline, -1: none. */
int mcphttp_conns_expire(struct mcphttp_conns *g);

#endif
