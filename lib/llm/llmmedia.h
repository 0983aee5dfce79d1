/* llmmedia.h — files a tool gave the model to look at (toolparts.h: images, PDF, audio,
 * video) in a conversation with an OpenAI-compatible endpoint. A tool message can carry only
 * text there, so the history's tool message keeps its text (which names each file) plus an
 * "inline_data" array, and each request puts those files in a user message right after the
 * run of tool messages, as the content parts the vendor and model take: image_url (PNG,
 * JPEG, GIF, WebP) for vision models, input_audio (WAV, MP3) and file (PDF) where the vendor
 * documents them; anything else becomes a text line saying it was not sent. "inline_data" itself never goes
 * out. Old histories have no such field and load as they did.
 * Ownership: returned json_object pointers are new references. */
#ifndef SBX_LLMMEDIA_H
#define SBX_LLMMEDIA_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct vendor;

/* One file kept in the history and sent, decoded: vendors cap an image at 5 MB to 20 MB and
 * every later request of the session sends it again. */
#define LLMMEDIA_PART_MAX ((size_t)4 << 20)
/* The base64 of all files in one request, newest first; older ones become a text line. */
#define LLMMEDIA_REQUEST_MAX ((size_t)16 << 20)

/* Files are kept while the history file stays under this (half its HISTORY_MAX of 64 MiB,
 * past which a session no longer loads): the rest of a long session's files become lines. */
#define LLMMEDIA_HISTORY_MAX ((size_t)32 << 20)

/* Adds to tool message msg the inline parts of parts (toolparts.h) as "inline_data":
 * [{"mime_type","data","name"}]; a file over LLMMEDIA_PART_MAX, or one that would take a
 * history of history_len bytes past LLMMEDIA_HISTORY_MAX, is left out and a line saying so
 * is added to msg's content. parts NULL: nothing. */
void llmmedia_attach(struct json_object *msg, struct json_object *parts, size_t history_len);
/* A copy of messages for model at vendor v (NULL: generic): tool messages without
 * "inline_data", and after each run of tool messages that had some, one user message with
 * their files: images (and PDF) only for models llmmedia_model_images names, audio only for
 * Gemini's and OpenAI's audio models. */
struct json_object *llmmedia_messages(struct json_object *messages, const struct vendor *v,
				      const char *model);
/* Whether the model's name is of a family whose endpoints take image parts. */
bool llmmedia_model_images(const char *model);

#endif
