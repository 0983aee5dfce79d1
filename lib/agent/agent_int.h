/* agent_int.h — for lib/agent/agent*.c only: the session they share and the steps below each
 * part. Floors, lowest first: agent_run.c (children, logging, the backend) → agent_steps.c
 * (the seam: each per-call step as a program or in this process) → agent_sandbox.c (the
 * sandbox's lifecycle) → agent_tools.c (tool dispatch) → agent_turn.c (the turn loop) →
 * agent.c (the session). */
#ifndef SBX_AGENT_INT_H
#define SBX_AGENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "backend.h"
#include "child.h"
#include "toolset.h"
#include "xalloc.h"

struct agent_steps;

/* sbx-tool's statuses: 0 the tool ran, 1 the registry reported an error (message printed),
 * 101 the sandbox was not there (nothing ran: safe to recreate it and call again), 102 it went
 * away while the tool ran (message printed; the call may have run in part, never repeated). */

struct agent_session {
	char *name, *backend, *ns, *image, *homedir, *model, *bindir;
	char **create_args;		/* NULL-terminated copy of agent_config.create_args */
	char *backup_budget;		/* NULL, or -backup-budget's SIZE */
	const struct toolset *ts;
	int64_t tool_timeout_ns, ttl_ns;
	int max_rounds;
	struct history *h;
	struct json_object *tools;	/* the toolset's declarations */
	struct json_object *parts;	/* the last call's Parts with inline data, or NULL */
	bool is_new;
	char *workdir;			/* tools' working directory; NULL: the backend's */
	struct agent_extra_tools extra;	/* beyond the toolset's (run NULL: none) */
	bool workdir_made;		/* made in the live sandbox */
	bool want_usage;
	bool active;			/* a sandbox this session made is believed alive */
	bool created;			/* this session made (or adopted) one: delete on close */
	bool tools_only, in_process;
	bool dirty;			/* a call that may have changed the home ran since a snapshot */
	struct sbx_backend *b;		/* in_process: opened on the first call */
	const struct agent_steps *steps;	/* in_process ? &agent_steps_direct : &agent_steps_program */
	int64_t touched_ns;		/* monotonic time of the last touch or create */
	int lock_fd;			/* tools_only: the session's lock (history_lock), or -1 */
	void (*log)(void *, enum agent_log_level, const char *);
	void (*trace)(void *, const char *, const char *);
	void *log_arg;
};

/* ---- agent_run.c: children, logging, the backend ---- */
void agent_logf(struct agent_session *s, enum agent_log_level lv, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void agent_trace(struct agent_session *s, const char *label, const char *json);
/* A child's argv is a strvec (lib/util/xalloc.h): it grows and owns its words. */
void agent_arg(struct strvec *a, const char *s);
void agent_arg_own(struct strvec *a, char *s);
void agent_argv_free(struct strvec *a);
/* argv[0] plus the backend selection every sandbox tool takes. */
void agent_argv_sbx(struct agent_session *s, struct strvec *a, const char *prog);
void agent_arg_duration(struct strvec *a, const char *flag, int64_t ns);
/* -v: the command line, quoted for a POSIX shell, so the step can be rerun by hand. */
void agent_trace_argv(struct agent_session *s, struct strvec *a);
/* Runs argv (argv[0] = program name) found next to us, else on PATH. */
int agent_run(struct agent_session *s, struct strvec *a, const char *in, size_t in_len,
	      int cancel_fd, int (*on_line)(void *, char *, size_t), void *larg,
	      struct child_result *res, struct sbx_err *e);
/* The message of a failed child: its stderr's last line, else its status. */
char *agent_failure(const struct child_result *res, const char *prog);
/* Whether the cancel descriptor fd (-1: none) has fired. */
bool agent_fired(int fd);
/* Runs a sandbox tool that prints one JSON document; *doc gets it (NULL if unparsable).
 * Returns the child's status, -1 with e when it could not run, -2 when cancelled. */
int agent_run_doc(struct agent_session *s, struct strvec *a, int cancel_fd,
		  struct json_object **doc, char **msg, struct sbx_err *e);
/* in_process: the session's backend, opened on first use. */
struct sbx_backend *agent_backend_of(struct agent_session *s, struct sbx_err *e);
/* The sandbox's lifetime: -ttl, else the tools' default. */
int64_t agent_ttl(const struct agent_session *s);
/* A tool message; content[0..len) may hold NUL bytes (a tool's binary output): kept, as
 * \u0000. toolcall_message without gemini-cli's parts. */
struct json_object *agent_tool_message(const char *id, const char *content, size_t len);

/* ---- agent_steps.c: the seam of the per-call sandbox steps ---- */
/* Each step answers as its program would, so what is decided on the answer is written once,
 * by the caller. touch: sbx-touch a's exit status (0, EXIT_NOTFOUND, …) with *msg (newly
 * allocated) on a failure; -1 with e when it could not run; -2 cancelled. tool: sbx-tool a
 * (in: the call's document): the content (newly allocated, *len bytes, may hold NUL) with
 * *status 0, EXIT_TOOL_FAILED or EXIT_GONE (it went away while the call ran); NULL with e
 * when cancelled or the sandbox was not there (SBX_ENOTFOUND, nothing ran). structured: NULL,
 * or where the direct step puts the tool's structured result. */
struct agent_steps {
	int (*touch)(struct agent_session *s, struct strvec *a, int cancel_fd, char **msg,
		     struct sbx_err *e);
	char *(*tool)(struct agent_session *s, const struct agent_tool_call *c, struct strvec *a,
		      const char *in, int cancel_fd, size_t *len, int *status,
		      struct json_object **structured, struct sbx_err *e);
};
extern const struct agent_steps agent_steps_program, agent_steps_direct;

/* ---- agent_sandbox.c: the sandbox's lifecycle ---- */
/* sbx-snapshot now (a turn that ran tools ends): 0, or -1 (logged). */
int agent_snapshot_now(struct agent_session *s, int cancel_fd);

/* ---- agent_tools.c: tool dispatch ---- */
void agent_call_of(struct json_object *raw, struct agent_tool_call *c);
/* Stores a tool message for every call from index `from` on, as one append: the cancellation
 * text when text is NULL, else `Error calling tool "<name>": <text>` (the turn's error).
 * started: call `from` was announced with on_tool_start, so it gets its on_tool_end. */
void agent_close_calls(struct agent_session *s, struct json_object *calls, size_t from,
		       const struct agent_callbacks *cb, bool started, const char *text);
/* Whether name is an extra tool answered without the sandbox. */
bool agent_is_local(const struct agent_session *s, const char *name);
/* One approved call with the sandbox lifecycle: ensure the sandbox (touch, or create +
 * restore), run the call, once more after remaking a sandbox that vanished in between, then
 * touch it again. *started tells whether on_tool_start was called. Returns the content (newly
 * allocated) with *failed, or NULL with e: SBX_ECANCELED, or the sandbox could not be made. */
char *agent_call_in_sandbox(struct agent_session *s, const struct agent_tool_call *c,
			    const struct agent_callbacks *cb, int cancel_fd, bool *started,
			    size_t *len, bool *failed, struct json_object **structured,
			    struct sbx_err *e);

#endif
