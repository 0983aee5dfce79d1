/* capture.c — collect a command's output in memory with per-stream caps. A reader thread
 * drains both pipes while the backend runs the command; bytes past the cap are read and
 * dropped so the command never blocks on a full pipe. When the command has ended, what is
 * already in the pipes is drained and reading stops, even if a background process it left
 * behind still holds the pipes open. */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xalloc.h"

struct sink {
	int fd;
	struct buf *b;		/* everything kept, or the head when head is set */
	struct buf tail;	/* with head: what follows it */
	bool *truncated;
	size_t max, head;
	bool keep_tail;
	size_t total;		/* bytes read */
};

struct reader {
	struct sink s[2];
	int nsinks;
	int stop_fd;
	size_t *shared_len;	/* merge mode: one cap for both */
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

/* Reads what is available on one sink; returns 0 at EOF, 1 otherwise. */
static int drain(struct sink *k, int nonblock_until_empty)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = read(k->fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 1 : 0;
		if (n == 0)
			return 0;
		take(k, chunk, (size_t)n);
		if (!nonblock_until_empty)
			return 1;
	}
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	int open_[2] = {1, 1}, i;

	for (;;) {
		struct pollfd p[3];
		int np = 0, idx[2] = {-1, -1};

		for (i = 0; i < r->nsinks; i++) {
			if (open_[i]) {
				idx[i] = np;
				p[np++] = (struct pollfd){.fd = r->s[i].fd, .events = POLLIN};
			}
		}
		if (np == 0)
			break;
		p[np] = (struct pollfd){.fd = r->stop_fd, .events = POLLIN};
		if (poll(p, (nfds_t)np + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < r->nsinks; i++)
			if (idx[i] >= 0 && p[idx[i]].revents)
				open_[i] = drain(&r->s[i], 0);
		if (p[np].revents) {
			/* The command is over: take what is buffered, then stop. */
			for (i = 0; i < r->nsinks; i++)
				if (open_[i])
					drain(&r->s[i], 1);
			break;
		}
	}
	return NULL;
}

static int stdin_fd(const struct capture_req *req, struct sbx_err *e)
{
	const char *p = req->in;
	size_t left = req->in_len;
	int fd;

	if (req->in_fd >= 0)
		return dup(req->in_fd);
	if (req->in == NULL)
		return -1;
	/* A memfd holds any size of input without a writer thread. */
	fd = memfd_create("sbx-stdin", MFD_CLOEXEC);
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
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, in = -1, stop = -1, rc = -1, started = 0;
	struct reader rd;
	pthread_t th;
	struct sbx_exec x;
	size_t max = req->max ? req->max : CAPTURE_DEFAULT_MAX;

	memset(out, 0, sizeof *out);
	memset(&rd, 0, sizeof rd);
	if (req->in != NULL || req->in_fd >= 0) {
		if ((in = stdin_fd(req, e)) < 0)
			goto out;
	}
	if (pipe2(po, O_CLOEXEC) < 0 || (!req->merge && pipe2(pe, O_CLOEXEC) < 0) ||
	    (stop = eventfd(0, EFD_CLOEXEC)) < 0) {
		err_sys(e, errno, "cannot create pipes");
		goto out;
	}
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	if (pe[0] >= 0)
		fcntl(pe[0], F_SETFL, O_NONBLOCK);
	rd.s[0] = (struct sink){.fd = po[0], .b = &ob, .truncated = &out->out_truncated, .max = max,
				.head = req->keep_tail ? req->head : 0, .keep_tail = req->keep_tail};
	rd.s[1] = (struct sink){.fd = pe[0], .b = &eb, .truncated = &out->err_truncated, .max = max,
				.head = req->keep_tail ? req->head : 0, .keep_tail = req->keep_tail};
	rd.nsinks = req->merge ? 1 : 2;
	rd.stop_fd = stop;
	if (pthread_create(&th, NULL, reader_main, &rd) != 0) {
		err_set(e, SBX_EIO, "cannot start the output reader");
		goto out;
	}
	started = 1;
	x = (struct sbx_exec){
		.argv = req->argv, .workdir = req->workdir, .env = req->env, .in_fd = in,
		.out_fd = po[1], .err_fd = req->merge ? po[1] : pe[1],
		.timeout_ns = req->timeout_ns, .cancel_fd = req->cancel_fd,
	};
	rc = sbx_exec(b, name, &x, &out->res, e);
out:
	/* Our write ends go first, so the reader sees EOF when nothing else holds them. */
	if (po[1] >= 0)
		close(po[1]);
	if (pe[1] >= 0)
		close(pe[1]);
	if (started) {
		uint64_t one = 1;
		if (write(stop, &one, sizeof one) < 0) {
			/* cannot happen with an eventfd below its limit */
		}
		pthread_join(th, NULL);
	}
	if (po[0] >= 0)
		close(po[0]);
	if (pe[0] >= 0)
		close(pe[0]);
	if (stop >= 0)
		close(stop);
	if (in >= 0)
		close(in);
	for (int i = 0; i < 2; i++) {
		struct sink *k = &rd.s[i];
		if (!k->b)
			continue;
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
