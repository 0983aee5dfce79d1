/* local_exec.c — the client of a local sandbox's exec service (cmd/sbx-init/serve.c is the
 * other end; lib/localproto.h the wire format). One connection per command: the request with
 * the command's three descriptors, then one result; a kill request (LP_KILL or hanging up)
 * makes the service kill every process the command started. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "local.h"
#include "exitcode.h"
#include "localproto.h"
#include "reslimit.h"
#include "timeutil.h"
#include "xalloc.h"

/* How long exec waits for the service's answer after asking it to kill the command. */
#define KILL_REPLY_TIMEOUT_MS 10000
/* How often a waiting command looks whether its sandbox is paused: the time it is frozen is
 * not the command's, and is given back to its deadline to this precision; and a pause at the
 * shutdown time (-idle pause) is undone this soon, as a caller waiting is not idle. */
#define FROZEN_CHECK_MS 250

/* Fills sa with a name for dir/sock that fits sun_path whatever dir's length: through an
 * O_PATH descriptor of dir, returned for the caller to close after bind or connect. */
static int sock_addr(const char *dir, struct sockaddr_un *sa, struct sbx_err *e)
{
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return err_sys(e, errno, "cannot open %s", dir);
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof sa->sun_path, "/proc/self/fd/%d/sock", dfd);
	return dfd;
}

int local_exec_listen(const char *dir, struct sbx_err *e)
{
	struct sockaddr_un sa;
	int dfd = sock_addr(dir, &sa, e), s;

	if (dfd < 0)
		return -1;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s, 128) < 0) {
		err_sys(e, errno, "cannot create the exec socket in %s", dir);
		if (s >= 0)
			close(s);
		s = -1;
	}
	close(dfd);
	return s;
}

static int connect_sock(const char *dir, struct sbx_err *e)
{
	struct sockaddr_un sa;
	int dfd = sock_addr(dir, &sa, e), s;

	if (dfd < 0)
		return -1;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		err_sys(e, errno, "cannot reach the sandbox's exec service");
		if (s >= 0)
			close(s);
		s = -1;
	}
	close(dfd);
	return s;
}

static int send_req(int s, uint32_t type, const void *payload, uint32_t len, const int *fds,
		    int nfds)
{
	struct lp_hdr h = {LP_MAGIC, type, len, (uint32_t)nfds};
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
	size_t total = sizeof h + len, sent = 0;
	ssize_t n;

	if (nfds > 0) {
		struct cmsghdr *c;
		memset(cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	n = sendmsg(s, &mh, MSG_NOSIGNAL);
	if (n < 0)
		return -1;
	sent = (size_t)n;
	/* The rest of a large payload goes as plain stream data. */
	while (sent < total) {
		const char *p = sent < sizeof h ? (const char *)&h + sent
						 : (const char *)payload + (sent - sizeof h);
		size_t chunk = sent < sizeof h ? sizeof h - sent : total - sent;
		n = send(s, p, chunk, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		sent += (size_t)n;
	}
	return 0;
}

/* Reads the lp_result, waiting at most timeout_ms (-1: forever). */
static int read_result(int s, struct lp_result *r, int timeout_ms)
{
	size_t got = 0;

	while (got < sizeof *r) {
		struct pollfd p = {.fd = s, .events = POLLIN};
		ssize_t n;
		int pr = poll(&p, 1, timeout_ms);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return -1;
		n = read(s, (char *)r + got, sizeof *r - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return r->magic == LP_MAGIC ? 0 : -1;
}

int local_exec_ping(const char *dir, int timeout_ms)
{
	struct lp_result r;
	struct sbx_err e;
	int s = connect_sock(dir, &e), rc;

	if (s < 0)
		return -1;
	rc = send_req(s, LP_PING, NULL, 0, NULL, 0) < 0 ? -1 : read_result(s, &r, timeout_ms);
	close(s);
	return rc;
}

/* Encodes workdir, argv and env as the LP_EXEC payload. */
static char *exec_payload(const struct sbx_exec *x, uint32_t *len, struct sbx_err *e)
{
	struct buf b = {0};
	uint32_t argc = 0, envc = 0;
	const char *wd = x->workdir ? x->workdir : "";

	while (x->argv[argc])
		argc++;
	while (x->env && x->env[envc])
		envc++;
	buf_append(&b, &argc, 4);
	buf_append(&b, &envc, 4);
	buf_append(&b, wd, strlen(wd) + 1);
	for (uint32_t i = 0; i < argc; i++)
		buf_append(&b, x->argv[i], strlen(x->argv[i]) + 1);
	for (uint32_t i = 0; i < envc; i++)
		buf_append(&b, x->env[i], strlen(x->env[i]) + 1);
	if (b.len > LP_MAX_PAYLOAD || argc > LP_MAX_ARGS || envc > LP_MAX_ARGS) {
		buf_free(&b);
		err_set(e, SBX_EINVAL, "command line too long (%zu bytes, at most %u)", b.len,
			LP_MAX_PAYLOAD);
		return NULL;
	}
	*len = (uint32_t)b.len;
	return buf_steal(&b);
}

/* Waits for the result while watching the deadline and cancel_fd; on either, asks the
 * service to kill the command and waits for its confirmation. */
static int await_result(const char *dir, int s, const struct sbx_exec *x, const char *name,
			const struct local_exec_watch *w, struct lp_result *res,
			struct sbx_exec_result *r, enum local_exec_fail *why, struct sbx_err *e)
{
	int64_t deadline = x->timeout_ns > 0 ? time_mono_ns() + x->timeout_ns : 0;
	int64_t looked = time_mono_ns();
	int kill_sent = 0;

	for (;;) {
		struct pollfd pf[2] = {{.fd = s, .events = POLLIN}, {.fd = x->cancel_fd, .events = POLLIN}};
		int timeout = -1, n;
		char k = LP_KILL;

		if (deadline && !kill_sent) {
			int64_t left = deadline - time_mono_ns();
			timeout = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
			if (timeout > FROZEN_CHECK_MS)
				timeout = FROZEN_CHECK_MS;
		} else if (w && !kill_sent) {
			timeout = FROZEN_CHECK_MS;
		}
		if (kill_sent)
			timeout = KILL_REPLY_TIMEOUT_MS;
		n = poll(pf, x->cancel_fd >= 0 && !kill_sent ? 2 : 1, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 && !kill_sent) {
			/* A paused sandbox's command does not run: its time frozen is not counted. */
			int64_t now = time_mono_ns();
			bool frozen = reslimit_frozen(dir) > 0;
			if (frozen && w)
				w->frozen(w->arg);
			if (frozen && deadline)
				deadline += now - looked;
			looked = now;
			if (!deadline || now < deadline)
				continue;
		}
		if (n > 0 && pf[0].revents) {
			if (read_result(s, res, KILL_REPLY_TIMEOUT_MS) == 0)
				return 0;
			*why = LOCAL_EXEC_LOST;
			return err_set(e, SBX_EIO, "lost the connection to sandbox %s", name);
		}
		if (kill_sent) {
			*why = LOCAL_EXEC_OTHER;
			return err_set(e, SBX_EIO, "sandbox %s did not confirm the command was killed",
				       name);
		}
		if (n == 0)
			r->timed_out = true;
		else
			r->canceled = true;
		if (send(s, &k, 1, MSG_NOSIGNAL) < 0) {
			*why = LOCAL_EXEC_OTHER;
			return err_sys(e, errno, "cannot stop the command in sandbox %s", name);
		}
		kill_sent = 1;
	}
}

/* Turns the service's result into the shell's status convention. */
static void decode_result(const struct lp_result *res, const struct sbx_exec *x,
			  struct sbx_exec_result *r)
{
	if (res->exec_errno) {
		int chdir_err = res->exec_errno < 0;
		r->exit_code = !chdir_err && res->exec_errno == ENOENT ? 127 : 126;
		if (!res->killed) {
			char msg[SBX_PATH_MAX + 512];
			int m = chdir_err
				? snprintf(msg, sizeof msg, "sbx-exec: cannot enter working directory "
					   "%s: %s\n", x->workdir ? x->workdir : "(the default)",
					   strerror(-res->exec_errno))
				: snprintf(msg, sizeof msg, "sbx-exec: cannot run %s: %s%s\n", x->argv[0],
					   strerror(res->exec_errno), res->exec_errno == EAGAIN
					   ? " (the sandbox has as many processes as its -pids limit)" : "");
			if (m > (int)sizeof msg - 1)
				m = (int)sizeof msg - 1;
			if (write(x->err_fd, msg, (size_t)m) < 0) {
				/* the caller's stderr is gone; the status still says it */
			}
		}
	} else if (WIFSIGNALED(res->wstatus)) {
		r->signal = WTERMSIG(res->wstatus);
		r->exit_code = 128 + r->signal;
	} else {
		r->exit_code = WEXITSTATUS(res->wstatus);
	}
	if (r->timed_out)
		r->exit_code = EXIT_TIMEOUT;
}

int local_exec_run(const char *dir, const char *name, const struct sbx_exec *x,
		   const struct local_exec_watch *w, struct sbx_exec_result *r,
		   enum local_exec_fail *why, struct sbx_err *e)
{
	struct lp_result res;
	char *payload;
	uint32_t len;
	int s = -1, null = -1, rc = -1, fds[3];

	*why = LOCAL_EXEC_OTHER;
	if ((payload = exec_payload(x, &len, e)) == NULL)
		return -1;
	if ((s = connect_sock(dir, e)) < 0) {
		*why = LOCAL_EXEC_NOCONN;
		goto out;
	}
	if (x->in_fd < 0 && (null = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		err_sys(e, errno, "/dev/null");
		goto out;
	}
	fds[0] = x->in_fd >= 0 ? x->in_fd : null;
	fds[1] = x->out_fd;
	fds[2] = x->err_fd;
	if (send_req(s, LP_EXEC, payload, len, fds, 3) < 0) {
		int err = errno;
		/* The service may have refused at once (no process slot left under -pids) and hung
		 * up before reading: its answer is waiting. */
		if ((err == EPIPE || err == ECONNRESET) && read_result(s, &res, 0) == 0) {
			decode_result(&res, x, r);
			rc = 0;
			goto out;
		}
		err_sys(e, err, "cannot send the command to sandbox %s", name);
		goto out;
	}
	if (null >= 0) {
		close(null);
		null = -1;
	}
	if (await_result(dir, s, x, name, w, &res, r, why, e) < 0)
		goto out;
	decode_result(&res, x, r);
	rc = 0;
out:
	if (s >= 0)
		close(s);
	if (null >= 0)
		close(null);
	free(payload);
	return rc;
}
