/* proxy.c — sbx-proxy's server (see proxy.h): accept, read the request, decide, resolve,
 * connect, relay, log. */
#include "proxy.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <resolv.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "proxyreq.h"
#include "timeutil.h"
#include "xalloc.h"

/* Bytes in flight per direction (a pipe's size; 1 MiB is what an unprivileged process may
 * ask for by default, /proc/sys/fs/pipe-max-size). */
#define RELAY_BUF (1024 * 1024)
/* The path logged with a secret's decision: enough to tell which API call it was. */
#define PROXY_LOG_PATH_MAX 256
/* A thread needs little: the relay buffers are on the heap. */
#define THREAD_STACK (256 * 1024)

static atomic_int active;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

struct conn {
	struct proxy_config *cfg;
	int fd, up;
	const char *kind;		/* "http", "connect" or "socks5" */
	char host[NETPOLICY_NAME_MAX + 8];
	int port;
	char rule[NETPOLICY_NAME_MAX + 32];
	char addr[INET6_ADDRSTRLEN];
	const char *decision, *reason;
	char why[160];			/* reason, when made up here */
	const char *secret, *secret_action;	/* -secret: whose placeholder, and what was done */
	char method[32], path[PROXY_LOG_PATH_MAX];
	long long bytes_out, bytes_in;
	char head[PROXYREQ_HEAD_MAX];
	size_t have;			/* bytes read into head */
};

static void log_decision(struct conn *c)
{
	struct json_object *o = json_object_new_object();
	char t[TIME_BUFSZ];
	const char *s;
	struct stat st;

	json_object_object_add(o, "time", json_object_new_string(time_rfc3339(time_now_ns(), t, sizeof t)));
	json_object_object_add(o, "sandbox", json_object_new_string(c->cfg->sandbox));
	json_object_object_add(o, "protocol", json_object_new_string(c->kind));
	json_object_object_add(o, "host", json_object_new_string(c->host));
	json_object_object_add(o, "port", json_object_new_int(c->port));
	json_object_object_add(o, "decision", json_object_new_string(c->decision));
	if (c->rule[0])
		json_object_object_add(o, "rule", json_object_new_string(c->rule));
	if (c->reason)
		json_object_object_add(o, "reason", json_object_new_string(c->reason));
	if (c->addr[0])
		json_object_object_add(o, "address", json_object_new_string(c->addr));
	if (c->secret) {
		json_object_object_add(o, "secret", json_object_new_string(c->secret));
		json_object_object_add(o, "secret_action", json_object_new_string(c->secret_action));
		json_object_object_add(o, "method", json_object_new_string(c->method));
		json_object_object_add(o, "path", json_object_new_string(c->path));
	}
	json_object_object_add(o, "bytes_out", json_object_new_int64(c->bytes_out));
	json_object_object_add(o, "bytes_in", json_object_new_int64(c->bytes_in));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	pthread_mutex_lock(&log_lock);
	if (fstat(c->cfg->log_fd, &st) == 0 && st.st_size < PROXY_LOG_MAX) {
		char *line = xasprintf("%s\n", s);
		ssize_t n = write(c->cfg->log_fd, line, strlen(line));
		(void)n;
		free(line);
	}
	pthread_mutex_unlock(&log_lock);
	json_object_put(o);
}

static int write_all(int fd, const void *p, size_t len)
{
	const char *s = p;

	while (len > 0) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A complete HTTP response with a plain-text body. */
static void http_reply(int fd, int code, const char *status, const char *body)
{
	char *r = xasprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
			    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			    code, status, strlen(body), body);
	write_all(fd, r, strlen(r));
	free(r);
}

/* Reads more of the request into c->head, waiting at most until deadline (monotonic ns).
 * Returns bytes read, 0 on EOF, -1 on error or timeout. */
static ssize_t read_more(struct conn *c, int64_t deadline)
{
	struct pollfd p = {.fd = c->fd, .events = POLLIN};
	int64_t left = deadline - time_mono_ns();
	ssize_t n;

	if (c->have >= sizeof c->head || left <= 0)
		return -1;
	if (poll(&p, 1, (int)(left / 1000000) + 1) <= 0)
		return -1;
	n = read(c->fd, c->head + c->have, sizeof c->head - c->have);
	if (n > 0)
		c->have += (size_t)n;
	return n;
}

/* Resolves with the nameservers given (libresolv, A then AAAA). */
static int resolve_with(struct proxy_config *cfg, const char *host, int port,
			struct sockaddr_storage *out, int max)
{
	struct __res_state rs;
	int n = 0;

	memset(&rs, 0, sizeof rs);
	if (res_ninit(&rs) < 0)
		return 0;
	rs.nscount = cfg->nnameservers;
	for (int i = 0; i < cfg->nnameservers; i++)
		rs.nsaddr_list[i] = cfg->nameservers[i];
	rs.retrans = 2;
	rs.retry = 2;
	rs.options &= ~(unsigned long)(RES_DNSRCH | RES_DEFNAMES);
	for (int type = 0; type < 2 && n < max; type++) {
		unsigned char ans[4096];
		ns_msg msg;
		int len = res_nquery(&rs, host, ns_c_in, type ? ns_t_aaaa : ns_t_a, ans, sizeof ans);
		if (len <= 0 || ns_initparse(ans, len, &msg) < 0)
			continue;
		for (int i = 0; i < ns_msg_count(msg, ns_s_an) && n < max; i++) {
			ns_rr rr;
			if (ns_parserr(&msg, ns_s_an, i, &rr) < 0)
				continue;
			memset(&out[n], 0, sizeof out[n]);
			if (ns_rr_type(rr) == ns_t_a && ns_rr_rdlen(rr) == 4) {
				struct sockaddr_in *s4 = (struct sockaddr_in *)&out[n++];
				s4->sin_family = AF_INET;
				s4->sin_port = htons((uint16_t)port);
				memcpy(&s4->sin_addr, ns_rr_rdata(rr), 4);
			} else if (ns_rr_type(rr) == ns_t_aaaa && ns_rr_rdlen(rr) == 16) {
				struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out[n++];
				s6->sin6_family = AF_INET6;
				s6->sin6_port = htons((uint16_t)port);
				memcpy(&s6->sin6_addr, ns_rr_rdata(rr), 16);
			}
		}
	}
	res_nclose(&rs);
	return n;
}

/* The addresses of host (a name or a literal), at most max. */
static int resolve(struct proxy_config *cfg, const char *host, int port,
		   struct sockaddr_storage *out, int max)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *res, *a;
	char ps[8];
	int n = 0;

	snprintf(ps, sizeof ps, "%d", port);
	if (getaddrinfo(host, ps, &hints, &res) != 0) {
		if (cfg->nnameservers)
			return resolve_with(cfg, host, port, out, max);
		hints.ai_flags = 0;
		if (getaddrinfo(host, ps, &hints, &res) != 0)
			return 0;
	}
	for (a = res; a && n < max; a = a->ai_next)
		if (a->ai_family == AF_INET || a->ai_family == AF_INET6)
			memcpy(&out[n++], a->ai_addr, a->ai_addrlen);
	freeaddrinfo(res);
	return n;
}

static socklen_t sa_len(const struct sockaddr_storage *sa)
{
	return sa->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static void sa_text(const struct sockaddr_storage *sa, char *out, size_t size)
{
	const void *a = sa->ss_family == AF_INET
		? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
		: (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
	inet_ntop(sa->ss_family, a, out, (socklen_t)size);
}

/* A connect that gives up after PROXY_CONNECT_TIMEOUT_MS. */
static int connect_timed(const struct sockaddr_storage *sa)
{
	int s = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;
	socklen_t el = sizeof err;
	struct pollfd p;

	if (s < 0)
		return -1;
	if (connect(s, (const struct sockaddr *)sa, sa_len(sa)) < 0) {
		if (errno != EINPROGRESS)
			goto fail;
		p.fd = s;
		p.events = POLLOUT;
		if (poll(&p, 1, PROXY_CONNECT_TIMEOUT_MS) <= 0)
			goto fail;
		if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err != 0)
			goto fail;
	}
	fcntl(s, F_SETFL, 0);
	return s;
fail:
	close(s);
	return -1;
}

/* Decides and connects: 0 with c->up open, or -1 with c->decision/reason set and *code the
 * HTTP status to answer (403 refused by policy, 502 unreachable). */
static int open_upstream(struct conn *c, int *code)
{
	struct proxy_config *cfg = c->cfg;
	const struct netpolicy_rule *rule;
	struct sockaddr_storage addrs[PROXY_ADDRS_MAX];
	const char *refused = NULL, *refused_who = NULL;
	char refused_addr[INET6_ADDRSTRLEN] = "";
	int n, tried = 0;

	c->decision = "denied";
	*code = 403;
	if (netpolicy_host_normalise(c->host, sizeof c->host) < 0) {
		c->reason = "not a host name";
		*code = 400;
		return -1;
	}
	rule = netpolicy_match(&cfg->policy, c->host, c->port);
	if (rule == NULL) {
		c->reason = "no -allow-host entry matches";
		return -1;
	}
	netpolicy_rule_text(rule, c->rule, sizeof c->rule);
	/* Allowed by the list; from here on only the addresses can refuse, or the network fail. */
	c->decision = "allowed";
	*code = 502;
	n = resolve(cfg, c->host, c->port, addrs, PROXY_ADDRS_MAX);
	if (n == 0) {
		c->reason = "the name does not resolve";
		return -1;
	}
	/* Each address is checked as it will be connected to (no second resolution can swap
	 * it): a name may resolve to a public address and an internal one, and only the
	 * allowed ones are tried. */
	for (int i = 0; i < n; i++) {
		const struct sockaddr *sa = (const struct sockaddr *)&addrs[i];
		const char *cls, *who;
		if (!netpolicy_may_connect(rule, sa, netpolicy_is_local_addr(sa) != 0, &cls, &who)) {
			if (refused == NULL) {
				refused = cls;
				refused_who = who;
				sa_text(&addrs[i], refused_addr, sizeof refused_addr);
			}
			continue;
		}
		tried = 1;
		sa_text(&addrs[i], c->addr, sizeof c->addr);
		if ((c->up = connect_timed(&addrs[i])) >= 0) {
			c->reason = NULL;
			return 0;
		}
	}
	if (!tried) {
		snprintf(c->why, sizeof c->why, "resolves to %s (%s), which %s", refused_addr, refused,
			 refused_who);
		snprintf(c->addr, sizeof c->addr, "%s", refused_addr);
		c->reason = c->why;
		c->decision = "denied";
		*code = 403;
	} else {
		c->reason = "connection failed";
	}
	return -1;
}

/* One direction of a tunnel: bytes move from one socket into a pipe and from the pipe into
 * the other socket (splice: the kernel copies, never this process), so neither side waits
 * on the other and a full-duplex peer cannot deadlock the relay. */
struct lane {
	int from, to, pipe[2];
	size_t pending, cap;		/* bytes in the pipe, and what it holds */
	int eof, shut;
	long long *count;
	long long limit;		/* bytes still to take from the source; -1: no end */
};

/* Moves what it can without blocking (in and out by turns until both would wait, so one
 * wake-up moves as much as the sockets allow); -1 when the lane failed. */
static int lane_step(struct lane *l, short rev_from, short rev_to)
{
	int can_in = (rev_from & (POLLIN | POLLHUP | POLLERR)) != 0;
	int can_out = (rev_to & (POLLOUT | POLLERR | POLLHUP)) != 0 || l->pending == 0;
	ssize_t n;

	for (int round = 0; round < 64 && (can_in || can_out); round++) {
		int moved = 0;
		size_t want = l->cap - l->pending;
		if (l->limit >= 0 && (long long)want > l->limit)
			want = (size_t)l->limit;
		if (can_in && !l->eof && want > 0) {
			n = splice(l->from, NULL, l->pipe[1], NULL, want,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n == 0)
				l->eof = 1;
			else if (n > 0)
				l->pending += (size_t)n, moved = 1, l->limit -= l->limit >= 0 ? n : 0;
			else if (errno == EAGAIN)
				can_in = 0;
			else if (errno != EINTR)
				return -1;
		}
		if (can_out && l->pending > 0) {
			n = splice(l->pipe[0], NULL, l->to, NULL, l->pending,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				l->pending -= (size_t)n;
				*l->count += n;
				moved = 1;
			} else if (n < 0 && errno == EAGAIN) {
				can_out = 0;
			} else if (n < 0 && errno != EINTR) {
				return -1;
			}
		}
		if (!moved)
			break;
	}
	if (l->limit == 0 && l->pending == 0) {
		/* The request is complete: the server hears nothing more from this connection
		 * (no half-close either, which some servers take for an abort). */
		l->eof = l->shut = 1;
	}
	if (l->eof && l->pending == 0 && !l->shut) {
		/* One side is done sending: pass the half-close on, keep the other way open. */
		shutdown(l->to, SHUT_WR);
		l->shut = 1;
	}
	return 0;
}

/* Copies both ways until both ends are done or nothing moves for PROXY_IDLE_TIMEOUT_MS; from
 * the client at most limit bytes (-1: a tunnel, no end). */
static void relay(struct conn *c, long long limit)
{
	int r;
	struct lane lanes[2] = {{c->fd, c->up, {-1, -1}, 0, 0, 0, 0, &c->bytes_out, limit},
				{c->up, c->fd, {-1, -1}, 0, 0, 0, 0, &c->bytes_in, -1}};

	fcntl(c->fd, F_SETFL, O_NONBLOCK);
	fcntl(c->up, F_SETFL, O_NONBLOCK);
	for (int d = 0; d < 2; d++) {
		if (pipe2(lanes[d].pipe, O_CLOEXEC | O_NONBLOCK) < 0)
			goto out;
		fcntl(lanes[d].pipe[1], F_SETPIPE_SZ, RELAY_BUF);
		r = fcntl(lanes[d].pipe[1], F_GETPIPE_SZ);
		if (r <= 0)
			goto out;
		lanes[d].cap = (size_t)r;
	}
	while (!lanes[0].shut || !lanes[1].shut) {
		/* p[0], p[1]: lane 0's source and sink; p[2], p[3]: lane 1's. */
		struct pollfd p[4];
		for (int d = 0; d < 2; d++) {
			struct lane *l = &lanes[d];
			p[2 * d] = (struct pollfd){.fd = !l->eof && l->pending < l->cap && l->limit != 0
							   ? l->from : -1,
						   .events = POLLIN};
			p[2 * d + 1] = (struct pollfd){.fd = l->pending ? l->to : -1, .events = POLLOUT};
		}
		r = poll(p, 4, PROXY_IDLE_TIMEOUT_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (lane_step(&lanes[0], p[0].revents, p[1].revents) < 0 ||
		    lane_step(&lanes[1], p[2].revents, p[3].revents) < 0)
			break;
	}
out:
	for (int d = 0; d < 2; d++)
		for (int k = 0; k < 2; k++)
			if (lanes[d].pipe[k] >= 0)
				close(lanes[d].pipe[k]);
}

/* SOCKS5 (RFC 1928): no authentication, CONNECT only. */
static void serve_socks(struct conn *c, int64_t deadline)
{
	static const unsigned char ok_method[2] = {5, 0}, no_method[2] = {5, 0xff};
	unsigned char reply[10] = {5, 0, 0, 1, 0, 0, 0, 0, 0, 0};
	struct socksreq req;
	long g, r;
	int code, rep = 1;

	c->kind = "socks5";
	while ((g = socks_greeting_len((unsigned char *)c->head, c->have)) == 0)
		if (read_more(c, deadline) <= 0)
			return;
	if (g < 0) {
		write_all(c->fd, no_method, 2);
		return;
	}
	write_all(c->fd, ok_method, 2);
	memmove(c->head, c->head + g, c->have - (size_t)g);
	c->have -= (size_t)g;
	while ((r = socks_request_parse((unsigned char *)c->head, c->have, &req, &rep)) == 0)
		if (read_more(c, deadline) <= 0)
			return;
	if (r < 0) {
		reply[1] = (unsigned char)rep;
		write_all(c->fd, reply, sizeof reply);
		return;
	}
	snprintf(c->host, sizeof c->host, "%s", req.host);
	c->port = req.port;
	if (open_upstream(c, &code) < 0) {
		reply[1] = code == 403 || code == 400 ? 2 : 4;	/* not allowed / host unreachable */
		write_all(c->fd, reply, sizeof reply);
		log_decision(c);
		return;
	}
	if (write_all(c->fd, reply, sizeof reply) == 0 &&
	    (c->have == (size_t)r || write_all(c->up, c->head + r, c->have - (size_t)r) == 0)) {
		c->bytes_out = (long long)(c->have - (size_t)r);
		relay(c, -1);
	}
	log_decision(c);
}

/* Notes the request line of head (method, path without its query) for the log. */
static void note_request(struct conn *c, const char *head, size_t len)
{
	const char *sp = memchr(head, ' ', len), *end;

	if (sp == NULL)
		return;
	snprintf(c->method, sizeof c->method, "%.*s", (int)(sp - head), head);
	sp++;
	end = sp + strcspn(sp, " ?\r\n");
	if (end > head + len)
		end = head + len;
	snprintf(c->path, sizeof c->path, "%.*s", (int)(end - sp), sp);
}

/* The secrets' look at a plain HTTP head: 0 with *head (and *len) the head to send (a new
 * one when a value went in: *owned), or -1 after answering 403 (a placeholder where it may
 * not go). */
static int secrets_head(struct conn *c, const char **head, size_t *len, char **owned)
{
	const struct proxysecret *which;
	const char *why = NULL;
	size_t nlen = 0;
	enum proxysecret_verdict v;

	*owned = NULL;
	if (c->cfg->secrets.n == 0)
		return 0;
	v = proxysecrets_head(&c->cfg->secrets, *head, *len, c->host, c->port, owned, &nlen,
			      &which, &why);
	if (v == PROXYSECRET_NONE)
		return 0;
	note_request(c, *head, *len);
	c->secret = which->name;
	if (v == PROXYSECRET_REPLACED) {
		c->secret_action = "substituted";
		*head = *owned;
		*len = nlen;
		return 0;
	}
	c->secret_action = "refused";
	c->decision = "denied";
	c->reason = why;
	{
		char *body = xasprintf("sbx-proxy: refused: %s (secret %s)\n", why, which->name);
		http_reply(c->fd, 403, "Forbidden", body);
		free(body);
	}
	return -1;
}

/* Sends a request body upstream, looking for placeholders first: the first have bytes are at
 * p, limit more are still to come from the sandbox. Every placeholder is held back until it
 * can be told whole, so none leaves in part; on one, the upstream connection is reset (the
 * server never sees a complete request) and -1 returned with c->secret set. -2: I/O failed. */
static int send_body_scanned(struct conn *c, const char *p, size_t have, long long limit)
{
	const struct proxysecrets *s = &c->cfg->secrets;
	size_t keep = s->longest ? s->longest - 1 : 0, held = 0;
	char *buf = xmalloc(PROXY_SCAN_BUF + keep + have);
	const struct proxysecret *hit;
	int rc = -2;

	memcpy(buf, p, have);
	held = have;
	for (;;) {
		struct pollfd pf = {.fd = c->fd, .events = POLLIN};
		ssize_t n;
		if ((hit = proxysecrets_find(s, buf, held)) != NULL) {
			c->secret = hit->name;
			rc = -1;
			break;
		}
		if (limit == 0) {
			rc = write_all(c->up, buf, held) < 0 ? -2 : 0;
			c->bytes_out += (long long)held;
			break;
		}
		if (held > keep) {
			if (write_all(c->up, buf, held - keep) < 0)
				break;
			c->bytes_out += (long long)(held - keep);
			memmove(buf, buf + held - keep, keep);
			held = keep;
		}
		if (poll(&pf, 1, PROXY_IDLE_TIMEOUT_MS) <= 0)
			break;
		n = read(c->fd, buf + held, (size_t)(limit < PROXY_SCAN_BUF ? limit : PROXY_SCAN_BUF));
		if (n <= 0)
			break;
		held += (size_t)n;
		limit -= n;
	}
	free(buf);
	return rc;
}

/* A placeholder in a body: never sent, to any host (a listed one could echo it back with
 * the value in place, or publish it). The request is cut off and refused. */
static void refuse_body(struct conn *c)
{
	struct linger lg = {1, 0};
	char *body;

	setsockopt(c->up, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(c->up);
	c->up = -1;
	c->secret_action = "refused";
	c->decision = "denied";
	c->reason = "a placeholder in the request body";
	body = xasprintf("sbx-proxy: refused: a placeholder in the request body (secret %s)\n",
			 c->secret);
	http_reply(c->fd, 403, "Forbidden", body);
	free(body);
}

/* A CONNECT to a secret's host: TLS on both sides (lib/local/proxytls.c). early: the
 * client sent bytes before the tunnel was answered, which an intercepted one cannot take. */
static void intercept(struct conn *c, int early)
{
	struct proxytls_run r = {0};

	c->kind = "connect-tls";
	if (early) {
		http_reply(c->fd, 400, "Bad Request", "sbx-proxy: wait for the CONNECT's answer\n");
		c->reason = "bytes before the CONNECT's answer";
		return;
	}
	proxytls_serve(c->cfg->tls, &c->cfg->secrets, c->fd, c->up, c->host, c->port, &r);
	if (r.code) {
		char *body = xasprintf("sbx-proxy: %s:%d: %s\n", c->host, c->port, r.reason);
		http_reply(c->fd, r.code, "Bad Gateway", body);
		free(body);
		c->decision = "denied";
	}
	c->bytes_out = r.bytes_out;
	c->bytes_in = r.bytes_in;
	if (r.reason) {
		snprintf(c->why, sizeof c->why, "%s", r.reason);
		c->reason = c->why;
	}
	if (r.action && strcmp(r.action, "refused") == 0)
		c->decision = "denied";
	if (r.secret) {
		c->secret = r.secret;
		c->secret_action = r.action;
	}
	snprintf(c->method, sizeof c->method, "%s", r.method);
	snprintf(c->path, sizeof c->path, "%s", r.path);
}

static void serve_http(struct conn *c, int64_t deadline)
{
	struct proxyreq req;
	struct sbx_err e;
	long long extra;
	long hl;
	int code, rc;
	char *owned = NULL, *head;
	size_t head_len;

	c->kind = "http";
	while ((hl = proxyreq_head_len(c->head, c->have)) == 0)
		if (read_more(c, deadline) <= 0) {
			if (c->have)
				http_reply(c->fd, 408, "Request Timeout", "sbx-proxy: the request head did not arrive in time\n");
			return;
		}
	if (hl < 0 || proxyreq_parse(c->head, (size_t)hl, &req, &e) < 0) {
		char *body = xasprintf("sbx-proxy: bad request: %s\n",
				       hl < 0 ? "request head too long" : e.msg);
		http_reply(c->fd, 400, "Bad Request", body);
		free(body);
		return;
	}
	c->kind = req.connect ? "connect" : "http";
	head = req.upstream;
	head_len = req.upstream_len;
	snprintf(c->host, sizeof c->host, "%s", req.host);
	c->port = req.port;
	if (req.chunked) {
		/* Where a chunked body ends is the one thing left to read for; a proxy that does
		 * not look cannot promise the server hears one request only. */
		http_reply(c->fd, 411, "Length Required", "sbx-proxy: a request body needs a "
			   "Content-Length (Transfer-Encoding is not relayed over plain HTTP)\n");
		proxyreq_free(&req);
		return;
	}
	if (!req.connect && secrets_head(c, (const char **)&head, &head_len, &owned) < 0) {
		log_decision(c);
		proxyreq_free(&req);
		return;
	}
	if (open_upstream(c, &code) < 0) {
		char *body;
		if (code == 403 && c->rule[0] == '\0')
			body = xasprintf("sbx-proxy: %s:%d is not allowed: no -allow-host entry matches "
					 "it (this sandbox allows: %s)\n", c->host, c->port,
					 c->cfg->policy_text);
		else if (code == 403)
			body = xasprintf("sbx-proxy: %s:%d is not allowed: it %s (entry %s)\n", c->host,
					 c->port, c->reason, c->rule);
		else
			body = xasprintf("sbx-proxy: %s:%d: %s\n", c->host, c->port, c->reason);
		http_reply(c->fd, code, code == 403 ? "Forbidden" : code == 400 ? "Bad Request"
								   : "Bad Gateway", body);
		free(body);
		log_decision(c);
		free(owned);
		proxyreq_free(&req);
		return;
	}
	if (req.connect && c->cfg->tls && proxytls_wants(&c->cfg->secrets, c->host, c->port)) {
		intercept(c, c->have > (size_t)hl);
		goto done;
	}
	if (req.connect) {
		static const char est[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		if (write_all(c->fd, est, sizeof est - 1) < 0)
			goto done;
	} else if (write_all(c->up, head, head_len) < 0) {
		goto done;
	}
	/* What the client sent after its head (a body, a TLS hello) goes first. A plain HTTP
	 * connection carries one request: its body and not a byte more, so a request
	 * pipelined behind it (for any Host) never reaches the server unchecked. */
	extra = (long long)(c->have - (size_t)hl);
	if (!req.connect && extra > req.body_len)
		extra = req.body_len;
	if (!req.connect && c->cfg->secrets.n && req.body_len > 0) {
		c->bytes_out = (long long)head_len;
		note_request(c, req.upstream, req.upstream_len);
		if ((rc = send_body_scanned(c, c->head + hl, (size_t)extra, req.body_len - extra)) == 0)
			relay(c, 0);
		else if (rc == -1)
			refuse_body(c);
		goto done;
	}
	if (extra > 0 && write_all(c->up, c->head + hl, (size_t)extra) < 0)
		goto done;
	c->bytes_out = extra + (req.connect ? 0 : (long long)head_len);
	relay(c, req.connect ? -1 : req.body_len - extra);
done:
	if (c->secret && c->secret_action == NULL)
		c->secret_action = "substituted";
	log_decision(c);
	if (owned)
		explicit_bzero(owned, head_len);
	free(owned);
	proxyreq_free(&req);
}

/* Reads what already arrived and was not used (a request pipelined behind the one carried),
 * so that closing does not reset the connection before the client read its answer. */
static void drain(int fd)
{
	char buf[4096];

	for (int i = 0; i < 64 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; i++)
		;
}

static void drain_close(int fd)
{
	shutdown(fd, SHUT_WR);
	drain(fd);
	close(fd);
}

static void *serve_conn(void *arg)
{
	struct conn *c = arg;
	int64_t deadline = time_mono_ns() + (int64_t)PROXY_HEAD_TIMEOUT_MS * 1000000;

	if (read_more(c, deadline) > 0) {
		if ((unsigned char)c->head[0] == 5)
			serve_socks(c, deadline);
		else
			serve_http(c, deadline);
	}
	if (c->up >= 0)
		close(c->up);
	drain_close(c->fd);
	free(c);
	atomic_fetch_sub(&active, 1);
	return NULL;
}

int proxy_serve(struct proxy_config *cfg, struct sbx_err *e)
{
	pthread_attr_t attr;

	signal(SIGPIPE, SIG_IGN);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	for (;;) {
		int fd = accept4(cfg->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		struct conn *c;
		pthread_t t;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				usleep(10000);
				continue;
			}
			return err_sys(e, errno, "accept");
		}
		if (atomic_fetch_add(&active, 1) >= PROXY_CONNS_MAX) {
			drain(fd);
			http_reply(fd, 503, "Service Unavailable",
				   "sbx-proxy: too many connections at once\n");
			drain_close(fd);
			atomic_fetch_sub(&active, 1);
			continue;
		}
		c = xcalloc(1, sizeof *c);
		c->cfg = cfg;
		c->fd = fd;
		c->up = -1;
		if (pthread_create(&t, &attr, serve_conn, c) != 0) {
			close(fd);
			free(c);
			atomic_fetch_sub(&active, 1);
		}
	}
}
