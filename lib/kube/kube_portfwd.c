/* kube_portfwd.c — sbx-port on the kubernetes backend: each connection accepted on the host's
 * listener becomes one WebSocket to the pod's portforward subresource
 * (/api/v1/namespaces/NS/pods/POD/portforward?ports=PORT, subprotocol v4.channel.k8s.io).
 * Frames carry a channel byte: 0 the connection's data, 1 the error channel, whose text (a
 * failed connect in the pod) is reported through note. The server begins each channel with
 * the port, 2 bytes little-endian, which is dropped. What the client sends carries no prefix.
 *
 * One libwebsockets context serves the lot: the listener, cancel_fd and every client socket
 * are adopted as raw descriptors (lws only polls them; reading, writing and shutdown are
 * ours), so a client's end of file is ours to handle. Half-close as far as the protocol
 * allows: v4 has no way to tell the pod the client stopped sending, so the WebSocket stays
 * open and the answer still arrives; once the WebSocket ends, what it sent is written out
 * and the client's socket shut down for writing (a clean close, never a reset). Each
 * direction holds at most about one chunk: lws's rx flow control stops the faster side.
 * Whether the Sandbox still exists is asked every ALIVE_CHECK_MS. */
#include <errno.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube_int.h"
#include "kubeexec.h"
#include "kubews.h"
#include "portfwd.h"
#include "termtext.h"
#include "xalloc.h"

#define PF_PROTOCOL KUBEEXEC_V4
/* Bytes read from a client per WebSocket message. */
#define PF_CHUNK (64 * 1024)
/* Bytes received per callback: a whole message of the server's (kubelets send 32 KiB, the test
 * server 64 KiB, each after its channel byte) in one. */
#define PF_RX (PF_CHUNK + 4096)
/* Received bytes waiting for a slow client before the WebSocket stops being read. */
#define PF_DOWN_HIGH (256 * 1024)
/* Connections at once; beyond, new ones wait in the listener's backlog. */
#define KPF_MAX 512
/* The error channel carries one line of the kubelet's. */
#define PF_ERR_MAX 512
/* How often the Sandbox is looked for. */
#define ALIVE_CHECK_MS 1000
/* lws's per-thread buffer: the handshake and each TLS record read. */
#define PF_SERV_BUF (256 * 1024)

struct pstate;

/* One client connection and its WebSocket. */
struct pconn {
	struct pstate *st;
	struct pconn *prev, *next;	/* every connection, for the end */
	struct lws *cw, *ws;		/* the adopted client socket; the WebSocket (NULL once gone) */
	int fd;
	bool established, ws_done, closing;
	bool peer_closed;		/* the server ended the WebSocket with a close frame */
	bool up_eof;			/* the client stopped sending */
	bool down_shut;			/* the client's socket is shut down for writing */
	bool ws_paused;			/* the WebSocket is not read until the client catches up */
	bool seen_prefix[2];		/* each channel's port prefix has come */
	int prefix_left;		/* of the current message's prefix bytes */
	int channel;			/* of the message being received */
	unsigned char up[LWS_PRE + 1 + PF_CHUNK];
	size_t up_len;
	struct buf down;
	size_t down_off;
	char err[PF_ERR_MAX];
	size_t err_len;
};

struct pstate {
	struct sbx_backend *b;
	struct portfwd *pf;
	struct kubeconfig *kc;
	struct kubews_target t;
	struct lws_context *ctx;
	struct lws *lwsi, *cancel_wsi;
	lws_sorted_usec_list_t sul;
	portfwd_note_fn note;
	void *arg;
	struct pconn *conns;
	int n;				/* connections */
	bool listen_paused;
	bool destroying;
	int rc;				/* 0 while serving, then an enum portfwd_end or -1 */
	struct sbx_err *e;
};

/* Tells the person what failed for one connection. */
static void note(struct pstate *st, const char *what)
{
	char msg[PF_ERR_MAX + 256];

	if (st->note == NULL)
		return;
	snprintf(msg, sizeof msg, "port %d of sandbox %s: %.*s", st->pf->port, st->pf->name,
		 PF_ERR_MAX, what);
	st->note(st->arg, msg);
}

/* Frees a connection whose both sides are gone (on_event does, after each event). */
static void conn_free(struct pconn *c)
{
	struct pstate *st = c->st;

	if (c->prev)
		c->prev->next = c->next;
	else
		st->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	st->n--;
	if (st->listen_paused && st->lwsi && !st->destroying) {
		st->listen_paused = false;
		lws_rx_flow_control(st->lwsi, 1);
	}
	buf_free(&c->down);
	free(c);
}

/* The client's side is over: its socket closed (lws closes the descriptor). */
static void client_close(struct pconn *c)
{
	if (c->cw) {
		struct lws *w = c->cw;
		c->cw = NULL;
		lws_set_opaque_user_data(w, NULL);
		lws_set_timeout(w, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
	}
}

/* Ends the WebSocket (a close frame once it is up). */
static void ws_close(struct pconn *c)
{
	c->closing = true;
	if (c->ws && !c->established)
		lws_set_timeout(c->ws, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
	else if (c->ws)
		lws_callback_on_writable(c->ws);
}

/* The WebSocket is over: what it sent goes out, then a clean end for the client. */
static void ws_gone(struct pconn *c, struct lws *wsi)
{
	lws_set_opaque_user_data(wsi, NULL);	/* lws may still call about it */
	c->ws = NULL;
	c->ws_done = true;
	if (c->err_len > 0) {
		char *t = termtext_str(c->err, TERMTEXT_LINE);
		note(c->st, t);
		free(t);
	}
	if (c->established && !c->peer_closed && !c->closing && c->cw) {
		/* Cut without a close frame: what was lost is unknown, so the client gets a reset,
		 * never an end of file that would pass for the whole answer. */
		struct linger l = {.l_onoff = 1, .l_linger = 0};
		note(c->st, "the stream was cut (the connection to the API server was lost); "
		     "the client's connection is reset");
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
		client_close(c);
	}
	if (c->cw)
		lws_callback_on_writable(c->cw);
}

/* Client readable: one chunk for the WebSocket, or its end. */
static void client_rx(struct pconn *c)
{
	ssize_t k;

	if (c->ws_done) {
		/* Shut down for writing already: what comes now is read away until its end, so
		 * the close is clean. */
		char junk[4096];
		while ((k = read(c->fd, junk, sizeof junk)) > 0)
			;
		if (k == 0 || (errno != EAGAIN && errno != EINTR))
			client_close(c);
		return;
	}
	if (c->up_len > 0 || c->up_eof || !c->established)
		return;
	k = read(c->fd, c->up + LWS_PRE + 1, PF_CHUNK);
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (k < 0) {
		client_close(c);
		ws_close(c);
		return;
	}
	lws_rx_flow_control(c->cw, 0);
	if (k == 0) {
		c->up_eof = true;	/* v4 cannot say so: the answer may still come */
		return;
	}
	c->up_len = (size_t)k;
	lws_callback_on_writable(c->ws);
}

/* Client writable: what the WebSocket brought, then the end once it is over. */
static void client_tx(struct pconn *c)
{
	while (c->down.len > c->down_off) {
		ssize_t k = send(c->fd, c->down.data + c->down_off, c->down.len - c->down_off,
				 MSG_NOSIGNAL);
		if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			lws_callback_on_writable(c->cw);
			return;
		}
		if (k < 0) {
			client_close(c);
			ws_close(c);
			return;
		}
		c->down_off += (size_t)k;
	}
	c->down.len = c->down_off = 0;
	if (c->ws_paused && c->ws) {
		c->ws_paused = false;
		lws_rx_flow_control(c->ws, 1);
	}
	if (c->ws_done && !c->down_shut) {
		c->down_shut = true;
		shutdown(c->fd, SHUT_WR);
		if (c->up_eof) {
			client_close(c);
			return;
		}
		lws_rx_flow_control(c->cw, 1);
	}
}

/* A message (or fragment) from the server: channel 0's bytes for the client, channel 1's
 * text kept for the person, each channel's first two bytes (the port) dropped. */
static void ws_rx(struct pconn *c, struct lws *wsi, const unsigned char *p, size_t n)
{
	if (lws_is_first_fragment(wsi)) {
		if (n == 0)
			return;
		c->channel = p[0];
		p++, n--;
		c->prefix_left = c->channel < 2 && !c->seen_prefix[c->channel] ? 2 : 0;
		if (c->channel < 2)
			c->seen_prefix[c->channel] = true;
	}
	while (c->prefix_left > 0 && n > 0)
		c->prefix_left--, p++, n--;
	if (c->channel == 1) {
		size_t room = sizeof c->err - 1 - c->err_len;
		if (n > room)
			n = room;
		memcpy(c->err + c->err_len, p, n);
		c->err_len += n;
		c->err[c->err_len] = 0;
		return;
	}
	if (c->channel != 0 || n == 0 || c->cw == NULL)
		return;
	buf_append(&c->down, p, n);
	if (c->down.len - c->down_off > PF_DOWN_HIGH && !c->ws_paused) {
		c->ws_paused = true;
		lws_rx_flow_control(wsi, 0);
	}
	lws_callback_on_writable(c->cw);
}

/* WebSocket writable: the client's chunk as one channel-0 message. */
static int ws_tx(struct pconn *c, struct lws *wsi)
{
	if (c->closing) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
		return -1;
	}
	if (c->up_len == 0)
		return 0;
	c->up[LWS_PRE] = 0;
	if (lws_write(wsi, c->up + LWS_PRE, c->up_len + 1, LWS_WRITE_BINARY) < (int)(c->up_len + 1))
		return -1;
	c->up_len = 0;
	if (c->cw)
		lws_rx_flow_control(c->cw, 1);
	return 0;
}

static void conn_new(struct pstate *st, int fd)
{
	struct pconn *c = xcalloc(1, sizeof *c);
	lws_sock_file_fd_type u;

	c->st = st;
	c->fd = fd;
	u.filefd = (lws_filefd_type)(intptr_t)fd;
	c->cw = lws_adopt_descriptor_vhost(lws_get_vhost(st->lwsi), LWS_ADOPT_RAW_FILE_DESC, u,
					   "sbx-port", NULL);
	if (c->cw == NULL) {
		close(fd);
		free(c);
		return;
	}
	lws_set_opaque_user_data(c->cw, c);
	lws_rx_flow_control(c->cw, 0);	/* nothing is read before the WebSocket is up */
	c->next = st->conns;
	if (st->conns)
		st->conns->prev = c;
	st->conns = c;
	st->n++;
	if (kubews_connect(st->ctx, st->kc, &st->t, PF_PROTOCOL, "sbx-port", c, &c->ws) == NULL &&
	    c->ws == NULL && !c->ws_done) {
		note(st, "cannot connect to the Kubernetes API server");
		c->ws_done = true;
		c->down_shut = true;
		shutdown(fd, SHUT_WR);
		lws_rx_flow_control(c->cw, 1);
	}
}

/* Listener readable: every waiting connection, up to KPF_MAX at once. */
static void accept_all(struct pstate *st)
{
	int fd = 0;

	while (st->n < KPF_MAX && (fd = accept4(lws_get_socket_fd(st->lwsi), NULL, NULL,
					       SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
		conn_new(st, fd);
	if (st->n >= KPF_MAX || (fd < 0 && errno != EAGAIN && errno != EINTR)) {
		/* full, or out of descriptors: wait for a connection to end */
		st->listen_paused = true;
		lws_rx_flow_control(st->lwsi, 0);
	}
}

/* Why an upgrade was refused, for the person. */
static void upgrade_refused(struct pconn *c, struct lws *wsi, const char *why)
{
	int http = (int)lws_http_client_http_response(wsi);
	char what[300];

	if (http == 404)
		snprintf(what, sizeof what, "pod %s not found (is the sandbox gone?)", c->st->pf->name);
	else if (http == 401 || http == 403)
		snprintf(what, sizeof what, "the API server refused the portforward (%d): RBAC must "
			 "allow create pods/portforward", http);
	else if (http >= 400)
		snprintf(what, sizeof what, "the API server refused the portforward (%d)", http);
	else
		snprintf(what, sizeof what, "%s%s", kubews_tls_error(why) ? "TLS failure: " : "", why);
	note(c->st, what);
}

static void stop_all(struct pstate *st, int rc)
{
	if (st->rc == 0)
		st->rc = rc;
}

static int on_ws(struct pconn *c, struct lws *wsi, enum lws_callback_reasons reason, void *in,
		 size_t len)
{
	switch (reason) {
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: {
		char *token = NULL;
		struct sbx_err e;
		int rc;
		if (kubeconfig_token(c->st->kc, &token, &e) < 0) {
			note(c->st, e.msg);
			return -1;
		}
		rc = kubews_auth_header(wsi, token, in, len);
		if (token) {
			OPENSSL_cleanse(token, strlen(token));
			free(token);
		}
		return rc;
	}
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		if (!c->closing)	/* not when the client left first */
			upgrade_refused(c, wsi, in ? (const char *)in : "connection failed");
		ws_gone(c, wsi);
		break;
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		c->established = true;
		if (c->closing)
			lws_callback_on_writable(wsi);
		else if (c->cw)
			lws_rx_flow_control(c->cw, 1);
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		ws_rx(c, wsi, in, len);
		break;
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		c->peer_closed = true;
		break;
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		return ws_tx(c, wsi);
	case LWS_CALLBACK_CLIENT_CLOSED:
		ws_gone(c, wsi);
		break;
	default:
		break;
	}
	return 0;
}

static int on_event(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		    size_t len)
{
	struct pstate *st = lws_context_user(lws_get_context(wsi));
	struct pconn *c = lws_get_opaque_user_data(wsi);
	int rc = 0;

	(void)user;
	if (st == NULL || st->destroying)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (wsi == st->cancel_wsi)
			stop_all(st, PORTFWD_CANCELED);
		else if (wsi == st->lwsi)
			accept_all(st);
		else if (c)
			client_rx(c);
		break;
	case LWS_CALLBACK_RAW_WRITEABLE_FILE:
		if (c)
			client_tx(c);
		break;
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		if (wsi == st->cancel_wsi || wsi == st->lwsi) {
			stop_all(st, PORTFWD_CANCELED);
		} else if (c) {
			/* a hang-up or an error on the client's socket; lws may still call about
			 * it (WSI_DESTROY), after c is freed */
			lws_set_opaque_user_data(wsi, NULL);
			c->cw = NULL;
			ws_close(c);
		}
		break;
	default:
		if (c)
			rc = on_ws(c, wsi, reason, in, len);
		break;
	}
	if (c && c->cw == NULL && c->ws == NULL)
		conn_free(c);
	return rc;
}

static const struct lws_protocols protocols[] = {
	{"sbx-port", on_event, 0, PF_RX, 0, NULL, 0},
	{NULL, NULL, 0, 0, 0, NULL, 0}
};

/* Every ALIVE_CHECK_MS: is the Sandbox still there? */
static void on_check(lws_sorted_usec_list_t *sul)
{
	struct pstate *st = lws_container_of(sul, struct pstate, sul);
	struct sbx_info info;
	struct sbx_err e;

	if (st->b->ops->get(st->b, st->pf->name, &info, &e) < 0 && e.code == SBX_ENOTFOUND)
		stop_all(st, PORTFWD_GONE);
	else
		lws_sul_schedule(st->ctx, 0, &st->sul, on_check, ALIVE_CHECK_MS * LWS_US_PER_MS);
}

/* Adopts a dup of fd as a raw descriptor lws polls for us. */
static struct lws *adopt(struct pstate *st, int fd)
{
	lws_sock_file_fd_type u;
	struct lws *w;
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (d < 0)
		return NULL;
	u.filefd = (lws_filefd_type)(intptr_t)d;
	w = lws_adopt_descriptor_vhost(lws_get_vhost_by_name(st->ctx, "default"),
				       LWS_ADOPT_RAW_FILE_DESC, u, "sbx-port", NULL);
	if (w == NULL)
		close(d);
	return w;
}

int kb_port(struct sbx_backend *b, struct portfwd *pf, int lfd, int cancel_fd,
	    portfwd_note_fn fn, void *arg, struct sbx_err *e)
{
	struct pstate st = {.b = b, .pf = pf, .note = fn, .arg = arg, .e = e};
	struct kubeapi *api = kb_api(b, e);
	struct sbx_info info;
	char *path;
	int rc = -1;

	if (api == NULL || b->ops->get(b, pf->name, &info, e) < 0)
		return -1;
	st.kc = kubeapi_config(api);
	/* a claimed sandbox's pod is its bound Sandbox's */
	path = xasprintf("/api/v1/namespaces/%s/pods/%s/portforward?ports=%d", b->namespace,
			 info.claimed_sandbox[0] ? info.claimed_sandbox : pf->name, pf->port);
	if (kubews_target(st.kc, path, &st.t, e) < 0 ||
	    (st.ctx = kubews_context(st.kc, protocols, &st, PF_SERV_BUF, e)) == NULL)
		goto out;
	if ((st.lwsi = adopt(&st, lfd)) == NULL || (st.cancel_wsi = adopt(&st, cancel_fd)) == NULL) {
		err_sys(e, errno ? errno : EMFILE, "cannot watch the listener");
		goto out;
	}
	lws_sul_schedule(st.ctx, 0, &st.sul, on_check, ALIVE_CHECK_MS * LWS_US_PER_MS);
	while (st.rc == 0)
		if (lws_service(st.ctx, 0) < 0) {
			err_set(e, SBX_EIO, "the forward's event loop failed");
			st.rc = -1;
		}
	rc = st.rc;
out:
	if (st.ctx) {
		st.destroying = true;
		lws_sul_schedule(st.ctx, 0, &st.sul, NULL, LWS_SET_TIMER_USEC_CANCEL);
		lws_context_destroy(st.ctx);
	}
	while (st.conns)
		conn_free(st.conns);
	kubews_target_free(&st.t);
	free(path);
	return rc;
}
