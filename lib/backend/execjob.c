/* execjob.c — a command in a sandbox on its own thread, its stderr kept for the message. */
#include "execjob.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "relay.h"

static void *job_main(void *arg)
{
	struct execjob *j = arg;

	/* Its output goes to sbx's own pipes and memfds; its stdin may be the caller's (sbx-cp's
	 * "-"), which the relay keeps out of the sandbox. */
	static const struct relay_opts own_out = {.out_own = true};

	j->rc = relay_exec(j->b, j->name, &j->x, &own_out, &j->res, &j->err);
	if (j->close_after >= 0)
		close(j->close_after);
	return NULL;
}

/* Sets the job up: its stderr memfd and the exec request. */
static int prepare(struct execjob *j, struct sbx_backend *b, const char *name, char **argv,
		   int in_fd, int out_fd, int cancel_fd, struct sbx_err *e)
{
	memset(j, 0, sizeof *j);
	j->close_after = -1;
	if ((j->errfd = memfd_create("sbx-stderr", MFD_CLOEXEC)) < 0)
		return err_sys(e, errno, "cannot set up the command's stderr");
	j->b = b;
	j->name = name;
	j->x = (struct sbx_exec){.argv = argv, .in_fd = in_fd,
				 .out_fd = out_fd >= 0 ? out_fd : j->errfd, .err_fd = j->errfd,
				 .cancel_fd = cancel_fd};
	return 0;
}

int execjob_start(struct execjob *j, struct sbx_backend *b, const char *name, char **argv,
		  int in_fd, int out_fd, int cancel_fd, struct sbx_err *e)
{
	if (prepare(j, b, name, argv, in_fd, out_fd, cancel_fd, e) < 0)
		return -1;
	j->close_after = out_fd;
	if (pthread_create(&j->th, NULL, job_main, j) != 0) {
		close(j->errfd);
		j->errfd = -1;
		return err_set(e, SBX_EIO, "cannot start a thread for the command");
	}
	j->started = true;
	return 0;
}

int execjob_run(struct execjob *j, struct sbx_backend *b, const char *name, char **argv,
		int in_fd, int out_fd, int cancel_fd, struct sbx_err *e)
{
	if (prepare(j, b, name, argv, in_fd, out_fd, cancel_fd, e) < 0)
		return -1;
	job_main(j);
	return 0;
}

/* The start of what the command wrote on stderr, trailing white space cut. */
static void stderr_text(int fd, char *out, size_t cap)
{
	ssize_t n = pread(fd, out, cap - 1, 0);
	size_t len = n > 0 ? (size_t)n : 0;

	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
		len--;
	out[len] = '\0';
}

int execjob_finish(struct execjob *j, const char *what, struct sbx_err *e)
{
	char text[EXECJOB_STDERR_MAX];
	int rc = 0;

	if (j->started)
		pthread_join(j->th, NULL);
	j->started = false;
	if (j->rc < 0) {
		rc = err_set(e, j->err.code, "failed to execute %s: %s", what, j->err.msg);
	} else if (j->res.canceled) {
		rc = err_set(e, SBX_ECANCELED, "interrupted");
	} else if (j->res.exit_code != 0) {
		stderr_text(j->errfd, text, sizeof text);
		rc = err_set(e, SBX_EIO, "%s failed with exit code %d: %s", what, j->res.exit_code,
			     text);
	}
	if (j->errfd >= 0)
		close(j->errfd);
	j->errfd = -1;
	return rc;
}

int execjob_read(struct sbx_backend *b, const char *name, char **argv, execjob_io_fn consume,
		 void *arg, const char *what, struct sbx_err *e)
{
	struct execjob j;
	int out[2] = {-1, -1}, stop[2] = {-1, -1}, rc = -1;

	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(stop, O_CLOEXEC) < 0) {
		err_sys(e, errno, "cannot set up the stream of the %s", what);
		goto out;
	}
	if (execjob_start(&j, b, name, argv, -1, out[1], stop[0], e) < 0)
		goto out;
	out[1] = -1;	/* the job closes it */
	if (consume(out[0], arg, e) < 0) {
		struct sbx_err je;
		/* Stop the command: cancel it, and close our end so its writes fail. */
		if (write(stop[1], "x", 1) < 0) {
			/* it is being stopped anyway by the closed pipe */
		}
		close(out[0]);
		out[0] = -1;
		/* A stream cut short because the command failed: its failure is the reason. Not
		 * when the stream was refused (SBX_EPERM: the command was fine, its output not),
		 * nor when the command died of our stopping it (cancelled, or SIGPIPE). */
		if (execjob_finish(&j, what, &je) < 0 && e->code != SBX_ECANCELED &&
		    e->code != SBX_EPERM && !j.res.canceled && j.res.exit_code != 128 + SIGPIPE)
			*e = je;
		goto out;
	}
	rc = execjob_finish(&j, what, e);
out:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (stop[i] >= 0)
			close(stop[i]);
	}
	return rc;
}

/* The producer's thread: writes, then closes the command's input. */
struct producer {
	execjob_io_fn fn;
	void *arg;
	int fd, rc;
	struct sbx_err err;
};

static void *producer_main(void *arg)
{
	struct producer *p = arg;

	p->rc = p->fn(p->fd, p->arg, &p->err);
	close(p->fd);
	return NULL;
}

int execjob_write(struct sbx_backend *b, const char *name, char **argv, int cancel_fd,
		  execjob_io_fn produce, void *arg, const char *what, struct sbx_err *e)
{
	struct producer p = {.fn = produce, .arg = arg, .fd = -1};
	struct execjob j;
	pthread_t th;
	int in[2], rc;

	if (pipe2(in, O_CLOEXEC) < 0)
		return err_sys(e, errno, "cannot set up the stream of the %s", what);
	p.fd = in[1];
	if (pthread_create(&th, NULL, producer_main, &p) != 0) {
		close(in[0]);
		close(in[1]);
		return err_set(e, SBX_EIO, "cannot start a thread for the %s", what);
	}
	rc = execjob_run(&j, b, name, argv, in[0], -1, cancel_fd, e);
	/* The command is done: a producer still writing gets EPIPE and ends. */
	close(in[0]);
	pthread_join(th, NULL);
	if (rc == 0 && (rc = execjob_finish(&j, what, e)) == 0 && p.rc < 0) {
		*e = p.err;
		rc = -1;
	}
	return rc;
}
