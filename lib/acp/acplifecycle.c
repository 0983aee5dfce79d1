/* acplifecycle.c — the ACP session lifecycle methods: session/new (with its mcpServers),
 * session/load and session/resume (a session another connection holds is taken over),
 * session/close and session/list. */
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
	if ((t = jsonfield_str(m, "type")) != NULL && strcmp(t, "stdio") != 0)
		return strcmp(t, "http") == 0 || strcmp(t, "sse") == 0
		       ? "only stdio MCP servers are supported (mcpCapabilities has no http or sse)"
		       : "unknown MCP server type";
	if (jsonfield_str(m, "name") == NULL || !*jsonfield_str(m, "name"))
		return "a stdio MCP server needs a name";
	if ((cmd = jsonfield_str(m, "command")) == NULL || cmd[0] != '/')
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
		if (jsonfield_str(kv, "name") == NULL || jsonfield_str(kv, "value") == NULL)
			return "env entries are {name, value} strings";
	}
	return NULL;
}

/* Checks the parameters session/new, load and resume share; false when answered. */
static bool setup_params_ok(const struct req *r, bool mcp_required)
{
	const char *cwd = jsonfield_str(r->params, "cwd"), *why;
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
			if (strcmp(jsonfield_str(json_object_array_get_idx(mcp, j), "name"),
				   jsonfield_str(m, "name")) == 0) {
				acp_reply_error(r->c->p, r->id, JSONRPC_INVALID_PARAMS,
						"invalid params: mcpServers[%zu]: the name \"%s\" "
						"is taken", i, jsonfield_str(m, "name"));
				return false;
			}
	}
	return true;
}

/* Closes principal's detached, idle session loaded or made longest ago (the list is newest
 * first), as session/close would: out of the registry, its history kept for a later load. It
 * goes on srv->retired for acp_finish_retired. Caller holds srv->mu; false when none. */
static bool retire_locked(struct acp_server *srv, const char *principal)
{
	struct acp_session *s, *pick = NULL, **sp;

	for (s = srv->sessions; s; s = s->next)
		if (strcmp(s->principal, principal) == 0 && s->conn == NULL && !s->busy && s->refs == 0)
			pick = s;
	if (pick == NULL)
		return false;
	for (sp = &srv->sessions; *sp; sp = &(*sp)->next)
		if (*sp == pick) {
			*sp = pick->next;
			break;
		}
	srv->nsessions--;
	pick->closed = true;
	pick->refs++;
	pick->next = srv->retired;
	srv->retired = pick;
	return true;
}

/* Deletes the sandboxes of sessions retire_locked closed and lets them go. */
static void finish_retired(struct acp_server *srv)
{
	struct acp_session *s, *next;
	struct sbx_err e;

	pthread_mutex_lock(&srv->mu);
	s = srv->retired;
	srv->retired = NULL;
	pthread_mutex_unlock(&srv->mu);
	for (; s; s = next) {
		next = s->next;
		acp_log(srv, "closed idle session %s of principal \"%s\" to make room (-max-sessions)",
			s->id, s->principal);
		if (s->tool_ran && agent_session_delete_sandbox(s->as, &e) < 0)
			acp_log(srv, "failed to delete sandbox %s: %s", s->id, e.msg);
		acp_session_put(srv, s);
	}
}

/* Whether principal holds its cap of live sessions (each may hold a sandbox): those in memory
 * and those being made on any connection. A detached, idle one is closed to make room first,
 * so only sessions in use count against a principal. Caller holds srv->mu. */
static bool principal_full_locked(struct acp_server *srv, const char *principal)
{
	int max = srv->cfg.max_sessions > 0 ? srv->cfg.max_sessions : ACP_SESSIONS_MAX, n = 0, i;
	struct acp_session *s;

	for (s = srv->sessions; s; s = s->next)
		n += strcmp(s->principal, principal) == 0;
	for (i = 0; i < ACP_CONN_SLOTS; i++)
		if (srv->conns[i] && srv->conns[i]->principal &&
		    strcmp(srv->conns[i]->principal, principal) == 0)
			n += srv->conns[i]->making;
	return n >= max && !retire_locked(srv, principal);
}

/* The answer to a principal over its cap of live sessions. */
static void reply_principal_full(struct acp_conn *c, struct json_object *id)
{
	acp_reply_error(c->p, id, JSONRPC_INVALID_REQUEST,
			"too many live sessions for principal \"%s\" (limit %d, acp-server "
			"-max-sessions), all in use: close one with session/close first", c->principal,
			c->srv->cfg.max_sessions > 0 ? c->srv->cfg.max_sessions : ACP_SESSIONS_MAX);
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
	if (new_session && principal_full_locked(srv, c->principal)) {
		reply_principal_full(c, id);
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
	c->making++;
	pthread_mutex_unlock(&srv->mu);
	finish_retired(srv);
	if (acp_new_session_id(id, &e) == 0 && (as = acp_open_agent(srv, id, false, &e)) != NULL) {
		s = acp_session_make(srv, id, as, c->principal, NULL);
		acp_session_set_cwd(s, jsonfield_str(r->params, "cwd"));
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
		c->making--;
		pthread_mutex_unlock(&srv->mu);
		acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
		return;
	}
	pthread_mutex_lock(&srv->mu);
	c->making--;
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
	if (principal_full_locked(srv, c->principal)) {
		free(owner);
		reply_principal_full(c, r->id);
		return NULL;
	}
	/* Built under the registry lock, as upstream, so two loads make one session. */
	if ((as = acp_open_agent(srv, id, true, &e)) == NULL) {
		free(owner);
		if (e.code == SBX_ENOTFOUND)
			acp_reply_no_session(c->p, r->id, id, "unknown sessionId \"%s\"", id);
		else
			acp_reply_error(c->p, r->id, JSONRPC_INTERNAL_ERROR, "%s", e.msg);
		return NULL;
	}
	{
		struct json_object *rec = acpreg_get(srv->reg, id);
		s = acp_session_make(srv, id, as, owner, rec);
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
		if (acp_unref_locked(s))	/* closed meanwhile: the last holder frees it */
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
	acp_detach_locked(s, true);
	acp_attach_locked(s, c);
	return true;
}

/* session/load (replay: the whole conversation as session updates before the answer) and
 * session/resume (no replay): the session taken over by this connection. Runs on a worker. */
static void load_or_resume(const struct req *r, bool replay)
{
	struct acp_conn *c = r->c;
	struct acp_server *srv = c->srv;
	const char *id = jsonfield_str(r->params, "sessionId");
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
		finish_retired(srv);
		if (gone)
			acp_session_free(gone);
		return;
	}
	if (!acp_claim_locked(srv, s, c, NULL, &code, why, sizeof why)) {
		pthread_mutex_unlock(&srv->mu);
		finish_retired(srv);
		acp_reply_error(c->p, r->id, code, "%s", why);
		return;
	}
	s->refs++;
	pthread_mutex_unlock(&srv->mu);
	finish_retired(srv);
	acp_session_set_cwd(s, jsonfield_str(r->params, "cwd"));
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
	acp_session_put(srv, s);
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
	const char *id = jsonfield_str(r->params, "sessionId");
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
		acp_detach_locked(s, false);
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
	acp_session_put(srv, s);
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
	const char *cwd = jsonfield_str(r->params, "cwd"), *cursor = jsonfield_str(r->params, "cursor");
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
		const char *rc = jsonfield_str(rec, "cwd"), *t = jsonfield_str(rec, "title");
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
		json_object_object_add(info, "sessionId", json_object_new_string(jsonfield_str(rec, "id")));
		json_object_object_add(info, "cwd", json_object_new_string(rc));
		if (t)
			json_object_object_add(info, "title", json_object_new_string(t));
		if (jsonfield_str(rec, "updated_at"))
			json_object_object_add(info, "updatedAt",
					       json_object_new_string(jsonfield_str(rec, "updated_at")));
		json_object_array_add(out, info);
	}
	json_object_object_add(res, "sessions", out);
	json_object_put(all);
	acp_reply(c->p, r->id, res);
}
