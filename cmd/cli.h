/* cli.h — what every sbx main shares: the one message format, exit statuses (lib/util/exitcode.h),
 * JSON output.
 * Messages: "prog: what failed: why" on stderr. Data: one JSON document per line on stdout. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <json-c/json.h>

#include "backend.h"
#include "err.h"
#include "exitcode.h"
#include "flag.h"
#include "name.h"
#include "specflags.h"

extern const char *cli_prog;

/* The sandbox flags the programs share, each taken by the programs that name it in take. */
enum {
	CLI_SBX_BACKEND = 1 << 0,	/* -backend B, -namespace NS */
	CLI_SBX_IMAGE = 1 << 1,		/* -image I */
	CLI_SBX_HOMEDIR = 1 << 2,	/* -homedir D */
	CLI_SBX_TTL = 1 << 3,		/* -ttl D */
	CLI_SBX_SPEC = 1 << 4,		/* the sandbox-shaping rows of lib/backend/specflags.h */
	CLI_SBX_AGENT = 1 << 5,		/* an agent program's -h texts for the rows above */
};
/* The line of a usage constant where -h shows the rows of the shared flags the program takes
 * (their texts: cmd/cli.c's table), aligned with the usage's own rows. */
#define CLI_SBX_USAGE "\x1e\n"

/* The values of the shared sandbox flags. A flag not given stays NULL (ttl_ns: what the
 * caller preset); the environment's defaults come from the helpers below. */
struct cli_sandbox {
	unsigned take;			/* CLI_SBX_* */
	const char *backend, *ns;
	const char *image, *homedir;
	int64_t ttl_ns;
	struct specflags sf;
};

/* A program's command line, as tmux's args templates and git's parse-options have it: the
 * usage constant, its own flags (lib/util/flag.h, ending {NULL}), the shared sandbox flags, and the
 * operand count with the usage errors for too few and too many. */
struct cli {
	const char *usage;
	const struct flag *flags;	/* NULL: none of its own */
	struct cli_sandbox *sandbox;	/* NULL: no sandbox flags */
	int min, max;			/* operands: at least min, at most max (-1: no limit) */
	const char *missing;		/* the usage error below min ("missing NAME") */
	const char *too_many;		/* above max; NULL: "too many arguments" */
};

/* The one flag ritual of every main: records the program name (cli_init), parses the flags
 * (Go's syntax, lib/util/flag.h), answers -h with the usage on stdout (exit 0), and refuses a bad
 * flag or operand count with the usage error (exit EXIT_USAGE). Returns the index of the
 * first operand. */
int cli_parse(const struct cli *c, int argc, char **argv);
/* -image (even empty), else $SANDBOX_IMAGE; NULL when neither (the backend's default). */
const char *cli_sandbox_image(const struct cli_sandbox *sb);
/* -homedir, else $SANDBOX_HOME_DIR, else SBX_DEFAULT_HOMEDIR. */
const char *cli_sandbox_homedir(const struct cli_sandbox *sb);
/* Puts -image (or $SANDBOX_IMAGE) and -homedir into spec; one too long dies with EXIT_USAGE. */
void cli_sandbox_spec(const struct cli_sandbox *sb, struct sbx_spec *spec);
/* -backend, else the agent programs' default (backend_default: $SANDBOX_BACKEND, else
 * kubernetes when configured, else local); *why says which. */
const char *cli_sandbox_backend(const struct cli_sandbox *sb, const char **why);
/* Opens the backend -backend and -namespace name (else their variables, else local and
 * "default"); dies with the error. */
struct sbx_backend *cli_backend_open(const struct cli_sandbox *sb);

/* Checks each of the n names given (lib/util/name.h) before anything is done with any; the
 * first bad one dies with EXIT_USAGE: 'invalid sandbox name "NAME": …'. */
void cli_names_check(enum name_kind kind, char *const *names, int n);

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
/* Prints the handle of in as sbx-touch, sbx-pause and sbx-resume do (no "reused"). 0 or -1. */
int cli_print_handle(const struct sbx_info *in);
/* The whole of sbx-pause (paused true) and sbx-resume: parses NAME and the backend flags,
 * pauses or resumes the sandbox, prints its handle. Returns the exit status. */
int cli_pause_main(const char *usage, bool paused, int argc, char **argv);
/* Prints {"name":name,"deleted":true}, what the deleting tools print per name. 0 or -1. */
int cli_print_deleted(const char *name);
/* Reads all of standard input, at most max bytes, into a new NUL-terminated buffer (len in
 * *len). Too much input dies with EXIT_USAGE naming `what`; a read error with EXIT_FAIL. */
char *cli_read_stdin(size_t max, const char *what, size_t *len);
/* Flushes and closes stdout; a write error (full disk, closed pipe) is reported and turns
 * status into EXIT_FAIL. Returns the status to exit with. */
int cli_finish(int status);

#endif
