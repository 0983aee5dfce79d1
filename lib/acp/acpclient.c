/* acpclient.c — an ACP v1 client: setup, prompts, and the methods agents call on clients. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "acpclient.h"
#include "acpview.h"
#include "fsutil.h"
#include "gojson.h"
#include "jsonfield.h"
#include "termtext.h"
#include "xalloc.h"

struct acpclient {
	struct acpview *view;
	struct acpclient_config cfg;
	struct peer *p;
	pthread_t io;
	bool io_started;
	char *session;
	struct json_object *auth_methods;	/* from initialize (owned) */
	volatile int stop;			/* setup deadline passed */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool setup_done;
	volatile bool input_ended;		/* standard input ended at a permission prompt */
};

#define emitf(c, ...) acpview_printf((c)->view, __VA_ARGS__)

/* ---- what the agent calls ---------------------------------------------------------------- */

static void on_update(struct acpclient *c, struct json_object *params)
{
	struct json_object *u;

	if (json_object_object_get_ex(params, "update", &u) && json_object_is_type(u, json_type_object))
		acpview_update(c->view, u);
}

/* "<label><text>\n", the text on one line exactly as it is (termtext's line form: a control,
 * a newline or a bidi override in it cannot hide or redraw what the user approves). */
static void emit_exact(struct acpclient *c, const char *label, const char *text)
{
	char *shown = termtext_str(text, TERMTEXT_LINE);

	emitf(c, "%s%s\n", label, shown);
	free(shown);
}

/* What is asked about: the call's title and, when its input names one, the whole command. */
static void show_call(struct acpclient *c, struct json_object *tc)
{
	struct json_object *in;

	emit_exact(c, "\nPermission requested: ",
		   jsonfield_str(tc, "title") ?: jsonfield_str(tc, "toolCallId") ?: "");
	if (json_object_object_get_ex(tc, "rawInput", &in) && jsonfield_str(in, "command"))
		emit_exact(c, "  command: ", jsonfield_str(in, "command"));
}

/* Asks the user (or approves with -yolo); returns the chosen optionId (borrowed) or NULL. */
static const char *choose(struct acpclient *c, struct json_object *params)
{
	struct json_object *opts, *tc;
	size_t i, n;
	long pick = 1;

	if (!json_object_object_get_ex(params, "options", &opts) ||
	    !json_object_is_type(opts, json_type_array) || (n = json_object_array_length(opts)) == 0)
		return NULL;
	if (c->cfg.yolo) {
		for (i = 0; i < n; i++) {
			const char *k = jsonfield_str(json_object_array_get_idx(opts, i), "kind");
			if (k && strncmp(k, "allow", 5) == 0)
				return jsonfield_str(json_object_array_get_idx(opts, i), "optionId");
		}
		return NULL;
	}
	if (json_object_object_get_ex(params, "toolCall", &tc))
		show_call(c, tc);
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(opts, i);
		emitf(c, "  %zu) %s [%s]\n", i + 1, jsonfield_str(o, "name") ?: "",
		      jsonfield_str(o, "kind") ?: "");
	}
	for (;;) {
		char *line, *end;

		emitf(c, "Choose 1-%zu (Enter = 1): ", n);
		if ((line = c->cfg.read_line(c->cfg.arg)) == NULL) {
			/* end of input: the turn is cancelled, and nobody answered */
			c->input_ended = true;
			emitf(c, "\nNo answer (end of input): the tool call is cancelled.\n");
			return NULL;
		}
		if (line[0] == '\0') {
			pick = 1;
		} else {
			pick = strtol(line, &end, 10);
			if (*end != '\0')
				pick = 0;
		}
		free(line);
		if (pick >= 1 && (size_t)pick <= n)
			break;
		emitf(c, "Not one of the choices: choose 1-%zu.\n", n);
	}
	return jsonfield_str(json_object_array_get_idx(opts, (size_t)pick - 1), "optionId");
}

static void answer_permission(struct acpclient *c, struct jsonrpc_msg *m)
{
	struct json_object *res = json_object_new_object(), *out = json_object_new_object();
	const char *opt = choose(c, m->params);

	if (opt) {
		json_object_object_add(out, "outcome", json_object_new_string("selected"));
		json_object_object_add(out, "optionId", json_object_new_string(opt));
	} else {
		json_object_object_add(out, "outcome", json_object_new_string("cancelled"));
	}
	json_object_object_add(res, "outcome", out);
	peer_send(c->p, jsonrpc_result_line(m->id, res));
	json_object_put(res);
}

/* The real path of p if it lies inside the session directory; for a file that does not exist
 * yet (writes), its directory must. */
static char *confined(struct acpclient *c, const char *path, bool may_create, struct sbx_err *e)
{
	char real[PATH_MAX], root[PATH_MAX];
	char *dir, *slash, *out = NULL;

	if (path == NULL || path[0] != '/') {
		err_set(e, SBX_EINVAL, "path must be absolute");
		return NULL;
	}
	if (realpath(c->cfg.cwd, root) == NULL) {
		err_sys(e, errno, "%s", c->cfg.cwd);
		return NULL;
	}
	if (realpath(path, real) != NULL) {
		out = xstrdup(real);
	} else if (may_create && errno == ENOENT) {
		dir = xstrdup(path);
		slash = strrchr(dir, '/');
		*slash = '\0';
		if (realpath(dir[0] ? dir : "/", real) != NULL && strchr(slash + 1, '/') == NULL &&
		    strcmp(slash + 1, "..") != 0 && strcmp(slash + 1, ".") != 0)
			out = xasprintf("%s/%s", real, slash + 1);
		free(dir);
	}
	if (out == NULL) {
		err_sys(e, errno ? errno : ENOENT, "%s", path);
		return NULL;
	}
	/* Only files under the session directory are shared with the agent. */
	if (strncmp(out, root, strlen(root)) != 0 ||
	    (out[strlen(root)] != '/' && out[strlen(root)] != '\0')) {
		err_set(e, SBX_EPERM, "%s is outside the session directory", path);
		free(out);
		return NULL;
	}
	return out;
}

/* fs/read_text_file's line and limit: *first 1 and *limit -1 (all) when absent. */
static bool line_range(struct json_object *params, int64_t *first, int64_t *limit)
{
	struct json_object *v;

	*first = 1;
	*limit = -1;
	if (json_object_object_get_ex(params, "line", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1)
			return false;
		*first = json_object_get_int64(v);
	}
	if (json_object_object_get_ex(params, "limit", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return false;
		*limit = json_object_get_int64(v);
	}
	return true;
}

static void fs_read(struct acpclient *c, struct jsonrpc_msg *m)
{
	int64_t first, limit;
	struct sbx_err e;
	char *path = confined(c, jsonfield_str(m->params, "path"), false, &e);
	struct buf b = {0};
	struct json_object *res;
	char chunk[65536];
	ssize_t n;
	int fd;

	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (path)
			err_sys(&e, errno, "%s", path);
		peer_send(c->p, jsonrpc_error_line(m->id, JSONRPC_NOT_FOUND, e.msg, NULL));
		free(path);
		return;
	}
	while ((n = read(fd, chunk, sizeof chunk)) > 0 && b.len <= ACPCLIENT_READ_MAX)
		buf_append(&b, chunk, (size_t)n);
	close(fd);
	if (b.len > ACPCLIENT_READ_MAX) {
		peer_send(c->p, jsonrpc_error_line(m->id, JSONRPC_INVALID_PARAMS,
						   "file too large", NULL));
	} else if (!line_range(m->params, &first, &limit)) {
		peer_send(c->p, jsonrpc_error_line(m->id, JSONRPC_INVALID_PARAMS,
						   "line and limit are positive integers", NULL));
	} else {
		/* line (1-based) and limit (lines) select a part of the file. */
		const char *start = b.data ? b.data : "", *end;
		int64_t k;
		for (k = 1; k < first && *start; k++)
			start += strcspn(start, "\n") + (start[strcspn(start, "\n")] == '\n');
		end = start;
		for (k = 0; (limit < 0 || k < limit) && *end; k++)
			end += strcspn(end, "\n") + (end[strcspn(end, "\n")] == '\n');
		if (limit < 0)
			end = start + strlen(start);
		res = json_object_new_object();
		json_object_object_add(res, "content",
				       json_object_new_string_len(start, (int)(end - start)));
		peer_send(c->p, jsonrpc_result_line(m->id, res));
		json_object_put(res);
	}
	buf_free(&b);
	free(path);
}

static void fs_write(struct acpclient *c, struct jsonrpc_msg *m)
{
	struct sbx_err e;
	char *path = confined(c, jsonfield_str(m->params, "path"), true, &e);
	const char *content = jsonfield_str(m->params, "content");
	int fd = -1;

	if (path && content == NULL)
		err_set(&e, SBX_EINVAL, "content must be a string");
	if (path && content &&
	    (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0)
		err_sys(&e, errno, "%s", path);
	if (fd >= 0 && write(fd, content, strlen(content)) != (ssize_t)strlen(content)) {
		err_sys(&e, errno, "%s", path);
		close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		close(fd);
		peer_send(c->p, jsonrpc_result_line(m->id, NULL));
	} else {
		peer_send(c->p, jsonrpc_error_line(m->id, JSONRPC_INTERNAL_ERROR, e.msg, NULL));
	}
	free(path);
}

static void on_message(struct peer *p, struct jsonrpc_msg *m, void *arg)
{
	struct acpclient *c = arg;

	(void)p;
	if (m->kind == JSONRPC_NOTIFICATION) {
		if (strcmp(m->method, "session/update") == 0)
			on_update(c, m->params);
		else if (strcmp(m->method, "_sbx/session_taken_over") == 0) {
			char *t = xasprintf("[session %s was opened by another connection; resume it "
					    "with -session-id to take it back]",
					    jsonfield_str(m->params, "sessionId") ?: "");
			acpview_line(c->view, t);
			free(t);
		}
	} else if (strcmp(m->method, "session/request_permission") == 0) {
		answer_permission(c, m);
	} else if (strcmp(m->method, "fs/read_text_file") == 0) {
		fs_read(c, m);
	} else if (strcmp(m->method, "fs/write_text_file") == 0) {
		fs_write(c, m);
	} else {
		char *msg = xasprintf("method not supported: %s", m->method);
		peer_send(c->p, jsonrpc_error_line(m->id, JSONRPC_METHOD_NOT_FOUND, msg, NULL));
		free(msg);
	}
	jsonrpc_msg_free(m);
}

static void *io_main(void *arg)
{
	struct acpclient *c = arg;
	struct sbx_err e;

	peer_run(c->p, on_message, c, &e);
	return NULL;
}

/* Ends a setup that takes longer than the deadline. */
static void *watchdog(void *arg)
{
	struct acpclient *c = arg;
	struct timespec until;
	int64_t ns = c->cfg.setup_timeout_ns;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(ns / 1000000000);
	until.tv_nsec += (long)(ns % 1000000000);
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&c->mu);
	while (!c->setup_done)
		if (pthread_cond_timedwait(&c->cv, &c->mu, &until) == ETIMEDOUT)
			break;
	if (!c->setup_done) {
		c->stop = 1;
		peer_wake_calls(c->p);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Calls method; an error answer becomes -1 with *code and its message. */
static int call(struct acpclient *c, const char *method, struct json_object *params,
		struct json_object **result, int *code, struct sbx_err *e)
{
	struct json_object *res = NULL, *error = NULL, *v;
	int rc;

	*code = 0;
	rc = peer_call(c->p, method, params, &c->stop, &res, &error, e);
	if (rc < 0) {
		if (e->code == SBX_ECANCELED)
			err_set(e, SBX_ETIMEDOUT, "%s: no answer in time", method);
		return -1;
	}
	if (error) {
		*code = json_object_object_get_ex(error, "code", &v) ? json_object_get_int(v) : 0;
		/* SBX_EINVAL: the agent refused this request; the connection is fine. */
		err_set(e, SBX_EINVAL, "%s", jsonfield_str(error, "message") ?: "error without message");
		json_object_put(error);
		json_object_put(res);
		return -1;
	}
	if (result)
		*result = res;
	else
		json_object_put(res);
	return 0;
}

static int authenticate(struct acpclient *c, struct sbx_err *e)
{
	struct json_object *params = json_object_new_object(), *meta;
	const char *method = c->cfg.auth_method;
	int code, rc;

	if (method == NULL && json_object_array_length(c->auth_methods) > 0)
		method = jsonfield_str(json_object_array_get_idx(c->auth_methods, 0), "id");
	if (method == NULL) {
		json_object_put(params);
		return err_set(e, SBX_EPERM, "the agent offers no authentication method");
	}
	json_object_object_add(params, "methodId", json_object_new_string(method));
	if (c->cfg.token) {
		meta = json_object_new_object();
		json_object_object_add(meta, "token", json_object_new_string(c->cfg.token));
		json_object_object_add(params, "_meta", meta);
	}
	rc = call(c, "authenticate", params, NULL, &code, e);
	json_object_put(params);
	if (rc < 0 && c->cfg.token == NULL)
		return err_prefix(e, "authentication failed (no token given: use -auth-token-file; "
				  "acp-server names its token file on standard error)");
	return rc < 0 ? err_prefix(e, "authentication failed") : 0;
}

/* "Mode: ask (available: ask, auto-read, never-ask)" when the agent has modes. */
static void show_modes(struct acpclient *c, struct json_object *res)
{
	struct json_object *modes, *avail;
	struct buf b = {0};
	size_t i, n;

	if (!json_object_object_get_ex(res, "modes", &modes) || jsonfield_str(modes, "currentModeId") == NULL)
		return;
	buf_printf(&b, "Mode: %s", jsonfield_str(modes, "currentModeId"));
	if (json_object_object_get_ex(modes, "availableModes", &avail) &&
	    json_object_is_type(avail, json_type_array) && (n = json_object_array_length(avail)) > 0) {
		buf_puts(&b, " (available:");
		for (i = 0; i < n; i++)
			buf_printf(&b, "%s %s", i ? "," : "",
				   jsonfield_str(json_object_array_get_idx(avail, i), "id") ?: "?");
		buf_puts(&b, "; /mode ID switches)");
	}
	buf_puts(&b, "\n");
	emitf(c, "%s", b.data);
	buf_free(&b);
}

int acpclient_set_mode(struct acpclient *c, const char *mode, struct sbx_err *e)
{
	struct json_object *params = json_object_new_object();
	int code, rc;

	json_object_object_add(params, "sessionId", json_object_new_string(c->session));
	json_object_object_add(params, "modeId", json_object_new_string(mode));
	rc = call(c, "session/set_mode", params, NULL, &code, e);
	json_object_put(params);
	return rc;
}

static int setup_session(struct acpclient *c, struct sbx_err *e)
{
	struct json_object *params = json_object_new_object(), *res = NULL;
	const char *method = c->cfg.session_id ? "session/load" : "session/new";
	int code, rc, attempt;

	if (c->cfg.session_id)
		json_object_object_add(params, "sessionId",
				       json_object_new_string(c->cfg.session_id));
	json_object_object_add(params, "cwd", json_object_new_string(c->cfg.cwd));
	json_object_object_add(params, "mcpServers", json_object_new_array());
	for (attempt = 0;; attempt++) {
		rc = call(c, method, params, &res, &code, e);
		/* As upstream: authenticate once, only when the agent asked for it. */
		if (rc < 0 && code == JSONRPC_AUTH_REQUIRED && attempt == 0 &&
		    json_object_array_length(c->auth_methods) > 0) {
			if ((rc = authenticate(c, e)) < 0)
				break;
			continue;
		}
		break;
	}
	if (rc == 0) {
		const char *id = c->cfg.session_id ? c->cfg.session_id : jsonfield_str(res, "sessionId");
		if (id == NULL)
			rc = err_set(e, SBX_EIO, "session/new: no sessionId in the answer");
		else
			c->session = xstrdup(id);
		show_modes(c, res);
	} else {
		err_prefix(e, "%s", method);
	}
	json_object_put(res);
	json_object_put(params);
	return rc;
}

struct acpclient *acpclient_open(const struct acpclient_config *cfg, struct peer *p,
				 struct sbx_err *e)
{
	struct acpclient *c = xcalloc(1, sizeof *c);
	struct json_object *params, *caps, *fs, *info, *res = NULL, *v;
	pthread_t wd;
	bool wd_started = false;
	int code, rc;
	bool ok = false;

	c->cfg = *cfg;
	c->p = p;
	c->view = acpview_new(cfg->emit, cfg->arg);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (pthread_create(&c->io, NULL, io_main, c) != 0) {
		err_set(e, SBX_EIO, "cannot start a thread");
		goto bad;
	}
	c->io_started = true;
	if (cfg->debug)
		peer_set_trace(p, cfg->debug, cfg->arg);
	if (cfg->setup_timeout_ns > 0 && pthread_create(&wd, NULL, watchdog, c) == 0)
		wd_started = true;
	params = json_object_new_object();
	json_object_object_add(params, "protocolVersion", json_object_new_int(1));
	caps = json_object_new_object();
	fs = json_object_new_object();
	json_object_object_add(fs, "readTextFile", json_object_new_boolean(1));
	json_object_object_add(fs, "writeTextFile", json_object_new_boolean(1));
	json_object_object_add(caps, "fs", fs);
	json_object_object_add(params, "clientCapabilities", caps);
	info = json_object_new_object();
	json_object_object_add(info, "name", json_object_new_string(ACPCLIENT_NAME));
	json_object_object_add(info, "version", json_object_new_string(ACPCLIENT_VERSION));
	json_object_object_add(params, "clientInfo", info);
	rc = call(c, "initialize", params, &res, &code, e);
	json_object_put(params);
	if (rc < 0) {
		err_prefix(e, "initialize");
		goto setup_over;
	}
	if (json_object_object_get_ex(res, "authMethods", &v) &&
	    json_object_is_type(v, json_type_array))
		c->auth_methods = json_object_get(v);
	else
		c->auth_methods = json_object_new_array();
	emitf(c, "Connected to ACP agent (protocol v%d)\n",
	      json_object_object_get_ex(res, "protocolVersion", &v) ? json_object_get_int(v) : 0);
	json_object_put(res);
	/* With a token in hand and a method on offer, log in before asking for anything. */
	if (cfg->token && json_object_array_length(c->auth_methods) > 0 && authenticate(c, e) < 0)
		goto setup_over;
	ok = setup_session(c, e) == 0;
setup_over:
	/* Setup is over either way: the watchdog stops waiting for it. */
	pthread_mutex_lock(&c->mu);
	c->setup_done = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (wd_started)
		pthread_join(wd, NULL);
	if (ok) {
		c->stop = 0;
		return c;
	}
bad:
	acpclient_close(c);
	return NULL;
}

bool acpclient_input_ended(const struct acpclient *c)
{
	return c->input_ended;
}

const char *acpclient_session(const struct acpclient *c)
{
	return c->session;
}

int acpclient_prompt(struct acpclient *c, const char *text, struct sbx_err *e)
{
	struct json_object *params = json_object_new_object(), *prompt = json_object_new_array();
	struct json_object *blk = json_object_new_object(), *res = NULL;
	const char *stop;
	int code, rc;

	json_object_object_add(blk, "type", json_object_new_string("text"));
	json_object_object_add(blk, "text", json_object_new_string(text));
	json_object_array_add(prompt, blk);
	json_object_object_add(params, "sessionId", json_object_new_string(c->session));
	json_object_object_add(params, "prompt", prompt);
	rc = call(c, "session/prompt", params, &res, &code, e);
	json_object_put(params);
	if (rc == 0) {
		stop = jsonfield_str(res, "stopReason");
		emitf(c, "\n[turn ended: %s]\n", stop ? stop : "?");
	}
	json_object_put(res);
	return rc;
}

void acpclient_cancel(struct acpclient *c)
{
	struct json_object *params = json_object_new_object();

	json_object_object_add(params, "sessionId", json_object_new_string(c->session ?: ""));
	peer_send(c->p, jsonrpc_notification_line("session/cancel", params));
	json_object_put(params);
}

/* note's "<what>: <why>". */
static void chat_note(void (*note)(void *, const char *), void *arg, const char *what,
		      const char *why)
{
	char *t = xasprintf("%s: %s", what, why);

	note(arg, t);
	free(t);
}

int acpclient_chat(struct acpclient *c, bool show_prompt,
		   void (*note)(void *arg, const char *text), void *arg)
{
	struct sbx_err e;
	int rc = 0;
	char *line;

	for (;;) {
		if (show_prompt)
			c->cfg.emit(c->cfg.arg, "\n> ");
		if ((line = c->cfg.read_line(c->cfg.arg)) == NULL)
			break;
		if (strcmp(line, "/exit") == 0 || strcmp(line, "/quit") == 0) {
			free(line);
			break;
		}
		if (strncmp(line, "/mode ", 6) == 0) {
			if (acpclient_set_mode(c, line + 6, &e) < 0)
				chat_note(note, arg, "mode not changed", e.msg);
			free(line);
			continue;
		}
		if (line[0] != '\0' && acpclient_prompt(c, line, &e) < 0) {
			chat_note(note, arg, "prompt failed", e.msg);
			if (e.code != SBX_EINVAL)	/* not just a refusal: the link is gone */
				rc = -1;
		}
		free(line);
		if (rc < 0)
			break;
	}
	return rc;
}

struct peer *acpclient_spawn(const char *cmd, const char *cwd, int log_fd, pid_t *pid,
			     int *errnum, struct sbx_err *e)
{
	char *words = xstrdup(cmd), *argv[ACPCLIENT_CMD_ARGS + 1], *save = NULL, *w;
	struct peer *p = NULL;
	int n = 0;

	*errnum = 0;
	for (w = strtok_r(words, " \t\n", &save); w && n < ACPCLIENT_CMD_ARGS;
	     w = strtok_r(NULL, " \t\n", &save))
		argv[n++] = w;
	argv[n] = NULL;
	if (n == 0)
		err_set(e, SBX_EINVAL, "-cmd is empty");
	else if (w)	/* never run a command cut short */
		err_set(e, SBX_EINVAL, "-cmd has more than %d words", ACPCLIENT_CMD_ARGS);
	else
		p = peer_spawn(argv, cwd, log_fd, pid, errnum, e);
	free(words);
	return p;
}

void acpclient_log_tail(const char *path, long long from,
			void (*say)(void *arg, const char *text), void *arg)
{
	size_t len, i, start = 0;
	int lines = 0;
	char *text = fs_read_tail(path, from, ACPCLIENT_LOG_TAIL_BYTES, &len), *p, *nl, *t;

	if (text == NULL)
		return;
	while (len > 0 && text[len - 1] == '\n')
		text[--len] = '\0';
	for (i = len; i-- > 0;)
		if (text[i] == '\n' && ++lines == ACPCLIENT_LOG_TAIL_LINES) {
			start = i + 1;
			break;
		}
	if (start < len) {
		t = xasprintf("the agent's last messages (%s):", path);
		say(arg, t);
		free(t);
	}
	for (p = text + start; start < len && p && *p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		t = xasprintf("agent: %.*s", nl ? (int)(nl - p) : (int)strlen(p), p);
		say(arg, t);
		free(t);
	}
	free(text);
}

void acpclient_close(struct acpclient *c)
{
	if (c == NULL)
		return;
	if (c->io_started) {
		peer_close(c->p);
		pthread_join(c->io, NULL);
	}
	peer_free(c->p);
	json_object_put(c->auth_methods);
	acpview_free(c->view);
	free(c->session);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
