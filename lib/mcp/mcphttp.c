/* mcphttp.c — Streamable HTTP over libmicrohttpd: the session table, one stream per POST (SSE
 * or a single JSON body), DELETE, shutdown; the checks before a body are in mcphttp_check.c. */
#include "mcphttp.h"
#include "mcphttp_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "jsonrpc.h"
#include "logfn.h"
#include "name.h"
#include "peer.h"
#include "timeutil.h"
#include "xalloc.h"

/* How often the connection deadlines are looked at (they are seconds long). */
#define MCPHTTP_TICK_MS 250

/* ---- streams: where one POST's answers go -------------------------------------------------- */

struct line {
	struct line *next;
	char *text;
	size_t len;
};

struct stream {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;
	bool sse;			/* else one JSON body: only the response is kept */
	bool done, gone;
	struct line *head, *tail;
	size_t queued;
	char *cur;			/* the chunk being written */
	size_t cur_len, cur_off;
};

static struct stream *stream_new(bool sse)
{
	struct stream *s = xcalloc(1, sizeof *s);

	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->refs = 1;
	s->sse = sse;
	return s;
}

static void stream_unref(struct stream *s)
{
	struct line *l, *next;
	int left;

	pthread_mutex_lock(&s->mu);
	left = --s->refs;
	pthread_mutex_unlock(&s->mu);
	if (left > 0)
		return;
	for (l = s->head; l; l = next) {
		next = l->next;
		free(l->text);
		free(l);
	}
	free(s->cur);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static void stream_send(void *arg, char *line)
{
	struct stream *s = arg;
	struct line *l;
	size_t n = strlen(line);

	if (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	pthread_mutex_lock(&s->mu);
	/* One JSON body holds the response only (notifications need a stream); a client that
	 * stopped reading must not make us queue without end. */
	if (s->gone || s->done || (!s->sse && strncmp(line, "{\"jsonrpc\":\"2.0\",\"method\"", 26) == 0) ||
	    s->queued + n > PEER_OUTQ_MAX) {
		pthread_mutex_unlock(&s->mu);
		free(line);
		return;
	}
	l = xcalloc(1, sizeof *l);
	if (s->sse) {
		l->text = xasprintf("event: message\ndata: %s\n\n", line);
		free(line);
	} else {
		l->text = line;
	}
	l->len = strlen(l->text);
	s->queued += l->len;
	if (s->tail)
		s->tail->next = l;
	else
		s->head = l;
	s->tail = l;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void stream_done(void *arg)
{
	struct stream *s = arg;

	pthread_mutex_lock(&s->mu);
	s->done = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	stream_unref(s);
}

/* The sink handed to the session holds a reference, dropped by its done. */
static struct mcp_sink stream_sink(struct stream *s)
{
	struct mcp_sink k = {.send = stream_send, .done = stream_done, .arg = s};

	pthread_mutex_lock(&s->mu);
	s->refs++;
	pthread_mutex_unlock(&s->mu);
	return k;
}

/* JSON mode: waits for the answer; newly allocated, NULL when none came (cancelled). */
static char *stream_wait_one(struct stream *s)
{
	char *text = NULL;

	pthread_mutex_lock(&s->mu);
	while (!s->done && s->head == NULL)
		pthread_cond_wait(&s->cv, &s->mu);
	if (s->head) {
		struct line *l = s->head;
		s->head = l->next;
		if (s->head == NULL)
			s->tail = NULL;
		text = l->text;
		free(l);
	}
	pthread_mutex_unlock(&s->mu);
	return text;
}

/* SSE: libmicrohttpd's content reader (its connection thread may block here). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	static const char keepalive[] = ": keepalive\n\n";
	struct stream *s = cls;
	ssize_t n = 0;

	(void)pos;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (s->cur == NULL && s->head) {
			struct line *l = s->head;
			s->head = l->next;
			if (s->head == NULL)
				s->tail = NULL;
			s->cur = l->text;
			s->cur_len = l->len;
			s->cur_off = 0;
			s->queued -= l->len;
			free(l);
		}
		if (s->cur) {
			size_t k = s->cur_len - s->cur_off < max ? s->cur_len - s->cur_off : max;
			memcpy(buf, s->cur + s->cur_off, k);
			s->cur_off += k;
			if (s->cur_off == s->cur_len) {
				free(s->cur);
				s->cur = NULL;
			}
			n = (ssize_t)k;
			break;
		}
		if (s->done) {
			n = MHD_CONTENT_READER_END_OF_STREAM;
			break;
		}
		{
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += MCPHTTP_KEEPALIVE_NS / 1000000000;
			if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT &&
			    s->head == NULL && !s->done && max >= sizeof keepalive - 1) {
				memcpy(buf, keepalive, sizeof keepalive - 1);
				n = (ssize_t)(sizeof keepalive - 1);
				break;
			}
		}
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* The response is gone (sent, or the client went away): later lines are dropped. */
static void stream_release(void *cls)
{
	struct stream *s = cls;

	pthread_mutex_lock(&s->mu);
	s->gone = true;
	pthread_mutex_unlock(&s->mu);
	stream_unref(s);
}

/* ---- the session table ------------------------------------------------------------------- */

struct hsess {
	struct hsess *next;
	struct mcp_session *ss;
	int refs;			/* requests using it */
	bool gone;			/* removed: closed when refs drops to 0 */
};

struct server {
	struct mcp_server *srv;
	struct mcphttp_config cfg;
	pthread_mutex_t mu;
	struct hsess *sessions;
	int nsessions;
	bool stopping;
	struct mcphttp_conns *conns;	/* caps and deadlines of connections (mcphttp_conns.c) */
};

static void hlog(struct server *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hlog(struct server *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	logfn_vprintf(h->cfg.log, h->cfg.log_arg, fmt, ap);
	va_end(ap);
}

/* A reference to the live session with this id, or NULL. */
static struct hsess *hs_get(struct server *h, const char *id)
{
	struct hsess *x;

	pthread_mutex_lock(&h->mu);
	for (x = h->sessions; x; x = x->next)
		if (strcmp(mcp_session_name(x->ss), id) == 0)
			break;
	if (x)
		x->refs++;
	pthread_mutex_unlock(&h->mu);
	return x;
}

static void hs_close(struct server *h, struct hsess *x)
{
	struct sbx_err e;

	char name[NAME_MAX_LEN + 1];

	snprintf(name, sizeof name, "%s", mcp_session_name(x->ss));
	if (mcp_session_close(x->ss, true, &e) < 0)
		hlog(h, "warning: session=%s: %s", name, e.msg);
	hlog(h, "session=%s ended", name);
	free(x);
}

static void hs_put(struct server *h, struct hsess *x)
{
	bool close_it;

	pthread_mutex_lock(&h->mu);
	close_it = --x->refs == 0 && x->gone;
	pthread_mutex_unlock(&h->mu);
	if (close_it)
		hs_close(h, x);
}

/* Caller holds h->mu: takes x out of the table (closed by the last hs_put). */
static void hs_remove_locked(struct server *h, struct hsess *x)
{
	for (struct hsess **p = &h->sessions; *p; p = &(*p)->next)
		if (*p == x) {
			*p = x->next;
			h->nsessions--;
			x->gone = true;
			return;
		}
}

/* A new session for an initialize (a reference held), after ending idle or surplus ones. */
static struct hsess *hs_new(struct server *h, struct sbx_err *e)
{
	struct hsess *x, *lru, *victims = NULL;
	int64_t now = time_mono_ns();

	pthread_mutex_lock(&h->mu);
	for (x = h->sessions; x;) {
		struct hsess *next = x->next;
		if (x->refs == 0 && !mcp_session_busy(x->ss) &&
		    now - mcp_session_last_used(x->ss) > MCPHTTP_SESSION_IDLE_NS) {
			hs_remove_locked(h, x);
			x->next = victims;
			victims = x;
		}
		x = next;
	}
	while (h->nsessions >= MCPHTTP_SESSIONS_MAX) {
		lru = NULL;
		for (x = h->sessions; x; x = x->next)
			if (x->refs == 0 && !mcp_session_busy(x->ss) &&
			    (lru == NULL || mcp_session_last_used(x->ss) < mcp_session_last_used(lru->ss)))
				lru = x;
		if (lru == NULL)
			break;
		hs_remove_locked(h, lru);
		lru->next = victims;
		victims = lru;
	}
	x = NULL;
	if (h->stopping)
		err_set(e, SBX_EUNAVAIL, "the server is shutting down");
	else if (h->nsessions >= MCPHTTP_SESSIONS_MAX)
		err_set(e, SBX_EUNAVAIL, "too many sessions in use (limit %d)", MCPHTTP_SESSIONS_MAX);
	else
		x = xcalloc(1, sizeof *x);
	pthread_mutex_unlock(&h->mu);
	while (victims) {
		struct hsess *next = victims->next;
		hs_close(h, victims);
		victims = next;
	}
	if (x == NULL)
		return NULL;
	if ((x->ss = mcp_session_open(h->srv, NULL, e)) == NULL) {
		free(x);
		return NULL;
	}
	x->refs = 1;
	pthread_mutex_lock(&h->mu);
	x->next = h->sessions;
	h->sessions = x;
	h->nsessions++;
	pthread_mutex_unlock(&h->mu);
	hlog(h, "session=%s started", mcp_session_name(x->ss));
	return x;
}

/* ---- requests ------------------------------------------------------------------------------- */

struct request {
	struct buf body;
	bool too_large;
	struct hsess *x;		/* the session named by Mcp-Session-Id, a reference */
};

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *type,
				 const char *body, const char *session_id,
				 const struct mcphttp_decision *d)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result rc;

	if (r == NULL)
		return MHD_NO;
	if (*body)
		MHD_add_response_header(r, "Content-Type", type);
	if (session_id)
		MHD_add_response_header(r, "Mcp-Session-Id", session_id);
	if (d && d->www_authenticate)
		MHD_add_response_header(r, "WWW-Authenticate", d->www_authenticate);
	if (d && d->allow)
		MHD_add_response_header(r, "Allow", d->allow);
	rc = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return rc;
}

/* An HTTP error with a JSON-RPC error body without id (what the transport asks for). */
static enum MHD_Result send_error(struct MHD_Connection *c, int status, int code, const char *msg,
				  struct json_object *id, const struct mcphttp_decision *d)
{
	char *line = jsonrpc_error_line(id, code, msg, NULL);
	enum MHD_Result rc = send_text(c, status, "application/json", line, NULL, d);

	free(line);
	return rc;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* The POST body: one JSON-RPC message. */
static enum MHD_Result handle_post(struct server *h, struct MHD_Connection *c, struct request *rq)
{
	struct jsonrpc_msg m;
	struct json_object *bad_id = NULL;
	struct sbx_err e;
	struct stream *st;
	struct mcp_sink sink;
	const char *sid = NULL;
	bool is_init, sse;
	int code;
	enum MHD_Result rc;

	if (jsonrpc_parse(rq->body.data ? rq->body.data : "", rq->body.len, &m, &code, &bad_id, &e) < 0) {
		rc = send_error(c, 400, code, e.msg, bad_id, NULL);
		json_object_put(bad_id);
		return rc;
	}
	is_init = m.kind == JSONRPC_REQUEST && strcmp(m.method, MCP_INITIALIZE) == 0;
	if (rq->x == NULL && !is_init) {
		jsonrpc_msg_free(&m);
		return send_error(c, 400, JSONRPC_INVALID_REQUEST,
				  "bad request: Mcp-Session-Id is required (initialize first)", NULL, NULL);
	}
	if (rq->x == NULL && (rq->x = hs_new(h, &e)) == NULL) {
		rc = send_error(c, 503, JSONRPC_INTERNAL_ERROR, e.msg, m.id, NULL);
		jsonrpc_msg_free(&m);
		return rc;
	}
	if (is_init)
		sid = mcp_session_name(rq->x->ss);
	if (m.kind != JSONRPC_REQUEST) {
		struct stream *drop = stream_new(false);
		sink = stream_sink(drop);
		mcp_session_handle(rq->x->ss, &m, &sink);
		stream_unref(drop);
		return send_text(c, 202, "", "", NULL, NULL);
	}
	/* Only tools/call can take long or report progress: it streams when the client takes it;
	 * anything else streams only for a client that takes no JSON body. */
	sse = mcphttp_accepts(header(c, "Accept"), "text/event-stream") &&
	      (strcmp(m.method, MCP_TOOLS_CALL) == 0 ||
	       !mcphttp_accepts(header(c, "Accept"), "application/json"));
	st = stream_new(sse);
	sink = stream_sink(st);
	mcp_session_handle(rq->x->ss, &m, &sink);
	if (sse) {
		struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 << 10,
									   stream_read, st, stream_release);
		if (r == NULL) {
			stream_release(st);
			return MHD_NO;
		}
		MHD_add_response_header(r, "Content-Type", "text/event-stream");
		MHD_add_response_header(r, "Cache-Control", "no-cache");
		if (sid)
			MHD_add_response_header(r, "Mcp-Session-Id", sid);
		rc = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return rc;
	}
	{
		char *text = stream_wait_one(st);
		if (text) {
			rc = send_text(c, 200, "application/json", text, sid, NULL);
			free(text);
		} else {
			rc = send_error(c, 200, JSONRPC_INTERNAL_ERROR, "the request was cancelled", NULL, NULL);
		}
	}
	stream_release(st);
	return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct server *h = cls;
	struct request *rq = *con_cls;

	(void)version;
	if (rq == NULL) {
		struct mcphttp_req r = {
			.method = method, .path = url, .authorization = header(c, "Authorization"),
			.origin = header(c, "Origin"), .accept = header(c, "Accept"),
			.content_type = header(c, "Content-Type"),
			.session_id = header(c, "Mcp-Session-Id"),
			.protocol_version = header(c, "MCP-Protocol-Version"), .token = h->cfg.token,
		};
		struct mcphttp_decision d;
		const char *cl = header(c, "Content-Length");
		struct hsess *x;
		const struct mcp_version *v;
		int64_t wait;

		/* Guessing is bounded server-wide: a source that sent a wrong token lately waits
		 * while the bucket is empty (one that did not is still heard). */
		if (r.authorization && !mcphttp_conns_may_try(h->conns, c, &wait)) {
			char msg[128];
			snprintf(msg, sizeof msg, "too many requests: too many wrong tokens on this "
				 "server; try again in %lldms", (long long)(wait / 1000000 + 1));
			return send_error(c, 429, JSONRPC_INVALID_REQUEST, msg, NULL, NULL);
		}
		x = r.session_id ? hs_get(h, r.session_id) : NULL;
		v = x ? mcp_session_version(x->ss) : NULL;
		r.session_known = x != NULL;
		r.session_version = v ? v->name : NULL;
		mcphttp_decide(&r, &d);
		if (d.authorized || (d.status == 401 && r.authorization))
			mcphttp_conns_verdict(h->conns, c, d.authorized);
		if (d.verdict == MCPHTTP_OK && cl && strtoull(cl, NULL, 10) > MCPHTTP_BODY_MAX) {
			d.verdict = MCPHTTP_REFUSE;
			d.status = 413;
			d.message = "payload too large";
		}
		if (d.verdict != MCPHTTP_OK) {
			if (x)
				hs_put(h, x);
			if (d.status == 401)
				hlog(h, "refused a request without the right token (401)");
			return send_error(c, d.status, JSONRPC_INVALID_REQUEST, d.message, NULL, &d);
		}
		rq = xcalloc(1, sizeof *rq);
		rq->x = x;
		*con_cls = rq;
		return MHD_YES;
	}
	if (*upload_size > 0) {
		if (rq->body.len + *upload_size > MCPHTTP_BODY_MAX) {
			rq->too_large = true;
			buf_free(&rq->body);
		} else if (!rq->too_large) {
			buf_append(&rq->body, upload, *upload_size);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->too_large)
		return send_error(c, 413, JSONRPC_INVALID_REQUEST, "payload too large", NULL, NULL);
	if (strcmp(method, "DELETE") == 0) {
		pthread_mutex_lock(&h->mu);
		hs_remove_locked(h, rq->x);
		pthread_mutex_unlock(&h->mu);
		return send_text(c, 200, "", "", NULL, NULL);	/* closed by the last reference */
	}
	return handle_post(h, c, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct server *h = cls;
	struct request *rq = *con_cls;

	(void)c;
	(void)toe;
	if (rq == NULL)
		return;
	if (rq->x)
		hs_put(h, rq->x);
	buf_free(&rq->body);
	free(rq);
	*con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct server *h = cls;
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof msg, fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	hlog(h, "http: %s", msg);
}

int mcphttp_run(struct mcp_server *srv, const struct mcphttp_config *cfg, int lfd, int stop_fd,
		struct sbx_err *e)
{
	struct server h = {.srv = srv, .cfg = *cfg};
	struct MHD_Daemon *d;
	struct pollfd pf = {.fd = stop_fd, .events = POLLIN};

	pthread_mutex_init(&h.mu, NULL);
	h.conns = mcphttp_conns_new(cfg->log, cfg->log_arg);
	d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG,
			     0, NULL, NULL, on_request, &h,
			     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, &h,
			     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)MCPHTTP_CONN_SLOTS,
			     MHD_OPTION_NOTIFY_CONNECTION, mcphttp_conns_notify, h.conns,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)MCPHTTP_IDLE_S,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MCPHTTP_HEADERS_MAX,
			     MHD_OPTION_THREAD_STACK_SIZE, (size_t)MCP_THREAD_STACK,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, &h,
			     MHD_OPTION_END);
	if (d == NULL) {
		close(lfd);
		mcphttp_conns_free(h.conns);
		pthread_mutex_destroy(&h.mu);
		return err_set(e, SBX_EIO, "cannot start the HTTP server");
	}
	/* Until stopped, closing connections past their authorization deadline. */
	for (;;) {
		/* New connections do not wake this loop: look at least every MCPHTTP_TICK_MS. */
		int t = mcphttp_conns_expire(h.conns);
		int r = poll(&pf, 1, t < 0 || t > MCPHTTP_TICK_MS ? MCPHTTP_TICK_MS : t);
		if (r > 0 || (r < 0 && errno != EINTR))
			break;
	}
	hlog(&h, "shutting down");
	{
		MHD_socket l = MHD_quiesce_daemon(d);
		if (l != MHD_INVALID_SOCKET)
			close(l);
	}
	/* End every session: running calls are cancelled, their streams end, and so do the
	 * connection threads libmicrohttpd waits for. */
	pthread_mutex_lock(&h.mu);
	h.stopping = true;
	pthread_mutex_unlock(&h.mu);
	for (;;) {
		struct hsess *x;
		bool now;

		pthread_mutex_lock(&h.mu);
		x = h.sessions;
		if (x) {
			hs_remove_locked(&h, x);
			now = x->refs == 0;
		}
		pthread_mutex_unlock(&h.mu);
		if (x == NULL)
			break;
		if (now)
			hs_close(&h, x);
		else
			mcp_session_cancel(x->ss);
	}
	MHD_stop_daemon(d);
	mcphttp_conns_free(h.conns);
	pthread_mutex_destroy(&h.mu);
	return 0;
}
