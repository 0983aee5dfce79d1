/* acp.c — ACP v1 methods, the session registry, and turns mapped onto session updates. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "acp.h"
#include "agent.h"
#include "gojson.h"
#include "name.h"
#include "net.h"
#include "toolset.h"
#include "xalloc.h"

/* Tool names remembered per session for an "always" answer: a toolset has a handful. */
#define ACP_ALWAYS_MAX 64

struct acp_session {
	struct acp_session *next;
	char id[NAME_MAX_LEN + 1];
	struct agent_session *as;
	/* Guarded by the server lock: */
	bool busy;			/* a turn or a replay is running */
	struct acp_conn *turn_conn;	/* the connection whose prompt is running */
	int cancel_pipe[2];		/* written to cancel the running turn */
	volatile int cancel;
	bool tool_ran;			/* a sandbox may exist for it */
	/* Only touched by the thread running the turn: */
	char *always[ACP_ALWAYS_MAX];	/* tool names answered "always" */
	bool always_allow[ACP_ALWAYS_MAX];
	size_t nalways;
	bool streamed;			/* the current assistant message was sent as deltas */
	char *open_call;		/* announced tool call not yet ended (calls are sequential) */
	struct peer *out;		/* where the running turn's updates go */
};

struct acp_server {
	struct acp_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct peer *conns[ACP_CONN_MAX];	/* open connections (acp_server_run) */
	int nconns;
	int stdio_done;				/* eventfd: the stdio connection ended */
	struct acp_session *sessions;
	size_t nsessions;
	int workers;			/* prompt/load threads running, all connections */
	bool draining;
};

struct acp_conn {
	struct acp_server *srv;
	struct peer *p;
	bool initialized, authenticated;
	int auth_failures;
	size_t nsessions;		/* created or loaded here */
	int workers;			/* guarded by srv->mu */
};

static void srv_log(struct acp_server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void srv_log(struct acp_server *srv, const char *fmt, ...)
{
	char msg[SBX_ERR_MAX + 256];
	va_list ap;

	if (srv->cfg.log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	srv->cfg.log(srv->cfg.log_arg, msg);
}

/* ---- helpers ---------------------------------------------------------------------------- */

const char *acp_tool_kind(const char *name)
{
	return toolset_tool_kind(name);
}

int acp_new_session_id(char out[20], struct sbx_err *e)
{
	unsigned char rnd[8];
	int i;

	if (RAND_bytes(rnd, sizeof rnd) != 1)
		return err_set(e, SBX_EIO, "failed to generate session id");
	memcpy(out, "acp", 3);
	for (i = 0; i < 8; i++)
		snprintf(out + 3 + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

char *acp_read_token(const char *path, struct sbx_err *e)
{
	char buf[ACP_TOKEN_MAX + 2];
	size_t n = 0, a = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		err_sys(e, errno, "cannot open token file %s", path);
		e->code = SBX_EINVAL;	/* a configuration mistake, not a missing sandbox */
		return NULL;
	}
	while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err_sys(e, errno, "cannot read token file %s", path);
			close(fd);
			return NULL;
		}
		n += (size_t)r;
	}
	close(fd);
	if (n > ACP_TOKEN_MAX) {
		err_set(e, SBX_EINVAL, "token file %s is longer than %d bytes", path, ACP_TOKEN_MAX);
		return NULL;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
			 buf[n - 1] == '\t'))
		n--;
	while (a < n && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\n' || buf[a] == '\r'))
		a++;
	if (a == n) {
		err_set(e, SBX_EINVAL, "token file %s is empty", path);
		return NULL;
	}
	return xstrndup(buf + a, n - a);
}

bool acp_token_equal(const char *a, const char *b)
{
	unsigned char ha[SHA256_DIGEST_LENGTH], hb[SHA256_DIGEST_LENGTH];

	/* Comparing digests keeps the time independent of where, or whether, lengths differ. */
	SHA256((const unsigned char *)a, strlen(a), ha);
	SHA256((const unsigned char *)b, strlen(b), hb);
	return CRYPTO_memcmp(ha, hb, sizeof ha) == 0;
}

static struct json_object *text_block(const char *text, size_t len)
{
	struct json_object *c = json_object_new_object();

	json_object_object_add(c, "type", json_object_new_string("text"));
	json_object_object_add(c, "text", json_object_new_string_len(text, (int)len));
	return c;
}

/* Sends session/update {sessionId, update} (update taken). */
static void send_update(struct peer *p, const char *sid, struct json_object *update)
{
	struct json_object *params = json_object_new_object();

	json_object_object_add(params, "sessionId", json_object_new_string(sid));
	json_object_object_add(params, "update", update);
	peer_send(p, jsonrpc_notification_line("session/update", params));
	json_object_put(params);
}

static void send_chunk(struct peer *p, const char *sid, const char *kind, const char *text,
		       size_t len)
{
	struct json_object *u = json_object_new_object();

	json_object_object_add(u, "sessionUpdate", json_object_new_string(kind));
	json_object_object_add(u, "content", text_block(text, len));
	send_update(p, sid, u);
}

static void reply(struct peer *p, struct json_object *id, struct json_object *result)
{
	peer_send(p, jsonrpc_result_line(id, result));
	json_object_put(result);
}

static void reply_error(struct peer *p, struct json_object *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void reply_error(struct peer *p, struct json_object *id, int code, const char *fmt, ...)
{
	char msg[SBX_ERR_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	peer_send(p, jsonrpc_error_line(id, code, msg, NULL));
}

/* params.key as a string, or NULL. */
static const char *param_str(struct json_object *params, const char *key)
{
	struct json_object *v;

	if (json_object_object_get_ex(params, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

/* ---- the registry --------------------------------------------------------------------- */

/* Caller holds srv->mu. */
static struct acp_session *find_session(struct acp_server *srv, const char *id)
{
	struct acp_session *s;

	for (s = srv->sessions; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

static void agent_log(void *arg, enum agent_log_level level, const char *msg)
{
	struct acp_server *srv = arg;

	srv_log(srv, "%s%s", level == AGENT_LOG_WARN ? "warning: " : "", msg);
}

static struct agent_session *open_agent(struct acp_server *srv, const char *id, bool must_exist,
					struct sbx_err *e)
{
	struct agent_config ac = {
		.session = id,
		.backend = srv->cfg.backend,
		.namespace = srv->cfg.namespace,
		.image = srv->cfg.image,
		.homedir = srv->cfg.homedir,
		.toolset = srv->cfg.toolset,
		.model = srv->cfg.model,
		.tool_timeout_ns = srv->cfg.tool_timeout_ns,
		.create_args = srv->cfg.create_args,
		.must_exist = must_exist,
		.bindir = srv->cfg.bindir,
		.log = agent_log,
		.log_arg = srv,
	};

	return agent_session_open(&ac, e);
}

static struct acp_session *new_session(const char *id, struct agent_session *as)
{
	struct acp_session *s = xcalloc(1, sizeof *s);

	snprintf(s->id, sizeof s->id, "%s", id);
	s->as = as;
	s->cancel_pipe[0] = s->cancel_pipe[1] = -1;
	return s;
}

static void free_session(struct acp_session *s)
{
	size_t i;

	for (i = 0; i < s->nalways; i++)
		free(s->always[i]);
	free(s->open_call);
	agent_session_free(s->as);
	free(s);
}

/* ---- methods ----------------------------------------------------------------------------- */

struct req {
	struct acp_conn *c;
	struct json_object *id;		/* NULL for notifications */
	struct json_object *params;	/* an object (possibly empty) */
};

static void m_initialize(const struct req *r)
{
	struct acp_server *srv = r->c->srv;
	struct json_object *res = json_object_new_object(), *caps, *pc, *info, *methods, *m, *v;
	int64_t version = ACP_PROTOCOL_VERSION;

	if (json_object_object_get_ex(r->params, "protocolVersion", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
		    json_object_get_int64(v) > 65535) {
			json_object_put(res);
			reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
				    "invalid params: protocolVersion must be an integer");
			return;
		}
		/* Never answer higher than asked; below 1 there is nothing we speak. */
		if (json_object_get_int64(v) < version && json_object_get_int64(v) >= 1)
			version = json_object_get_int64(v);
	}
	r->c->initialized = true;
	json_object_object_add(res, "protocolVersion", json_object_new_int64(version));
	caps = json_object_new_object();
	json_object_object_add(caps, "loadSession", json_object_new_boolean(1));
	pc = json_object_new_object();
	json_object_object_add(pc, "image", json_object_new_boolean(0));
	json_object_object_add(pc, "audio", json_object_new_boolean(0));
	json_object_object_add(pc, "embeddedContext", json_object_new_boolean(0));
	json_object_object_add(caps, "promptCapabilities", pc);
	json_object_object_add(res, "agentCapabilities", caps);
	methods = json_object_new_array();
	if (srv->cfg.auth_token) {
		m = json_object_new_object();
		json_object_object_add(m, "id", json_object_new_string(ACP_AUTH_METHOD));
		json_object_object_add(m, "name", json_object_new_string("Bearer token"));
		json_object_object_add(m, "description", json_object_new_string(
			"Send the server's token as _meta.token in authenticate"));
		json_object_array_add(methods, m);
	}
	json_object_object_add(res, "authMethods", methods);
	info = json_object_new_object();
	json_object_object_add(info, "name", json_object_new_string(ACP_AGENT_NAME));
	json_object_object_add(info, "version", json_object_new_string(ACP_AGENT_VERSION));
	json_object_object_add(res, "agentInfo", info);
	reply(r->c->p, r->id, res);
}

static void m_authenticate(const struct req *r)
{
	struct acp_conn *c = r->c;
	const char *method = param_str(r->params, "methodId"), *token = NULL;
	struct json_object *meta;

	if (c->srv->cfg.auth_token == NULL) {
		reply_error(c->p, r->id, JSONRPC_METHOD_NOT_FOUND, "method not supported: authenticate");
		return;
	}
	if (method == NULL) {
		reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "invalid params: methodId is required");
		return;
	}
	if (strcmp(method, ACP_AUTH_METHOD) != 0) {
		reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
			    "unknown authentication method \"%s\" (available: %s)", method,
			    ACP_AUTH_METHOD);
		return;
	}
	if (json_object_object_get_ex(r->params, "_meta", &meta))
		token = param_str(meta, "token");
	if (token == NULL || !acp_token_equal(token, c->srv->cfg.auth_token)) {
		c->auth_failures++;
		reply_error(c->p, r->id, JSONRPC_AUTH_REQUIRED, "authentication failed: %s",
			    token == NULL ? "no token in _meta.token" : "wrong token");
		if (c->auth_failures >= ACP_AUTH_FAILURES_MAX) {
			srv_log(c->srv, "closing connection after %d failed authentications",
			      c->auth_failures);
			peer_close(c->p);
		}
		return;
	}
	c->authenticated = true;
	reply(c->p, r->id, json_object_new_object());
}

/* Counts one more session for this connection, or answers why not. */
static bool count_session(struct acp_conn *c, struct json_object *id)
{
	struct acp_server *srv = c->srv;

	pthread_mutex_lock(&srv->mu);
	if (c->nsessions >= ACP_SESSIONS_PER_CONN_MAX) {
		pthread_mutex_unlock(&srv->mu);
		reply_error(c->p, id, JSONRPC_INVALID_REQUEST,
			    "too many sessions on this connection (limit %d)",
			    ACP_SESSIONS_PER_CONN_MAX);
		return false;
	}
	if (srv->nsessions >= ACP_SESSIONS_MAX) {
		pthread_mutex_unlock(&srv->mu);
		reply_error(c->p, id, JSONRPC_INTERNAL_ERROR,
			    "too many sessions on this server (limit %d)", ACP_SESSIONS_MAX);
		return false;
	}
	c->nsessions++;
	pthread_mutex_unlock(&srv->mu);
	return true;
}

static void m_session_new(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *cwd = param_str(r->params, "cwd");
	struct json_object *mcp, *res;
	struct agent_session *as;
	struct sbx_err e;
	char id[20];

	if (cwd == NULL || cwd[0] != '/') {
		reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
			    "invalid params: cwd must be an absolute path");
		return;
	}
	if (!json_object_object_get_ex(r->params, "mcpServers", &mcp) ||
	    !json_object_is_type(mcp, json_type_array)) {
		reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
			    "invalid params: mcpServers must be an array");
		return;
	}
	if (!count_session(c, r->id))
		return;
	if (acp_new_session_id(id, &e) < 0 || (as = open_agent(srv, id, false, &e)) == NULL) {
		reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
		return;
	}
	pthread_mutex_lock(&srv->mu);
	{
		struct acp_session *s = new_session(id, as);
		s->next = srv->sessions;
		srv->sessions = s;
		srv->nsessions++;
	}
	pthread_mutex_unlock(&srv->mu);
	res = json_object_new_object();
	json_object_object_add(res, "sessionId", json_object_new_string(id));
	reply(c->p, r->id, res);
}

/* Marks the session busy for this connection's turn or replay; the reason on failure. */
static struct acp_session *claim(struct acp_server *srv, const char *id, struct acp_conn *c,
				 const int pipefd[2], int *code, char *why, size_t whysz)
{
	struct acp_session *s;

	pthread_mutex_lock(&srv->mu);
	s = find_session(srv, id);
	if (s == NULL) {
		*code = JSONRPC_INVALID_PARAMS;
		snprintf(why, whysz, "unknown sessionId \"%s\" (create one with session/new)", id);
	} else if (s->busy) {
		*code = JSONRPC_INVALID_PARAMS;
		snprintf(why, whysz, "session \"%s\" is already processing a prompt", id);
		s = NULL;
	} else if (peer_closed(c->p)) {
		*code = JSONRPC_INTERNAL_ERROR;
		snprintf(why, whysz, "connection closed");
		s = NULL;
	} else if (srv->draining) {
		*code = JSONRPC_INTERNAL_ERROR;
		snprintf(why, whysz, "the server is shutting down");
		s = NULL;
	} else {
		s->busy = true;
		s->turn_conn = c;
		s->out = c->p;
		s->cancel = 0;
		s->cancel_pipe[0] = pipefd ? pipefd[0] : -1;
		s->cancel_pipe[1] = pipefd ? pipefd[1] : -1;
	}
	pthread_mutex_unlock(&srv->mu);
	return s;
}

static void release(struct acp_server *srv, struct acp_session *s)
{
	pthread_mutex_lock(&srv->mu);
	s->busy = false;
	s->turn_conn = NULL;
	s->out = NULL;
	if (s->cancel_pipe[0] >= 0) {
		close(s->cancel_pipe[0]);
		close(s->cancel_pipe[1]);
		s->cancel_pipe[0] = s->cancel_pipe[1] = -1;
	}
	pthread_mutex_unlock(&srv->mu);
}

/* Cancels the running turn of s. Caller holds srv->mu. */
static void cancel_locked(struct acp_session *s)
{
	char x = 1;

	if (!s->busy)
		return;
	s->cancel = 1;
	if (s->cancel_pipe[1] >= 0 && write(s->cancel_pipe[1], &x, 1) < 0) {
		/* already signalled */
	}
	if (s->out)
		peer_wake_calls(s->out);
}

/* session/load: replays the history as chunks, then answers {}. Runs on a worker. */
static void m_session_load(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *id = param_str(r->params, "sessionId");
	struct acp_session *s;
	struct json_object *hist;
	struct sbx_err e;
	char why[256];
	size_t i, n;
	int code;

	if (id == NULL) {
		reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "invalid params: sessionId is required");
		return;
	}
	/* The id becomes a directory name: the name rule keeps it inside the state root. */
	if (name_check(id, &e) < 0) {
		reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "invalid sessionId: %s", e.msg);
		return;
	}
	if (!count_session(c, r->id))
		return;
	pthread_mutex_lock(&srv->mu);
	if (find_session(srv, id) == NULL) {
		struct agent_session *as;
		if (srv->nsessions >= ACP_SESSIONS_MAX) {
			pthread_mutex_unlock(&srv->mu);
			reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR,
				    "too many sessions on this server (limit %d)", ACP_SESSIONS_MAX);
			return;
		}
		/* Built under the registry lock, as upstream, so two loads make one session. */
		as = open_agent(srv, id, true, &e);
		if (as == NULL) {
			pthread_mutex_unlock(&srv->mu);
			if (e.code == SBX_ENOTFOUND)
				reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
					    "unknown sessionId \"%s\"", id);
			else
				reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
			return;
		}
		s = new_session(id, as);
		s->next = srv->sessions;
		srv->sessions = s;
		srv->nsessions++;
	}
	pthread_mutex_unlock(&srv->mu);
	if ((s = claim(srv, id, c, NULL, &code, why, sizeof why)) == NULL) {
		reply_error(c->p, r->id, code, "%s", why);
		return;
	}
	hist = agent_session_history(s->as);
	n = json_object_array_length(hist);
	for (i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(hist, i), *v;
		const char *role = param_str(m, "role"), *kind;
		char *text;

		if (role == NULL || !json_object_object_get_ex(m, "content", &v) ||
		    !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
			continue;
		if (strcmp(role, "user") == 0)
			kind = "user_message_chunk";
		else if (strcmp(role, "assistant") == 0)
			kind = "agent_message_chunk";
		else
			continue;
		/* A long history goes out at the client's pace, not into an ever longer queue. */
		if (!peer_wait_room(c->p, PEER_OUTQ_MAX / 4))
			break;
		text = xasprintf("%s\n", json_object_get_string(v));
		send_chunk(c->p, s->id, kind, text, strlen(text));
		free(text);
	}
	release(srv, s);
	reply(c->p, r->id, json_object_new_object());
}

/* ---- a turn ---------------------------------------------------------------------------- */

static struct json_object *content_list(const char *text)
{
	struct json_object *arr = json_object_new_array(), *tc = json_object_new_object();

	json_object_object_add(tc, "type", json_object_new_string("content"));
	json_object_object_add(tc, "content", text_block(text, strlen(text)));
	json_object_array_add(arr, tc);
	return arr;
}

/* The fields shared by tool_call and the permission request's toolCall; update is the
 * sessionUpdate discriminator, or NULL inside a permission request. */
static struct json_object *tool_fields(const struct agent_tool_call *call, const char *update,
				       const char *status)
{
	struct json_object *o = json_object_new_object(), *raw;
	const char *why;
	char *title = xasprintf("%s(%s)", call->name, call->arguments ? call->arguments : "");

	if (update)
		json_object_object_add(o, "sessionUpdate", json_object_new_string(update));
	json_object_object_add(o, "toolCallId", json_object_new_string(call->id));
	json_object_object_add(o, "title", json_object_new_string(title));
	json_object_object_add(o, "kind", json_object_new_string(acp_tool_kind(call->name)));
	json_object_object_add(o, "status", json_object_new_string(status));
	/* rawInput only when the arguments are JSON, as upstream. */
	raw = call->arguments ? gojson_parse(call->arguments, strlen(call->arguments), &why) : NULL;
	if (raw)
		json_object_object_add(o, "rawInput", raw);
	free(title);
	return o;
}

static void send_tool_update(struct acp_session *s, const char *call_id, const char *status,
			     const char *text)
{
	struct json_object *u = json_object_new_object();

	json_object_object_add(u, "sessionUpdate", json_object_new_string("tool_call_update"));
	json_object_object_add(u, "toolCallId", json_object_new_string(call_id));
	json_object_object_add(u, "status", json_object_new_string(status));
	if (text)
		json_object_object_add(u, "content", content_list(text));
	send_update(s->out, s->id, u);
}

/* Ends the announced tool call (status failed or completed), once. */
static void end_call(struct acp_session *s, const char *status, const char *text)
{
	if (s->open_call == NULL)
		return;
	send_tool_update(s, s->open_call, status, text);
	free(s->open_call);
	s->open_call = NULL;
}

static void cb_delta(void *arg, const char *text, size_t len)
{
	struct acp_session *s = arg;

	if (len == 0)
		return;
	s->streamed = true;
	send_chunk(s->out, s->id, "agent_message_chunk", text, len);
}

static void cb_assistant(void *arg, struct json_object *msg, bool final)
{
	struct acp_session *s = arg;
	struct json_object *v;

	(void)final;
	/* A model that did not stream (fake-eliza) still gets its text to the client. */
	if (!s->streamed && json_object_object_get_ex(msg, "content", &v) &&
	    json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0)
		send_chunk(s->out, s->id, "agent_message_chunk", json_object_get_string(v),
			   (size_t)json_object_get_string_len(v));
	s->streamed = false;
}

static int remembered(struct acp_session *s, const char *tool)
{
	size_t i;

	for (i = 0; i < s->nalways; i++)
		if (strcmp(s->always[i], tool) == 0)
			return s->always_allow[i] ? 1 : 0;
	return -1;
}

static void remember(struct acp_session *s, const char *tool, bool allow)
{
	size_t i;

	for (i = 0; i < s->nalways; i++)
		if (strcmp(s->always[i], tool) == 0) {
			s->always_allow[i] = allow;
			return;
		}
	if (s->nalways < ACP_ALWAYS_MAX) {
		s->always[s->nalways] = xstrdup(tool);
		s->always_allow[s->nalways++] = allow;
	}
}

static struct json_object *option(const char *id, const char *name, const char *kind)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "optionId", json_object_new_string(id));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "kind", json_object_new_string(kind));
	return o;
}

/* Asks the client; 1 allow, 0 deny, -1 error. */
static int ask(struct acp_session *s, const struct agent_tool_call *call, struct sbx_err *e)
{
	struct json_object *params = json_object_new_object(), *opts = json_object_new_array();
	struct json_object *result = NULL, *error = NULL, *outcome, *v;
	const char *kind, *opt;
	int rc = -1;

	json_object_object_add(params, "sessionId", json_object_new_string(s->id));
	json_object_object_add(params, "toolCall", tool_fields(call, NULL, "pending"));
	json_object_array_add(opts, option("allow-once", "Allow", "allow_once"));
	json_object_array_add(opts, option("allow-always", "Always allow", "allow_always"));
	json_object_array_add(opts, option("reject-once", "Reject", "reject_once"));
	json_object_array_add(opts, option("reject-always", "Always reject", "reject_always"));
	json_object_object_add(params, "options", opts);
	if (peer_call(s->out, "session/request_permission", params, &s->cancel, &result, &error,
		      e) < 0)
		goto out;
	if (error) {
		err_set(e, SBX_EIO, "client error: %s", json_object_get_string(error));
		goto out;
	}
	if (!json_object_object_get_ex(result, "outcome", &outcome) ||
	    (kind = param_str(outcome, "outcome")) == NULL) {
		err_set(e, SBX_EIO, "invalid answer: want {\"outcome\":{\"outcome\":…}}");
		goto out;
	}
	if (strcmp(kind, "cancelled") == 0) {
		err_set(e, SBX_ECANCELED, "cancelled by the client");
		goto out;
	}
	opt = json_object_object_get_ex(outcome, "optionId", &v) ? json_object_get_string(v) : "";
	if (strcmp(kind, "selected") != 0) {
		rc = 0;
	} else if (strcmp(opt, "allow-once") == 0) {
		rc = 1;
	} else if (strcmp(opt, "allow-always") == 0) {
		remember(s, call->name, true);
		rc = 1;
	} else {
		if (strcmp(opt, "reject-always") == 0)
			remember(s, call->name, false);
		rc = 0;	/* anything else is a denial, as upstream */
	}
out:
	json_object_put(result);
	json_object_put(error);
	json_object_put(params);
	return rc;
}

static int cb_approve(void *arg, const struct agent_tool_call *call, struct sbx_err *e)
{
	struct acp_session *s = arg;
	struct json_object *u = tool_fields(call, "tool_call", "pending");
	int rc;

	send_update(s->out, s->id, u);
	end_call(s, "failed", NULL);
	s->open_call = xstrdup(call->id);
	if (s->cancel) {
		end_call(s, "failed", NULL);
		return err_set(e, SBX_ECANCELED, "cancelled");
	}
	rc = remembered(s, call->name);
	if (rc < 0)
		rc = ask(s, call, e);
	if (rc == 0) {
		char *text = xasprintf(AGENT_DENIED_FMT, call->name);
		end_call(s, "failed", text);
		free(text);
	} else if (rc < 0) {
		end_call(s, "failed", NULL);
	}
	return rc;
}

static void cb_tool_start(void *arg, const struct agent_tool_call *call)
{
	struct acp_session *s = arg;
	struct acp_conn *c = s->turn_conn;

	pthread_mutex_lock(&c->srv->mu);
	s->tool_ran = true;
	pthread_mutex_unlock(&c->srv->mu);
	send_tool_update(s, call->id, "in_progress", NULL);
}

static void cb_tool_end(void *arg, const struct agent_tool_call *call, bool failed,
			const char *content)
{
	struct acp_session *s = arg;

	(void)call;
	end_call(s, failed ? "failed" : "completed", content ? content : "");
}

/* The prompt's text: every text block concatenated, as upstream. */
static char *prompt_text(struct json_object *params, const char **why)
{
	struct json_object *prompt;
	struct buf b = {0};
	size_t i, n;

	*why = NULL;
	if (!json_object_object_get_ex(params, "prompt", &prompt) ||
	    !json_object_is_type(prompt, json_type_array)) {
		*why = "invalid params: prompt must be an array of content blocks";
		return NULL;
	}
	n = json_object_array_length(prompt);
	for (i = 0; i < n; i++) {
		struct json_object *blk = json_object_array_get_idx(prompt, i), *t;
		const char *type = param_str(blk, "type");
		if (type && strcmp(type, "text") == 0 && json_object_object_get_ex(blk, "text", &t) &&
		    json_object_is_type(t, json_type_string))
			buf_append(&b, json_object_get_string(t), (size_t)json_object_get_string_len(t));
	}
	if (b.len == 0) {
		buf_free(&b);
		*why = "prompt contains no text content";
		return NULL;
	}
	return buf_steal(&b);
}

static void m_session_prompt(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *id = param_str(r->params, "sessionId"), *why;
	struct acp_session *s;
	struct json_object *res;
	struct agent_callbacks cb = {0};
	enum agent_status st;
	struct sbx_err e;
	char *text = NULL, *answer = NULL, msg[256];
	int code, pipefd[2];

	if (id == NULL) {
		reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "invalid params: sessionId is required");
		return;
	}
	pthread_mutex_lock(&srv->mu);
	s = find_session(srv, id);
	pthread_mutex_unlock(&srv->mu);
	if (s == NULL) {
		reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
			    "unknown sessionId \"%s\" (create one with session/new)", id);
		return;
	}
	if ((text = prompt_text(r->params, &why)) == NULL) {
		reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "%s", why);
		return;
	}
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
		reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "pipe: %s", strerror(errno));
		free(text);
		return;
	}
	if ((s = claim(srv, id, c, pipefd, &code, msg, sizeof msg)) == NULL) {
		reply_error(c->p, r->id, code, "%s", msg);
		close(pipefd[0]);
		close(pipefd[1]);
		free(text);
		return;
	}
	s->streamed = false;
	cb.arg = s;
	cb.on_delta = cb_delta;
	cb.on_assistant = cb_assistant;
	cb.approve = cb_approve;
	cb.on_tool_start = cb_tool_start;
	cb.on_tool_end = cb_tool_end;
	st = agent_turn(s->as, text, &cb, s->cancel_pipe[0], &answer, &e);
	/* A turn that stopped between approval and the end of a tool (sandbox creation failed,
	 * cancellation) still closes the call it announced. */
	end_call(s, "failed", st == AGENT_ERROR && !s->cancel ? e.msg : NULL);
	res = json_object_new_object();
	if (st == AGENT_CANCELED || s->cancel) {
		/* A cancelled prompt is never answered with an error (ACP §8). */
		json_object_object_add(res, "stopReason", json_object_new_string("cancelled"));
	} else if (st == AGENT_DONE) {
		json_object_object_add(res, "stopReason", json_object_new_string("end_turn"));
	} else if (st == AGENT_LIMIT) {
		send_chunk(s->out, s->id, "agent_message_chunk", e.msg, strlen(e.msg));
		json_object_object_add(res, "stopReason", json_object_new_string("max_turn_requests"));
	} else {
		json_object_put(res);
		res = NULL;
	}
	/* Every update of the turn is queued before the answer, and the session is free again
	 * before the client can read it and send the next prompt. */
	release(srv, s);
	if (res)
		reply(c->p, r->id, res);
	else
		reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
	free(answer);
	free(text);
}

static void m_session_cancel(const struct req *r)
{
	struct acp_server *srv = r->c->srv;
	const char *id = param_str(r->params, "sessionId");
	struct acp_session *s;

	if (id == NULL)
		return;	/* a notification gets no answer, not even an error */
	pthread_mutex_lock(&srv->mu);
	if ((s = find_session(srv, id)) != NULL)
		cancel_locked(s);
	pthread_mutex_unlock(&srv->mu);
}

/* ---- dispatch ---------------------------------------------------------------------------- */

struct method {
	const char *name;
	void (*fn)(const struct req *);
	bool notification;	/* handled as a notification (no answer) */
	bool worker;		/* runs on a thread of its own (may take long) */
	bool open;		/* allowed before initialize and authenticate */
};

static const struct method methods[] = {
	{"initialize", m_initialize, false, false, true},
	{"authenticate", m_authenticate, false, false, true},
	{"session/new", m_session_new, false, false, false},
	{"session/load", m_session_load, false, true, false},
	{"session/prompt", m_session_prompt, false, true, false},
	{"session/cancel", m_session_cancel, true, false, false},
};

struct job {
	const struct method *m;
	struct req r;
};

static void *worker_main(void *arg)
{
	struct job *j = arg;
	struct acp_server *srv = j->r.c->srv;

	j->m->fn(&j->r);
	json_object_put(j->r.id);
	json_object_put(j->r.params);
	pthread_mutex_lock(&srv->mu);
	j->r.c->workers--;
	srv->workers--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	free(j);
	return NULL;
}

/* 0 started, 1 over the connection's limit, -1 no thread. */
static int start_worker(struct job *j)
{
	struct acp_server *srv = j->r.c->srv;
	pthread_attr_t at;
	pthread_t t;
	int rc;

	pthread_mutex_lock(&srv->mu);
	if (j->r.c->workers >= ACP_WORKERS_PER_CONN_MAX) {
		pthread_mutex_unlock(&srv->mu);
		return 1;
	}
	j->r.c->workers++;
	srv->workers++;
	pthread_mutex_unlock(&srv->mu);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, ACP_THREAD_STACK);
	rc = pthread_create(&t, &at, worker_main, j);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		pthread_mutex_lock(&srv->mu);
		j->r.c->workers--;
		srv->workers--;
		pthread_cond_broadcast(&srv->cv);
		pthread_mutex_unlock(&srv->mu);
		return -1;
	}
	return 0;
}

static void on_message(struct peer *p, struct jsonrpc_msg *m, void *arg)
{
	struct acp_conn *c = arg;
	const struct method *mt = NULL;
	struct json_object *params;
	bool is_req = m->kind == JSONRPC_REQUEST;
	size_t i;

	for (i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (strcmp(methods[i].name, m->method) == 0)
			mt = &methods[i];
	if (mt == NULL || mt->notification == is_req) {
		/* Unknown notifications are ignored, as ACP asks. */
		if (is_req)
			reply_error(p, m->id, JSONRPC_METHOD_NOT_FOUND, "method not supported: %s",
				    m->method);
		goto out;
	}
	if (!mt->open && c->srv->cfg.auth_token && !c->authenticated) {
		if (is_req)
			reply_error(p, m->id, JSONRPC_AUTH_REQUIRED,
				    "authentication required: call authenticate with method %s first",
				    ACP_AUTH_METHOD);
		goto out;
	}
	if (!mt->open && !c->initialized) {
		if (is_req)
			reply_error(p, m->id, JSONRPC_INVALID_REQUEST,
				    "invalid request: call initialize first");
		goto out;
	}
	params = m->params;
	if (params != NULL && !json_object_is_type(params, json_type_object)) {
		if (is_req)
			reply_error(p, m->id, JSONRPC_INVALID_PARAMS,
				    "invalid params: want an object");
		goto out;
	}
	{
		struct job *j = xcalloc(1, sizeof *j);
		int started;

		j->m = mt;
		j->r.c = c;
		j->r.id = m->id ? json_object_get(m->id) : NULL;
		j->r.params = params ? json_object_get(params) : json_object_new_object();
		started = mt->worker ? start_worker(j) : -2;
		if (started == 0)
			goto out;
		if (started == 1) {
			reply_error(p, m->id, JSONRPC_INTERNAL_ERROR,
				    "too many requests in progress on this connection (limit %d)",
				    ACP_WORKERS_PER_CONN_MAX);
		} else if (started == -1) {
			reply_error(p, m->id, JSONRPC_INTERNAL_ERROR, "cannot start a thread");
		} else {
			mt->fn(&j->r);
		}
		json_object_put(j->r.id);
		json_object_put(j->r.params);
		free(j);
	}
out:
	jsonrpc_msg_free(m);
}

/* ---- server -------------------------------------------------------------------------------- */

struct acp_server *acp_server_new(const struct acp_config *cfg)
{
	struct acp_server *srv = xcalloc(1, sizeof *srv);

	srv->cfg = *cfg;
	pthread_mutex_init(&srv->mu, NULL);
	pthread_cond_init(&srv->cv, NULL);
	return srv;
}

int acp_serve(struct acp_server *srv, struct peer *p, struct sbx_err *e)
{
	struct acp_conn c = {.srv = srv, .p = p};
	struct acp_session *s;
	int rc;

	rc = peer_run(p, on_message, &c, e);
	/* The client is gone: stop what it started; the sessions stay for a later load. */
	pthread_mutex_lock(&srv->mu);
	for (s = srv->sessions; s; s = s->next)
		if (s->turn_conn == &c)
			cancel_locked(s);
	while (c.workers > 0)
		pthread_cond_wait(&srv->cv, &srv->mu);
	pthread_mutex_unlock(&srv->mu);
	peer_free(p);
	return rc;
}

void acp_server_drain(struct acp_server *srv, int64_t drain_ns)
{
	struct acp_session *s;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(drain_ns / 1000000000);
	until.tv_nsec += (long)(drain_ns % 1000000000);
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&srv->mu);
	srv->draining = true;
	while (srv->workers > 0)
		if (pthread_cond_timedwait(&srv->cv, &srv->mu, &until) == ETIMEDOUT)
			break;
	if (srv->workers > 0) {
		srv_log(srv, "cancelling %d running request(s)", srv->workers);
		for (s = srv->sessions; s; s = s->next)
			cancel_locked(s);
	}
	while (srv->workers > 0)
		pthread_cond_wait(&srv->cv, &srv->mu);
	pthread_mutex_unlock(&srv->mu);
}

int acp_server_delete_sandboxes(struct acp_server *srv)
{
	struct acp_session *s;
	struct sbx_err e;
	int failed = 0;

	pthread_mutex_lock(&srv->mu);
	for (s = srv->sessions; s; s = s->next) {
		if (!s->tool_ran)
			continue;
		if (agent_session_delete_sandbox(s->as, &e) < 0) {
			srv_log(srv, "failed to delete sandbox %s: %s", s->id, e.msg);
			failed++;
		} else {
			srv_log(srv, "deleted sandbox %s", s->id);
		}
	}
	pthread_mutex_unlock(&srv->mu);
	return failed;
}

void acp_server_free(struct acp_server *srv)
{
	struct acp_session *s, *next;

	if (srv == NULL)
		return;
	for (s = srv->sessions; s; s = next) {
		next = s->next;
		free_session(s);
	}
	pthread_cond_destroy(&srv->cv);
	pthread_mutex_destroy(&srv->mu);
	free(srv);
}

/* ---- connections ------------------------------------------------------------------------ */

struct conn_arg {
	struct acp_server *srv;
	int fd;				/* -1: standard input and output */
	SSL_CTX *tls;
	char remote[NET_ADDR_MAX];
};

static void *conn_main(void *arg)
{
	struct conn_arg *ca = arg;
	struct acp_server *srv = ca->srv;
	struct peer *p;
	struct sbx_err e;
	SSL *ssl = NULL;
	int slot = -1, i;

	if (ca->tls) {
		ssl = SSL_new(ca->tls);
		SSL_set_fd(ssl, ca->fd);
		SSL_set_accept_state(ssl);
	}
	/* Standard input and output are duplicated: the peer closes its descriptors, and the
	 * program still owns (and flushes) its stdout at exit. */
	p = ca->fd < 0 ? peer_new(fcntl(0, F_DUPFD_CLOEXEC, 3), fcntl(1, F_DUPFD_CLOEXEC, 3), NULL)
		       : peer_new(ca->fd, ca->fd, ssl);
	pthread_mutex_lock(&srv->mu);
	for (i = 0; i < ACP_CONN_MAX && slot < 0; i++)
		if (srv->conns[i] == NULL)
			srv->conns[slot = i] = p;
	pthread_mutex_unlock(&srv->mu);
	srv_log(srv, "client connected remote=\"%s\"", ca->remote);
	if (acp_serve(srv, p, &e) < 0)
		srv_log(srv, "connection error remote=\"%s\": %s", ca->remote, e.msg);
	srv_log(srv, "client disconnected remote=\"%s\"", ca->remote);
	pthread_mutex_lock(&srv->mu);
	if (slot >= 0)
		srv->conns[slot] = NULL;
	srv->nconns--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	if (ca->fd < 0) {
		uint64_t one = 1;
		if (write(srv->stdio_done, &one, sizeof one) < 0) {
			/* the counter is already set */
		}
	}
	free(ca);
	return NULL;
}

static void start_conn(struct acp_server *srv, int fd, SSL_CTX *tls)
{
	struct conn_arg *ca = xcalloc(1, sizeof *ca);
	pthread_attr_t at;
	pthread_t t;

	ca->srv = srv;
	ca->fd = fd;
	ca->tls = tls;
	if (fd < 0)
		snprintf(ca->remote, sizeof ca->remote, "stdio");
	else
		net_peer_addr(fd, ca->remote, sizeof ca->remote);
	pthread_mutex_lock(&srv->mu);
	if (srv->nconns >= ACP_CONN_MAX) {
		pthread_mutex_unlock(&srv->mu);
		srv_log(srv, "refusing connection from %s: %d connections open", ca->remote,
		      ACP_CONN_MAX);
		close(fd);
		free(ca);
		return;
	}
	srv->nconns++;
	pthread_mutex_unlock(&srv->mu);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, ACP_THREAD_STACK);
	if (pthread_create(&t, &at, conn_main, ca) != 0) {
		srv_log(srv, "cannot start a thread for %s", ca->remote);
		if (fd >= 0)
			close(fd);
		free(ca);
		pthread_mutex_lock(&srv->mu);
		srv->nconns--;
		pthread_mutex_unlock(&srv->mu);
	}
	pthread_attr_destroy(&at);
}

int acp_server_run(struct acp_server *srv, int lfd, SSL_CTX *tls, int stop_fd, int64_t drain_ns,
		   struct sbx_err *e)
{
	int i, rc = 0;

	srv->stdio_done = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->stdio_done < 0)
		return err_sys(e, errno, "eventfd");
	if (lfd < 0)
		start_conn(srv, -1, NULL);
	for (;;) {
		struct pollfd fds[3] = {{.fd = stop_fd, .events = POLLIN},
					{.fd = srv->stdio_done, .events = POLLIN},
					{.fd = lfd, .events = POLLIN}};
		int fd;

		if (poll(fds, lfd >= 0 ? 3 : 2, -1) < 0 && errno != EINTR) {
			rc = err_sys(e, errno, "poll");
			break;
		}
		if ((fds[0].revents | fds[1].revents) & POLLIN)
			break;
		if (lfd >= 0 && (fds[2].revents & POLLIN)) {
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				start_conn(srv, fd, tls);
			else if (errno == EMFILE || errno == ENFILE)
				poll(NULL, 0, 100);	/* out of descriptors: do not spin */
		}
	}
	srv_log(srv, "shutting down");
	acp_server_drain(srv, drain_ns);
	pthread_mutex_lock(&srv->mu);
	for (i = 0; i < ACP_CONN_MAX; i++)
		if (srv->conns[i])
			peer_close(srv->conns[i]);
	while (srv->nconns > 0)
		pthread_cond_wait(&srv->cv, &srv->mu);
	pthread_mutex_unlock(&srv->mu);
	close(srv->stdio_done);
	srv->stdio_done = -1;
	return rc;
}
