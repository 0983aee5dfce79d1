/* child.c — spawn an sbx program, feed it, read it, stop it on request. */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timeutil.h"
#include "xalloc.h"

extern char **environ;

#define DEFAULT_GRACE_NS (INT64_C(5) * 1000000000)
/* One read from a child's pipe. */
#define CHUNK 65536

/* Moves fd above 2 so dup2 onto 0..2 in the child never meets itself (a same-number dup2
 * would keep close-on-exec set). */
static int high_fd(int fd)
{
	int n;

	if (fd > 2)
		return fd;
	n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return n;
}

static int spawn(const struct child_req *r, int in_fd, int out_fd, int err_fd, pid_t *pid,
		 struct sbx_err *e)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, def;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGHUP);
	sigaddset(&def, SIGQUIT);
	sigaddset(&def, SIGCHLD);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
				 POSIX_SPAWN_SETPGROUP);
	if (strchr(r->path, '/'))
		rc = posix_spawn(pid, r->path, &fa, &at, r->argv, environ);
	else
		rc = posix_spawnp(pid, r->path, &fa, &at, r->argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return err_sys(e, rc, "cannot run %s", r->path);
	return 0;
}

/* Keeps the last CHILD_ERR_MAX bytes of stderr. */
static void keep_tail(struct buf *b, const char *p, size_t n)
{
	buf_append(b, p, n);
	if (b->len > CHILD_ERR_MAX) {
		size_t drop = b->len - CHILD_ERR_MAX;
		memmove(b->data, b->data + drop, b->len - drop + 1);
		b->len -= drop;
	}
}

/* Hands complete lines of b to on_line; keeps the incomplete rest. */
static int feed_lines(const struct child_req *r, struct buf *b, bool eof)
{
	size_t start = 0;
	char *nl;
	int stop = 0;

	while (!stop && start < b->len) {
		nl = memchr(b->data + start, '\n', b->len - start);
		if (nl == NULL && !eof)
			break;
		if (nl == NULL)
			nl = b->data + b->len;
		*nl = '\0';
		stop = r->on_line(r->arg, b->data + start, (size_t)(nl - (b->data + start)));
		start = (size_t)(nl - b->data) + 1;
	}
	if (start >= b->len) {
		b->len = 0;
	} else if (start > 0) {
		memmove(b->data, b->data + start, b->len - start);
		b->len -= start;
	}
	if (b->data)
		b->data[b->len] = '\0';
	return stop;
}

int child_run(const struct child_req *r, struct child_result *res, struct sbx_err *e)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, pfd = -1, rc = -1, ws;
	size_t out_max = r->out_max ? r->out_max : CHILD_OUT_MAX, sent = 0;
	int64_t grace = r->grace_ns > 0 ? r->grace_ns : DEFAULT_GRACE_NS, kill_at = 0;
	struct buf ob = {0}, eb = {0};
	bool stopping = false, killed = false, overflow = false;
	pid_t pid = -1;
	char chunk[CHUNK];

	memset(res, 0, sizeof *res);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		err_sys(e, errno, "cannot make pipes for %s", r->path);
		goto out;
	}
	in[1] = high_fd(in[1]);
	out[1] = high_fd(out[1]);
	err[1] = high_fd(err[1]);
	if (in[1] < 0 || out[1] < 0 || err[1] < 0) {
		err_sys(e, errno, "cannot make pipes for %s", r->path);
		goto out;
	}
	if (spawn(r, in[1], out[1], err[1], &pid, e) < 0)
		goto out;
	close(in[1]);
	close(out[1]);
	close(err[1]);
	in[1] = out[1] = err[1] = -1;
	if (r->in == NULL || r->in_len == 0) {
		close(in[0]);
		in[0] = -1;
	} else {
		fcntl(in[0], F_SETFL, O_NONBLOCK);
	}
	pfd = pidfd_open(pid, 0);

	while (out[0] >= 0 || err[0] >= 0) {
		struct pollfd p[4];
		int n = 0, ix_in = -1, ix_out = -1, ix_err = -1, ix_cancel = -1, timeout = -1;

		if (in[0] >= 0) {
			p[n] = (struct pollfd){.fd = in[0], .events = POLLOUT};
			ix_in = n++;
		}
		if (out[0] >= 0) {
			p[n] = (struct pollfd){.fd = out[0], .events = POLLIN};
			ix_out = n++;
		}
		if (err[0] >= 0) {
			p[n] = (struct pollfd){.fd = err[0], .events = POLLIN};
			ix_err = n++;
		}
		if (!stopping && r->cancel_fd >= 0) {
			p[n] = (struct pollfd){.fd = r->cancel_fd, .events = POLLIN};
			ix_cancel = n++;
		}
		if (stopping && !killed) {
			int64_t left = kill_at - time_mono_ns();
			timeout = left <= 0 ? 0 : (int)(left / 1000000 + 1);
		}
		if (poll(p, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			err_sys(e, errno, "poll");
			goto out;
		}
		if (ix_cancel >= 0 && (p[ix_cancel].revents & (POLLIN | POLLHUP | POLLERR))) {
			res->canceled = true;
			stopping = true;
		}
		if (ix_in >= 0 && p[ix_in].revents) {
			ssize_t w = send(in[0], r->in + sent, r->in_len - sent, MSG_NOSIGNAL);
			if (w > 0)
				sent += (size_t)w;
			if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == r->in_len) {
				close(in[0]);	/* done, or the child stopped reading */
				in[0] = -1;
			}
		}
		if (ix_out >= 0 && p[ix_out].revents) {
			ssize_t got = read(out[0], chunk, sizeof chunk);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				close(out[0]);
				out[0] = -1;
			} else if (!stopping) {
				buf_append(&ob, chunk, (size_t)got);
				if (r->on_line && feed_lines(r, &ob, false)) {
					res->aborted = true;
					stopping = true;
				}
				if (ob.len > out_max) {
					overflow = true;
					stopping = true;
				}
			}
		}
		if (ix_err >= 0 && p[ix_err].revents) {
			ssize_t got = read(err[0], chunk, sizeof chunk);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				close(err[0]);
				err[0] = -1;
			} else {
				keep_tail(&eb, chunk, (size_t)got);
			}
		}
		if (stopping && kill_at == 0) {
			kill(-pid, SIGTERM);
			kill_at = time_mono_ns() + grace;
			if (in[0] >= 0) {
				close(in[0]);
				in[0] = -1;
			}
		}
		if (stopping && !killed && time_mono_ns() >= kill_at) {
			kill(-pid, SIGKILL);
			killed = true;
		}
		/* A child gone while something it started still holds the pipes: stop waiting
		 * for their end once it has been stopped for good. */
		if (killed && pfd >= 0) {
			struct pollfd q = {.fd = pfd, .events = POLLIN};
			if (poll(&q, 1, 0) == 1)
				break;
		}
	}
	if (!stopping && r->on_line && ob.len > 0 && feed_lines(r, &ob, true))
		res->aborted = true;
	while (waitpid(pid, &ws, 0) < 0) {
		if (errno != EINTR) {
			err_sys(e, errno, "waitpid");
			pid = -1;
			goto out;
		}
	}
	pid = -1;
	res->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	if (overflow) {
		err_set(e, SBX_EIO, "%s printed more than %zu bytes", r->path, out_max);
		goto out;
	}
	if (r->on_line == NULL) {
		res->out_len = ob.len;
		res->out = ob.data ? buf_steal(&ob) : xstrdup("");
	}
	res->err_len = eb.len;
	res->err = eb.data ? buf_steal(&eb) : xstrdup("");
	rc = 0;
out:
	if (pid > 0) {
		kill(-pid, SIGKILL);
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
		}
	}
	if (pfd >= 0)
		close(pfd);
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	buf_free(&ob);
	buf_free(&eb);
	if (rc < 0)
		child_result_free(res);
	return rc;
}

void child_result_free(struct child_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
	res->out_len = res->err_len = 0;
}

char *child_find(const char *dir, const char *prog)
{
	struct stat st;
	char *p;

	if (dir == NULL || *dir == '\0')
		return NULL;
	p = xasprintf("%s/%s", dir, prog);
	if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0)
		return p;
	free(p);
	return NULL;
}

char *child_self_dir(void)
{
	char path[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);

	if (n <= 0)
		return NULL;
	path[n] = '\0';
	if ((slash = strrchr(path, '/')) == NULL)
		return NULL;
	return xstrndup(path, (size_t)(slash - path));
}

char *child_err_message(const struct child_result *res, const char *prog)
{
	const char *s = res->err ? res->err : "", *end = s + strlen(s), *start;
	size_t plen = strlen(prog);

	while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	start = end;
	while (start > s && start[-1] != '\n')
		start--;
	if ((size_t)(end - start) > plen + 1 && strncmp(start, prog, plen) == 0 &&
	    start[plen] == ':' && start[plen + 1] == ' ')
		start += plen + 2;
	return xstrndup(start, (size_t)(end - start));
}
