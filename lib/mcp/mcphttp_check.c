/* mcphttp_check.c — the Streamable HTTP server's decisions about one request before its body
 * (path, token, Origin, method, media types, session and protocol headers) and its token
 * files; apart from the sockets so they can be tested and fuzzed alone (see mcphttp.h). */
#include "mcphttp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>


#include "acpauth.h"
#include "paths.h"
#include "xalloc.h"

/* ---- decisions ------------------------------------------------------------------------------ */

bool mcphttp_origin_ok(const char *origin)
{
	static const char *const hosts[] = {"localhost", "127.0.0.1", "[::1]"};
	const char *h, *end;
	size_t n;

	if (strncmp(origin, "http://", 7) == 0)
		h = origin + 7;
	else if (strncmp(origin, "https://", 8) == 0)
		h = origin + 8;
	else
		return false;
	end = h[0] == '[' ? strchr(h, ']') : NULL;
	end = end ? end + 1 : h + strcspn(h, ":/");
	n = (size_t)(end - h);
	if (*end != '\0' && *end != ':' && *end != '/')
		return false;
	for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++)
		if (strlen(hosts[i]) == n && strncasecmp(h, hosts[i], n) == 0)
			return true;
	/* The rest of 127.0.0.0/8. */
	return n > 4 && n < 16 && strncmp(h, "127.", 4) == 0 && strspn(h, "0123456789.") == n;
}

bool mcphttp_accepts(const char *accept, const char *type)
{
	const char *p = accept;
	size_t tl = strlen(type), major = strcspn(type, "/");

	if (accept == NULL || *accept == '\0')
		return true;
	while (*p) {
		size_t n;

		p += strspn(p, " \t,");
		n = strcspn(p, ",;");
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if ((n == tl && strncasecmp(p, type, n) == 0) || (n == 3 && strncmp(p, "*/*", 3) == 0) ||
		    (n == major + 2 && strncasecmp(p, type, major + 1) == 0 && p[major + 1] == '*'))
			return true;
		p += strcspn(p, ",");
	}
	return false;
}

static const char *const www_missing = "Bearer realm=\"sbx-mcp\"";
static const char *const www_invalid = "Bearer realm=\"sbx-mcp\", error=\"invalid_token\"";

static void refuse(struct mcphttp_decision *d, int status, const char *msg)
{
	d->verdict = MCPHTTP_REFUSE;
	d->status = status;
	d->message = msg;
}

static bool token_ok(const char *auth, const char *token)
{
	if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
		return false;
	auth += 7;
	auth += strspn(auth, " ");
	return acp_token_equal(auth, token);
}

void mcphttp_decide(const struct mcphttp_req *r, struct mcphttp_decision *d)
{
	bool post, del;

	memset(d, 0, sizeof *d);
	d->verdict = MCPHTTP_OK;
	if (r->path == NULL || strcmp(r->path, MCPHTTP_PATH) != 0)
		return refuse(d, 404, "not found: the MCP endpoint is " MCPHTTP_PATH);
	if (r->authorization == NULL || !token_ok(r->authorization, r->token)) {
		d->www_authenticate = r->authorization ? www_invalid : www_missing;
		return refuse(d, 401, r->authorization ? "unauthorized: wrong bearer token"
			      : "unauthorized: send \"Authorization: Bearer <token>\"");
	}
	d->authorized = true;
	if (r->origin && !mcphttp_origin_ok(r->origin))
		return refuse(d, 403, "forbidden: Origin is not a loopback origin");
	post = r->method && strcmp(r->method, "POST") == 0;
	del = r->method && strcmp(r->method, "DELETE") == 0;
	if (!post && !del) {
		d->allow = "POST, DELETE";
		return refuse(d, 405, "method not allowed: POST messages; this server opens no "
			      "stream of its own (GET)");
	}
	if (post && (r->content_type == NULL ||
		     strncasecmp(r->content_type, "application/json", 16) != 0 ||
		     (r->content_type[16] != '\0' && r->content_type[16] != ';' &&
		      r->content_type[16] != ' ')))
		return refuse(d, 415, "unsupported media type: send application/json");
	if (post && !mcphttp_accepts(r->accept, "application/json") &&
	    !mcphttp_accepts(r->accept, "text/event-stream"))
		return refuse(d, 406, "not acceptable: accept application/json or text/event-stream");
	if (r->session_id && !r->session_known)
		return refuse(d, 404, "session not found: initialize a new one");
	if (del && r->session_id == NULL)
		return refuse(d, 400, "bad request: DELETE needs Mcp-Session-Id");
	if (r->session_known && r->protocol_version && r->session_version &&
	    strcmp(r->protocol_version, r->session_version) != 0)
		return refuse(d, 400, mcp_version_find(r->protocol_version)
			      ? "bad request: MCP-Protocol-Version differs from the session's"
			      : "bad request: unsupported MCP-Protocol-Version");
}
