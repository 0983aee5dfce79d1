/* llmmsg.h — the shapes of an assistant message across OpenAI-compatible vendors: streamed
 * deltas folded into one message, content given as an array of parts flattened to text (and
 * reasoning), and a vendor's error body reduced to the one line a person needs.
 * Ownership: documents passed in stay the caller's; returned char * are the caller's to free. */
#ifndef SBX_LLMMSG_H
#define SBX_LLMMSG_H

#include <stddef.h>

#include <json-c/json.h>

/* An error line is cut here: enough for any vendor's message, short enough for a terminal. */
#define LLMMSG_ERROR_TEXT_MAX 400

/* Folds one streamed delta into acc. Fragment fields (content, refusal, reasoning_content,
 * reasoning, arguments, text, summary) are appended; every other string is whole, and the
 * first non-empty value stays (DashScope repeats "id":"" and Mistral "name":"" in later
 * deltas); objects are merged; arrays whose elements all carry an integer "index" are merged
 * element by element, other arrays appended; other values replaced; null and "" never
 * overwrite a value. */
void llmmsg_merge(struct json_object *acc, struct json_object *delta);

/* When msg's "content" is an array of parts (Mistral's magistral, among others), replaces it
 * by the concatenated text parts and appends the text of "thinking" parts to
 * "reasoning_content". Other messages are left alone. Returns whether msg changed. */
int llmmsg_flatten_content(struct json_object *msg);

/* The reasoning text a message or delta carries ("reasoning_content", else "reasoning"),
 * borrowed, or NULL. */
const char *llmmsg_reasoning(struct json_object *msg);

/* A one-line account of an error body: the vendor's message, parsed from the JSON error
 * object or array ({"error":{"message"}}, [{"error":…}], {"message"}, {"detail":[…]},
 * {"errors":[…]}) with its code or status, else an HTML page's title, else the body's start;
 * control characters and runs of white space become one space, at most
 * LLMMSG_ERROR_TEXT_MAX bytes ("…" ends a cut line). */
char *llmmsg_error_text(const char *body, size_t len);

#endif
