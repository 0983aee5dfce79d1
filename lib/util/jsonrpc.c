/* jsonrpc.c — NDJSON framing, message classification and building, pending requests. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gojson.h"
#include "jsonrpc.h"

static int emit_line(struct jsonrpc_reader *r,
		     int (*fn)(enum jsonrpc_event, const char *, size_t, void *), void *arg)
{
	size_t n = r->line.len;
	int rc = 0;

	if (n > 0 && r->line.data[n - 1] == '\r')
		n--;
	if (n > 0) {
		size_t i;
		/* A line of only white space is blank: skip it as the reference SDK does. */
		for (i = 0; i < n; i++) {
			char c = r->line.data[i];
			if (c != ' ' && c != '\t' && c != '\r')
				break;
		}
		if (i < n)
			rc = fn(JSONRPC_LINE, r->line.data, n, arg);
	}
	r->line.len = 0;
	if (r->line.data)
		r->line.data[0] = '\0';
	return rc;
}

int jsonrpc_reader_feed(struct jsonrpc_reader *r, const char *p, size_t n,
			int (*fn)(enum jsonrpc_event, const char *, size_t, void *), void *arg)
{
	int rc;

	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;

		if (r->discarding) {
			if (nl)
				r->discarding = false;
		} else if (r->line.len + take > JSONRPC_LINE_MAX) {
			r->line.len = 0;
			/* Give the memory back: an attacker's long line must not stay resident. */
			buf_free(&r->line);
			r->discarding = nl == NULL;
			if ((rc = fn(JSONRPC_TOO_LONG, NULL, 0, arg)) != 0)
				return rc;
		} else {
			buf_append(&r->line, p, take);
			if (nl && (rc = emit_line(r, fn, arg)) != 0) {
				p += take + 1;
				return rc;
			}
		}
		if (nl == NULL)
			break;
		p += take + 1;
		n -= take + 1;
	}
	return 0;
}

int jsonrpc_reader_finish(struct jsonrpc_reader *r,
			  int (*fn)(enum jsonrpc_event, const char *, size_t, void *), void *arg)
{
	int rc = 0;

	if (!r->discarding && r->line.len > 0)
		rc = emit_line(r, fn, arg);
	r->discarding = false;
	return rc;
}

void jsonrpc_reader_free(struct jsonrpc_reader *r)
{
	buf_free(&r->line);
	r->discarding = false;
}

/* A usable id: a string or an integer (JSON-RPC also allows null, which ACP never uses for
 * requests; fractional numbers are discouraged and refused here). */
static bool id_ok(struct json_object *id)
{
	return json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int);
}

/* Long: JSON-RPC 2.0's classification rules one after the other (request, notification,
 * response, error) with the error code each breach gets. */
int jsonrpc_parse(const char *line, size_t len, struct jsonrpc_msg *m, int *code,
		  struct json_object **bad_id, struct sbx_err *e)
{
	struct json_object *doc, *v, *id = NULL;
	const char *why;
	bool has_method, has_result, has_error;

	memset(m, 0, sizeof *m);
	*bad_id = NULL;
	doc = gojson_parse(line, len, &why);
	if (doc == NULL && why != NULL) {
		*code = JSONRPC_PARSE_ERROR;
		return err_set(e, SBX_EINVAL, "parse error: %s", why);
	}
	*code = JSONRPC_INVALID_REQUEST;
	if (json_object_is_type(doc, json_type_array)) {
		json_object_put(doc);
		return err_set(e, SBX_EINVAL, "invalid request: batch requests are not supported");
	}
	if (!json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		return err_set(e, SBX_EINVAL, "invalid request: a message must be a JSON object");
	}
	/* "id": null on a request: JSON-RPC's answer to an id that cannot be used is an error
	 * with a null id (silence would leave the sender waiting). */
	if (json_object_object_get_ex(doc, "id", &id) && id == NULL &&
	    json_object_object_get_ex(doc, "method", NULL)) {
		json_object_put(doc);
		return err_set(e, SBX_EINVAL, "invalid request: id must be a string or an integer, "
			       "not null");
	}
	if (json_object_object_get_ex(doc, "id", &id) && id != NULL) {
		if (!id_ok(id)) {
			json_object_put(doc);
			return err_set(e, SBX_EINVAL,
				       "invalid request: id must be a string or an integer");
		}
		*bad_id = json_object_get(id);
	} else {
		id = NULL;
	}
	if (!json_object_object_get_ex(doc, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "2.0") != 0) {
		err_set(e, SBX_EINVAL, "invalid request: \"jsonrpc\" must be \"2.0\"");
		goto bad;
	}
	has_method = json_object_object_get_ex(doc, "method", &v);
	has_result = json_object_object_get_ex(doc, "result", NULL);
	has_error = json_object_object_get_ex(doc, "error", NULL);
	m->doc = doc;
	m->id = id;
	if (has_method) {
		if (!json_object_is_type(v, json_type_string) || has_result || has_error) {
			err_set(e, SBX_EINVAL, "invalid request: \"method\" must be a string");
			goto bad;
		}
		m->method = json_object_get_string(v);
		m->kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
		if (json_object_object_get_ex(doc, "params", &m->params) && m->params != NULL &&
		    !json_object_is_type(m->params, json_type_object) &&
		    !json_object_is_type(m->params, json_type_array)) {
			err_set(e, SBX_EINVAL,
				"invalid request: \"params\" must be an object or an array");
			goto bad;
		}
	} else if (has_result != has_error && id != NULL) {
		m->kind = JSONRPC_RESPONSE;
		json_object_object_get_ex(doc, "result", &m->result);
		json_object_object_get_ex(doc, "error", &m->error);
		if (has_error && !json_object_is_type(m->error, json_type_object)) {
			err_set(e, SBX_EINVAL, "invalid response: \"error\" must be an object");
			goto bad;
		}
	} else {
		err_set(e, SBX_EINVAL, "invalid request: want a request (\"method\") or a response "
			"(\"id\" with one of \"result\" and \"error\")");
		goto bad;
	}
	/* The id only travels with an error. */
	json_object_put(*bad_id);
	*bad_id = NULL;
	return 0;
bad:
	memset(m, 0, sizeof *m);
	json_object_put(doc);
	return -1;
}

void jsonrpc_msg_free(struct jsonrpc_msg *m)
{
	json_object_put(m->doc);
	memset(m, 0, sizeof *m);
}

/* Starts {"jsonrpc":"2.0", in b. */
static void open_msg(struct buf *b)
{
	buf_puts(b, "{\"jsonrpc\":\"2.0\"");
}

static void add_id(struct buf *b, struct json_object *id)
{
	buf_puts(b, ",\"id\":");
	gojson_append(b, id);
}

static char *close_msg(struct buf *b)
{
	buf_puts(b, "}\n");
	return buf_steal(b);
}

char *jsonrpc_result_line(struct json_object *id, struct json_object *result)
{
	struct buf b = {0};

	open_msg(&b);
	add_id(&b, id);
	buf_puts(&b, ",\"result\":");
	if (result)
		gojson_append(&b, result);
	else
		buf_puts(&b, "{}");
	return close_msg(&b);
}

char *jsonrpc_error_line(struct json_object *id, int code, const char *message,
			 struct json_object *data)
{
	struct buf b = {0};

	open_msg(&b);
	add_id(&b, id);
	buf_printf(&b, ",\"error\":{\"code\":%d,\"message\":", code);
	gojson_append_string(&b, message, strlen(message));
	if (data) {
		buf_puts(&b, ",\"data\":");
		gojson_append(&b, data);
	}
	buf_puts(&b, "}");
	return close_msg(&b);
}

char *jsonrpc_notification_line(const char *method, struct json_object *params)
{
	struct buf b = {0};

	open_msg(&b);
	buf_puts(&b, ",\"method\":");
	gojson_append_string(&b, method, strlen(method));
	if (params) {
		buf_puts(&b, ",\"params\":");
		gojson_append(&b, params);
	}
	return close_msg(&b);
}

char *jsonrpc_request_line(int64_t id, const char *method, struct json_object *params)
{
	struct buf b = {0};

	open_msg(&b);
	buf_printf(&b, ",\"id\":%lld,\"method\":", (long long)id);
	gojson_append_string(&b, method, strlen(method));
	if (params) {
		buf_puts(&b, ",\"params\":");
		gojson_append(&b, params);
	}
	return close_msg(&b);
}

struct jsonrpc_pending_slot {
	struct jsonrpc_pending_slot *next;
	int64_t id;
	bool done;
	struct json_object *result, *error;
};

void jsonrpc_pending_init(struct jsonrpc_pending *p, size_t max)
{
	memset(p, 0, sizeof *p);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->max = max;
}

void jsonrpc_pending_destroy(struct jsonrpc_pending *p)
{
	struct jsonrpc_pending_slot *s, *next;

	for (s = p->slots; s; s = next) {
		next = s->next;
		json_object_put(s->result);
		json_object_put(s->error);
		free(s);
	}
	p->slots = NULL;
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
}

int jsonrpc_pending_add(struct jsonrpc_pending *p, int64_t *id, struct sbx_err *e)
{
	struct jsonrpc_pending_slot *s;
	int rc = -1;

	pthread_mutex_lock(&p->mu);
	if (p->closed) {
		err_set(e, SBX_EIO, "connection closed");
		goto out;
	}
	if (p->count >= p->max) {
		err_set(e, SBX_EIO, "too many requests waiting for the client (limit %zu)", p->max);
		goto out;
	}
	s = xcalloc(1, sizeof *s);
	s->id = p->next_id++;
	s->next = p->slots;
	p->slots = s;
	p->count++;
	*id = s->id;
	rc = 0;
out:
	pthread_mutex_unlock(&p->mu);
	return rc;
}

static struct jsonrpc_pending_slot **find_slot(struct jsonrpc_pending *p, int64_t id)
{
	struct jsonrpc_pending_slot **sp;

	for (sp = &p->slots; *sp; sp = &(*sp)->next)
		if ((*sp)->id == id)
			return sp;
	return NULL;
}

int jsonrpc_pending_resolve(struct jsonrpc_pending *p, const struct jsonrpc_msg *m)
{
	struct jsonrpc_pending_slot **sp;
	int rc = -1;

	/* Our ids are integers: "0" (a string) is another id and answers nothing. */
	if (!json_object_is_type(m->id, json_type_int))
		return -1;
	pthread_mutex_lock(&p->mu);
	sp = find_slot(p, json_object_get_int64(m->id));
	if (sp && !(*sp)->done) {
		(*sp)->done = true;
		(*sp)->result = m->result ? json_object_get(m->result) : NULL;
		(*sp)->error = m->error ? json_object_get(m->error) : NULL;
		if (m->result == NULL && m->error == NULL)	/* "result": null */
			(*sp)->result = NULL;
		pthread_cond_broadcast(&p->cv);
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

static void unlink_slot(struct jsonrpc_pending *p, struct jsonrpc_pending_slot **sp)
{
	struct jsonrpc_pending_slot *s = *sp;

	*sp = s->next;
	p->count--;
	json_object_put(s->result);
	json_object_put(s->error);
	free(s);
}

int jsonrpc_pending_wait(struct jsonrpc_pending *p, int64_t id, const volatile int *stop,
			 struct json_object **result, struct json_object **error, struct sbx_err *e)
{
	return jsonrpc_pending_wait_until(p, id, stop, 0, result, error, e);
}

int jsonrpc_pending_wait_until(struct jsonrpc_pending *p, int64_t id, const volatile int *stop,
			       int64_t deadline, struct json_object **result,
			       struct json_object **error, struct sbx_err *e)
{
	struct jsonrpc_pending_slot **sp;
	struct timespec until = {.tv_sec = (time_t)(deadline / 1000000000),
				 .tv_nsec = (long)(deadline % 1000000000)};
	int rc = -1;

	*result = *error = NULL;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		sp = find_slot(p, id);
		if (sp == NULL) {
			err_set(e, SBX_EINVAL, "no request with id %lld is waiting", (long long)id);
			goto out;
		}
		if ((*sp)->done) {
			*result = (*sp)->result;
			*error = (*sp)->error;
			(*sp)->result = (*sp)->error = NULL;
			rc = 0;
			break;
		}
		if (p->closed) {
			err_set(e, SBX_EIO, "connection closed");
			break;
		}
		if (stop && *stop) {
			err_set(e, SBX_ECANCELED, "canceled");
			break;
		}
		if (deadline == 0) {
			pthread_cond_wait(&p->cv, &p->mu);
		} else if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT) {
			err_set(e, SBX_ETIMEDOUT, "no answer in time");
			break;
		}
	}
	unlink_slot(p, sp);
out:
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void jsonrpc_pending_drop(struct jsonrpc_pending *p, int64_t id)
{
	struct jsonrpc_pending_slot **sp;

	pthread_mutex_lock(&p->mu);
	if ((sp = find_slot(p, id)) != NULL)
		unlink_slot(p, sp);
	pthread_mutex_unlock(&p->mu);
}

void jsonrpc_pending_wake(struct jsonrpc_pending *p)
{
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void jsonrpc_pending_close(struct jsonrpc_pending *p)
{
	pthread_mutex_lock(&p->mu);
	p->closed = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}
