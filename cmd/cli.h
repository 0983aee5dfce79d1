/* cli.h — what every sbx main shares: the one message format, exit statuses, JSON output.
 * Messages: "prog: what failed: why" on stderr. Data: one JSON document per line on stdout. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <json-c/json.h>

#include "../lib/err.h"

/* Exit statuses shared by the tools (each man page repeats the table). High numbers for the
 * tool's own failures so they do not look like a wrapped command's status. */
enum {
	EXIT_OK = 0,
	EXIT_USAGE = 100,	/* bad flags, names or input documents */
	EXIT_NOTFOUND = 101,	/* the sandbox does not exist (any more): nothing was run */
	EXIT_GONE = 102,	/* the sandbox went away while the command ran: never retry blindly */
	EXIT_FAIL = 111,	/* the tool could not do its job (backend, I/O, …) */
	EXIT_TIMEOUT = 124,	/* a deadline passed and the command was killed */
	EXIT_CANNOT_EXEC = 126,
	EXIT_CMD_NOT_FOUND = 127,
};

extern const char *cli_prog;

/* Records the program name from argv[0] (its basename), and answers -version / --version as
 * the first argument: "PROG (sbx) VERSION" on stdout, exit 0. */
void cli_init(int argc, char **argv);
/* "prog: fmt…" on stderr. */
void cli_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: warning: fmt…" on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: fmt…" on stderr, then exit(status). */
_Noreturn void cli_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "prog: what: e->msg" and exit with the status mapped from e->code. */
_Noreturn void cli_die_err(const char *what, const struct sbx_err *e);
/* The exit status for an error code. */
int cli_status(int code);
/* "usage: …" (the usage constant's first line) on stderr plus the error, exit EXIT_USAGE. */
_Noreturn void cli_usage_error(const char *usage, const char *why);
/* Prints usage on stdout and exits 0. */
_Noreturn void cli_help(const char *usage);
/* Writes obj as one line of JSON (Go encoding) on stdout and flushes. Returns 0 or -1. */
int cli_print_json(struct json_object *obj);
/* Prints {"name":name,"deleted":true}, what the deleting tools print per name. 0 or -1. */
int cli_print_deleted(const char *name);
/* Reads all of standard input, at most max bytes, into a new NUL-terminated buffer (len in
 * *len). Too much input dies with EXIT_USAGE naming `what`; a read error with EXIT_FAIL. */
char *cli_read_stdin(size_t max, const char *what, size_t *len);
/* Flushes and closes stdout; a write error (full disk, closed pipe) is reported and turns
 * status into EXIT_FAIL. Returns the status to exit with. */
int cli_finish(int status);

#endif
