/* kubeexec.c — the Kubernetes WebSocket exec client. One lws context per exec. stdout and
 * stderr are written straight to their fds from the receive callback. stdin is read by a
 * helper thread into a small ring of message buffers (flow control: it blocks when the ring
 * is full) and handed to lws from the writeable callback; lws_cancel_service wakes the loop.
 * (lws's raw-file adoption is not used for stdin: it closes a pipe on POLLHUP and would lose
 * the bytes still buffered in it.) cancel_fd is adopted as a raw fd; any event on it cancels. */
#include "kubeexec.h"

#include <errno.h>
#include <json-c/json.h>
#include <libwebsockets.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kubeapi.h"
#include "kubews.h"
#include "timeutil.h"
#include "xalloc.h"

/* stdin messages in flight between the reader thread and lws: enough to keep the socket
 * busy while the next chunk is read. */
#define KUBEEXEC_RING 4

/* lws's per-thread service buffer: the handshake is built in it and TLS records are read
 * into it, so it also sets how much output one receive callback can carry. */
#define KUBEEXEC_SERV_BUF (256 * 1024)

struct xstate {
	lws_sorted_usec_list_t sul;	/* deadline timer */
	const struct kubeexec_req *req;
	struct kubeexec_result *res;
	struct sbx_err *e;
	struct lws_context *ctx;
	struct lws *ws, *cancel_wsi;
	char *token;
	int cancel_dup;
	bool v5;
	bool done, established, closing;
	bool in_eof, in_close_sent;
	int cur_channel;		/* channel of the message being received */
	/* stdin ring, filled by the reader thread: slot i holds LWS_PRE + 1 + CHUNK bytes */
	pthread_t reader;
	bool reader_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned char *slot[KUBEEXEC_RING];
	size_t slot_len[KUBEEXEC_RING];
	int head, count;		/* guarded by mu, as are in_eof and reader_stop */
	bool reader_stop;
	size_t prefix_sent;		/* bytes of req->in_prefix handed to lws */
	int wake[2];			/* tells the reader thread to stop polling stdin */
	unsigned char *scratch;		/* LWS_PRE + 1 + CHUNK, for the prefix */
	struct buf status;
	int http_status;		/* upgrade refused with this status */
	char conn_err[256];
	int write_errno;
};

size_t kubeexec_frame_encode(int channel, const void *payload, size_t len, unsigned char *out)
{
	out[0] = (unsigned char)channel;
	if (len)
		memcpy(out + 1, payload, len);
	return len + 1;
}

int kubeexec_frame_channel(const unsigned char *msg, size_t len, const unsigned char **payload,
			   size_t *payload_len)
{
	if (len == 0)
		return -1;
	*payload = msg + 1;
	*payload_len = len - 1;
	return msg[0];
}

char *kubeexec_path(const char *ns, const char *pod, const char *container, char *const *argv,
		    bool in)
{
	struct buf b = {0};
	size_t i;

	buf_printf(&b, "/api/v1/namespaces/%s/pods/%s/exec?container=%s&stdin=%s&stdout=true&stderr=true",
		   ns, pod, container, in ? "true" : "false");
	for (i = 0; argv[i]; i++) {
		char *v = kubeapi_escape(argv[i]);
		buf_printf(&b, "&command=%s", v);
		free(v);
		if (b.len > KUBEEXEC_QUERY_MAX) {
			buf_free(&b);
			return NULL;
		}
	}
	return buf_steal(&b);
}

int kubeexec_decode_status(const char *json, size_t len, int *exit_code, char *msg, size_t msg_len)
{
	struct json_object *o = NULL, *v, *causes;
	const char *status, *reason;
	char *t = xstrndup(json, len);
	int rc = -1;
	size_t i;

	o = json_tokener_parse(t);
	free(t);
	*exit_code = 0;
	if (msg_len)
		msg[0] = '\0';
	if (o == NULL || !json_object_object_get_ex(o, "status", &v))
		goto out;
	status = json_object_get_string(v);
	if (strcmp(status, "Success") == 0) {
		rc = 0;
		goto out;
	}
	if (json_object_object_get_ex(o, "message", &v))
		snprintf(msg, msg_len, "%s", json_object_get_string(v));
	reason = json_object_object_get_ex(o, "reason", &v) ? json_object_get_string(v) : "";
	if (strcmp(reason, "NonZeroExitCode") == 0 && json_object_object_get_ex(o, "details", &v) &&
	    json_object_object_get_ex(v, "causes", &causes) &&
	    json_object_is_type(causes, json_type_array)) {
		for (i = 0; i < json_object_array_length(causes); i++) {
			struct json_object *c = json_object_array_get_idx(causes, i), *r, *m;
			char *end;
			long n;
			if (!json_object_object_get_ex(c, "reason", &r) ||
			    strcmp(json_object_get_string(r), "ExitCode") != 0 ||
			    !json_object_object_get_ex(c, "message", &m))
				continue;
			errno = 0;
			n = strtol(json_object_get_string(m), &end, 10);
			if (*end == '\0' && errno == 0 && n >= 0 && n <= 255) {
				*exit_code = (int)n;
				rc = 0;
				goto out;
			}
		}
	}
	rc = 1;
out:
	json_object_put(o);
	return rc;
}

/* Writes all of p to fd, waiting out a non-blocking destination. */
static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pf = {fd, POLLOUT, 0};
				poll(&pf, 1, -1);
				continue;
			}
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static void stop(struct xstate *st)
{
	st->closing = true;
	if (st->ws && !st->established)
		lws_set_timeout(st->ws, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
	else if (st->ws)
		lws_callback_on_writable(st->ws);
	else
		st->done = true;
}

static void on_deadline(lws_sorted_usec_list_t *sul)
{
	struct xstate *st = lws_container_of(sul, struct xstate, sul);

	st->res->timed_out = true;
	stop(st);
}

static void on_payload(struct xstate *st, const unsigned char *p, size_t n)
{
	int fd = -1;

	switch (st->cur_channel) {
	case KUBEEXEC_CH_STDOUT:
		fd = st->req->out_fd;
		break;
	case KUBEEXEC_CH_STDERR:
		fd = st->req->err_fd;
		break;
	case KUBEEXEC_CH_STATUS:
		if (st->status.len + n <= KUBEEXEC_STATUS_MAX)
			buf_append(&st->status, p, n);
		return;
	default:
		return;	/* other channels (resize, close) carry nothing for us */
	}
	if (fd >= 0 && n > 0 && st->write_errno == 0 && write_all(fd, p, n) < 0) {
		/* The reader went away: stop the command rather than buffer its output. */
		st->write_errno = errno;
		stop(st);
	}
}

/* Adopts a dup of fd into the loop so its readability arrives as RAW_RX_FILE. */
static struct lws *adopt(struct xstate *st, int fd, int *dupfd)
{
	lws_sock_file_fd_type u;
	struct lws *w;

	*dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (*dupfd < 0)
		return NULL;
	u.filefd = (lws_filefd_type)(intptr_t)*dupfd;
	w = lws_adopt_descriptor_vhost(lws_get_vhost(st->ws), LWS_ADOPT_RAW_FILE_DESC, u,
				       "sbx-exec", NULL);
	if (w == NULL) {
		close(*dupfd);
		*dupfd = -1;
	}
	return w;
}

/* The stdin reader thread: fills free ring slots, blocks while the ring is full. */
static void *reader_main(void *arg)
{
	struct xstate *st = arg;
	int fd = st->req->in_fd;

	for (;;) {
		struct pollfd pf[2] = {{fd, POLLIN, 0}, {st->wake[0], POLLIN, 0}};
		unsigned char *b;
		ssize_t n;
		bool quit;
		int i;

		pthread_mutex_lock(&st->mu);
		while (st->count == KUBEEXEC_RING && !st->reader_stop)
			pthread_cond_wait(&st->cv, &st->mu);
		i = (st->head + st->count) % KUBEEXEC_RING;
		quit = st->reader_stop;
		pthread_mutex_unlock(&st->mu);
		if (quit)
			break;
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			pf[0].revents = POLLERR;	/* read() below reports the problem */
		}
		if (pf[1].revents)
			break;
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
			continue;
		b = st->slot[i];	/* free: only this thread fills, lws empties from head */
		n = read(fd, b + LWS_PRE + 1, KUBEEXEC_STDIN_CHUNK);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		pthread_mutex_lock(&st->mu);
		if (n <= 0)
			st->in_eof = true;	/* a read error ends the input like EOF */
		else
			st->slot_len[i] = (size_t)n, st->count++;
		pthread_mutex_unlock(&st->mu);
		lws_cancel_service(st->ctx);
		if (n <= 0)
			break;
	}
	return NULL;
}

/* Writeable: the next stdin chunk, or the v5 stdin close once the input has ended. */
static int send_stdin(struct xstate *st, struct lws *wsi)
{
	unsigned char *b = NULL;
	size_t n = 0;
	bool eof, more;

	if (st->prefix_sent < st->req->in_prefix_len) {
		/* The prefix goes first, a chunk at a time through slot 0's twin (scratch). */
		n = st->req->in_prefix_len - st->prefix_sent;
		if (n > KUBEEXEC_STDIN_CHUNK)
			n = KUBEEXEC_STDIN_CHUNK;
		st->scratch[LWS_PRE] = KUBEEXEC_CH_STDIN;
		memcpy(st->scratch + LWS_PRE + 1, st->req->in_prefix + st->prefix_sent, n);
		if (lws_write(wsi, st->scratch + LWS_PRE, n + 1, LWS_WRITE_BINARY) < (int)(n + 1))
			return -1;
		st->prefix_sent += n;
		lws_callback_on_writable(wsi);
		return 0;
	}
	pthread_mutex_lock(&st->mu);
	if (st->count > 0) {
		b = st->slot[st->head];
		n = st->slot_len[st->head];
	}
	eof = st->in_eof;
	pthread_mutex_unlock(&st->mu);
	if (b != NULL) {
		b[LWS_PRE] = KUBEEXEC_CH_STDIN;
		/* lws keeps whatever the socket did not take, so the slot is free afterwards. */
		if (lws_write(wsi, b + LWS_PRE, n + 1, LWS_WRITE_BINARY) < (int)(n + 1))
			return -1;
		st->res->stdin_sent += n;
		pthread_mutex_lock(&st->mu);
		st->head = (st->head + 1) % KUBEEXEC_RING;
		st->count--;
		more = st->count > 0 || st->in_eof;
		pthread_cond_signal(&st->cv);
		pthread_mutex_unlock(&st->mu);
		if (more)
			lws_callback_on_writable(wsi);
	} else if (eof && !st->in_close_sent && st->v5) {
		unsigned char m[LWS_PRE + 2];
		m[LWS_PRE] = KUBEEXEC_CH_CLOSE;
		m[LWS_PRE + 1] = KUBEEXEC_CH_STDIN;
		if (lws_write(wsi, m + LWS_PRE, 2, LWS_WRITE_BINARY) < 2)
			return -1;
		st->in_close_sent = true;
	}
	return 0;
}

/* The stream is up: its subprotocol checked, stdin's reader and the cancel fd started. */
static void on_established(struct xstate *st, struct lws *wsi)
{
	st->established = true;
	st->res->established = true;
	if (st->res->protocol[0] == '\0')
		lws_hdr_copy(wsi, st->res->protocol, sizeof st->res->protocol, WSI_TOKEN_PROTOCOL);
	st->v5 = strcmp(st->res->protocol, KUBEEXEC_V5) == 0;
	if (st->req->require_v5 && !st->v5) {
		/* Close before the first stdin byte: a wrapped command has not begun. */
		st->res->wrong_protocol = true;
		stop(st);
		return;
	}
	if (st->req->in_prefix_len > 0)
		lws_callback_on_writable(wsi);
	if (st->req->in_fd >= 0) {
		if (pthread_create(&st->reader, NULL, reader_main, st) != 0) {
			snprintf(st->conn_err, sizeof st->conn_err, "cannot start the stdin reader");
			stop(st);
		} else {
			st->reader_started = true;
		}
	}
	if (st->req->cancel_fd >= 0)
		st->cancel_wsi = adopt(st, st->req->cancel_fd, &st->cancel_dup);
}

/* A frame (or fragment) from the server: its channel's bytes, the status at its end. */
static void on_receive(struct xstate *st, struct lws *wsi, void *in, size_t len)
{
	const unsigned char *pl;
	size_t pn;

	if (lws_is_first_fragment(wsi)) {
		st->cur_channel = kubeexec_frame_channel(in, len, &pl, &pn);
		if (st->cur_channel < 0)
			return;
	} else {
		pl = in, pn = len;
	}
	on_payload(st, pl, pn);
	if (lws_is_final_fragment(wsi) && st->cur_channel == KUBEEXEC_CH_STATUS) {
		int code = 0, r = kubeexec_decode_status(st->status.data ? st->status.data : "",
							 st->status.len, &code, st->res->msg,
							 sizeof st->res->msg);
		if (r >= 0) {
			st->res->got_status = true;
			st->res->exit_code = code;
			st->res->failure = r == 1;
		}
	}
}

static int on_event(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		    size_t len)
{
	struct xstate *st = lws_context_user(lws_get_context(wsi));

	(void)user;
	if (st == NULL)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
		return kubews_auth_header(wsi, st->token, in, len);
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		snprintf(st->conn_err, sizeof st->conn_err, "%s",
			 in ? (const char *)in : "connection failed");
		st->http_status = (int)lws_http_client_http_response(wsi);
		st->ws = NULL;
		st->done = true;
		break;
	case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
		/* The handshake headers are gone once established: note the chosen subprotocol. */
		if (lws_hdr_copy(wsi, st->res->protocol, sizeof st->res->protocol, WSI_TOKEN_PROTOCOL) < 0)
			st->res->protocol[0] = '\0';
		break;
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		on_established(st, wsi);
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		on_receive(st, wsi, in, len);
		break;
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		if (st->closing) {
			lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
			return -1;
		}
		return send_stdin(st, wsi);
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		/* The reader thread has a chunk or reached EOF. */
		if (st->ws && st->established && !st->closing)
			lws_callback_on_writable(st->ws);
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		st->ws = NULL;
		st->done = true;
		break;
	case LWS_CALLBACK_RAW_RX_FILE:
		if (wsi == st->cancel_wsi) {
			st->res->canceled = true;
			stop(st);
			st->cancel_wsi = NULL;
			return -1;
		}
		break;
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		if (wsi == st->cancel_wsi)
			st->cancel_wsi = NULL;
		break;
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols protocols[] = {
	{"sbx-exec", on_event, 0, KUBEEXEC_STDIN_CHUNK + 1, 0, NULL, 0},
	{NULL, NULL, 0, 0, 0, NULL, 0}
};

/* Explains a refused upgrade in the same words as a refused REST request. */
static int upgrade_error(struct xstate *st, const char *path, struct sbx_err *e)
{
	const struct kubeexec_req *r = st->req;

	if (st->http_status == 404)
		return err_set(e, SBX_ENOTFOUND, "pod \"%s\" not found in namespace %s", r->pod, r->namespace);
	if (st->http_status == 400)
		return err_set(e, SBX_EIO,
			       "the API server refused the exec into %s (400 Bad Request): is its pod running?",
			       r->pod);
	if (st->http_status >= 400) {
		/* lws keeps no body of a refused upgrade: say that much instead of a Status message. */
		static const char why[] = "WebSocket upgrade refused";
		return kubeapi_status_error(st->http_status, why, sizeof why - 1, "POST", path, e);
	}
	if (kubews_tls_error(st->conn_err))
		return err_set(e, SBX_EUNAVAIL, "TLS failure talking to the Kubernetes API server at %s: %s",
			       r->kc->server, st->conn_err);
	if (!st->established)
		return err_set(e, SBX_EUNAVAIL, "cannot reach the Kubernetes API server at %s: %s",
			       r->kc->server, st->conn_err);
	return err_set(e, SBX_EIO, "exec stream to %s failed: %s", r->pod, st->conn_err);
}

/* Buffers for stdin: the prefix's frame, the reader's ring and its wake-up pipe. */
static int setup_stdin(struct xstate *st, struct sbx_err *e)
{
	const struct kubeexec_req *req = st->req;

	if (req->in_prefix_len > 0) {
		st->scratch = xmalloc(LWS_PRE + 1 + KUBEEXEC_STDIN_CHUNK);
		if (req->in_fd < 0)
			st->in_eof = true;	/* the prefix is all the input there is */
	}
	if (req->in_fd >= 0) {
		if (pipe2(st->wake, O_CLOEXEC) < 0)
			return err_sys(e, errno, "pipe");
		for (int i = 0; i < KUBEEXEC_RING; i++)
			st->slot[i] = xmalloc(LWS_PRE + 1 + KUBEEXEC_STDIN_CHUNK);
	}
	return 0;
}

/* What a finished service loop means: 0 for a command that ran (or was stopped), else why. */
static int outcome(struct xstate *st, const char *path, struct sbx_err *e)
{
	struct kubeexec_result *res = st->res;

	if (res->timed_out || res->canceled || res->wrong_protocol)
		return 0;
	if (st->write_errno)
		return err_set(e, SBX_EIO, "cannot write the command's output: %s",
			       strerror(st->write_errno));
	if (!st->established)
		return upgrade_error(st, path, e);
	if (!res->got_status)
		return err_set(e, SBX_EIO, "the exec stream to %s ended before the command's exit "
			       "status arrived (connection lost)", st->req->pod);
	return 0;
}

/* Stops the reader, destroys the context, wipes the token, frees the buffers. */
static void xstate_free(struct xstate *st)
{
	if (st->reader_started) {
		char c = 1;
		pthread_mutex_lock(&st->mu);
		st->reader_stop = true;
		pthread_cond_signal(&st->cv);
		pthread_mutex_unlock(&st->mu);
		if (write(st->wake[1], &c, 1) < 0) {
			/* the reader also stops at the next chunk */
		}
		pthread_join(st->reader, NULL);
	}
	if (st->ctx) {
		lws_sul_schedule(st->ctx, 0, &st->sul, NULL, LWS_SET_TIMER_USEC_CANCEL);
		lws_context_destroy(st->ctx);
	}
	/* lws closed the adopted dups when their wsis closed; close any it did not own. */
	buf_free(&st->status);
	if (st->token) {
		OPENSSL_cleanse(st->token, strlen(st->token));
		free(st->token);
	}
	for (int i = 0; i < KUBEEXEC_RING; i++)
		free(st->slot[i]);
	free(st->scratch);
	for (int i = 0; i < 2; i++)
		if (st->wake[i] >= 0)
			close(st->wake[i]);
	pthread_mutex_destroy(&st->mu);
	pthread_cond_destroy(&st->cv);
}

int kubeexec_run(const struct kubeexec_req *req, struct kubeexec_result *res, struct sbx_err *e)
{
	struct xstate st;
	struct kubews_target t = {0};
	char *path = NULL;
	int rc = -1;

	memset(res, 0, sizeof *res);
	memset(&st, 0, sizeof st);
	st.req = req, st.res = res, st.e = e;
	st.cancel_dup = -1;
	st.wake[0] = st.wake[1] = -1;
	pthread_mutex_init(&st.mu, NULL);
	pthread_cond_init(&st.cv, NULL);
	st.cur_channel = -1;
	if ((path = kubeexec_path(req->namespace, req->pod, req->container, req->argv,
				  req->in_fd >= 0 || req->in_prefix_len > 0)) == NULL) {
		err_set(e, SBX_EINVAL, "the command line is longer than %d bytes", KUBEEXEC_QUERY_MAX);
		goto out;
	}
	if (kubeconfig_token(req->kc, &st.token, e) < 0 || kubews_target(req->kc, path, &t, e) < 0)
		goto out;
	if (setup_stdin(&st, e) < 0 ||
	    (st.ctx = kubews_context(req->kc, protocols, &st, KUBEEXEC_SERV_BUF, e)) == NULL)
		goto out;
	if (kubews_connect(st.ctx, req->kc, &t, req->protocols ? req->protocols
				: KUBEEXEC_V5 "," KUBEEXEC_V4, "sbx-exec", NULL, &st.ws) == NULL &&
	    !st.done) {
		err_set(e, SBX_EUNAVAIL, "cannot connect to the Kubernetes API server at %s",
			req->kc->server);
		goto out;
	}
	if (req->deadline_ns > 0) {
		int64_t left = req->deadline_ns - time_mono_ns();
		lws_sul_schedule(st.ctx, 0, &st.sul, on_deadline, left > 0 ? left / 1000 : 1);
	}
	while (!st.done) {
		if (lws_service(st.ctx, 0) < 0)
			break;
	}
	rc = outcome(&st, path, e);
out:
	xstate_free(&st);
	kubews_target_free(&t);
	free(path);
	return rc;
}
