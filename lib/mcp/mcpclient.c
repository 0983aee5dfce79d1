/* mcpclient.c — one stdio MCP server in a sandbox: the exec on a thread of its own, pipes
 * wrapped in a peer, initialize and tools/list, tools/call. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "exitcode.h"
#include "gojson.h"
#include "mcp.h"
#include "mcpclient.h"
#include "peer.h"
#include "timeutil.h"
#include "xalloc.h"

#define MCPCLIENT_NAME "sandboxed-tools-acp"
#define MCPCLIENT_VERSION "0.1.0"

struct mcpclient {
	char *name;
	struct sbx_backend *b;
	struct strvec argv, env;
	char *sandbox, *workdir;
	struct peer *p;
	int in[2], out[2], err[2];
	int stopfd;			/* eventfd: cancels the exec */
	pthread_t exec_t, io_t, err_t;
	bool exec_started, io_started, err_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* err_eof set */
	bool err_eof;			/* guarded by mu: all of its stderr is in tail */
	bool exited;			/* guarded by mu */
	int exit_code;
	char tail[MCPCLIENT_STDERR_MAX];	/* the end of its stderr, guarded by mu */
	size_t tail_len;
	struct json_object *tools;	/* array of Tool objects */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void *exec_main(void *arg)
{
	struct mcpclient *c = arg;
	struct sbx_exec x = {.argv = c->argv.v, .workdir = c->workdir, .env = c->env.v,
			     .in_fd = c->in[0], .out_fd = c->out[1], .err_fd = c->err[1],
			     .cancel_fd = c->stopfd};
	struct sbx_exec_result r = {0};
	struct sbx_err e;
	int rc = sbx_exec(c->b, c->sandbox, &x, &r, &e);

	pthread_mutex_lock(&c->mu);
	c->exited = true;
	c->exit_code = rc < 0 ? -1 : r.exit_code;
	if (rc < 0) {
		size_t n = strlen(e.msg);
		if (n > sizeof c->tail - 1)
			n = sizeof c->tail - 1;
		memcpy(c->tail, e.msg, n);
		c->tail_len = n;
	}
	pthread_mutex_unlock(&c->mu);
	/* Its ends of the pipes: the reader sees the end of the output, the writer EPIPE. */
	close_fd(&c->out[1]);
	close_fd(&c->err[1]);
	close_fd(&c->in[0]);
	peer_close(c->p);
	return NULL;
}

static void *err_main(void *arg)
{
	struct mcpclient *c = arg;
	char buf[4096];
	ssize_t n;

	while ((n = read(c->err[0], buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		pthread_mutex_lock(&c->mu);
		if ((size_t)n >= sizeof c->tail) {
			memcpy(c->tail, buf + n - (sizeof c->tail - 1), sizeof c->tail - 1);
			c->tail_len = sizeof c->tail - 1;
		} else {
			if (c->tail_len + (size_t)n > sizeof c->tail - 1) {
				size_t drop = c->tail_len + (size_t)n - (sizeof c->tail - 1);
				memmove(c->tail, c->tail + drop, c->tail_len - drop);
				c->tail_len -= drop;
			}
			memcpy(c->tail + c->tail_len, buf, (size_t)n);
			c->tail_len += (size_t)n;
		}
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_lock(&c->mu);
	c->err_eof = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* The server asks little of a client that offers no capabilities: ping; anything else is
 * answered "method not found", notifications are ignored. */
static void on_message(struct peer *p, struct jsonrpc_msg *m, void *arg)
{
	(void)arg;
	if (m->kind == JSONRPC_REQUEST) {
		if (strcmp(m->method, MCP_PING) == 0)
			peer_send(p, jsonrpc_result_line(m->id, NULL));
		else
			peer_send(p, jsonrpc_error_line(m->id, JSONRPC_METHOD_NOT_FOUND,
							"method not supported by this client", NULL));
	}
	jsonrpc_msg_free(m);
}

static void *io_main(void *arg)
{
	struct mcpclient *c = arg;
	struct sbx_err e;

	peer_run(c->p, on_message, c, &e);
	return NULL;
}

/* Why it failed: what it said last, or how it ended. */
static void add_tail(struct mcpclient *c, struct sbx_err *e)
{
	char tail[MCPCLIENT_STDERR_MAX + 64];
	size_t n;

	pthread_mutex_lock(&c->mu);
	/* A server that ended has said all it will: wait (briefly) for the last of it. */
	if (c->exited && c->err_started) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		while (!c->err_eof)
			if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0)
				break;
	}
	n = c->tail_len;
	while (n > 0 && (c->tail[n - 1] == '\n' || c->tail[n - 1] == '\r'))
		n--;
	if (n > 0)
		snprintf(tail, sizeof tail, "%.*s", (int)n, c->tail);
	else if (c->exited)
		snprintf(tail, sizeof tail, "it exited with status %d%s", c->exit_code,
			 c->exit_code == EXIT_CMD_NOT_FOUND ? " (command not found)"
			 : c->exit_code == EXIT_CANNOT_EXEC ? " (cannot be run)" : "");
	else
		tail[0] = '\0';
	pthread_mutex_unlock(&c->mu);
	if (tail[0]) {
		char m[SBX_ERR_MAX];
		snprintf(m, sizeof m, "%s", e->msg);
		err_set(e, e->code, "%s; its last words: %s", m, tail);
	}
}

static int call(struct mcpclient *c, const char *method, struct json_object *params,
		const volatile int *stop, int64_t timeout_ns, struct json_object **res,
		struct sbx_err *e)
{
	struct json_object *err = NULL;
	int64_t deadline = timeout_ns > 0 ? time_now_ns() + timeout_ns : 0, id;
	int rc = peer_call_id(c->p, method, params, stop, deadline, &id, res, &err, e);

	if (rc < 0) {
		/* A request given up on (cancelled, timed out) is said to be, so the server can
		 * stop working on it (MCP: notifications/cancelled, which is never answered). */
		if (id >= 0 && (e->code == SBX_ECANCELED || e->code == SBX_ETIMEDOUT)) {
			struct json_object *n = json_object_new_object();
			json_object_object_add(n, "requestId", json_object_new_int64(id));
			json_object_object_add(n, "reason", json_object_new_string(
				e->code == SBX_ECANCELED ? "cancelled by the user" : "timed out"));
			peer_send(c->p, jsonrpc_notification_line(MCP_CANCELLED, n));
			json_object_put(n);
		}
		return -1;
	}
	if (err) {
		struct json_object *m = json_object_object_get(err, "message");
		err_set(e, SBX_EIO, "%s: %s", method, m ? json_object_get_string(m) : "an error");
		json_object_put(err);
		json_object_put(*res);
		*res = NULL;
		return -1;
	}
	return 0;
}

/* tools/list, following nextCursor, at most MCPCLIENT_TOOLS_MAX tools. */
static int list_tools(struct mcpclient *c, struct sbx_err *e)
{
	struct json_object *params = NULL, *res = NULL, *tools, *next;
	int pages = 0, rc = 0;

	c->tools = json_object_new_array();
	do {
		size_t i, n;
		if (call(c, MCP_TOOLS_LIST, params, NULL, MCPCLIENT_START_TIMEOUT_NS, &res, e) < 0) {
			rc = -1;
			break;
		}
		json_object_put(params);
		params = NULL;
		if (!json_object_object_get_ex(res, "tools", &tools) ||
		    !json_object_is_type(tools, json_type_array)) {
			rc = err_set(e, SBX_EIO, "tools/list: no tools array");
			break;
		}
		n = json_object_array_length(tools);
		for (i = 0; i < n && json_object_array_length(c->tools) < MCPCLIENT_TOOLS_MAX; i++)
			json_object_array_add(c->tools, json_object_get(json_object_array_get_idx(tools, i)));
		if (json_object_object_get_ex(res, "nextCursor", &next) &&
		    json_object_is_type(next, json_type_string) &&
		    json_object_array_length(c->tools) < MCPCLIENT_TOOLS_MAX && ++pages < 100) {
			params = json_object_new_object();
			json_object_object_add(params, "cursor", json_object_get(next));
		}
		json_object_put(res);
		res = NULL;
	} while (params);
	json_object_put(params);
	json_object_put(res);
	return rc;
}

static int start_threads(struct mcpclient *c, struct sbx_err *e)
{
	if (pthread_create(&c->err_t, NULL, err_main, c) != 0)
		return err_set(e, SBX_EIO, "cannot start a thread");
	c->err_started = true;
	if (pthread_create(&c->io_t, NULL, io_main, c) != 0)
		return err_set(e, SBX_EIO, "cannot start a thread");
	c->io_started = true;
	if (pthread_create(&c->exec_t, NULL, exec_main, c) != 0)
		return err_set(e, SBX_EIO, "cannot start a thread");
	c->exec_started = true;
	return 0;
}

struct mcpclient *mcpclient_start(const struct mcpclient_config *cfg, struct sbx_err *e)
{
	struct mcpclient *c = xcalloc(1, sizeof *c);
	struct mcp_impl me = {.name = MCPCLIENT_NAME, .version = MCPCLIENT_VERSION};
	struct json_object *params, *res = NULL;

	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->in[0] = c->in[1] = c->out[0] = c->out[1] = c->err[0] = c->err[1] = -1;
	c->name = xstrdup(cfg->name);
	c->sandbox = xstrdup(cfg->sandbox);
	c->workdir = cfg->workdir ? xstrdup(cfg->workdir) : NULL;
	strvec_pushv(&c->argv, cfg->argv);
	strvec_pushv(&c->env, cfg->env);
	c->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->stopfd < 0 || pipe2(c->in, O_CLOEXEC) < 0 || pipe2(c->out, O_CLOEXEC) < 0 ||
	    pipe2(c->err, O_CLOEXEC) < 0) {
		err_sys(e, errno, "pipe");
		goto bad;
	}
	if ((c->b = backend_open(cfg->backend, cfg->namespace, e)) == NULL)
		goto bad;
	/* The peer takes our ends: the server's output, its input. */
	c->p = peer_new(c->out[0], c->in[1], NULL);
	c->out[0] = c->in[1] = -1;
	if (start_threads(c, e) < 0)
		goto bad;
	params = mcp_initialize_params(&me);
	if (call(c, MCP_INITIALIZE, params, NULL, MCPCLIENT_START_TIMEOUT_NS, &res, e) < 0) {
		json_object_put(params);
		add_tail(c, e);
		goto bad;
	}
	json_object_put(params);
	if (mcp_initialize_check(res, e) == NULL) {
		json_object_put(res);
		goto bad;
	}
	json_object_put(res);
	peer_send(c->p, jsonrpc_notification_line(MCP_INITIALIZED, NULL));
	if (list_tools(c, e) < 0) {
		add_tail(c, e);
		goto bad;
	}
	return c;
bad:
	mcpclient_stop(c);
	return NULL;
}

struct json_object *mcpclient_tools(const struct mcpclient *c)
{
	return c->tools;
}

char *mcpclient_call(struct mcpclient *c, const char *tool, const char *arguments,
		     const volatile int *stop, int64_t timeout_ns, bool *is_error,
		     struct sbx_err *e)
{
	struct json_object *params = json_object_new_object(), *args, *res = NULL;
	const char *why;
	char *text;

	*is_error = false;
	args = arguments && *arguments ? gojson_parse(arguments, strlen(arguments), &why) : NULL;
	if (args == NULL)
		args = json_object_new_object();
	if (!json_object_is_type(args, json_type_object)) {
		json_object_put(args);
		json_object_put(params);
		err_set(e, SBX_EINVAL, "the arguments are not a JSON object");
		return NULL;
	}
	json_object_object_add(params, "name", json_object_new_string(tool));
	json_object_object_add(params, "arguments", args);
	if (call(c, MCP_TOOLS_CALL, params, stop, timeout_ns, &res, e) < 0) {
		json_object_put(params);
		if (e->code == SBX_EIO && !mcpclient_alive(c))
			add_tail(c, e);
		return NULL;
	}
	json_object_put(params);
	text = mcp_call_result_text(res, is_error, e);
	json_object_put(res);
	return text;
}

void mcpclient_wake(struct mcpclient *c)
{
	if (c && c->p)
		peer_wake_calls(c->p);
}

bool mcpclient_alive(struct mcpclient *c)
{
	bool alive;

	pthread_mutex_lock(&c->mu);
	alive = !c->exited;
	pthread_mutex_unlock(&c->mu);
	return alive && !peer_closed(c->p);
}

void mcpclient_stop(struct mcpclient *c)
{
	uint64_t one = 1;

	if (c == NULL)
		return;
	if (c->p)
		peer_close(c->p);
	if (c->io_started)
		pthread_join(c->io_t, NULL);
	/* Its input is closed with the peer (peer_free); the exec is cancelled, which stops
	 * every process it started in the sandbox. */
	if (c->stopfd >= 0 && write(c->stopfd, &one, sizeof one) < 0) {
		/* already set */
	}
	if (c->exec_started)
		pthread_join(c->exec_t, NULL);
	if (c->err_started) {
		close_fd(&c->err[1]);
		pthread_join(c->err_t, NULL);
	}
	peer_free(c->p);
	close_fd(&c->in[0]);
	close_fd(&c->in[1]);
	close_fd(&c->out[0]);
	close_fd(&c->out[1]);
	close_fd(&c->err[0]);
	close_fd(&c->err[1]);
	if (c->stopfd >= 0)
		close(c->stopfd);
	if (c->b)
		backend_close(c->b);
	json_object_put(c->tools);
	strvec_clear(&c->argv);
	strvec_clear(&c->env);
	free(c->name);
	free(c->sandbox);
	free(c->workdir);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
