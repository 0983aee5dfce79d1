/* cancel.c — signals to a self-pipe. */
#include "cancel.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int pipefd[2] = {-1, -1};
static volatile sig_atomic_t got;

static void on_signal(int sig)
{
	int saved = errno;

	if (!got)
		got = sig;
	if (write(pipefd[1], "x", 1) < 0) {
		/* full pipe: a byte is already waiting */
	}
	errno = saved;
}

int cancel_install(struct sbx_err *e)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa;

	if (pipefd[0] >= 0)
		return pipefd[0];
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0)
		return err_sys(e, errno, "pipe");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return pipefd[0];
}

int cancel_signal(void)
{
	return got;
}
