/* acpreplay.c — the replay of a stored conversation (session/load) as session/update
 * notifications, in the shapes a live turn sends. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_int.h"
#include "gojson.h"
#include "jsonfield.h"
#include "timeutil.h"
#include "toolset.h"
#include "toolmsg.h"
#include "xalloc.h"

/* ---- replay ------------------------------------------------------------------------------- */

static bool send_replay(struct acp_session *s, struct peer *p, struct json_object *u)
{
	/* A long history goes out at the client's pace, not into an ever longer queue. */
	if (!peer_wait_room(p, PEER_OUTQ_MAX / 4) || s->cancel) {
		json_object_put(u);
		return false;
	}
	acp_send_update(p, s->id, u);
	return true;
}

static bool replay_chunk(struct acp_session *s, struct peer *p, const char *kind,
			 struct json_object *block)
{
	struct json_object *u = json_object_new_object();

	json_object_object_add(u, "sessionUpdate", json_object_new_string(kind));
	json_object_object_add(u, "content", block);
	return send_replay(s, p, u);
}

/* A user message's content: its text, and its image parts as image blocks. */
static bool replay_user(struct acp_session *s, struct peer *p, struct json_object *content)
{
	size_t i, n;

	if (json_object_is_type(content, json_type_string))
		return json_object_get_string_len(content) == 0 ||
		       replay_chunk(s, p, "user_message_chunk",
				    acp_text_block(json_object_get_string(content),
						   (size_t)json_object_get_string_len(content)));
	if (!json_object_is_type(content, json_type_array))
		return true;
	n = json_object_array_length(content);
	for (i = 0; i < n; i++) {
		struct json_object *part = json_object_array_get_idx(content, i), *iu, *blk;
		const char *type = jsonfield_str(part, "type"), *t, *url, *comma;
		if (type && strcmp(type, "text") == 0 && (t = jsonfield_str(part, "text")) != NULL) {
			if (!replay_chunk(s, p, "user_message_chunk", acp_text_block(t, strlen(t))))
				return false;
		} else if (type && strcmp(type, "image_url") == 0 &&
			   json_object_object_get_ex(part, "image_url", &iu) &&
			   (url = jsonfield_str(iu, "url")) != NULL && strncmp(url, "data:", 5) == 0 &&
			   (comma = strstr(url, ";base64,")) != NULL) {
			blk = json_object_new_object();
			json_object_object_add(blk, "type", json_object_new_string("image"));
			json_object_object_add(blk, "data", json_object_new_string(comma + 8));
			json_object_object_add(blk, "mimeType",
					       json_object_new_string_len(url + 5, (int)(comma - url - 5)));
			if (!replay_chunk(s, p, "user_message_chunk", blk))
				return false;
		}
	}
	return true;
}

/* The stored result of the call with model id cid: the tool message after the assistant
 * message at index i, before the next assistant message. */
static const char *result_of(struct json_object *hist, size_t i, const char *cid)
{
	size_t j, n = json_object_array_length(hist);

	for (j = i + 1; j < n; j++) {
		struct json_object *m = json_object_array_get_idx(hist, j);
		const char *role = jsonfield_str(m, "role");
		if (role && strcmp(role, "assistant") == 0)
			break;
		if (role && strcmp(role, "tool") == 0 && jsonfield_str(m, "tool_call_id") &&
		    strcmp(jsonfield_str(m, "tool_call_id"), cid) == 0)
			return jsonfield_str(m, "content") ?: "";
	}
	return NULL;
}

static bool replay_calls(struct acp_session *s, struct peer *p, struct json_object *hist,
			 size_t i, struct json_object *calls)
{
	struct acp_pathmap pm = acp_session_paths(s);
	size_t k, n = json_object_array_length(calls);

	for (k = 0; k < n; k++) {
		struct json_object *call = json_object_array_get_idx(calls, k), *fn = NULL, *u;
		const char *name, *args, *content;
		char *id = acp_call_id(i, k);

		json_object_object_get_ex(call, "function", &fn);
		name = jsonfield_str(fn, "name") ?: "";
		args = jsonfield_str(fn, "arguments");
		content = result_of(hist, i, jsonfield_str(call, "id") ?: "");
		u = json_object_new_object();
		json_object_object_add(u, "sessionUpdate", json_object_new_string("tool_call"));
		json_object_object_add(u, "toolCallId", json_object_new_string(id));
		free(id);
		acptool_describe(u, name, args, &pm);
		if (content)
			acptool_result(u, name, args, content, acptool_failed_text(name, content), &pm);
		else
			json_object_object_add(u, "status", json_object_new_string("failed"));
		if (!send_replay(s, p, u))
			return false;
		/* The plan it sent, again. */
		if (content && !toolmsg_is_harness(name, content) && acp_plan_offered(s->srv, name) &&
		    (u = acp_plan_update(args)) != NULL && !send_replay(s, p, u))
			return false;
	}
	return true;
}

bool acp_replay_message(struct acp_session *s, struct peer *p, struct json_object *hist, size_t i)
{
	struct json_object *m = json_object_array_get_idx(hist, i), *v;
	const char *role = jsonfield_str(m, "role");

	if (role == NULL)
		return true;
	if (strcmp(role, "user") == 0)
		return !json_object_object_get_ex(m, "content", &v) || replay_user(s, p, v);
	if (strcmp(role, "assistant") != 0)
		return true;	/* system and tool messages: tool results go with their calls */
	if (json_object_object_get_ex(m, "reasoning_content", &v) &&
	    json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0 &&
	    !replay_chunk(s, p, "agent_thought_chunk",
			  acp_text_block(json_object_get_string(v), (size_t)json_object_get_string_len(v))))
		return false;
	if (json_object_object_get_ex(m, "content", &v) && json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > 0 &&
	    !replay_chunk(s, p, "agent_message_chunk",
			  acp_text_block(json_object_get_string(v), (size_t)json_object_get_string_len(v))))
		return false;
	if (json_object_object_get_ex(m, "tool_calls", &v) && json_object_is_type(v, json_type_array))
		return replay_calls(s, p, hist, i, v);
	return true;
}
