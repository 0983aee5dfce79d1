/* mcpstdio.c — an MCP session over a byte stream (sbx-mcp's stdin and stdout) through lib/peer:
 * each line to the method table, the answers back, stopped by a descriptor. */
#include "mcpserver.h"
#include "mcpserver_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "peer.h"

struct stream {
	struct mcp_session *ss;
	struct peer *p;
	int done_fd;			/* eventfd: peer_run returned */
	int rc;
	struct sbx_err e;
};

static void stream_send(void *arg, char *line)
{
	peer_send(arg, line);
}

static void stream_done(void *arg)
{
	peer_hold(arg, -1);
}

/* Every message holds the peer open until its answer is queued (see peer_hold). */
static void on_line(struct peer *p, struct jsonrpc_msg *m, void *arg)
{
	struct stream *st = arg;
	struct mcp_sink sink = {.send = stream_send, .done = stream_done, .arg = p};

	peer_hold(p, 1);
	mcp_session_handle(st->ss, m, &sink);
}

static void *stream_main(void *arg)
{
	struct stream *st = arg;
	uint64_t one = 1;

	st->rc = peer_run(st->p, on_line, st, &st->e);
	if (write(st->done_fd, &one, sizeof one) < 0) {
		/* the counter is already set */
	}
	return NULL;
}

int mcp_serve_stream(struct mcp_session *ss, int in_fd, int out_fd, int stop_fd, struct sbx_err *e)
{
	struct stream st = {.ss = ss};
	pthread_t t;

	if ((st.done_fd = eventfd(0, EFD_CLOEXEC)) < 0) {
		close(in_fd);
		close(out_fd);
		return err_sys(e, errno, "eventfd");
	}
	st.p = peer_new(in_fd, out_fd, NULL);
	if (pthread_create(&t, NULL, stream_main, &st) != 0) {
		peer_free(st.p);
		close(st.done_fd);
		return err_set(e, SBX_EIO, "cannot start a thread");
	}
	for (;;) {
		struct pollfd fds[2] = {{.fd = st.done_fd, .events = POLLIN},
					{.fd = stop_fd, .events = POLLIN}};
		if (poll(fds, stop_fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			break;
		if (fds[0].revents)
			break;
		if (stop_fd >= 0 && fds[1].revents) {
			peer_close(st.p);
			break;
		}
	}
	pthread_join(t, NULL);
	/* Workers may still answer through the peer: stop them before it goes. */
	mcp_session_quiesce(ss);
	pthread_mutex_lock(&ss->srv->mu);
	ss->closing = false;
	pthread_mutex_unlock(&ss->srv->mu);
	peer_free(st.p);
	close(st.done_fd);
	if (st.rc < 0) {
		*e = st.e;
		return -1;
	}
	return 0;
}
