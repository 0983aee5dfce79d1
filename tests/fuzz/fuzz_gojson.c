/* fuzz_gojson.c — strict JSON parsing and Go-compatible re-encoding: every accepted document
 * must encode, the encoding must parse again, and from then on a round trip changes nothing
 * (invalid UTF-8 becomes U+FFFD in the first round, as Go does). */
#include <stdlib.h>
#include <string.h>

#include "gojson.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *why;
	struct json_object *o = gojson_parse((const char *)data, size, &why), *back;
	char *text, *again;

	if (o == NULL)
		return 0;
	text = gojson_encode(o);
	back = gojson_parse(text, strlen(text), &why);
	if (back == NULL)
		abort();
	again = gojson_encode(back);
	{
		struct json_object *third = gojson_parse(again, strlen(again), &why);
		if (third == NULL || !json_object_equal(back, third))
			abort();
		json_object_put(third);
	}
	json_object_put(back);
	json_object_put(o);
	free(text);
	free(again);
	return 0;
}
