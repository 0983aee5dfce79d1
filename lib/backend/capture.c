/* capture.c — collect a command's output in memory with per-stream caps. lib/backend/relay.c drains
 * both streams while the backend runs the command; bytes past the cap are read and dropped
 * so the command never blocks on a full pipe. When the command has ended, what is already
 * in the pipes is kept and reading stops, even if a background process it left behind still
 * holds the pipes open. */
#include "capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "relay.h"
#include "xalloc.h"

struct sink {
	struct buf *b;		/* everything kept, or the head when head is set */
	struct buf tail;	/* with head: what follows it */
	bool *truncated;
	size_t max, head;
	bool keep_tail;
	size_t total;		/* bytes read */
};

/* Keeps the last max bytes of b. */
static void cut_to_tail(struct buf *b, size_t max)
{
	if (b->len > max) {
		memmove(b->data, b->data + b->len - max, max);
		b->len = max;
		b->data[max] = '\0';
	}
}

static void take(struct sink *k, const char *p, size_t n)
{
	size_t room = k->b->len < k->max ? k->max - k->b->len : 0;

	k->total += n;
	if (k->head) {
		/* the first head bytes whole, then the last max bytes in tail */
		size_t h = k->b->len < k->head ? k->head - k->b->len : 0;
		if (h > n)
			h = n;
		if (h)
			buf_append(k->b, p, h);
		p += h;
		n -= h;
		if (n > k->max) {
			p += n - k->max;
			n = k->max;
		}
		if (n)
			buf_append(&k->tail, p, n);
		if (k->tail.len >= 2 * k->max)
			cut_to_tail(&k->tail, k->max);
		return;
	}
	if (k->keep_tail) {
		/* Appended whole, cut back to the last max bytes now and then (at twice the cap,
		 * so each byte moves at most once on average) and at the end. */
		if (n > room)
			*k->truncated = true;
		if (n > k->max) {
			p += n - k->max;
			n = k->max;
		}
		buf_append(k->b, p, n);
		if (k->b->len >= 2 * k->max)
			cut_to_tail(k->b, k->max);
		return;
	}
	if (n > room) {
		*k->truncated = true;
		n = room;
	}
	if (n)
		buf_append(k->b, p, n);
}

/* relay_take_fn: stream 1 or 2 into its sink. */
static void take_stream(void *arg, int stream, const char *p, size_t n)
{
	struct sink *s = arg;

	take(&s[stream == 2], p, n);
}

/* The request's stdin bytes in a memfd of ours (any size, no writer thread), or -1. */
static int stdin_memfd(const struct capture_req *req, struct sbx_err *e)
{
	const char *p = req->in;
	size_t left = req->in_len;
	int fd = memfd_create("sbx-stdin", MFD_CLOEXEC);

	if (fd < 0)
		return err_sys(e, errno, "memfd_create");
	while (left > 0) {
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return err_sys(e, errno, "cannot buffer stdin");
		}
		p += n;
		left -= (size_t)n;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

int capture_run(struct sbx_backend *b, const char *name, const struct capture_req *req,
		struct capture *out, struct sbx_err *e)
{
	struct buf ob = {0}, eb = {0};
	size_t max = req->max ? req->max : CAPTURE_DEFAULT_MAX;
	size_t head = req->keep_tail ? req->head : 0;
	struct sink sinks[2] = {
		{.b = &ob, .truncated = &out->out_truncated, .max = max, .head = head,
		 .keep_tail = req->keep_tail},
		{.b = &eb, .truncated = &out->err_truncated, .max = max, .head = head,
		 .keep_tail = req->keep_tail},
	};
	struct relay_opts ro = {.merge = req->merge, .take = take_stream, .arg = sinks};
	struct sbx_exec x;
	int in = -1, rc = -1;

	memset(out, 0, sizeof *out);
	if (req->in != NULL && req->in_fd < 0) {
		if ((in = stdin_memfd(req, e)) < 0)
			goto out;
		ro.in_own = true;
	}
	x = (struct sbx_exec){
		.argv = req->argv, .workdir = req->workdir, .env = req->env,
		.in_fd = in >= 0 ? in : req->in_fd, .out_fd = -1, .err_fd = -1,
		.timeout_ns = req->timeout_ns, .cancel_fd = req->cancel_fd,
	};
	rc = relay_exec(b, name, &x, &ro, &out->res, e);
out:
	if (in >= 0)
		close(in);
	for (int i = 0; i < 2; i++) {
		struct sink *k = &sinks[i];
		if (req->keep_tail) {
			cut_to_tail(k->head ? &k->tail : k->b, max);
			if (k->head)
				buf_append(k->b, k->tail.data ? k->tail.data : "", k->tail.len);
			buf_free(&k->tail);
		}
		*(i ? &out->err_dropped : &out->out_dropped) = k->total - k->b->len;
		if (k->total > k->b->len)
			*k->truncated = true;
	}
	out->out_len = ob.len;
	out->err_len = eb.len;
	out->out = buf_steal(&ob);
	out->err = buf_steal(&eb);
	if (rc < 0) {
		capture_free(out);
		memset(out, 0, sizeof *out);
	}
	return rc;
}

void capture_free(struct capture *c)
{
	free(c->out);
	free(c->err);
	c->out = c->err = NULL;
}
