/* acpsend.c — what every part of the ACP server says back: replies, errors, session updates
 * and text chunks, the log line, new session ids. One floor below the parts that call it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "acp_int.h"
#include "logfn.h"
#include "randhex.h"

void acp_log(struct acp_server *srv, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	logfn_vprintf(srv->cfg.log, srv->cfg.log_arg, fmt, ap);
	va_end(ap);
}

int acp_new_session_id(char out[ACP_SESSION_ID_LEN + 1], struct sbx_err *e)
{
	memcpy(out, "acp", 3);
	return randhex(out + 3, (ACP_SESSION_ID_LEN - 3) / 2, e);
}

struct json_object *acp_text_block(const char *text, size_t len)
{
	struct json_object *c = json_object_new_object();

	json_object_object_add(c, "type", json_object_new_string("text"));
	json_object_object_add(c, "text", json_object_new_string_len(text, (int)len));
	return c;
}

void acp_send_update(struct peer *p, const char *sid, struct json_object *update)
{
	struct json_object *params = json_object_new_object();

	json_object_object_add(params, "sessionId", json_object_new_string(sid));
	json_object_object_add(params, "update", update);
	peer_send(p, jsonrpc_notification_line("session/update", params));
	json_object_put(params);
}

void acp_send_chunk(struct peer *p, const char *sid, const char *kind, const char *text,
		    size_t len)
{
	struct json_object *u = json_object_new_object();

	json_object_object_add(u, "sessionUpdate", json_object_new_string(kind));
	json_object_object_add(u, "content", acp_text_block(text, len));
	acp_send_update(p, sid, u);
}

void acp_reply(struct peer *p, struct json_object *id, struct json_object *result)
{
	peer_send(p, jsonrpc_result_line(id, result));
	json_object_put(result);
}

void acp_reply_error(struct peer *p, struct json_object *id, int code, const char *fmt, ...)
{
	char msg[SBX_ERR_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	peer_send(p, jsonrpc_error_line(id, code, msg, NULL));
}

void acp_reply_no_session(struct peer *p, struct json_object *id, const char *sid,
			  const char *fmt, ...)
{
	char msg[SBX_ERR_MAX + 256];
	struct json_object *data = json_object_new_object();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_object_object_add(data, "sessionId", json_object_new_string(sid));
	peer_send(p, jsonrpc_error_line(id, JSONRPC_NOT_FOUND, msg, data));
	json_object_put(data);
}
