/* vendor.c — the per-vendor request policy: one table row a vendor, sourced in
 * tests/llm/SOURCES and proved by tests/llm-replay.bats. */
#include "vendor.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* A host name is at most this long (RFC 1035); a longer one matches no vendor. */
#define HOST_MAX 255

struct vendor {
	const char *name;
	const char *const *hosts;	/* exact hosts, or ".suffix" for a domain's hosts */
	/* The fields a message, a tool call and its function may carry; NULL: any field but
	 * the streaming "index". Strict vendors (schema-validated, extra fields refused) list
	 * what their API reference defines. */
	const char *const *message_keys;
	const char *const *call_keys;
	const char *const *function_keys;
	/* A field kept only on assistant messages of a user turn that called tools (DeepSeek:
	 * reasoning_content "must be passed back" there and is ignored elsewhere). */
	const char *tool_turn_key;
	const char *auth_header;
};

#define STD_MESSAGE "role", "content", "name", "tool_calls", "tool_call_id"
#define STD_CALL "id", "type", "function"
#define STD_FUNCTION "name", "arguments"

static const char *const openai_message[] = {STD_MESSAGE, "refusal", NULL};
static const char *const plain_message[] = {STD_MESSAGE, NULL};
static const char *const prefix_message[] = {STD_MESSAGE, "prefix", NULL};
static const char *const gemini_message[] = {STD_MESSAGE, "extra_content", "thought_signature", NULL};
static const char *const std_call[] = {STD_CALL, NULL};
static const char *const gemini_call[] = {STD_CALL, "extra_content", "thought_signature", NULL};
static const char *const std_function[] = {STD_FUNCTION, NULL};
static const char *const gemini_function[] = {STD_FUNCTION, "thought_signature", NULL};

static const char *const openai_hosts[] = {"api.openai.com", NULL};
static const char *const azure_hosts[] = {".openai.azure.com", ".cognitiveservices.azure.com",
					  ".services.ai.azure.com", NULL};
static const char *const gemini_hosts[] = {"generativelanguage.googleapis.com", NULL};
static const char *const groq_hosts[] = {"api.groq.com", NULL};
static const char *const deepseek_hosts[] = {"api.deepseek.com", NULL};
static const char *const openrouter_hosts[] = {"openrouter.ai", NULL};
static const char *const mistral_hosts[] = {"api.mistral.ai", "codestral.mistral.ai", NULL};
static const char *const dashscope_hosts[] = {"dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com",
					      "dashscope-us.aliyuncs.com", ".maas.aliyuncs.com", NULL};
static const char *const ollama_hosts[] = {"ollama.com", NULL};
static const char *const no_hosts[] = {NULL};

static const struct vendor vendors[] = {
	{"openai", openai_hosts, openai_message, std_call, std_function, NULL, "Authorization"},
	{"azure", azure_hosts, openai_message, std_call, std_function, NULL, "api-key"},
	{"gemini", gemini_hosts, gemini_message, gemini_call, gemini_function, NULL, "Authorization"},
	{"groq", groq_hosts, plain_message, std_call, std_function, NULL, "Authorization"},
	{"deepseek", deepseek_hosts, prefix_message, std_call, std_function, "reasoning_content",
	 "Authorization"},
	{"openrouter", openrouter_hosts, NULL, NULL, NULL, NULL, "Authorization"},
	{"mistral", mistral_hosts, prefix_message, std_call, std_function, NULL, "Authorization"},
	{"dashscope", dashscope_hosts, plain_message, std_call, std_function, NULL, "Authorization"},
	{"ollama", ollama_hosts, NULL, NULL, NULL, NULL, "Authorization"},
	{"vllm", no_hosts, NULL, NULL, NULL, NULL, "Authorization"},
	{"llamacpp", no_hosts, NULL, NULL, NULL, NULL, "Authorization"},
	{"generic", no_hosts, NULL, NULL, NULL, NULL, "Authorization"},
};
#define GENERIC (&vendors[sizeof vendors / sizeof vendors[0] - 1])

const struct vendor *vendor_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof vendors / sizeof vendors[0]; i++)
		if (strcasecmp(name, vendors[i].name) == 0)
			return &vendors[i];
	return NULL;
}

const char *vendor_names(void)
{
	return "openai, azure, gemini, groq, deepseek, openrouter, mistral, dashscope, ollama, "
	       "vllm, llamacpp, generic";
}

const char *vendor_name(const struct vendor *v)
{
	return v->name;
}

const char *vendor_auth_header(const struct vendor *v)
{
	return v->auth_header;
}

static bool host_matches(const char *host, size_t n, const char *pat)
{
	size_t pl = strlen(pat);

	if (pat[0] == '.')	/* a subdomain of the suffix, never the bare suffix's look-alike */
		return n > pl && strncasecmp(host + n - pl, pat, pl) == 0;
	return n == pl && strncasecmp(host, pat, n) == 0;
}

const struct vendor *vendor_for_url(const char *url)
{
	const char *p = strstr(url, "://"), *host, *end, *at;
	size_t i, n;

	if (p == NULL)
		return GENERIC;
	host = p + 3;
	end = host + strcspn(host, "/?#");
	for (at = host; at < end; at++)	/* user:password@ comes before the host */
		if (*at == '@')
			host = at + 1;
	for (p = host; p < end && *p != ':'; p++)
		;
	n = (size_t)(p - host);
	if (n > 0 && host[n - 1] == '.')
		n--;	/* a fully qualified name's root dot */
	if (n == 0 || n > HOST_MAX)
		return GENERIC;
	for (i = 0; i < sizeof vendors / sizeof vendors[0]; i++) {
		const char *const *h;

		for (h = vendors[i].hosts; *h; h++)
			if (host_matches(host, n, *h))
				return &vendors[i];
	}
	return GENERIC;
}

static bool listed(const char *const *keys, const char *k)
{
	for (; *keys; keys++)
		if (strcmp(*keys, k) == 0)
			return true;
	return false;
}

/* A copy of obj with the keys allowed (NULL: all but "index"); objects under "function" are
 * filtered by function_keys when given. */
static struct json_object *filtered(struct json_object *obj, const char *const *keys,
				    const char *const *function_keys)
{
	struct json_object *out = json_object_new_object();

	json_object_object_foreach(obj, k, v) {
		if (keys ? !listed(keys, k) : strcmp(k, "index") == 0)
			continue;
		if (function_keys && strcmp(k, "function") == 0 && json_object_is_type(v, json_type_object))
			json_object_object_add(out, k, filtered(v, function_keys, NULL));
		else
			json_object_object_add(out, k, json_object_get(v));
	}
	return out;
}

static const char *role_of(struct json_object *m)
{
	struct json_object *r;

	return json_object_object_get_ex(m, "role", &r) && json_object_is_type(r, json_type_string) ?
	       json_object_get_string(r) : "";
}

static bool calls_tools(struct json_object *m)
{
	struct json_object *c;

	return json_object_object_get_ex(m, "tool_calls", &c) && json_object_is_type(c, json_type_array) &&
	       json_object_array_length(c) > 0;
}

/* Whether the user turn holding message i (from the user message before it to the next)
 * called a tool. */
static bool turn_calls_tools(struct json_object *messages, size_t i)
{
	size_t n = json_object_array_length(messages), a = i, b;

	while (a > 0 && strcmp(role_of(json_object_array_get_idx(messages, a)), "user") != 0)
		a--;
	for (b = a; b < n; b++) {
		struct json_object *m = json_object_array_get_idx(messages, b);

		if (b > a && strcmp(role_of(m), "user") == 0)
			break;
		if (calls_tools(m))
			return true;
	}
	return false;
}

struct json_object *vendor_messages(const struct vendor *v, struct json_object *messages)
{
	struct json_object *out = json_object_new_array();
	size_t i, n = json_object_array_length(messages);

	for (i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(messages, i), *o, *calls, *c, *r;

		if (!json_object_is_type(m, json_type_object)) {
			json_object_array_add(out, json_object_get(m));
			continue;
		}
		o = filtered(m, v->message_keys, NULL);
		if (json_object_object_get_ex(o, "tool_calls", &calls) &&
		    json_object_is_type(calls, json_type_array)) {
			size_t j;

			c = json_object_new_array();
			for (j = 0; j < json_object_array_length(calls); j++) {
				struct json_object *call = json_object_array_get_idx(calls, j);

				json_object_array_add(c, json_object_is_type(call, json_type_object) ?
						      filtered(call, v->call_keys, v->function_keys) :
						      json_object_get(call));
			}
			json_object_object_add(o, "tool_calls", c);
		}
		if (v->tool_turn_key && json_object_object_get_ex(m, v->tool_turn_key, &r) &&
		    strcmp(role_of(m), "assistant") == 0 && turn_calls_tools(messages, i))
			json_object_object_add(o, v->tool_turn_key, json_object_get(r));
		json_object_array_add(out, o);
	}
	return out;
}
