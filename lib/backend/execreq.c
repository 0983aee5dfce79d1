/* execreq.c — sbx-exec's request document and its result document. */
#include "execreq.h"

#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "gojson.h"
#include "xalloc.h"

/* Every field a request may have: any other is refused, never ignored. */
static const char *const request_fields[] = {"command", "stdin", "timeout", "workdir", "env", NULL};

/* A string of the request as C sees it: one with an embedded NUL would be cut there, so that
 * the sandbox ran something other than what was asked; it is refused instead (as Go's exec). */
static const char *request_string(struct json_object *v, const char *field, struct sbx_err *e)
{
	const char *s = json_object_get_string(v);

	if (memchr(s, '\0', (size_t)json_object_get_string_len(v)) != NULL) {
		err_set(e, SBX_EINVAL, "invalid request: a string of \"%s\" holds a NUL byte", field);
		return NULL;
	}
	return s;
}

static int parse_command(struct execreq *rq, struct sbx_err *e)
{
	static const char bad[] = "invalid request: \"command\" must be a non-empty array of strings";
	struct json_object *cmd, *v;
	size_t i, n;

	if (!json_object_object_get_ex(rq->doc, "command", &cmd) ||
	    !json_object_is_type(cmd, json_type_array) || json_object_array_length(cmd) == 0)
		return err_set(e, SBX_EINVAL, "%s", bad);
	n = json_object_array_length(cmd);
	rq->argv = xcalloc(n + 1, sizeof *rq->argv);
	for (i = 0; i < n; i++) {
		v = json_object_array_get_idx(cmd, i);
		if (!json_object_is_type(v, json_type_string))
			return err_set(e, SBX_EINVAL, "%s", bad);
		if ((rq->argv[i] = (char *)request_string(v, "command", e)) == NULL)
			return -1;
	}
	return 0;
}

static int parse_env(struct execreq *rq, struct json_object *v, struct sbx_err *e)
{
	static const char bad[] = "invalid request: \"env\" must be an object of strings";
	size_t k = 0;

	if (!json_object_is_type(v, json_type_object))
		return err_set(e, SBX_EINVAL, "%s", bad);
	rq->env = xcalloc((size_t)json_object_object_length(v) + 1, sizeof *rq->env);
	json_object_object_foreach(v, key, val) {
		const char *s;

		if (!json_object_is_type(val, json_type_string) || !*key || strchr(key, '='))
			return err_set(e, SBX_EINVAL, "%s", bad);
		if ((s = request_string(val, "env", e)) == NULL)
			return -1;
		rq->env[k++] = xasprintf("%s=%s", key, s);
	}
	return 0;
}

int execreq_parse(const char *text, size_t len, struct execreq *rq, struct sbx_err *e)
{
	struct json_object *v;
	const char *why;

	memset(rq, 0, sizeof *rq);
	if ((rq->doc = gojson_parse(text, len, &why)) == NULL)
		return err_set(e, SBX_EINVAL, "invalid request: not valid JSON: %s", why);
	if (!json_object_is_type(rq->doc, json_type_object))
		return err_set(e, SBX_EINVAL, "invalid request: not a JSON object");
	if ((why = gojson_unknown_field(rq->doc, request_fields)) != NULL) {
		struct buf q = {0};

		gojson_append_string(&q, why, strlen(why));
		err_set(e, SBX_EINVAL, "invalid request: unknown field %s (a request has command, "
			"stdin, timeout, workdir, env)", q.data);
		buf_free(&q);
		return -1;
	}
	if (parse_command(rq, e) < 0)
		return -1;
	if (json_object_object_get_ex(rq->doc, "stdin", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return err_set(e, SBX_EINVAL, "invalid request: \"stdin\" must be a string");
		rq->in = json_object_get_string(v);
		rq->in_len = (size_t)json_object_get_string_len(v);
	}
	if (json_object_object_get_ex(rq->doc, "timeout", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    duration_parse(json_object_get_string(v), &rq->timeout_ns) < 0 || rq->timeout_ns < 0)
			return err_set(e, SBX_EINVAL, "invalid request: \"timeout\" must be a Go duration "
				       "such as \"30s\"");
		rq->has_timeout = true;
	}
	if (json_object_object_get_ex(rq->doc, "workdir", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return err_set(e, SBX_EINVAL, "invalid request: \"workdir\" must be a string");
		if ((rq->workdir = request_string(v, "workdir", e)) == NULL)
			return -1;
	}
	if (json_object_object_get_ex(rq->doc, "env", &v) && parse_env(rq, v, e) < 0)
		return -1;
	return 0;
}

void execreq_free(struct execreq *rq)
{
	for (char **p = rq->env; p && *p; p++)
		free(*p);
	free(rq->env);
	if (rq->doc) {
		free(rq->argv);
		json_object_put(rq->doc);
	}
	memset(rq, 0, sizeof *rq);
}

struct json_object *execreq_result_json(const struct capture *c)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "stdout", json_object_new_string_len(c->out, (int)c->out_len));
	json_object_object_add(o, "stderr", json_object_new_string_len(c->err, (int)c->err_len));
	json_object_object_add(o, "exit_code", json_object_new_int(c->res.exit_code));
	if (c->res.timed_out)
		json_object_object_add(o, "timed_out", json_object_new_boolean(1));
	if (c->res.oom_killed)
		json_object_object_add(o, "oom_killed", json_object_new_boolean(1));
	if (c->out_truncated || c->err_truncated)
		json_object_object_add(o, "truncated", json_object_new_boolean(1));
	return o;
}
