/* agent_steps.c — the one seam every per-call sandbox step goes through, with its two
 * implementations. "program" runs sbx-touch and sbx-tool as children: agent-loop composes the
 * user's own programs as upstream does, a crash or leak in a step stays in the step, and -v
 * prints each command line so a step can be rerun by hand. "direct" does the same work in
 * this process through lib/backend and lib/toolset: sbx-mcp and ACP sessions make many calls,
 * and a fork, exec and backend load each would cost more than most tools. Neither path wins,
 * so both answer in the program's own terms (exit status, the document's content, its
 * message), and every decision made on an answer (retry a sandbox that was not there,
 * recreate, "went away", the failure text) lives once, in the caller (agent_sandbox.c,
 * agent_tools.c). Creating, restoring, snapshotting and deleting are rare and have one
 * implementation: the programs. */
#include "agent_int.h"

#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "gojson.h"
#include "toolmsg.h"
#include "toolparts.h"

static int touch_program(struct agent_session *s, struct strvec *a, int cancel_fd, char **msg,
			 struct sbx_err *e)
{
	struct json_object *doc;
	int st = agent_run_doc(s, a, cancel_fd, &doc, msg, e);

	json_object_put(doc);
	return st;
}

/* sbx-touch's work in this process; the same statuses as the program. */
static int touch_direct(struct agent_session *s, struct strvec *a, int cancel_fd, char **msg,
			struct sbx_err *e)
{
	struct sbx_backend *b;
	struct sbx_info info;

	(void)cancel_fd;
	*msg = NULL;
	agent_trace_argv(s, a);
	if ((b = agent_backend_of(s, e)) != NULL &&
	    sbx_touch(b, s->name, agent_ttl(s), &info, e) == 0)
		return 0;
	*msg = xstrdup(e->msg);
	return exitcode_of_err(e->code);
}

static char *tool_program(struct agent_session *s, const struct agent_tool_call *c,
			  struct strvec *a, const char *in, int cancel_fd, size_t *len, int *status,
			  struct json_object **structured, struct sbx_err *e)
{
	struct child_result res;
	struct json_object *doc = NULL, *v = NULL;
	const char *why;
	char *out = NULL, *msg;
	size_t n = 0;

	(void)structured;
	*status = EXIT_TOOL_FAILED;
	if (agent_run(s, a, in, strlen(in), cancel_fd, NULL, NULL, &res, e) < 0) {
		out = toolmsg_run_failed(c->name, e->msg);
		err_clear(e);
		*len = strlen(out);
		return out;
	}
	if (res.out_len)
		agent_trace(s, "sbx-tool >", res.out);
	if (res.canceled) {
		err_set(e, SBX_ECANCELED, "context canceled");
	} else if (res.status == EXIT_NOTFOUND) {
		err_set(e, SBX_ENOTFOUND, "sandbox %s not found", s->name);
	} else if ((res.status == 0 || res.status == EXIT_TOOL_FAILED || res.status == EXIT_GONE) &&
		   (doc = gojson_parse(res.out, res.out_len, &why)) != NULL &&
		   json_object_is_type(doc, json_type_object)) {
		if (json_object_object_get_ex(doc, "content", &v) && json_object_is_type(v, json_type_string))
			n = (size_t)json_object_get_string_len(v);
		out = xmalloc(n + 1);
		memcpy(out, n ? json_object_get_string(v) : "", n);
		out[n] = '\0';
		*len = n;
		if (json_object_object_get_ex(doc, "parts", &v)) {	/* inline data */
			struct sbx_err pe;
			s->parts = toolparts_check(v, &pe);
		}
		*status = res.status;
	} else {
		msg = agent_failure(&res, "sbx-tool");
		out = toolmsg_run_failed(c->name, msg);
		free(msg);
		*len = strlen(out);
	}
	child_result_free(&res);
	json_object_put(doc);
	return out;
}

/* sbx-tool's work in this process: the same content, statuses and errors. */
static char *tool_direct(struct agent_session *s, const struct agent_tool_call *c,
			 struct strvec *a, const char *in, int cancel_fd, size_t *len, int *status,
			 struct json_object **structured, struct sbx_err *e)
{
	struct sbx_backend *b;
	char *out;
	int f = TOOL_FAILED;

	(void)in;
	agent_trace_argv(s, a);
	b = agent_backend_of(s, e);
	*status = EXIT_TOOL_FAILED;
	if (b == NULL) {
		out = toolmsg_run_failed(c->name, e->msg);
		*len = strlen(out);
		return out;
	}
	struct tool_ctx ctx = {.b = b, .sandbox = s->name, .homedir = s->homedir,
			       .timeout_ns = s->tool_timeout_ns, .cancel_fd = cancel_fd,
			       .structured = structured, .call_id = c->id, .parts = &s->parts};
	if ((out = toolset_call(s->ts, &ctx, c->name, c->arguments, len, &f, e)) == NULL) {
		if (e->code != SBX_ECANCELED && e->code != SBX_ENOTFOUND) {
			out = toolmsg_run_failed(c->name, e->msg);
			*len = strlen(out);
		}
		return out;
	}
	*status = f == TOOL_OK ? 0 : f == TOOL_SANDBOX_GONE ? EXIT_GONE : EXIT_TOOL_FAILED;
	if (s->trace) {
		struct json_object *m = agent_tool_message(c->id, out, *len);
		char *t = gojson_encode(m);
		agent_trace(s, "sbx-tool >", t);
		free(t);
		json_object_put(m);
	}
	return out;
}

const struct agent_steps agent_steps_program = {.touch = touch_program, .tool = tool_program};
const struct agent_steps agent_steps_direct = {.touch = touch_direct, .tool = tool_direct};
