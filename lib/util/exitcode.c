/* exitcode.c — error classes ⇄ exit statuses (lib/util/exitcode.h). */
#include "exitcode.h"

#include <sys/wait.h>

#include "err.h"

int exitcode_of_err(int code)
{
	switch (code) {
	case SBX_EINVAL:
	case SBX_EEXIST: return EXIT_USAGE;
	case SBX_ENOTFOUND: return EXIT_NOTFOUND;
	case SBX_EGONE: return EXIT_GONE;
	case SBX_ETIMEDOUT: return EXIT_TIMEOUT;
	default: return EXIT_FAIL;
	}
}

int exitcode_to_err(int status)
{
	switch (status) {
	case EXIT_OK: return SBX_OK;
	case EXIT_USAGE: return SBX_EINVAL;
	case EXIT_NOTFOUND: return SBX_ENOTFOUND;
	case EXIT_GONE: return SBX_EGONE;
	case EXIT_TIMEOUT: return SBX_ETIMEDOUT;
	default: return SBX_EIO;
	}
}

int exitcode_of_wait(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return EXIT_SIGNAL_BASE + WTERMSIG(wstatus);
	return EXIT_FAIL;
}
