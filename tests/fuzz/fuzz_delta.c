/* fuzz_delta.c — the streamed-answer path after the SSE parser: each input line that is a JSON
 * object is a delta, flattened and merged into one message (lib/llm/llmmsg.h); the message must
 * stay an object that encodes, every vendor's request policy must accept it, and the error
 * reader must turn the raw input into one bounded line without control bytes. */
#include <stdlib.h>
#include <string.h>

#include "gojson.h"
#include "llmmsg.h"
#include "vendor.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const char *const vendors[] = {"openai", "gemini", "groq", "deepseek", "openrouter",
				      "mistral", "generic"};

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct json_object *acc = json_object_new_object(), *hist, *out;
	const char *p = (const char *)data, *end = p + size, *why;
	char *line, *enc;
	size_t i;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct json_object *d = gojson_parse(p, n, &why);

		if (d && json_object_is_type(d, json_type_object)) {
			llmmsg_flatten_content(d);
			llmmsg_reasoning(d);
			llmmsg_merge(acc, d);
		}
		json_object_put(d);
		p += n + 1;
	}
	if (!json_object_is_type(acc, json_type_object))
		abort();
	enc = gojson_encode(acc);
	free(enc);
	hist = json_object_new_array();
	json_object_array_add(hist, json_object_get(acc));
	for (i = 0; i < sizeof vendors / sizeof vendors[0]; i++) {
		out = vendor_messages(vendor_by_name(vendors[i]), hist);
		if (json_object_array_length(out) != 1)
			abort();
		json_object_put(out);
	}
	json_object_put(hist);
	json_object_put(acc);
	line = llmmsg_error_text((const char *)data, size);
	if (strlen(line) > LLMMSG_ERROR_TEXT_MAX)
		abort();
	for (i = 0; line[i]; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			abort();
	free(line);
	return 0;
}
