/* acpconfig.c — an ACP session's modes and config options: what session/new and load
 * answer with (modes, models), session/set_mode and session/set_config_option, and the
 * notices that tell the client of a change. */
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
		if ((m = acp_mode_of(value)) == ACP_MODE_COUNT) {
			why = "unknown mode (available: ask, auto-read, never-ask)";
		} else {
			*mode_changed = s->mode != m;
			s->mode = m;
			json_object_object_add(f, "mode", json_object_new_string(value));
		}
	} else if (strcmp(config, "model") == 0) {
		if (!acp_model_allowed(srv, value, llm_pick_model(srv->cfg.model, NULL)))
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
	const char *id = jsonfield_str(r->params, "sessionId"), *mode = jsonfield_str(r->params, "modeId");
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
	acp_session_put(c->srv, s);
}

void m_session_set_config_option(const struct req *r)
{
	struct acp_conn *c = r->c;
	const char *id = jsonfield_str(r->params, "sessionId");
	const char *config = jsonfield_str(r->params, "configId"), *value = jsonfield_str(r->params, "value");
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
	acp_session_put(c->srv, s);
}
