/* acpsess.c — sessions: the in-memory registry, ownership (a session is its principal's) and
 * attachment (one connection drives it at a time; a load from another takes it over), and
 * the lifecycle methods session/new, session/load and session/cancel. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acp_int.h"
#include "timeutil.h"
#include "xalloc.h"

struct acp_session *acp_find_session(struct acp_server *srv, const char *id)
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

	acp_log(srv, "%s%s", level == AGENT_LOG_WARN ? "warning: " : "", msg);
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

static struct acp_session *new_session(const char *id, struct agent_session *as,
				       const char *principal)
{
	struct acp_session *s = xcalloc(1, sizeof *s);

	snprintf(s->id, sizeof s->id, "%s", id);
	s->as = as;
	s->principal = xstrdup(principal);
	s->cancel_pipe[0] = s->cancel_pipe[1] = -1;
	return s;
}

void acp_session_free(struct acp_session *s)
{
	size_t i;

	for (i = 0; i < s->nalways; i++)
		free(s->always[i]);
	free(s->open_call);
	free(s->principal);
	agent_session_free(s->as);
	free(s);
}

/* ---- attachment --------------------------------------------------------------------------- */

/* Caller holds srv->mu for all of these. */

static void attach(struct acp_session *s, struct acp_conn *c)
{
	s->conn = c;
	c->nsessions++;
}

/* The connection that drove s is told it no longer does (another connection loaded it). */
static void tell_taken_over(struct acp_conn *old, const char *sid)
{
	struct json_object *params = json_object_new_object(), *u;

	json_object_object_add(params, "sessionId", json_object_new_string(sid));
	peer_send(old->p, jsonrpc_notification_line("_sbx/session_taken_over", params));
	json_object_put(params);
	if (old->notices) {
		u = json_object_new_object();
		json_object_object_add(u, "sessionUpdate", json_object_new_string("notice"));
		json_object_object_add(u, "severity", json_object_new_string("warning"));
		json_object_object_add(u, "title", json_object_new_string(
			"This session was opened by another connection"));
		json_object_object_add(u, "description", json_object_new_string(
			"Load it again (session/load) to take it back."));
		acp_send_update(old->p, sid, u);
	}
}

static void detach(struct acp_session *s, bool taken_over)
{
	struct acp_conn *old = s->conn;

	if (old == NULL)
		return;
	old->nsessions--;
	s->conn = NULL;
	if (taken_over && old->p)
		tell_taken_over(old, s->id);
}

void acp_detach_all(struct acp_conn *c)
{
	struct acp_session *s;

	for (s = c->srv->sessions; s; s = s->next) {
		if (s->turn_conn == c)
			acp_cancel_locked(s);
		if (s->conn == c)
			detach(s, false);
	}
}

/* Drops a reference taken outside the lock; a closed session goes with the last one. */
static void unref_locked(struct acp_session *s)
{
	s->refs--;
	if (s->closed && s->refs == 0 && !s->busy)
		acp_session_free(s);
}

struct acp_session *acp_session_of(const struct req *r, const char *id)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	struct acp_session *s;

	pthread_mutex_lock(&srv->mu);
	s = acp_find_session(srv, id);
	if (s == NULL || strcmp(s->principal, c->principal) != 0) {
		pthread_mutex_unlock(&srv->mu);
		/* Another principal's session is answered exactly as one that does not exist. */
		if (r->id)
			acp_reply_no_session(c->p, r->id, id,
					     "unknown sessionId \"%s\" (create one with session/new)", id);
		return NULL;
	}
	if (s->conn != c) {
		pthread_mutex_unlock(&srv->mu);
		if (r->id)
			acp_reply_no_session(c->p, r->id, id, "session \"%s\" is not open on this "
					     "connection (it was taken over, or never loaded here): "
					     "session/load it first", id);
		return NULL;
	}
	s->refs++;
	pthread_mutex_unlock(&srv->mu);
	return s;
}

/* The matching release of acp_session_of. */
static void session_put(struct acp_server *srv, struct acp_session *s)
{
	pthread_mutex_lock(&srv->mu);
	unref_locked(s);
	pthread_mutex_unlock(&srv->mu);
}

/* Marks s busy (caller holds srv->mu). */
static bool claim_locked(struct acp_server *srv, struct acp_session *s, struct acp_conn *c,
			 const int pipefd[2], int *code, char *why, size_t whysz)
{
	if (s->closed || s->conn != c) {
		*code = JSONRPC_NOT_FOUND;
		snprintf(why, whysz, "session \"%s\" is not open on this connection", s->id);
	} else if (s->busy) {
		*code = JSONRPC_INVALID_PARAMS;
		snprintf(why, whysz, "session \"%s\" is already processing a prompt", s->id);
	} else if (peer_closed(c->p)) {
		*code = JSONRPC_INTERNAL_ERROR;
		snprintf(why, whysz, "connection closed");
	} else if (srv->draining) {
		*code = JSONRPC_INTERNAL_ERROR;
		snprintf(why, whysz, "the server is shutting down");
	} else {
		s->busy = true;
		s->turn_conn = c;
		s->out = c->p;
		s->cancel = 0;
		s->cancel_pipe[0] = pipefd ? pipefd[0] : -1;
		s->cancel_pipe[1] = pipefd ? pipefd[1] : -1;
		return true;
	}
	return false;
}

bool acp_claim(struct acp_server *srv, struct acp_session *s, struct acp_conn *c,
	       const int pipefd[2], int *code, char *why, size_t whysz)
{
	bool ok;

	pthread_mutex_lock(&srv->mu);
	ok = claim_locked(srv, s, c, pipefd, code, why, whysz);
	pthread_mutex_unlock(&srv->mu);
	return ok;
}

void acp_release(struct acp_server *srv, struct acp_session *s)
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
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
}

void acp_cancel_locked(struct acp_session *s)
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

/* ---- session/new --------------------------------------------------------------------------- */

/* Checks the parameters session/new and session/load share; false when answered. */
static bool setup_params_ok(const struct req *r)
{
	const char *cwd = acp_param_str(r->params, "cwd");
	struct json_object *mcp;

	if (cwd == NULL || cwd[0] != '/') {
		acp_reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: cwd must be an absolute path");
		return false;
	}
	if (!json_object_object_get_ex(r->params, "mcpServers", &mcp) ||
	    !json_object_is_type(mcp, json_type_array)) {
		acp_reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: mcpServers must be an array");
		return false;
	}
	return true;
}

/* The limits a new attachment of c must respect; answers and returns false when over. */
static bool room_locked(struct acp_conn *c, struct json_object *id, bool new_session)
{
	struct acp_server *srv = c->srv;

	if (c->nsessions >= ACP_SESSIONS_PER_CONN_MAX) {
		acp_reply_error(c->p, id, JSONRPC_INVALID_REQUEST,
				"too many sessions on this connection (limit %d)",
				ACP_SESSIONS_PER_CONN_MAX);
		return false;
	}
	if (new_session && srv->nsessions >= ACP_SESSIONS_MAX) {
		acp_reply_error(c->p, id, JSONRPC_INTERNAL_ERROR,
				"too many sessions on this server (limit %d)", ACP_SESSIONS_MAX);
		return false;
	}
	return true;
}

/* Records id as issued to principal, with its cwd. */
static int record(struct acp_server *srv, const char *id, const char *principal, const char *cwd,
		  struct sbx_err *e)
{
	struct json_object *f;
	char ts[TIME_BUFSZ];
	int rc;

	if (srv->reg == NULL)
		return 0;
	f = json_object_new_object();
	if (principal)
		json_object_object_add(f, "principal", json_object_new_string(principal));
	if (cwd)
		json_object_object_add(f, "cwd", json_object_new_string(cwd));
	json_object_object_add(f, "updated_at",
			       json_object_new_string(time_rfc3339(time_now_ns(), ts, sizeof ts)));
	rc = acpreg_put(srv->reg, id, f, e);
	json_object_put(f);
	return rc;
}

void m_session_new(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	struct agent_session *as = NULL;
	struct acp_session *s;
	struct json_object *res;
	struct sbx_err e;
	char id[ACP_SESSION_ID_LEN + 1];

	if (!setup_params_ok(r))
		return;
	pthread_mutex_lock(&srv->mu);
	if (!room_locked(c, r->id, true)) {
		pthread_mutex_unlock(&srv->mu);
		return;
	}
	c->nsessions++;		/* reserved: attached below, or given back */
	pthread_mutex_unlock(&srv->mu);
	if (acp_new_session_id(id, &e) < 0 || (as = open_agent(srv, id, false, &e)) == NULL ||
	    record(srv, id, c->principal, acp_param_str(r->params, "cwd"), &e) < 0) {
		agent_session_free(as);
		pthread_mutex_lock(&srv->mu);
		c->nsessions--;
		pthread_mutex_unlock(&srv->mu);
		acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
		return;
	}
	s = new_session(id, as, c->principal);
	pthread_mutex_lock(&srv->mu);
	s->conn = c;
	s->next = srv->sessions;
	srv->sessions = s;
	srv->nsessions++;
	pthread_mutex_unlock(&srv->mu);
	res = json_object_new_object();
	json_object_object_add(res, "sessionId", json_object_new_string(id));
	acp_reply(c->p, r->id, res);
}

/* ---- session/load -------------------------------------------------------------------------- */

/* The session id of a load, in memory or read from its history if the principal of c owns it.
 * Caller holds srv->mu; NULL when answered. */
static struct acp_session *loadable_locked(const struct req *r, const char *id)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	struct acp_session *s = acp_find_session(srv, id);
	struct agent_session *as;
	struct sbx_err e;
	char *owner;

	if (s) {
		if (strcmp(s->principal, c->principal) == 0)
			return s;
		acp_reply_no_session(c->p, r->id, id, "unknown sessionId \"%s\"", id);
		return NULL;
	}
	/* Only a session this server issued (or the operator imported), to this principal. */
	owner = srv->reg ? acpreg_owner(srv->reg, id) : NULL;
	if (owner == NULL || strcmp(owner, c->principal) != 0) {
		free(owner);
		acp_reply_no_session(c->p, r->id, id, "unknown sessionId \"%s\"", id);
		return NULL;
	}
	if (srv->nsessions >= ACP_SESSIONS_MAX) {
		free(owner);
		acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR,
				"too many sessions on this server (limit %d)", ACP_SESSIONS_MAX);
		return NULL;
	}
	/* Built under the registry lock, as upstream, so two loads make one session. */
	if ((as = open_agent(srv, id, true, &e)) == NULL) {
		free(owner);
		if (e.code == SBX_ENOTFOUND)
			acp_reply_no_session(c->p, r->id, id, "unknown sessionId \"%s\"", id);
		else
			acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
		return NULL;
	}
	s = new_session(id, as, owner);
	free(owner);
	s->next = srv->sessions;
	srv->sessions = s;
	srv->nsessions++;
	return s;
}

/* Makes c the connection driving s: a turn another connection runs on it is cancelled and
 * waited for, then that connection is told. Caller holds srv->mu; false when answered. */
static bool take_over_locked(const struct req *r, struct acp_session *s)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	struct timespec until;
	bool timed_out = false;
	int64_t ns = ACP_TAKEOVER_WAIT_NS;

	if (s->conn == c) {
		if (!s->busy)
			return true;
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
				"session \"%s\" is already processing a prompt", s->id);
		return false;
	}
	if (!room_locked(c, r->id, false))
		return false;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(ns / 1000000000);
	s->refs++;
	while (s->busy && !s->closed && !timed_out) {
		acp_cancel_locked(s);
		timed_out = pthread_cond_timedwait(&srv->cv, &srv->mu, &until) == ETIMEDOUT;
	}
	if (s->closed) {
		acp_reply_no_session(c->p, r->id, s->id, "unknown sessionId \"%s\"", s->id);
		unref_locked(s);	/* closed meanwhile: the last holder frees it */
		return false;
	}
	s->refs--;
	if (s->busy) {
		acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR,
				"session \"%s\" is busy: its running turn did not stop in time", s->id);
		return false;
	}
	if (s->conn == c)
		return true;	/* another load of ours won the race */
	if (!room_locked(c, r->id, false))
		return false;
	if (s->conn)
		acp_log(srv, "session %s taken over by remote=\"%s\" from remote=\"%s\"", s->id,
			c->remote, s->conn->remote);
	detach(s, true);
	attach(s, c);
	return true;
}

/* session/load: replays the history as chunks, then answers {}. Runs on a worker. */
void m_session_load(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *id = acp_param_str(r->params, "sessionId");
	struct acp_session *s;
	struct json_object *hist;
	struct sbx_err e;
	char why[256];
	size_t i, n;
	bool cut = false;
	int code;

	if (id == NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: sessionId is required");
		return;
	}
	/* The id becomes a directory name: the name rule keeps it inside the state root. */
	if (name_check(id, &e) < 0) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "invalid sessionId: %s", e.msg);
		return;
	}
	if (!setup_params_ok(r))
		return;
	pthread_mutex_lock(&srv->mu);
	if ((s = loadable_locked(r, id)) == NULL || !take_over_locked(r, s)) {
		pthread_mutex_unlock(&srv->mu);
		return;
	}
	if (!claim_locked(srv, s, c, NULL, &code, why, sizeof why)) {
		pthread_mutex_unlock(&srv->mu);
		acp_reply_error(c->p, r->id, code, "%s", why);
		return;
	}
	s->refs++;
	pthread_mutex_unlock(&srv->mu);
	hist = agent_session_history(s->as);
	n = json_object_array_length(hist);
	for (i = 0; i < n && !cut; i++) {
		struct json_object *m = json_object_array_get_idx(hist, i), *v;
		const char *role = acp_param_str(m, "role"), *kind;
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
		if (!peer_wait_room(c->p, PEER_OUTQ_MAX / 4) || s->cancel)
			cut = true;
		text = xasprintf("%s\n", json_object_get_string(v));
		if (!cut)
			acp_send_chunk(c->p, s->id, kind, text, strlen(text));
		free(text);
	}
	cut = cut || s->cancel;
	acp_release(srv, s);
	if (cut)
		acp_reply_no_session(c->p, r->id, s->id, "session \"%s\" was taken over by another "
				     "connection during its replay", s->id);
	else
		acp_reply(c->p, r->id, json_object_new_object());
	session_put(srv, s);
}

/* ---- session/cancel ---------------------------------------------------------------------- */

void m_session_cancel(const struct req *r)
{
	struct acp_server *srv = r->c->srv;
	const char *id = acp_param_str(r->params, "sessionId");
	struct acp_session *s;

	if (id == NULL)
		return;	/* a notification gets no answer, not even an error */
	pthread_mutex_lock(&srv->mu);
	/* Only the connection driving the session may cancel its turn. */
	if ((s = acp_find_session(srv, id)) != NULL && s->conn == r->c)
		acp_cancel_locked(s);
	pthread_mutex_unlock(&srv->mu);
}

void acp_session_done(struct acp_server *srv, struct acp_session *s)
{
	session_put(srv, s);
}
