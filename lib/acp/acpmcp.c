/* acpmcp.c — a session's mcpServers: started inside its sandbox at its first prompt (never on
 * this host), their tools offered to the model as mcp__<server>__<tool> through the agent's
 * extra tools, so every call goes through the session's permission flow like the toolset's;
 * a server that does not start is reported to the client at the start of that turn. Stopped
 * when the session gets other mcpServers (load, resume) or goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_int.h"
#include "jsonfield.h"
#include "mcp.h"
#include "mcpclient.h"
#include "toolmsg.h"
#include "xalloc.h"

/* An offered name: ^[A-Za-z0-9_-]{1,64}$, what chat APIs allow for function names. */
#define ACP_MCP_TOOL_NAME_MAX 64

struct acp_mcp_server {
	char *name;			/* as mcpServers names it */
	struct json_object *conf;	/* its mcpServers entry */
	struct mcpclient *c;		/* NULL: not running */
};

struct acp_mcp {
	struct acp_mcp_server v[ACP_MCP_SERVERS_MAX];
	size_t n;
	bool started;			/* starting was tried for this configuration */
	struct json_object *decls;	/* the tools offered */
	struct json_object *map;	/* offered name → [server index, tool name] */
};

static void stop_servers(struct acp_server *srv, struct acp_mcp *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		struct mcpclient *c;
		pthread_mutex_lock(&srv->mu);	/* a cancel may be waking it */
		c = m->v[i].c;
		m->v[i].c = NULL;
		pthread_mutex_unlock(&srv->mu);
		mcpclient_stop(c);
	}
}

static void free_mcp(struct acp_server *srv, struct acp_mcp *m)
{
	size_t i;

	if (m == NULL)
		return;
	stop_servers(srv, m);
	for (i = 0; i < m->n; i++) {
		free(m->v[i].name);
		json_object_put(m->v[i].conf);
	}
	json_object_put(m->decls);
	json_object_put(m->map);
	free(m);
}

void acp_mcp_configure(struct acp_session *s, struct json_object *servers)
{
	struct acp_server *srv = s->srv;
	struct acp_mcp *m = NULL, *old;
	size_t i, n = servers ? json_object_array_length(servers) : 0;

	if (n > 0) {
		m = xcalloc(1, sizeof *m);
		for (i = 0; i < n && i < ACP_MCP_SERVERS_MAX; i++) {
			struct json_object *e = json_object_array_get_idx(servers, i);
			m->v[i].name = xstrdup(jsonfield_str(e, "name"));
			m->v[i].conf = json_object_get(e);
		}
		m->n = i;
	}
	agent_session_set_extra_tools(s->as, NULL);
	pthread_mutex_lock(&srv->mu);
	old = s->mcp;
	s->mcp = m;
	pthread_mutex_unlock(&srv->mu);
	free_mcp(srv, old);
}

void acp_mcp_free(struct acp_session *s)
{
	free_mcp(s->srv, s->mcp);
	s->mcp = NULL;
}

void acp_mcp_wake_locked(struct acp_session *s)
{
	size_t i;

	for (i = 0; s->mcp && i < s->mcp->n; i++)
		mcpclient_wake(s->mcp->v[i].c);
}

/* [A-Za-z0-9_-] only: what a function name may hold. */
static void sanitize(struct buf *b, const char *s)
{
	for (; *s; s++) {
		char c = *s;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '-';
		buf_append(b, ok ? s : "_", 1);
	}
}

static struct mcpclient *start_one(struct acp_session *s, struct acp_mcp_server *sv,
				   struct sbx_err *e)
{
	struct json_object *args = NULL, *env = NULL;
	struct strvec argv = {0}, envv = {0};
	struct mcpclient_config cfg = {0};
	struct mcpclient *c;
	size_t i;

	strvec_push(&argv, jsonfield_str(sv->conf, "command"));
	json_object_object_get_ex(sv->conf, "args", &args);
	for (i = 0; args && i < json_object_array_length(args); i++)
		strvec_push(&argv, json_object_get_string(json_object_array_get_idx(args, i)));
	json_object_object_get_ex(sv->conf, "env", &env);
	for (i = 0; env && i < json_object_array_length(env); i++) {
		struct json_object *kv = json_object_array_get_idx(env, i);
		/* The sandbox's environment, never a command line. */
		strvec_pushf(&envv, "%s=%s", jsonfield_str(kv, "name"), jsonfield_str(kv, "value"));
	}
	cfg.name = sv->name;
	cfg.backend = agent_session_backend(s->as);
	cfg.namespace = agent_session_namespace(s->as);
	cfg.sandbox = agent_session_name(s->as);
	cfg.workdir = s->workdir;
	cfg.argv = argv.v;
	cfg.env = envv.v;
	c = mcpclient_start(&cfg, e);
	strvec_clear(&argv);
	strvec_clear(&envv);
	return c;
}

/* Offers the tools of server k; a name that does not fit is reported. */
static void offer(struct acp_mcp *m, size_t k, struct buf *report)
{
	struct json_object *tools = mcpclient_tools(m->v[k].c);
	size_t i, n = json_object_array_length(tools);

	for (i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(tools, i), *d, *fn, *entry;
		const char *tname = jsonfield_str(t, "name");
		struct buf name = {0};
		struct sbx_err e;

		if (tname == NULL)
			continue;
		buf_puts(&name, "mcp__");
		sanitize(&name, m->v[k].name);
		buf_puts(&name, "__");
		sanitize(&name, tname);
		if (name.len > ACP_MCP_TOOL_NAME_MAX ||
		    json_object_object_get_ex(m->map, name.data, NULL)) {
			buf_printf(report, "MCP server \"%s\": tool \"%s\" left out (its name %s is "
				   "too long or taken)\n", m->v[k].name, tname, name.data);
		} else if ((d = mcp_tool_declaration(t, &e)) == NULL) {
			buf_printf(report, "MCP server \"%s\": tool \"%s\" left out: %s\n",
				   m->v[k].name, tname, e.msg);
		} else {
			json_object_object_get_ex(d, "function", &fn);
			json_object_object_add(fn, "name", json_object_new_string(name.data));
			json_object_array_add(m->decls, d);
			entry = json_object_new_array();
			json_object_array_add(entry, json_object_new_int((int)k));
			json_object_array_add(entry, json_object_new_string(tname));
			json_object_object_add(m->map, name.data, entry);
		}
		buf_free(&name);
	}
}

/* Runs one offered tool: its server (started again if it died with an expired sandbox). */
char *acp_mcp_run(struct acp_session *s, const struct agent_tool_call *call, int cancel_fd,
		  bool *failed, struct sbx_err *e)
{
	struct acp_server *srv = s->srv;
	struct acp_mcp *m = s->mcp;
	struct json_object *entry;
	struct acp_mcp_server *sv;
	struct mcpclient *c;
	bool is_error;
	char *text;

	(void)cancel_fd;	/* s->cancel is set (and the call woken) with it */
	*failed = true;
	if (m == NULL || m->map == NULL || !json_object_object_get_ex(m->map, call->name, &entry))
		return toolmsg_error(call->name, "no such MCP tool");
	sv = &m->v[json_object_get_int(json_object_array_get_idx(entry, 0))];
	if (sv->c == NULL || !mcpclient_alive(sv->c)) {
		pthread_mutex_lock(&srv->mu);
		c = sv->c;
		sv->c = NULL;
		pthread_mutex_unlock(&srv->mu);
		mcpclient_stop(c);
		if ((c = start_one(s, sv, e)) == NULL)
			return toolmsg_error(call->name, "MCP server \"%s\" is not running: %s",
					     sv->name, e->msg);
		pthread_mutex_lock(&srv->mu);
		sv->c = c;
		pthread_mutex_unlock(&srv->mu);
	}
	text = mcpclient_call(sv->c, json_object_get_string(json_object_array_get_idx(entry, 1)),
			      call->arguments, &s->cancel, srv->cfg.tool_timeout_ns, &is_error, e);
	if (text == NULL) {
		if (e->code == SBX_ECANCELED)
			return NULL;
		return toolmsg_error(call->name, "%s", e->msg);
	}
	*failed = is_error;
	return text;
}

int acp_mcp_start(struct acp_session *s, struct buf *report)
{
	struct acp_server *srv = s->srv;
	struct acp_mcp *m = s->mcp;
	struct sbx_err e;
	size_t k;

	if (m == NULL || m->started)
		return 0;
	m->started = true;
	/* The servers run in the sandbox: it is made now rather than at the first tool call. */
	if (agent_session_ensure_sandbox(s->as, s->cancel_pipe[0], &e) < 0) {
		if (e.code == SBX_ECANCELED)
			return -1;
		buf_printf(report, "MCP servers not started: the sandbox could not be made: %s\n", e.msg);
		return 0;
	}
	pthread_mutex_lock(&srv->mu);
	s->tool_ran = true;	/* a sandbox exists: deleted at shutdown */
	pthread_mutex_unlock(&srv->mu);
	m->decls = json_object_new_array();
	m->map = json_object_new_object();
	for (k = 0; k < m->n && !s->cancel; k++) {
		struct mcpclient *c = start_one(s, &m->v[k], &e);
		if (c == NULL) {
			buf_printf(report, "MCP server \"%s\" (%s) did not start: %s\n", m->v[k].name,
				   jsonfield_str(m->v[k].conf, "command"), e.msg);
			acp_log(srv, "session %s: MCP server \"%s\" did not start: %s", s->id,
				m->v[k].name, e.msg);
			continue;
		}
		pthread_mutex_lock(&srv->mu);
		m->v[k].c = c;
		pthread_mutex_unlock(&srv->mu);
		offer(m, k, report);
	}
	if (s->cancel)
		return -1;
	return 0;
}

struct json_object *acp_mcp_decls(const struct acp_session *s)
{
	return s->mcp ? s->mcp->decls : NULL;
}
