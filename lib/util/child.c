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

#include "exitcode.h"
#include "timeutil.h"
#include "xalloc.h"

extern char **environ;

#define DEFAULT_GRACE_NS (INT64_C(5) * 1000000000)
/* One read from a child's pipe. */
#define CHUNK 65536

int child_start(const struct child_req *r, int in_fd, int out_fd, int err_fd, pid_t *pid,
		struct sbx_err *e)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, def;
	int fds[3] = {in_fd, out_fd, err_fd}, tmp[3] = {-1, -1, -1}, rc = 0;
	char *const *env = r->envp ? r->envp : environ;

	/* Each descriptor the child gets as one of 0..2 is moved above 2 first, so no dup2 of
	 * the spawn meets another of them or itself (a same-number dup2 keeps close-on-exec). */
	for (int i = 0; i < 3; i++) {
		if (fds[i] < 0 || fds[i] > 2)
			continue;
		if ((tmp[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0)
			rc = errno;
		fds[i] = tmp[i];
	}
	posix_spawn_file_actions_init(&fa);
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			posix_spawn_file_actions_adddup2(&fa, fds[i], i);
	if (r->cwd)
		posix_spawn_file_actions_addchdir_np(&fa, r->cwd);
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
	if (rc == 0 && strchr(r->path, '/'))
		rc = posix_spawn(pid, r->path, &fa, &at, r->argv, env);
	else if (rc == 0)
		rc = posix_spawnp(pid, r->path, &fa, &at, r->argv, env);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	for (int i = 0; i < 3; i++)
		if (tmp[i] >= 0)
			close(tmp[i]);
	if (rc != 0)
		err_sys(e, rc, "cannot run %s", r->path);
	return rc;
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

/* One child_run: the parent's ends of the child's descriptors and where it stands. */
struct run {
	const struct child_req *r;
	struct child_result *res;
	int in, out, err, pfd;		/* -1 once closed */
	pid_t pid;
	size_t sent, out_max;
	int64_t grace, deadline, kill_at;	/* monotonic ns; 0: none */
	bool stopping, killed, overflow;
	struct buf ob, eb;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Makes the pipes and spawns the child. */
static int run_start(struct run *u, struct sbx_err *e)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, rc = -1;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		err_sys(e, errno, "cannot make pipes for %s", u->r->path);
		goto out;
	}
	if (child_start(u->r, in[1], out[1], err[1], &u->pid, e) != 0)
		goto out;
	u->in = in[0];
	u->out = out[0];
	u->err = err[0];
	in[0] = out[0] = err[0] = -1;
	if (u->r->in == NULL || u->r->in_len == 0)
		close_fd(&u->in);
	else
		fcntl(u->in, F_SETFL, O_NONBLOCK);
	u->pfd = pidfd_open(u->pid, 0);
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		close_fd(&in[i]);
		close_fd(&out[i]);
		close_fd(&err[i]);
	}
	return rc;
}

/* Reads one chunk of fd (stdout when out) into the run; closes fd at its end. */
static void run_read(struct run *u, int *fd, bool out)
{
	char chunk[CHUNK];
	ssize_t got = read(*fd, chunk, sizeof chunk);

	if (got < 0 && errno == EINTR)
		return;
	if (got <= 0) {
		close_fd(fd);
	} else if (!out) {
		keep_tail(&u->eb, chunk, (size_t)got);
	} else if (!u->stopping) {
		buf_append(&u->ob, chunk, (size_t)got);
		if (u->r->on_line && feed_lines(u->r, &u->ob, false)) {
			u->res->aborted = true;
			u->stopping = true;
		}
		if (u->ob.len > u->out_max) {
			u->overflow = true;
			u->stopping = true;
		}
	}
}

/* Writes what stdin may take now; closes it when all is sent or the child stopped reading. */
static void run_write(struct run *u)
{
	ssize_t w = send(u->in, u->r->in + u->sent, u->r->in_len - u->sent, MSG_NOSIGNAL);

	if (w > 0)
		u->sent += (size_t)w;
	if ((w < 0 && errno != EAGAIN && errno != EINTR) || u->sent == u->r->in_len)
		close_fd(&u->in);
}

/* SIGTERM once the run is stopping, SIGKILL when the grace period is over. */
static void run_escalate(struct run *u)
{
	if (!u->stopping && u->deadline && time_mono_ns() >= u->deadline) {
		u->res->timed_out = true;
		u->stopping = true;
	}
	if (u->stopping && u->kill_at == 0) {
		kill(-u->pid, SIGTERM);
		u->kill_at = time_mono_ns() + u->grace;
		close_fd(&u->in);
	}
	if (u->stopping && !u->killed && time_mono_ns() >= u->kill_at) {
		kill(-u->pid, SIGKILL);
		u->killed = true;
	}
}

/* The poll timeout in ms until the next deadline or kill, -1 for none. */
static int run_wait_ms(const struct run *u)
{
	int64_t at = 0, left;

	if (u->stopping && !u->killed)
		at = u->kill_at;
	else if (!u->stopping && u->deadline)
		at = u->deadline;
	if (at == 0)
		return -1;
	left = at - time_mono_ns();
	return left <= 0 ? 0 : (int)(left / 1000000 + 1);
}

/* One poll over the child's descriptors and the cancel descriptor. 0, or -1 with e. */
static int run_step(struct run *u, struct sbx_err *e)
{
	struct pollfd p[4];
	int n = 0, ix_in = -1, ix_out = -1, ix_err = -1, ix_cancel = -1;

	if (u->in >= 0) {
		p[n] = (struct pollfd){.fd = u->in, .events = POLLOUT};
		ix_in = n++;
	}
	if (u->out >= 0) {
		p[n] = (struct pollfd){.fd = u->out, .events = POLLIN};
		ix_out = n++;
	}
	if (u->err >= 0) {
		p[n] = (struct pollfd){.fd = u->err, .events = POLLIN};
		ix_err = n++;
	}
	if (!u->stopping && u->r->cancel_fd >= 0) {
		p[n] = (struct pollfd){.fd = u->r->cancel_fd, .events = POLLIN};
		ix_cancel = n++;
	}
	if (poll(p, (nfds_t)n, run_wait_ms(u)) < 0) {
		if (errno == EINTR)
			return 0;
		return err_sys(e, errno, "poll");
	}
	if (ix_cancel >= 0 && (p[ix_cancel].revents & (POLLIN | POLLHUP | POLLERR))) {
		u->res->canceled = true;
		u->stopping = true;
	}
	if (ix_in >= 0 && p[ix_in].revents)
		run_write(u);
	if (ix_out >= 0 && p[ix_out].revents)
		run_read(u, &u->out, true);
	if (ix_err >= 0 && p[ix_err].revents)
		run_read(u, &u->err, false);
	run_escalate(u);
	return 0;
}

/* Whether the child is gone after being killed for good: something it started may still
 * hold the pipes, and their end is then not waited for. */
static bool run_dead(const struct run *u)
{
	struct pollfd q = {.fd = u->pfd, .events = POLLIN};

	return u->killed && u->pfd >= 0 && poll(&q, 1, 0) == 1;
}

/* Reaps the child and hands its output to res. */
static int run_finish(struct run *u, struct sbx_err *e)
{
	int ws;

	if (!u->stopping && u->r->on_line && u->ob.len > 0 && feed_lines(u->r, &u->ob, true))
		u->res->aborted = true;
	while (waitpid(u->pid, &ws, 0) < 0) {
		if (errno != EINTR) {
			u->pid = -1;
			return err_sys(e, errno, "waitpid");
		}
	}
	u->pid = -1;
	u->res->status = exitcode_of_wait(ws);
	u->res->signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
	if (u->overflow)
		return err_set(e, SBX_EIO, "%s printed more than %zu bytes", u->r->path, u->out_max);
	if (u->r->on_line == NULL) {
		u->res->out_len = u->ob.len;
		u->res->out = u->ob.data ? buf_steal(&u->ob) : xstrdup("");
	}
	u->res->err_len = u->eb.len;
	u->res->err = u->eb.data ? buf_steal(&u->eb) : xstrdup("");
	return 0;
}

int child_run(const struct child_req *r, struct child_result *res, struct sbx_err *e)
{
	struct run u = {.r = r, .res = res, .in = -1, .out = -1, .err = -1, .pfd = -1, .pid = -1,
			.out_max = r->out_max ? r->out_max : CHILD_OUT_MAX,
			.grace = r->grace_ns > 0 ? r->grace_ns : DEFAULT_GRACE_NS};
	int rc = -1, ws;

	memset(res, 0, sizeof *res);
	if (r->timeout_ns > 0)
		u.deadline = time_mono_ns() + r->timeout_ns;
	if (run_start(&u, e) < 0)
		goto out;
	while ((u.out >= 0 || u.err >= 0) && !run_dead(&u))
		if (run_step(&u, e) < 0)
			goto out;
	rc = run_finish(&u, e);
out:
	if (u.pid > 0) {
		kill(-u.pid, SIGKILL);
		while (waitpid(u.pid, &ws, 0) < 0 && errno == EINTR) {
		}
	}
	close_fd(&u.pfd);
	close_fd(&u.in);
	close_fd(&u.out);
	close_fd(&u.err);
	buf_free(&u.ob);
	buf_free(&u.eb);
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
