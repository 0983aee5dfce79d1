/* acpsess.c — ACP sessions: the in-memory registry, ownership (a session is its principal's),
 * attachment (one connection drives it at a time; a load from another takes it over), the
 * claim on a session a turn holds, and session/cancel. The other lifecycle methods:
 * acplifecycle.c; modes and options: acpconfig.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acp_int.h"
#include "jsonfield.h"
#include "llm.h"
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

struct agent_session *acp_open_agent(struct acp_server *srv, const char *id, bool must_exist,
					struct sbx_err *e)
{
	struct agent_config ac = {
		.session = id,
		.max_tool_rounds = srv->cfg.max_tool_rounds,
		.want_usage = true,
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

/* Points the session's tools at the sandbox directory the client's cwd maps to. */
void acp_session_set_cwd(struct acp_session *s, const char *cwd)
{
	if (cwd == NULL || (s->cwd && strcmp(s->cwd, cwd) == 0))
		return;
	free(s->cwd);
	free(s->workdir);
	s->cwd = xstrdup(cwd);
	s->workdir = acptool_workdir(agent_session_homedir(s->as), cwd);
	agent_session_set_workdir(s->as, s->workdir);
}

/* A session for as; rec (may be NULL) its record: mode, model and title come back from it. */
struct acp_session *acp_session_make(struct acp_server *srv, const char *id,
				       struct agent_session *as, const char *principal,
				       struct json_object *rec)
{
	struct acp_session *s = xcalloc(1, sizeof *s);
	const char *m = jsonfield_str(rec, "model");
	struct sbx_err e;

	snprintf(s->id, sizeof s->id, "%s", id);
	s->as = as;
	s->srv = srv;
	s->principal = xstrdup(principal);
	s->cancel_pipe[0] = s->cancel_pipe[1] = -1;
	s->mode = acp_mode_of(jsonfield_str(rec, "mode"));
	if (s->mode == ACP_MODE_COUNT)
		s->mode = ACP_MODE_ASK;
	if (m && strcmp(m, agent_session_model(as)) != 0 &&
	    acp_model_allowed(srv, m, agent_session_model(as)))
		agent_session_set_model(as, m, &e);
	s->model = xstrdup(agent_session_model(as));
	s->titled = jsonfield_str(rec, "title") != NULL;
	return s;
}

struct acp_pathmap acp_session_paths(const struct acp_session *s)
{
	struct acp_pathmap pm = {.client = s->cwd, .sandbox = s->workdir};

	return pm;
}

void acp_session_record(struct acp_server *srv, struct acp_session *s, struct json_object *f)
{
	struct sbx_err e;
	char ts[TIME_BUFSZ];

	if (srv->reg == NULL)
		return;
	json_object_object_add(f, "updated_at",
			       json_object_new_string(time_rfc3339(time_now_ns(), ts, sizeof ts)));
	if (acpreg_put(srv->reg, s->id, f, &e) < 0)
		acp_log(srv, "warning: session %s: %s", s->id, e.msg);
}

void acp_session_free(struct acp_session *s)
{
	size_t i;

	for (i = 0; i < s->nalways; i++)
		free(s->always[i]);
	acp_mcp_free(s);
	free(s->open_call);
	free(s->principal);
	free(s->cwd);
	free(s->workdir);
	free(s->model);
	agent_session_free(s->as);
	json_object_put(s->extra_decls);	/* after the agent that borrowed it */
	free(s);
}

/* ---- attachment --------------------------------------------------------------------------- */

/* Caller holds srv->mu for all of these. */

void acp_attach_locked(struct acp_session *s, struct acp_conn *c)
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

void acp_detach_locked(struct acp_session *s, bool taken_over)
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
			acp_detach_locked(s, false);
	}
}

/* Drops a reference taken outside the lock. True for the last one of a closed session: the
 * caller frees it once the lock is released (freeing stops its MCP servers, which locks). */
bool acp_unref_locked(struct acp_session *s)
{
	s->refs--;
	return s->closed && s->refs == 0 && !s->busy;
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
void acp_session_put(struct acp_server *srv, struct acp_session *s)
{
	bool last;

	pthread_mutex_lock(&srv->mu);
	last = acp_unref_locked(s);
	pthread_mutex_unlock(&srv->mu);
	if (last)
		acp_session_free(s);
}

/* Marks s busy (caller holds srv->mu). */
bool acp_claim_locked(struct acp_server *srv, struct acp_session *s, struct acp_conn *c,
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
	ok = acp_claim_locked(srv, s, c, pipefd, code, why, whysz);
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
	acp_mcp_wake_locked(s);
}

/* ---- session/cancel ---------------------------------------------------------------------- */

void m_session_cancel(const struct req *r)
{
	struct acp_server *srv = r->c->srv;
	const char *id = jsonfield_str(r->params, "sessionId");
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
	acp_session_put(srv, s);
}
