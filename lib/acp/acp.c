/* acp.c — the ACP server: initialize and authenticate, the method table (each request to its
 * handler, long ones on threads of their own), the server's life (new, drain, free). Its
 * listener and connections: acplisten.c; sessions: acpsess.c; turns: acpturn.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>


#include "acp_int.h"
#include "gojson.h"
#include "jsonfield.h"
#include "llm.h"
#include "timeutil.h"
#include "toolset.h"
#include "xalloc.h"

const char *acp_tool_kind(const char *name)
{
	return toolset_tool_kind(name);
}

/* ---- initialize, authenticate ------------------------------------------------------------ */

static void m_initialize(const struct req *r)
{
	struct acp_server *srv = r->c->srv;
	struct json_object *res = json_object_new_object(), *caps, *pc, *info, *methods, *m, *v;
	struct json_object *cc, *sess;
	int64_t version = ACP_PROTOCOL_VERSION;

	if (json_object_object_get_ex(r->params, "protocolVersion", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
		    json_object_get_int64(v) > 65535) {
			json_object_put(res);
			acp_reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
					"invalid params: protocolVersion must be an integer");
			return;
		}
		/* Never answer higher than asked; below 1 there is nothing we speak. */
		if (json_object_get_int64(v) < version && json_object_get_int64(v) >= 1)
			version = json_object_get_int64(v);
	}
	if (json_object_object_get_ex(r->params, "clientCapabilities", &cc)) {
		struct json_object *fs;
		pthread_mutex_lock(&srv->mu);
		r->c->notices = json_object_object_get_ex(cc, "session", &sess) &&
				json_object_object_get_ex(sess, "notices", &v) &&
				json_object_is_type(v, json_type_object);
		r->c->fs_read = json_object_object_get_ex(cc, "fs", &fs) &&
				json_object_object_get_ex(fs, "readTextFile", &v) &&
				json_object_get_boolean(v);
		pthread_mutex_unlock(&srv->mu);
	}
	pthread_mutex_lock(&srv->mu);
	r->c->initialized = true;
	if (srv->cfg.auth == NULL) {
		/* Without authentication, initializing is what keeps the connection open. */
		r->c->deadline = 0;
		r->c->admitted = true;
	}
	pthread_mutex_unlock(&srv->mu);
	json_object_object_add(res, "protocolVersion", json_object_new_int64(version));
	caps = json_object_new_object();
	json_object_object_add(caps, "loadSession", json_object_new_boolean(1));
	pc = json_object_new_object();
	/* Images only when the model takes them; resources always become context. */
	json_object_object_add(pc, "image", json_object_new_boolean(
		acp_model_images(srv, llm_pick_model(srv->cfg.model, NULL))));
	json_object_object_add(pc, "audio", json_object_new_boolean(0));
	json_object_object_add(pc, "embeddedContext", json_object_new_boolean(1));
	json_object_object_add(caps, "promptCapabilities", pc);
	pc = json_object_new_object();
	json_object_object_add(pc, "http", json_object_new_boolean(0));
	json_object_object_add(pc, "sse", json_object_new_boolean(0));
	json_object_object_add(caps, "mcpCapabilities", pc);
	pc = json_object_new_object();
	json_object_object_add(pc, "list", json_object_new_object());
	json_object_object_add(pc, "close", json_object_new_object());
	json_object_object_add(pc, "resume", json_object_new_object());
	json_object_object_add(caps, "sessionCapabilities", pc);
	json_object_object_add(res, "agentCapabilities", caps);
	methods = json_object_new_array();
	if (srv->cfg.auth) {
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
	acp_reply(r->c->p, r->id, res);
}

/* A wrong or missing token: counted for the connection and for its source address. */
static void auth_failed(struct acp_conn *c, struct json_object *id, const char *why)
{
	struct acp_server *srv = c->srv;
	int64_t block = 0;
	int count = 0;

	c->auth_failures++;
	if (srv->guard && c->source[0])
		block = acp_guard_fail(srv->guard, c->source, time_mono_ns(), &count);
	acp_log(srv, "failed authentication remote=\"%s\" (%d from %s in the last minute): %s",
		c->remote, count, c->source, why);
	acp_reply_error(c->p, id, JSONRPC_AUTH_REQUIRED, "authentication failed: %s", why);
	if (block > 0) {
		acp_log(srv, "blocking %s for %llds after %d failed authentications", c->source,
			(long long)(block / 1000000000), srv->cfg.auth_fails_per_min);
		peer_close(c->p);
	} else if (c->auth_failures >= ACP_AUTH_FAILURES_MAX) {
		acp_log(srv, "closing connection remote=\"%s\" after %d failed authentications",
			c->remote, c->auth_failures);
		peer_close(c->p);
	}
}

/* Answers (and closes) an authentication that gets no comparison: its source is blocked, or it
 * failed lately while the server-wide bucket is empty. */
static bool auth_refused(struct acp_conn *c, struct json_object *id)
{
	struct acp_server *srv = c->srv;
	int64_t wait, now = time_mono_ns();
	bool log;

	if (srv->guard == NULL || c->source[0] == '\0')
		return false;
	/* A blocked source gets no comparison at all, however many connections it holds open. */
	if (acp_guard_blocked(srv->guard, c->source, now, &wait)) {
		acp_reply_error(c->p, id, JSONRPC_AUTH_REQUIRED,
				"authentication failed: too many failed authentications from %s; "
				"try again in %llds", c->source, (long long)(wait / 1000000000 + 1));
		peer_close(c->p);
		return true;
	}
	/* Guessing is bounded server-wide too: past the bucket, a source that failed lately is
	 * answered without a comparison (one that did not is still heard). */
	if (acp_guard_may_try(srv->guard, c->source, now, &wait))
		return false;
	pthread_mutex_lock(&srv->mu);
	/* A flood of refusals must not become a flood of log lines: one a second. */
	if ((log = now - srv->refusal_logged >= 1000000000 || srv->refusal_logged == 0))
		srv->refusal_logged = now;
	pthread_mutex_unlock(&srv->mu);
	if (log)
		acp_log(srv, "refusing authentication remote=\"%s\": more than %d failed "
			"authentications a second on this server", c->remote, srv->cfg.auth_fails_per_s);
	acp_reply_error(c->p, id, JSONRPC_AUTH_REQUIRED,
			"authentication failed: too many failed authentications on this server; "
			"try again in %lldms", (long long)(wait / 1000000 + 1));
	peer_close(c->p);
	return true;
}

static void m_authenticate(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *method = jsonfield_str(r->params, "methodId"), *token = NULL, *who;
	struct json_object *meta;

	if (srv->cfg.auth == NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_METHOD_NOT_FOUND,
				"method not supported: authenticate");
		return;
	}
	if (method == NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: methodId is required");
		return;
	}
	if (strcmp(method, ACP_AUTH_METHOD) != 0) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
				"unknown authentication method \"%s\" (available: %s)", method,
				ACP_AUTH_METHOD);
		return;
	}
	if (auth_refused(c, r->id))
		return;
	if (json_object_object_get_ex(r->params, "_meta", &meta))
		token = jsonfield_str(meta, "token");
	if (token == NULL) {
		auth_failed(c, r->id, "no token in _meta.token");
		return;
	}
	if ((who = acp_auth_check(srv->cfg.auth, token)) == NULL) {
		auth_failed(c, r->id, "wrong token");
		return;
	}
	if (c->authenticated && strcmp(who, c->principal) != 0) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_REQUEST,
				"this connection is authenticated as \"%s\": open another connection "
				"for \"%s\"", c->principal, who);
		return;
	}
	pthread_mutex_lock(&srv->mu);
	c->authenticated = true;
	c->admitted = true;
	c->principal = who;
	c->deadline = 0;
	pthread_mutex_unlock(&srv->mu);
	acp_log(srv, "authenticated remote=\"%s\" principal=\"%s\"", c->remote, who);
	acp_reply(c->p, r->id, json_object_new_object());
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
	{.name = "initialize", .fn = m_initialize, .open = true},
	{.name = "authenticate", .fn = m_authenticate, .open = true},
	{.name = "session/new", .fn = m_session_new},
	{.name = "session/load", .fn = m_session_load, .worker = true},
	{.name = "session/resume", .fn = m_session_resume, .worker = true},
	{.name = "session/close", .fn = m_session_close, .worker = true},
	{.name = "session/list", .fn = m_session_list},
	{.name = "session/set_mode", .fn = m_session_set_mode},
	{.name = "session/set_config_option", .fn = m_session_set_config_option},
	{.name = "session/prompt", .fn = m_session_prompt, .worker = true},
	{.name = "session/cancel", .fn = m_session_cancel, .notification = true},
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
			acp_reply_error(p, m->id, JSONRPC_METHOD_NOT_FOUND,
					"method not supported: %s", m->method);
		goto out;
	}
	if (!mt->open && c->srv->cfg.auth && !c->authenticated) {
		if (is_req)
			acp_reply_error(p, m->id, JSONRPC_AUTH_REQUIRED,
					"authentication required: call authenticate with method %s "
					"first", ACP_AUTH_METHOD);
		goto out;
	}
	if (!mt->open && !c->initialized) {
		if (is_req)
			acp_reply_error(p, m->id, JSONRPC_INVALID_REQUEST,
					"invalid request: call initialize first");
		goto out;
	}
	params = m->params;
	if (params != NULL && !json_object_is_type(params, json_type_object)) {
		if (is_req)
			acp_reply_error(p, m->id, JSONRPC_INVALID_PARAMS,
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
			acp_reply_error(p, m->id, JSONRPC_INTERNAL_ERROR,
					"too many requests in progress on this connection (limit %d)",
					ACP_WORKERS_PER_CONN_MAX);
		} else if (started == -1) {
			acp_reply_error(p, m->id, JSONRPC_INTERNAL_ERROR, "cannot start a thread");
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

struct acp_server *acp_server_new(const struct acp_config *cfg, struct sbx_err *e)
{
	struct acp_server *srv = xcalloc(1, sizeof *srv);

	srv->cfg = *cfg;
	if (srv->cfg.anon_principal == NULL)
		srv->cfg.anon_principal = ACP_PRINCIPAL_ANONYMOUS;
	srv->stdio_done = srv->wakefd = -1;
	pthread_mutex_init(&srv->mu, NULL);
	pthread_cond_init(&srv->cv, NULL);
	if (cfg->state_dir) {
		char *path = xasprintf("%s/sessions.jsonl", cfg->state_dir);
		srv->reg = acpreg_open(path, e);
		free(path);
		if (srv->reg == NULL) {
			acp_server_free(srv);
			return NULL;
		}
	}
	srv->guard = acp_guard_new(cfg->conns_per_source, cfg->auth_fails_per_min);
	acp_guard_set_rate(srv->guard, cfg->auth_fails_per_s);
	return srv;
}

int acp_server_import(struct acp_server *srv, const char *id, const char *principal,
		      struct sbx_err *e)
{
	struct json_object *f;
	char ts[TIME_BUFSZ];
	int rc;

	if (name_check(id, e) < 0)
		return err_prefix(e, "invalid session name \"%s\"", id);
	if (srv->reg == NULL)
		return err_set(e, SBX_EINVAL, "no state directory to record sessions in");
	f = json_object_new_object();
	json_object_object_add(f, "principal", json_object_new_string(principal));
	json_object_object_add(f, "imported", json_object_new_string(
		time_rfc3339(time_now_ns(), ts, sizeof ts)));
	rc = acpreg_put(srv->reg, id, f, e);
	json_object_put(f);
	return rc;
}

/* The connection's state, created for p; NULL remote: a connection without a known peer. */
struct acp_conn *acp_conn_new(struct acp_server *srv, struct peer *p, const char *remote)
{
	struct acp_conn *c = xcalloc(1, sizeof *c);

	c->srv = srv;
	c->p = p;
	c->slot = -1;
	snprintf(c->remote, sizeof c->remote, "%s", remote ? remote : "");
	if (srv->cfg.auth == NULL)
		c->principal = srv->cfg.anon_principal;
	return c;
}

/* Runs c until its peer ends; then stops what it started and detaches its sessions (they stay
 * for a later load). Frees the peer. */
int acp_conn_serve(struct acp_conn *c, struct sbx_err *e)
{
	struct acp_server *srv = c->srv;
	int rc = peer_run(c->p, on_message, c, e);
	struct peer *p;

	pthread_mutex_lock(&srv->mu);
	acp_detach_all(c);
	while (c->workers > 0)
		pthread_cond_wait(&srv->cv, &srv->mu);
	/* Out of reach of the deadline and shutdown loops before it goes. */
	p = c->p;
	c->p = NULL;
	c->deadline = 0;
	pthread_mutex_unlock(&srv->mu);
	peer_free(p);
	return rc;
}

int acp_serve(struct acp_server *srv, struct peer *p, struct sbx_err *e)
{
	struct acp_conn *c = acp_conn_new(srv, p, NULL);
	int rc = acp_conn_serve(c, e);

	free(c);
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
		acp_log(srv, "cancelling %d running request(s)", srv->workers);
		for (s = srv->sessions; s; s = s->next)
			acp_cancel_locked(s);
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
			acp_log(srv, "failed to delete sandbox %s: %s", s->id, e.msg);
			failed++;
		} else {
			acp_log(srv, "deleted sandbox %s", s->id);
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
		acp_session_free(s);
	}
	acpreg_free(srv->reg);
	acp_guard_free(srv->guard);
	pthread_cond_destroy(&srv->cv);
	pthread_mutex_destroy(&srv->mu);
	free(srv);
}

