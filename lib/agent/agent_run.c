/* agent_run.c — the floor of an agent session: its log and trace lines, the sbx programs run
 * as children (argv, quoting for -v, one JSON document back), the backend opened in-process. */
#include "agent_int.h"

#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "gojson.h"
#include "toolcall.h"

void agent_logf(struct agent_session *s, enum agent_log_level lv, const char *fmt, ...)
{
	va_list ap;
	char *m;

	if (s->log == NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	if (m) {
		s->log(s->log_arg, lv, m);
		free(m);
	}
}

void agent_trace(struct agent_session *s, const char *label, const char *json)
{
	if (s->trace)
		s->trace(s->log_arg, label, json);
}

void agent_arg(struct strvec *a, const char *s)
{
	strvec_push(a, s);
}

void agent_arg_own(struct strvec *a, char *s)
{
	strvec_push(a, s);
	free(s);
}

void agent_argv_free(struct strvec *a)
{
	strvec_clear(a);
}

void agent_argv_sbx(struct agent_session *s, struct strvec *a, const char *prog)
{
	memset(a, 0, sizeof *a);
	agent_arg(a, prog);
	agent_arg(a, "-backend");
	agent_arg(a, s->backend);
	agent_arg(a, "-namespace");
	agent_arg(a, s->ns);
}

void agent_arg_duration(struct strvec *a, const char *flag, int64_t ns)
{
	char d[DURATION_BUFSZ];

	agent_arg(a, flag);
	agent_arg_own(a, xstrdup(duration_format(ns, d, sizeof d)));
}

void agent_trace_argv(struct agent_session *s, struct strvec *a)
{
	struct buf b = {0};

	if (s->trace == NULL)
		return;
	for (size_t i = 0; i < a->n; i++) {
		const char *w = a->v[i];
		if (i > 0)
			buf_puts(&b, " ");
		if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				 "-_./:=,+@%") == strlen(w)) {
			buf_puts(&b, w);
			continue;
		}
		buf_puts(&b, "'");
		for (; *w; w++)
			buf_puts(&b, *w == '\'' ? "'\\''" : (char[]){*w, 0});
		buf_puts(&b, "'");
	}
	s->trace(s->log_arg, "$", b.data);
	buf_free(&b);
}

int agent_run(struct agent_session *s, struct strvec *a, const char *in, size_t in_len,
	       int cancel_fd, int (*on_line)(void *, char *, size_t), void *larg,
	       struct child_result *res, struct sbx_err *e)
{
	char *path;

	agent_trace_argv(s, a);
	path = child_find(s->bindir, a->v[0]);
	struct child_req rq = {.path = path ? path : a->v[0], .argv = a->v, .in = in,
			       .in_len = in_len, .cancel_fd = cancel_fd, .on_line = on_line,
			       .arg = larg};
	int rc = child_run(&rq, res, e);

	free(path);
	return rc;
}

char *agent_failure(const struct child_result *res, const char *prog)
{
	char *m = child_err_message(res, prog);

	if (*m == '\0') {
		free(m);
		m = xasprintf("%s exited with status %d", prog, res->status);
	}
	return m;
}

bool agent_fired(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return fd >= 0 && poll(&p, 1, 0) == 1;
}

/* The warnings a program that succeeded wrote ("PROG: warning: WHAT" lines of its stderr
 * tail), passed on to the session's log: a warning sbx-create gives once (a user without
 * subordinate ids) must reach the person whichever program made the sandbox. */
static void pass_warnings(struct agent_session *s, const char *prog, const char *err)
{
	const char *base = strrchr(prog, '/');
	char *tag = xasprintf("%s: warning: ", base ? base + 1 : prog);
	size_t n = strlen(tag);

	for (const char *l = err; l && *l;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		if (len > n && strncmp(l, tag, n) == 0)
			agent_logf(s, AGENT_LOG_WARN, "%.*s", (int)(len - n), l + n);
		l = end ? end + 1 : NULL;
	}
	free(tag);
}

int agent_run_doc(struct agent_session *s, struct strvec *a, int cancel_fd,
		   struct json_object **doc, char **msg, struct sbx_err *e)
{
	struct child_result res;
	const char *why;
	char label[64];
	int st;

	*doc = NULL;
	*msg = NULL;
	if (agent_run(s, a, NULL, 0, cancel_fd, NULL, NULL, &res, e) < 0)
		return -1;
	if (res.canceled) {
		child_result_free(&res);
		err_set(e, SBX_ECANCELED, "context canceled");
		return -2;
	}
	snprintf(label, sizeof label, "%s >", a->v[0]);
	if (res.out_len > 0)
		agent_trace(s, label, res.out);
	*doc = gojson_parse(res.out, res.out_len, &why);
	if (res.status != 0)
		*msg = agent_failure(&res, a->v[0]);
	else
		pass_warnings(s, a->v[0], res.err);
	st = res.status;
	child_result_free(&res);
	return st;
}

/* Backend plugins are loaded and initialised once per process; two sessions opening their
 * first backend on two threads must not race there. */
static pthread_mutex_t backend_open_mu = PTHREAD_MUTEX_INITIALIZER;

struct sbx_backend *agent_backend_of(struct agent_session *s, struct sbx_err *e)
{
	if (s->b == NULL) {
		pthread_mutex_lock(&backend_open_mu);
		s->b = backend_open(s->backend, s->ns, e);
		pthread_mutex_unlock(&backend_open_mu);
	}
	return s->b;
}

int64_t agent_ttl(const struct agent_session *s)
{
	return s->ttl_ns > 0 ? s->ttl_ns : SBX_DEFAULT_TTL_NS;
}

struct json_object *agent_tool_message(const char *id, const char *content, size_t len)
{
	return toolcall_message(id, content, len, NULL);
}
