/* porttool.c — the open_port tool and agent-loop's /port (see porttool.h). The forward itself
 * is sbx-port's: this module checks that something listens (so the model hears at once that
 * it must start its server first, rather than handing the person a dead link), runs
 * `sbx-port -d`, and words the result for the model and for ACP's client. */
#include "porttool.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "child.h"
#include "gojson.h"
#include "jsonfield.h"
#include "portfwd.h"
#include "xalloc.h"

/* How long the check may wait for the sandbox's port to answer a connect on its own loopback
 * (a refusal comes at once; a listener that does not accept in this time is taken as there). */
#define PROBE_WAIT_MS 2000
/* sbx-port -d only starts a process and prints a line. */
#define OPEN_TIMEOUT_NS (30LL * 1000000000)
/* Its one line. */
#define OPEN_OUT_MAX (8 * 1024)
/* The most tools a toolset has, open_port included. */
#define TOOLS_MAX 32

/* ---- checking the port ---- */

/* 1 when something accepts connections on 127.0.0.1:port inside local sandbox name, 0 when
 * the connection is refused, -1 with e. The socket is made in the sandbox's namespace by
 * sbx-port's own helper (lib/portfwd.c): nothing runs in the sandbox. */
static int probe_local(const char *ns, const char *name, int port, struct sbx_err *e)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct portfwd pf;
	struct pollfd p;
	socklen_t len = sizeof(int);
	int s, err = 0, rc = -1;

	if (portfwd_open(&pf, ns, name, port, e) < 0)
		return -1;
	if (portfwd_start(&pf, e) < 0 || (s = portfwd_socket(&pf, e)) < 0)
		goto out;
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		err = errno;
		if (err == EINPROGRESS) {
			p = (struct pollfd){.fd = s, .events = POLLOUT};
			err = poll(&p, 1, PROBE_WAIT_MS) == 1 &&
			      getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 ? err : 0;
		}
	}
	close(s);
	if (err == 0 || err == ECONNREFUSED)
		rc = err == 0;
	else
		err_sys(e, err, "cannot connect to port %d in sandbox %s", port, name);
out:
	portfwd_close(&pf);
	return rc;
}

/* ---- opening the forward ---- */

static char *sbx_port_path(const char *bindir)
{
	char *dir = bindir ? NULL : child_self_dir(), *p;

	p = child_find(bindir ? bindir : dir, "sbx-port");
	free(dir);
	return p ? p : xstrdup("sbx-port");
}

/* Runs sbx-port -d; its URL, or NULL with e. */
static char *detach_forward(const char *backend, const char *ns, const char *name, int port,
			    const char *bindir, int cancel_fd, struct sbx_err *e)
{
	char portstr[8], *path = sbx_port_path(bindir), *url = NULL, *msg;
	char *argv[] = {path, "-d", "-backend", (char *)backend, "-namespace", (char *)ns,
			(char *)name, portstr, NULL};
	struct child_req rq = {.path = path, .argv = argv, .cancel_fd = cancel_fd,
			       .timeout_ns = OPEN_TIMEOUT_NS, .out_max = OPEN_OUT_MAX};
	struct child_result res = {0};
	struct json_object *o = NULL;
	const char *why, *u;

	snprintf(portstr, sizeof portstr, "%d", port);
	if (child_run(&rq, &res, e) < 0)
		goto out;
	if (res.canceled) {
		err_set(e, SBX_ECANCELED, "canceled");
	} else if (res.status != 0) {
		msg = child_err_message(&res, "sbx-port");
		err_set(e, res.status == 101 ? SBX_ENOTFOUND : SBX_EIO, "%s",
			*msg ? msg : "sbx-port failed");
		free(msg);
	} else if ((o = gojson_parse(res.out, res.out_len, &why)) == NULL ||
		   (u = jsonfield_str(o, "url")) == NULL) {
		err_set(e, SBX_EIO, "sbx-port printed no URL");
	} else {
		url = xstrdup(u);
	}
out:
	json_object_put(o);
	child_result_free(&res);
	free(path);
	return url;
}

enum porttool_result porttool_open(const char *backend, const char *ns, const char *name,
				   int port, const char *bindir, int cancel_fd, char **url,
				   struct sbx_err *e)
{
	int up = 1;

	*url = NULL;
	if (strcmp(backend, "local") == 0 && (up = probe_local(ns, name, port, e)) < 0)
		return PORTTOOL_ERROR;
	if (up == 0) {
		err_set(e, SBX_EINVAL, "nothing listens on port %d in the sandbox", port);
		return PORTTOOL_NOTHING;
	}
	*url = detach_forward(backend, ns, name, port, bindir, cancel_fd, e);
	return *url ? PORTTOOL_OPEN : PORTTOOL_ERROR;
}

/* ---- the tool ---- */

/* The port argument: a whole number from 1 to 65535 (a string of digits too: some models
 * quote numbers), else 0. */
static int port_arg(struct json_object *args)
{
	struct json_object *v;
	const char *s;
	char *end;
	long n;

	if (!json_object_object_get_ex(args, "port", &v))
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);
		return i >= 1 && i <= 65535 ? (int)i : 0;
	}
	if (!json_object_is_type(v, json_type_string) || (s = json_object_get_string(v))[0] < '0' ||
	    s[0] > '9')
		return 0;
	errno = 0;
	n = strtol(s, &end, 10);
	return *end == 0 && errno == 0 && n >= 1 && n <= 65535 ? (int)n : 0;
}

static char *open_port_run(const struct tool_ctx *ctx, struct json_object *args, size_t *len,
			   bool *failed, struct sbx_err *e)
{
	int port = port_arg(args);
	char *url = NULL, *out;
	enum porttool_result r;

	*failed = true;
	if (port == 0) {
		out = xstrdup("port must be a whole number from 1 to 65535");
		goto done;
	}
	r = porttool_open(ctx->b->ops->name, ctx->b->namespace, ctx->sandbox, port, NULL,
			  ctx->cancel_fd, &url, e);
	if (r == PORTTOOL_ERROR && (e->code == SBX_ENOTFOUND || e->code == SBX_ECANCELED))
		return NULL;	/* the registry's: the caller makes the sandbox and calls again */
	if (r == PORTTOOL_NOTHING)
		out = xasprintf("Nothing listens on port %d in the sandbox, so nothing was opened. "
				"Start the server first (listening on 127.0.0.1 or 0.0.0.0, port %d), "
				"then call open_port again.", port, port);
	else if (r == PORTTOOL_ERROR)
		out = xasprintf("Cannot open port %d: %s", port, e->msg);
	else
		out = xasprintf("%s\nPort %d of the sandbox is open for the user at this URL, on "
				"their machine's loopback, until the sandbox ends. Give them the URL.",
				url, port);
	*failed = r != PORTTOOL_OPEN;
done:
	free(url);
	*len = strlen(out);
	return out;
}

static const struct tool open_port_tool = {
	"open_port",
	"Open a TCP port of the sandbox (where a server you started listens) to the user: "
	"returns a URL on their machine that reaches it. Start the server first.",
	"{\"type\":\"object\",\"properties\":{\"port\":{\"type\":\"integer\",\"description\":"
	"\"The port the server listens on inside the sandbox (1-65535)\"}},"
	"\"required\":[\"port\"]}",
	open_port_run,
};

/* ---- toolsets with it ---- */

static struct tool tools[PORTTOOL_BASES_MAX][TOOLS_MAX];
static struct toolset sets[PORTTOOL_BASES_MAX];
static char names[PORTTOOL_BASES_MAX][64];
static size_t nsets;
static const struct toolset *const *bases;	/* toolset.c's table, set before the once */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* base's tools with open_port in name order. */
static void compose(size_t k, const struct toolset *base)
{
	size_t n = 0, i;

	sets[k] = *base;
	for (i = 0; i < base->ntools && n + 1 < TOOLS_MAX; i++) {
		if (n == i && strcmp(base->tools[i].name, open_port_tool.name) > 0)
			tools[k][n++] = open_port_tool;
		tools[k][n++] = base->tools[i];
	}
	if (n == i)
		tools[k][n++] = open_port_tool;
	sets[k].tools = tools[k];
	sets[k].ntools = n;
	snprintf(names[k], sizeof names[k], "%s" PORTTOOL_SUFFIX, base->name);
	sets[k].name = names[k];
}

static void compose_all(void)
{
	for (size_t k = 0; k < nsets; k++)
		compose(k, bases[k]);
}

const struct toolset *porttool_toolset(const char *name, const struct toolset *const *base,
				       size_t nbase, struct sbx_err *e)
{
	bases = base;	/* the same table on every call */
	nsets = nbase < PORTTOOL_BASES_MAX ? nbase : PORTTOOL_BASES_MAX;
	pthread_once(&once, compose_all);
	for (size_t k = 0; k < nsets; k++)
		if (strcmp(sets[k].name, name) == 0)
			return &sets[k];
	err_set(e, SBX_EINVAL, "unknown toolset \"%s\" (available: basic, geminicli, each with "
		"\"" PORTTOOL_SUFFIX "\" added to offer open_port)", name);
	return NULL;
}

/* ---- ACP ---- */

struct json_object *porttool_link(const char *name, const char *content, bool failed)
{
	struct json_object *tc, *blk;
	size_t n;

	if (failed || content == NULL || strcmp(name, open_port_tool.name) != 0 ||
	    strncmp(content, "http://", 7) != 0)
		return NULL;
	n = strcspn(content, "\n");
	blk = json_object_new_object();
	json_object_object_add(blk, "type", json_object_new_string("resource_link"));
	json_object_object_add(blk, "uri", json_object_new_string_len(content, (int)n));
	json_object_object_add(blk, "name", json_object_new_string_len(content, (int)n));
	json_object_object_add(blk, "title", json_object_new_string("the sandbox's port"));
	tc = json_object_new_object();
	json_object_object_add(tc, "type", json_object_new_string("content"));
	json_object_object_add(tc, "content", blk);
	return tc;
}
