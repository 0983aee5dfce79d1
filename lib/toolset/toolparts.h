/* toolparts.h — a tool result that holds files the model looks at rather than reads
 * (geminicli read_file / read_many_files of an image, PDF, audio or video file), kept as
 * gemini-cli's Parts: [{"text":…}, {"inlineData":{"mimeType":…,"data":<base64>,
 * "displayName":<path>}}, …] in order. A channel that carries only text gets
 * toolparts_text; MCP gets image / audio / resource items (toolparts_mcp_content); an
 * OpenAI-compatible request gets content parts (llmmedia.h).
 * Ownership: returned json_object pointers are new references, strings newly allocated. */
#ifndef SBX_TOOLPARTS_H
#define SBX_TOOLPARTS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* What the toolbox may answer: gemini-cli's 20 MB file cap, base64 (4/3), plus the text. */
#define TOOLPARTS_OUTPUT_MAX ((size_t)28 << 20)
/* A MIME type is a short token pair; the sandbox writes it, so it is checked. */
#define TOOLPARTS_MIME_MAX 100

/* A clean copy of a Parts array a sandbox produced (untrusted): text parts (strings) and
 * inlineData parts whose mimeType is image/…, audio/…, video/… or application/pdf (token
 * characters only) and whose data is base64; NULL with e for anything else. */
struct json_object *toolparts_check(struct json_object *parts, struct sbx_err *e);
/* Whether parts holds an inline data part. */
bool toolparts_has_media(struct json_object *parts);
/* The text a text-only channel shows: text parts joined by "\n" (gemini-cli's join), each
 * inline part as "[<mime> file <name>, <n> bytes: sent as inline data]"; *len its length. */
char *toolparts_text(struct json_object *parts, size_t *len);
/* The decoded size of base64 text of length n. */
size_t toolparts_decoded_len(const char *b64, size_t n);
/* MCP CallToolResult content: text items, image items (image/…), audio items (audio/…),
 * embedded resources with a blob for the rest (PDF, video), named file:///<displayName>. */
struct json_object *toolparts_mcp_content(struct json_object *parts);

#endif
