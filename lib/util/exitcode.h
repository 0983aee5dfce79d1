/* exitcode.h — the exit statuses of every sbx program, the one table man/exit-status.roff
 * prints: mains choose them, and lib/ reads them where it runs an sbx program or a command and
 * must tell its outcomes apart. High numbers for a program's own failures, so they never look
 * like a wrapped command's status. */
#ifndef SBX_EXITCODE_H
#define SBX_EXITCODE_H

enum {
	EXIT_OK = 0,
	EXIT_TOOL_FAILED = 1,	/* sbx-tool, geminicli-toolbox: the tool reported an error */
	EXIT_USAGE = 100,	/* bad flags, names or input documents */
	EXIT_NOTFOUND = 101,	/* what was named does not exist (any more): nothing was run */
	EXIT_GONE = 102,	/* the sandbox went away while the command ran: never retry blindly */
	EXIT_FAIL = 111,	/* the program could not do its job (backend, I/O, …) */
	EXIT_TIMEOUT = 124,	/* a deadline passed and the command was killed */
	EXIT_CANNOT_EXEC = 126,	/* found but could not be executed */
	EXIT_CMD_NOT_FOUND = 127,
	EXIT_SIGNAL_BASE = 128,	/* 128+n: stopped by signal n */
};

/* The exit status of a failure of class code (enum sbx_errcode, lib/util/err.h); a failure that
 * set no class (SBX_OK) is EXIT_FAIL. */
int exitcode_of_err(int code);
/* The error class a program's exit status reports (the inverse, for a child's status). */
int exitcode_to_err(int status);
/* A wait status as a shell shows it: the exit status, or 128+n when signal n ended it. */
int exitcode_of_wait(int wstatus);

#endif
