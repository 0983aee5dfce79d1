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

static struct agent_session *open_agent(struct acp_server *srv, const char *id, bool must_exist,
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
static void set_cwd(struct acp_session *s, const char *cwd)
{
	if (cwd == NULL || (s->cwd && strcmp(s->cwd, cwd) == 0))
		return;
	free(s->cwd);
	free(s->workdir);
	s->cwd = xstrdup(cwd);
	s->workdir = acptool_workdir(agent_session_homedir(s->as), cwd);
	agent_session_set_workdir(s->as, s->workdir);
}

static bool model_allowed(const struct acp_server *srv, const char *model, const char *dflt)
{
	char *const *m;

	if (strcmp(model, dflt) == 0)
		return true;
	for (m = srv->cfg.models; m && *m; m++)
		if (strcmp(*m, model) == 0)
			return true;
	return false;
}

static enum acp_mode mode_of(const char *id)
{
	int i;

	for (i = 0; id && i < ACP_MODE_COUNT; i++)
		if (strcmp(acp_modes[i].id, id) == 0)
			return (enum acp_mode)i;
	return ACP_MODE_COUNT;
}

/* A session for as; rec (may be NULL) its record: mode, model and title come back from it. */
static struct acp_session *new_session(struct acp_server *srv, const char *id,
				       struct agent_session *as, const char *principal,
				       struct json_object *rec)
{
	struct acp_session *s = xcalloc(1, sizeof *s);
	const char *m = acp_param_str(rec, "model");
	struct sbx_err e;

	snprintf(s->id, sizeof s->id, "%s", id);
	s->as = as;
	s->srv = srv;
	s->principal = xstrdup(principal);
	s->cancel_pipe[0] = s->cancel_pipe[1] = -1;
	s->mode = mode_of(acp_param_str(rec, "mode"));
	if (s->mode == ACP_MODE_COUNT)
		s->mode = ACP_MODE_ASK;
	if (m && strcmp(m, agent_session_model(as)) != 0 &&
	    model_allowed(srv, m, agent_session_model(as)))
		agent_session_set_model(as, m, &e);
	s->model = xstrdup(agent_session_model(as));
	s->titled = acp_param_str(rec, "title") != NULL;
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

static struct json_object *select_option(const char *id, const char *name, const char *category,
					 const char *current)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "category", json_object_new_string(category));
	json_object_object_add(o, "type", json_object_new_string("select"));
	json_object_object_add(o, "currentValue", json_object_new_string(current));
	json_object_object_add(o, "options", json_object_new_array());
	return o;
}

static void add_value(struct json_object *opt, const char *value, const char *name,
		      const char *desc)
{
	struct json_object *v = json_object_new_object();

	json_object_object_add(v, "value", json_object_new_string(value));
	json_object_object_add(v, "name", json_object_new_string(name));
	if (desc)
		json_object_object_add(v, "description", json_object_new_string(desc));
	json_object_array_add(json_object_object_get(opt, "options"), v);
}

/* The session's config options: its mode and its model. */
static struct json_object *config_options(struct acp_server *srv, struct acp_session *s)
{
	struct json_object *list = json_object_new_array(), *mode, *model;
	const char *dflt = llm_pick_model(srv->cfg.model, NULL);
	char *const *m;
	int i;

	mode = select_option("mode", "Mode", "mode", acp_modes[s->mode].id);
	for (i = 0; i < ACP_MODE_COUNT; i++)
		add_value(mode, acp_modes[i].id, acp_modes[i].name, acp_modes[i].description);
	json_object_array_add(list, mode);
	model = select_option("model", "Model", "model", s->model);
	add_value(model, dflt, dflt, NULL);
	for (m = srv->cfg.models; m && *m; m++)
		if (strcmp(*m, dflt) != 0)
			add_value(model, *m, *m, NULL);
	json_object_array_add(list, model);
	return list;
}

void acp_session_setup_result(struct acp_server *srv, struct acp_session *s,
			      struct json_object *res)
{
	struct json_object *modes = json_object_new_object(), *avail = json_object_new_array();
	int i;

	for (i = 0; i < ACP_MODE_COUNT; i++) {
		struct json_object *m = json_object_new_object();
		json_object_object_add(m, "id", json_object_new_string(acp_modes[i].id));
		json_object_object_add(m, "name", json_object_new_string(acp_modes[i].name));
		json_object_object_add(m, "description",
				       json_object_new_string(acp_modes[i].description));
		json_object_array_add(avail, m);
	}
	json_object_object_add(modes, "currentModeId", json_object_new_string(acp_modes[s->mode].id));
	json_object_object_add(modes, "availableModes", avail);
	json_object_object_add(res, "modes", modes);
	json_object_object_add(res, "configOptions", config_options(srv, s));
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

/* Drops a reference taken outside the lock. True for the last one of a closed session: the
 * caller frees it once the lock is released (freeing stops its MCP servers, which locks). */
static bool unref_locked(struct acp_session *s)
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
static void session_put(struct acp_server *srv, struct acp_session *s)
{
	bool last;

	pthread_mutex_lock(&srv->mu);
	last = unref_locked(s);
	pthread_mutex_unlock(&srv->mu);
	if (last)
		acp_session_free(s);
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
	acp_mcp_wake_locked(s);
}

/* ---- session/new --------------------------------------------------------------------------- */

/* Checks one mcpServers entry; NULL when good, else why not. Only stdio servers are taken
 * (mcpCapabilities advertises neither http nor sse). */
static const char *mcp_entry_bad(struct json_object *m)
{
	struct json_object *v;
	const char *t, *cmd;
	size_t i;

	if (!json_object_is_type(m, json_type_object))
		return "each entry must be an object";
	if ((t = acp_param_str(m, "type")) != NULL && strcmp(t, "stdio") != 0)
		return strcmp(t, "http") == 0 || strcmp(t, "sse") == 0
		       ? "only stdio MCP servers are supported (mcpCapabilities has no http or sse)"
		       : "unknown MCP server type";
	if (acp_param_str(m, "name") == NULL || !*acp_param_str(m, "name"))
		return "a stdio MCP server needs a name";
	if ((cmd = acp_param_str(m, "command")) == NULL || cmd[0] != '/')
		return "a stdio MCP server needs an absolute command";
	if (!json_object_object_get_ex(m, "args", &v) || !json_object_is_type(v, json_type_array))
		return "a stdio MCP server needs args (an array of strings)";
	for (i = 0; i < json_object_array_length(v); i++)
		if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string))
			return "args must be strings";
	if (!json_object_object_get_ex(m, "env", &v) || !json_object_is_type(v, json_type_array))
		return "a stdio MCP server needs env (an array of {name, value})";
	for (i = 0; i < json_object_array_length(v); i++) {
		struct json_object *kv = json_object_array_get_idx(v, i);
		if (acp_param_str(kv, "name") == NULL || acp_param_str(kv, "value") == NULL)
			return "env entries are {name, value} strings";
	}
	return NULL;
}

/* Checks the parameters session/new, load and resume share; false when answered. */
static bool setup_params_ok(const struct req *r, bool mcp_required)
{
	const char *cwd = acp_param_str(r->params, "cwd"), *why;
	struct json_object *mcp;
	size_t i, j, n;

	if (cwd == NULL || cwd[0] != '/') {
		acp_reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: cwd must be an absolute path");
		return false;
	}
	if (!json_object_object_get_ex(r->params, "mcpServers", &mcp) || mcp == NULL) {
		if (!mcp_required)
			return true;
		mcp = NULL;
	}
	if (mcp == NULL || !json_object_is_type(mcp, json_type_array)) {
		acp_reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: mcpServers must be an array");
		return false;
	}
	n = json_object_array_length(mcp);
	if (n > ACP_MCP_SERVERS_MAX) {
		acp_reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: more than %d mcpServers", ACP_MCP_SERVERS_MAX);
		return false;
	}
	for (i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(mcp, i);
		if ((why = mcp_entry_bad(m)) != NULL) {
			acp_reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
					"invalid params: mcpServers[%zu]: %s", i, why);
			return false;
		}
		for (j = 0; j < i; j++)
			if (strcmp(acp_param_str(json_object_array_get_idx(mcp, j), "name"),
				   acp_param_str(m, "name")) == 0) {
				acp_reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
						"invalid params: mcpServers[%zu]: the name \"%s\" "
						"is taken", i, acp_param_str(m, "name"));
				return false;
			}
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

void m_session_new(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	struct agent_session *as = NULL;
	struct acp_session *s;
	struct json_object *res, *f;
	struct sbx_err e;
	char id[ACP_SESSION_ID_LEN + 1];
	int rc = -1;

	if (!setup_params_ok(r, true))
		return;
	pthread_mutex_lock(&srv->mu);
	if (!room_locked(c, r->id, true)) {
		pthread_mutex_unlock(&srv->mu);
		return;
	}
	c->nsessions++;		/* reserved: attached below, or given back */
	pthread_mutex_unlock(&srv->mu);
	if (acp_new_session_id(id, &e) == 0 && (as = open_agent(srv, id, false, &e)) != NULL) {
		s = new_session(srv, id, as, c->principal, NULL);
		set_cwd(s, acp_param_str(r->params, "cwd"));
		acp_mcp_configure(s, json_object_object_get(r->params, "mcpServers"));
		f = json_object_new_object();
		json_object_object_add(f, "principal", json_object_new_string(c->principal));
		json_object_object_add(f, "cwd", json_object_new_string(s->cwd));
		rc = srv->reg ? acpreg_put(srv->reg, id, f, &e) : 0;
		json_object_put(f);
		if (rc < 0)
			acp_session_free(s);
	}
	if (rc < 0) {
		pthread_mutex_lock(&srv->mu);
		c->nsessions--;
		pthread_mutex_unlock(&srv->mu);
		acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
		return;
	}
	pthread_mutex_lock(&srv->mu);
	s->conn = c;
	s->next = srv->sessions;
	srv->sessions = s;
	srv->nsessions++;
	pthread_mutex_unlock(&srv->mu);
	res = json_object_new_object();
	json_object_object_add(res, "sessionId", json_object_new_string(id));
	acp_session_setup_result(srv, s, res);
	acp_reply(c->p, r->id, res);
	acp_send_commands(srv, s, c->p);
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
	{
		struct json_object *rec = acpreg_get(srv->reg, id);
		s = new_session(srv, id, as, owner, rec);
		json_object_put(rec);
	}
	free(owner);
	s->next = srv->sessions;
	srv->sessions = s;
	srv->nsessions++;
	return s;
}

/* Makes c the connection driving s: a turn another connection runs on it is cancelled and
 * waited for, then that connection is told. Caller holds srv->mu; false when answered, with
 * *gone set when s was closed meanwhile and is the caller's to free after unlocking. */
static bool take_over_locked(const struct req *r, struct acp_session *s, struct acp_session **gone)
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
		if (unref_locked(s))	/* closed meanwhile: the last holder frees it */
			*gone = s;
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

/* session/load (replay: the whole conversation as session updates before the answer) and
 * session/resume (no replay): the session taken over by this connection. Runs on a worker. */
static void load_or_resume(const struct req *r, bool replay)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *id = acp_param_str(r->params, "sessionId");
	struct acp_session *s, *gone = NULL;
	struct json_object *hist, *res;
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
	if (!setup_params_ok(r, replay))
		return;
	pthread_mutex_lock(&srv->mu);
	if ((s = loadable_locked(r, id)) == NULL || !take_over_locked(r, s, &gone)) {
		pthread_mutex_unlock(&srv->mu);
		if (gone)
			acp_session_free(gone);
		return;
	}
	if (!claim_locked(srv, s, c, NULL, &code, why, sizeof why)) {
		pthread_mutex_unlock(&srv->mu);
		acp_reply_error(c->p, r->id, code, "%s", why);
		return;
	}
	s->refs++;
	pthread_mutex_unlock(&srv->mu);
	set_cwd(s, acp_param_str(r->params, "cwd"));
	acp_mcp_configure(s, json_object_object_get(r->params, "mcpServers"));
	if (replay) {
		hist = agent_session_history(s->as);
		n = json_object_array_length(hist);
		for (i = 0; i < n && !cut; i++)
			cut = !acp_replay_message(s, c->p, hist, i);
	}
	cut = cut || s->cancel;
	if (!cut) {
		struct json_object *f = json_object_new_object();
		json_object_object_add(f, "cwd", json_object_new_string(s->cwd));
		acp_session_record(srv, s, f);
		json_object_put(f);
	}
	acp_release(srv, s);
	if (cut) {
		acp_reply_no_session(c->p, r->id, s->id, "session \"%s\" was taken over by another "
				     "connection during its replay", s->id);
	} else {
		res = json_object_new_object();
		acp_session_setup_result(srv, s, res);
		acp_reply(c->p, r->id, res);
		acp_send_commands(srv, s, c->p);
	}
	session_put(srv, s);
}

void m_session_load(const struct req *r)
{
	load_or_resume(r, true);
}

void m_session_resume(const struct req *r)
{
	load_or_resume(r, false);
}

/* ---- session/close, session/list -------------------------------------------------------- */

/* session/close: the running turn cancelled (and waited for), the session freed; its history
 * and record stay, so it can be loaded again. */
void m_session_close(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *id = acp_param_str(r->params, "sessionId");
	struct acp_session *s, **sp;
	struct sbx_err e;
	bool closing;

	if (id == NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: sessionId is required");
		return;
	}
	if ((s = acp_session_of(r, id)) == NULL)
		return;
	pthread_mutex_lock(&srv->mu);
	while (s->busy) {
		acp_cancel_locked(s);
		pthread_cond_wait(&srv->cv, &srv->mu);
	}
	closing = s->conn == c && !s->closed;
	if (closing) {
		detach(s, false);
		for (sp = &srv->sessions; *sp; sp = &(*sp)->next)
			if (*sp == s) {
				*sp = s->next;
				break;
			}
		srv->nsessions--;
		s->closed = true;
	}
	pthread_mutex_unlock(&srv->mu);
	/* Out of the registry, so a shutdown would not delete its sandbox: done now (its home
	 * was snapshotted at the end of its last turn, a later load restores it). */
	if (closing && s->tool_ran && agent_session_delete_sandbox(s->as, &e) < 0)
		acp_log(srv, "failed to delete sandbox %s: %s", s->id, e.msg);
	session_put(srv, s);
	acp_reply(c->p, r->id, json_object_new_object());
}

/* Sessions on one page of session/list. */
#define ACP_LIST_PAGE 100

/* session/list: this principal's sessions (of cwd, when given), most recent first, a page at a
 * time (the cursor is the offset). */
void m_session_list(const struct req *r)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *cwd = acp_param_str(r->params, "cwd"), *cursor = acp_param_str(r->params, "cursor");
	struct json_object *all, *out = json_object_new_array(), *res;
	size_t i, n, skip = 0, seen = 0;
	char *end;

	if (cursor) {
		skip = strtoul(cursor, &end, 10);
		if (*cursor == '\0' || *end != '\0') {
			json_object_put(out);
			acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "invalid params: bad cursor");
			return;
		}
	}
	all = srv->reg ? acpreg_list(srv->reg, c->principal) : json_object_new_array();
	n = json_object_array_length(all);
	res = json_object_new_object();
	for (i = 0; i < n; i++) {
		struct json_object *rec = json_object_array_get_idx(all, i), *info;
		const char *rc = acp_param_str(rec, "cwd"), *t = acp_param_str(rec, "title");
		if (rc == NULL || (cwd && strcmp(cwd, rc) != 0))
			continue;
		if (seen++ < skip)
			continue;
		if (json_object_array_length(out) == ACP_LIST_PAGE) {
			char next[32];
			snprintf(next, sizeof next, "%zu", skip + ACP_LIST_PAGE);
			json_object_object_add(res, "nextCursor", json_object_new_string(next));
			break;
		}
		info = json_object_new_object();
		json_object_object_add(info, "sessionId", json_object_new_string(acp_param_str(rec, "id")));
		json_object_object_add(info, "cwd", json_object_new_string(rc));
		if (t)
			json_object_object_add(info, "title", json_object_new_string(t));
		if (acp_param_str(rec, "updated_at"))
			json_object_object_add(info, "updatedAt",
					       json_object_new_string(acp_param_str(rec, "updated_at")));
		json_object_array_add(out, info);
	}
	json_object_object_add(res, "sessions", out);
	json_object_put(all);
	acp_reply(c->p, r->id, res);
}

/* ---- modes and config options ---------------------------------------------------------- */

void acp_send_mode(struct acp_session *s, struct peer *p)
{
	struct json_object *u = json_object_new_object();

	json_object_object_add(u, "sessionUpdate", json_object_new_string("current_mode_update"));
	json_object_object_add(u, "currentModeId", json_object_new_string(acp_modes[s->mode].id));
	acp_send_update(p, s->id, u);
}

void acp_send_options(struct acp_server *srv, struct acp_session *s, struct peer *p)
{
	struct json_object *u = json_object_new_object();

	json_object_object_add(u, "sessionUpdate", json_object_new_string("config_option_update"));
	json_object_object_add(u, "configOptions", config_options(srv, s));
	acp_send_update(p, s->id, u);
}

const char *acp_set_option(struct acp_server *srv, struct acp_session *s, const char *config,
			   const char *value, bool claimed, bool *mode_changed, struct sbx_err *e)
{
	struct json_object *f;
	enum acp_mode m;
	const char *why = NULL;

	*mode_changed = false;
	f = json_object_new_object();
	pthread_mutex_lock(&srv->mu);
	/* The turn reads these: a change waits for no one but takes effect from the next call. */
	if (strcmp(config, "mode") == 0) {
		if ((m = mode_of(value)) == ACP_MODE_COUNT) {
			why = "unknown mode (available: ask, auto-read, never-ask)";
		} else {
			*mode_changed = s->mode != m;
			s->mode = m;
			json_object_object_add(f, "mode", json_object_new_string(value));
		}
	} else if (strcmp(config, "model") == 0) {
		if (!model_allowed(srv, value, llm_pick_model(srv->cfg.model, NULL)))
			why = "that model is not offered (acp-server -models)";
		else if (s->busy && !claimed)
			why = "the session is running a prompt: change the model after it";
		else if (agent_session_set_model(s->as, value, e) < 0)
			why = e->msg;
		else {
			free(s->model);
			s->model = xstrdup(value);
			json_object_object_add(f, "model", json_object_new_string(value));
		}
	} else {
		why = "unknown configId (available: mode, model)";
	}
	pthread_mutex_unlock(&srv->mu);
	if (why == NULL)
		acp_session_record(srv, s, f);
	json_object_put(f);
	return why;
}

void m_session_set_mode(const struct req *r)
{
	struct acp_conn *c = r->c;
	const char *id = acp_param_str(r->params, "sessionId"), *mode = acp_param_str(r->params, "modeId");
	struct acp_session *s;
	struct sbx_err e;
	const char *why;
	bool changed;

	if (id == NULL || mode == NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: sessionId and modeId are required");
		return;
	}
	if ((s = acp_session_of(r, id)) == NULL)
		return;
	if ((why = acp_set_option(c->srv, s, "mode", mode, false, &changed, &e)) != NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "%s: %s", mode, why);
	} else {
		/* The updates first: a client sees the change before the answer. */
		if (changed) {
			acp_send_mode(s, c->p);
			acp_send_options(c->srv, s, c->p);
		}
		acp_reply(c->p, r->id, json_object_new_object());
	}
	session_put(c->srv, s);
}

void m_session_set_config_option(const struct req *r)
{
	struct acp_conn *c = r->c;
	const char *id = acp_param_str(r->params, "sessionId");
	const char *config = acp_param_str(r->params, "configId"), *value = acp_param_str(r->params, "value");
	struct acp_session *s;
	struct json_object *res;
	struct sbx_err e;
	const char *why;
	bool changed;

	if (id == NULL || config == NULL || value == NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS,
				"invalid params: sessionId, configId and a value id are required");
		return;
	}
	if ((s = acp_session_of(r, id)) == NULL)
		return;
	if ((why = acp_set_option(c->srv, s, config, value, false, &changed, &e)) != NULL) {
		acp_reply_error(c->p, r->id, JSONRPC_INVALID_PARAMS, "%s %s: %s", config, value, why);
	} else {
		if (changed)
			acp_send_mode(s, c->p);
		res = json_object_new_object();
		json_object_object_add(res, "configOptions", config_options(c->srv, s));
		acp_reply(c->p, r->id, res);
	}
	session_put(c->srv, s);
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
