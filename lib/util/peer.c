/* peer.c — the per-connection I/O loop: poll on the stream and a wake-up eventfd, non-blocking
 * reads into the NDJSON reader, a bounded queue of outgoing lines. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>

#include "child.h"
#include "net.h"
#include "peer.h"

/* One read's worth; lines longer than this are assembled by the reader. */
#define PEER_READ_CHUNK 65536
/* How long a closing peer keeps writing what is queued (the last answers of a shutdown) to a
 * client that reads slowly; one that does not read at all is dropped after it. */
#define PEER_CLOSE_FLUSH_MS 2000

struct outline {
	struct outline *next;
	char *data;
	size_t len, off;
};

struct peer {
	int rfd, wfd, wakefd;
	SSL *ssl;
	pthread_mutex_t mu;		/* guards the queue and closing */
	pthread_cond_t drained;		/* signalled as queued lines go out */
	struct outline *head, *tail;
	size_t queued;
	bool closing, gone, eof;
	int holds;			/* answers still to come after end of input */
	struct jsonrpc_pending pending;
	struct jsonrpc_reader reader;
	peer_handler fn;
	void *arg;
	void (*trace)(void *arg, const char *dir, const char *line);
	void *trace_arg;
};

void peer_set_trace(struct peer *p, void (*fn)(void *arg, const char *dir, const char *line),
		    void *arg)
{
	p->trace = fn;
	p->trace_arg = arg;
}

struct peer *peer_new(int rfd, int wfd, SSL *ssl)
{
	struct peer *p = xcalloc(1, sizeof *p);

	p->rfd = rfd;
	p->wfd = wfd;
	p->ssl = ssl;
	p->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->drained, NULL);
	jsonrpc_pending_init(&p->pending, PEER_PENDING_MAX);
	return p;
}

static void free_queue(struct peer *p)
{
	struct outline *o, *next;

	for (o = p->head; o; o = next) {
		next = o->next;
		free(o->data);
		free(o);
	}
	p->head = p->tail = NULL;
	p->queued = 0;
}

void peer_free(struct peer *p)
{
	if (p == NULL)
		return;
	if (p->ssl)
		SSL_free(p->ssl);
	if (p->rfd >= 0)
		close(p->rfd);
	if (p->wfd >= 0 && p->wfd != p->rfd)
		close(p->wfd);
	if (p->wakefd >= 0)
		close(p->wakefd);
	free_queue(p);
	jsonrpc_reader_free(&p->reader);
	jsonrpc_pending_destroy(&p->pending);
	pthread_cond_destroy(&p->drained);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

static void wake(struct peer *p)
{
	uint64_t one = 1;

	if (write(p->wakefd, &one, sizeof one) < 0) {
		/* the counter is already non-zero: the loop will wake anyway */
	}
}

bool peer_send(struct peer *p, char *line)
{
	struct outline *o;
	bool ok = false;

	if (p->trace)
		p->trace(p->trace_arg, ">", line);
	pthread_mutex_lock(&p->mu);
	if (p->gone || p->closing)
		goto out;
	if (p->queued + strlen(line) > PEER_OUTQ_MAX) {
		/* The client stopped reading: drop it rather than buffer without end. */
		p->closing = true;
		wake(p);
		goto out;
	}
	o = xcalloc(1, sizeof *o);
	o->data = line;
	o->len = strlen(line);
	line = NULL;
	if (p->tail)
		p->tail->next = o;
	else
		p->head = o;
	p->tail = o;
	p->queued += o->len;
	ok = true;
	wake(p);
out:
	pthread_mutex_unlock(&p->mu);
	free(line);
	return ok;
}

void peer_hold(struct peer *p, int delta)
{
	pthread_mutex_lock(&p->mu);
	p->holds += delta;
	wake(p);
	pthread_mutex_unlock(&p->mu);
}

void peer_close(struct peer *p)
{
	pthread_mutex_lock(&p->mu);
	p->closing = true;
	wake(p);
	pthread_cond_broadcast(&p->drained);
	pthread_mutex_unlock(&p->mu);
}

bool peer_wait_room(struct peer *p, size_t below)
{
	bool ok;

	pthread_mutex_lock(&p->mu);
	while (!p->gone && !p->closing && p->queued > below)
		pthread_cond_wait(&p->drained, &p->mu);
	ok = !p->gone && !p->closing;
	pthread_mutex_unlock(&p->mu);
	return ok;
}

bool peer_closed(struct peer *p)
{
	bool r;

	pthread_mutex_lock(&p->mu);
	r = p->gone || p->closing;
	pthread_mutex_unlock(&p->mu);
	return r;
}

int peer_call(struct peer *p, const char *method, struct json_object *params,
	      const volatile int *stop, struct json_object **result, struct json_object **error,
	      struct sbx_err *e)
{
	return peer_call_until(p, method, params, stop, 0, result, error, e);
}

int peer_call_id(struct peer *p, const char *method, struct json_object *params,
		 const volatile int *stop, int64_t deadline, int64_t *idp,
		 struct json_object **result, struct json_object **error, struct sbx_err *e)
{
	int64_t id;

	*result = *error = NULL;
	*idp = -1;
	if (jsonrpc_pending_add(&p->pending, &id, e) < 0)
		return -1;
	if (!peer_send(p, jsonrpc_request_line(id, method, params))) {
		jsonrpc_pending_drop(&p->pending, id);
		return err_set(e, SBX_EIO, "connection closed");
	}
	*idp = id;
	return jsonrpc_pending_wait_until(&p->pending, id, stop, deadline, result, error, e);
}

int peer_call_until(struct peer *p, const char *method, struct json_object *params,
		    const volatile int *stop, int64_t deadline, struct json_object **result,
		    struct json_object **error, struct sbx_err *e)
{
	int64_t id;

	return peer_call_id(p, method, params, stop, deadline, &id, result, error, e);
}

void peer_wake_calls(struct peer *p)
{
	jsonrpc_pending_wake(&p->pending);
}

/* Handles one line from the reader. */
static int on_line(enum jsonrpc_event ev, const char *line, size_t len, void *arg)
{
	struct peer *p = arg;
	struct jsonrpc_msg m;
	struct json_object *bad_id = NULL;
	struct sbx_err e;
	int code;

	if (ev == JSONRPC_TOO_LONG) {
		char why[128];
		snprintf(why, sizeof why, "invalid request: message longer than %zu bytes",
			 (size_t)JSONRPC_LINE_MAX);
		peer_send(p, jsonrpc_error_line(NULL, JSONRPC_INVALID_REQUEST, why, NULL));
		return 0;
	}
	if (p->trace) {
		char *copy = xstrndup(line, len);
		p->trace(p->trace_arg, "<", copy);
		free(copy);
	}
	if (jsonrpc_parse(line, len, &m, &code, &bad_id, &e) < 0) {
		peer_send(p, jsonrpc_error_line(bad_id, code, e.msg, NULL));
		json_object_put(bad_id);
		return 0;
	}
	json_object_put(bad_id);
	if (m.kind == JSONRPC_RESPONSE) {
		/* An answer to nothing we asked (or asked and gave up on) is dropped. */
		jsonrpc_pending_resolve(&p->pending, &m);
		jsonrpc_msg_free(&m);
		return 0;
	}
	p->fn(p, &m, p->arg);
	return 0;
}

/* Reads what is available. Returns 1 at end of input, 0 to go on, -1 on error. */
static int do_read(struct peer *p, struct sbx_err *e)
{
	char chunk[PEER_READ_CHUNK];

	for (;;) {
		ssize_t n;

		if (p->ssl) {
			int r = SSL_read(p->ssl, chunk, sizeof chunk);
			if (r <= 0) {
				int se = SSL_get_error(p->ssl, r);
				if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE)
					return 0;
				if (se == SSL_ERROR_ZERO_RETURN)
					return 1;
				if (se == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
					return 1;	/* closed without close_notify */
				err_set(e, SBX_EIO, "TLS: %s",
					ERR_reason_error_string(ERR_get_error()) ?: "read failed");
				ERR_clear_error();
				return -1;
			}
			n = r;
		} else {
			n = read(p->rfd, chunk, sizeof chunk);
			if (n == 0)
				return 1;
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					return 0;
				if (errno == ECONNRESET)
					return 1;
				return err_sys(e, errno, "read");
			}
		}
		jsonrpc_reader_feed(&p->reader, chunk, (size_t)n, on_line, p);
		if (peer_closed(p))
			return 0;
	}
}

/* Writes queued lines. Returns 1 when data remains (wait for POLLOUT), 0 when all sent,
 * -1 on error. */
static int do_write(struct peer *p, struct sbx_err *e)
{
	for (;;) {
		struct outline *o;
		ssize_t n;

		pthread_mutex_lock(&p->mu);
		o = p->head;
		pthread_mutex_unlock(&p->mu);
		if (o == NULL)
			return 0;
		if (p->ssl) {
			int r = SSL_write(p->ssl, o->data + o->off, (int)(o->len - o->off));
			if (r <= 0) {
				int se = SSL_get_error(p->ssl, r);
				if (se == SSL_ERROR_WANT_WRITE || se == SSL_ERROR_WANT_READ)
					return 1;
				ERR_clear_error();
				return err_set(e, SBX_EIO, "TLS write failed");
			}
			n = r;
		} else {
			n = write(p->wfd, o->data + o->off, o->len - o->off);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					return 1;
				return err_sys(e, errno, "write");
			}
		}
		o->off += (size_t)n;
		if (o->off == o->len) {
			pthread_mutex_lock(&p->mu);
			p->head = o->next;
			if (p->head == NULL)
				p->tail = NULL;
			p->queued -= o->len;
			pthread_cond_broadcast(&p->drained);
			pthread_mutex_unlock(&p->mu);
			free(o->data);
			free(o);
		}
	}
}

int peer_run(struct peer *p, peer_handler fn, void *arg, struct sbx_err *e)
{
	int rc = 0, w = 0, flush_ms = PEER_CLOSE_FLUSH_MS;
	bool closing = false;
	int holds = 0;

	p->fn = fn;
	p->arg = arg;
	fcntl(p->rfd, F_SETFL, fcntl(p->rfd, F_GETFL) | O_NONBLOCK);
	if (p->wfd != p->rfd)
		fcntl(p->wfd, F_SETFL, fcntl(p->wfd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		struct pollfd fds[3];
		nfds_t nf = 0;
		int r;

		pthread_mutex_lock(&p->mu);
		closing = p->closing;
		holds = p->holds;
		pthread_mutex_unlock(&p->mu);
		if ((w = do_write(p, e)) < 0) {
			rc = -1;
			break;
		}
		if ((closing && w == 0) || (p->eof && w == 0 && holds <= 0))
			break;
		if (closing) {
			/* Closing with lines still queued: only write, for a bounded time. */
			struct pollfd o = {.fd = p->wfd, .events = POLLOUT};
			if (flush_ms <= 0 || (poll(&o, 1, 100) < 0 && errno != EINTR))
				break;
			flush_ms -= 100;
			continue;
		}
		fds[nf++] = (struct pollfd){.fd = p->wakefd, .events = POLLIN};
		if (p->rfd == p->wfd) {
			fds[nf++] = (struct pollfd){.fd = p->rfd,
				.events = (short)((p->eof ? 0 : POLLIN) | (w ? POLLOUT : 0))};
		} else {
			if (!p->eof)
				fds[nf++] = (struct pollfd){.fd = p->rfd, .events = POLLIN};
			if (w)
				fds[nf++] = (struct pollfd){.fd = p->wfd, .events = POLLOUT};
		}
		/* Buffered TLS records are readable without the socket saying so. */
		r = (p->ssl && SSL_pending(p->ssl) > 0) ? 1 : poll(fds, nf, -1);
		if (r < 0 && errno != EINTR) {
			rc = err_sys(e, errno, "poll");
			break;
		}
		if (fds[0].revents & POLLIN) {
			uint64_t v;
			if (read(p->wakefd, &v, sizeof v) < 0) {
				/* spurious: nothing to clear */
			}
		}
		if (!p->eof) {
			int rr = do_read(p, e);
			if (rr < 0) {
				rc = -1;
				break;
			}
			if (rr == 1) {
				jsonrpc_reader_finish(&p->reader, on_line, p);
				p->eof = true;
				/* The peer is gone: nothing more can be asked of it. A half-closed
				 * socket can still take our pending answers, which the loop flushes. */
				jsonrpc_pending_close(&p->pending);
			}
		}
	}
	pthread_mutex_lock(&p->mu);
	p->gone = true;
	pthread_cond_broadcast(&p->drained);
	pthread_mutex_unlock(&p->mu);
	jsonrpc_pending_close(&p->pending);
	if (p->ssl && rc == 0)
		SSL_shutdown(p->ssl);
	return rc;
}

struct peer *peer_dial(const char *addr, int timeout_ms, bool tls, const char *ca,
		       bool insecure, struct sbx_err *e)
{
	char host[NET_ADDR_MAX];
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	int fd;

	if ((fd = net_dial(addr, timeout_ms, e)) < 0)
		return NULL;
	if (tls) {
		if (net_split_host(addr, host, sizeof host, e) < 0 ||
		    (ctx = net_tls_client(ca, insecure, e)) == NULL ||
		    (ssl = net_tls_connect(ctx, fd, host[0] ? host : "localhost", insecure, e)) == NULL) {
			if (ctx)
				SSL_CTX_free(ctx);
			close(fd);
			return NULL;
		}
		SSL_CTX_free(ctx);	/* the connection keeps its own reference */
	}
	return peer_new(fd, fd, ssl);
}

struct peer *peer_spawn(char *const argv[], const char *cwd, int err_fd, pid_t *pid,
			int *errnum, struct sbx_err *e)
{
	/* Its own process group (child_start): a terminal's Ctrl-C is for us, not the agent. */
	struct child_req r = {.path = argv[0], .argv = argv, .cwd = cwd};
	int in[2] = {-1, -1}, out[2] = {-1, -1};

	*errnum = 0;
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		*errnum = errno;
		err_sys(e, errno, "pipe");
		goto bad;
	}
	if ((*errnum = child_start(&r, in[0], out[1], err_fd, pid, e)) != 0) {
		err_sys(e, *errnum, "cannot start agent %s", argv[0]);
		goto bad;
	}
	close(in[0]);
	close(out[1]);
	return peer_new(out[0], in[1], NULL);
bad:
	if (in[0] >= 0) {
		close(in[0]);
		close(in[1]);
	}
	if (out[0] >= 0) {
		close(out[0]);
		close(out[1]);
	}
	return NULL;
}

void peer_reap(pid_t pid, int wait_ms)
{
	int i, st;

	for (i = 0; i < wait_ms / 50; i++) {
		if (waitpid(pid, &st, WNOHANG) != 0)
			return;
		usleep(50000);
	}
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
}
