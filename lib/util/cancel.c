/* cancel.c — signals to a self-pipe (lib/util/cancel.h). */
#include "cancel.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/* Signals counted: every number a Linux signal may have. */
#define CANCEL_SIGNALS 65

static int pipefd[2] = {-1, -1};
static volatile sig_atomic_t got, counts[CANCEL_SIGNALS];

static void on_signal(int sig)
{
	int saved = errno;

	if (!got)
		got = sig;
	if (sig > 0 && sig < CANCEL_SIGNALS)
		counts[sig]++;
	if (write(pipefd[1], "x", 1) < 0) {
		/* full pipe: a byte is already waiting */
	}
	errno = saved;
}

int cancel_install_signals(const int *sigs, unsigned flags, struct sbx_err *e)
{
	struct sigaction sa;

	if (pipefd[0] >= 0)
		return pipefd[0];
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0)
		return err_sys(e, errno, "pipe");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = (flags & CANCEL_ONCE ? SA_RESETHAND : 0) |
		      (flags & CANCEL_RESTART ? SA_RESTART : 0);
	sigemptyset(&sa.sa_mask);
	for (; *sigs; sigs++)
		sigaction(*sigs, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return pipefd[0];
}

int cancel_install(struct sbx_err *e)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, 0};

	return cancel_install_signals(sigs, 0, e);
}

int cancel_signal(void)
{
	return got;
}

const volatile sig_atomic_t *cancel_flag(void)
{
	return &got;
}

int cancel_count(int sig)
{
	return sig > 0 && sig < CANCEL_SIGNALS ? counts[sig] : 0;
}

void cancel_drain(void)
{
	char b[64];

	while (pipefd[0] >= 0 && read(pipefd[0], b, sizeof b) > 0) {
	}
}
