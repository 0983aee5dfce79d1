/* vendor.h — what each OpenAI-compatible vendor accepts back in a request, and how it wants
 * the key. Vendors return output-only fields (Groq's "reasoning", a streamed message-level
 * "index") that they or others then refuse with a 400 or 422, while some require theirs back
 * (DeepSeek's reasoning_content in a turn that called tools, Gemini's thought signatures).
 * The history keeps everything; the request sent to a vendor holds what that vendor takes.
 * A vendor is named (-vendor, $LLM_VENDOR) or found from the base URL's host; an unknown host
 * is "generic": everything passes but the streaming index.
 * Ownership: vendors are static; returned json_object pointers are new references. */
#ifndef SBX_VENDOR_H
#define SBX_VENDOR_H

#include <json-c/json.h>

struct vendor;

/* The vendor called name, or NULL. */
const struct vendor *vendor_by_name(const char *name);
/* The vendor whose API host the URL names, else the generic one. */
const struct vendor *vendor_for_url(const char *url);
const char *vendor_name(const struct vendor *v);
/* The header that carries the key: "Authorization" (as a Bearer token) or, for Azure
 * OpenAI's keys, "api-key". */
const char *vendor_auth_header(const struct vendor *v);
/* The names of all vendors, comma-separated, for usage and error texts. */
const char *vendor_names(void);
/* A copy of messages holding, per message and per tool call, only what v accepts. */
struct json_object *vendor_messages(const struct vendor *v, struct json_object *messages);

#endif
