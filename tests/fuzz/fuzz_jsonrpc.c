/* fuzz_jsonrpc.c — JSON-RPC line framing and classification as acp-server and acp-client read
 * them from a peer: the input is fed to the line reader in uneven chunks (the first byte picks
 * the chunk size) and every line is classified; classified messages are re-encoded by the
 * builders, which must always produce one line ending in a newline. */
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int on_line(enum jsonrpc_event ev, const char *line, size_t len, void *arg)
{
	struct jsonrpc_msg m;
	struct json_object *bad_id = NULL;
	struct sbx_err e;
	int code = 0;
	char *out;

	(void)arg;
	if (ev != JSONRPC_LINE)
		return 0;
	if (len > JSONRPC_LINE_MAX || memchr(line, '\n', len) != NULL)
		abort();	/* the reader let a terminator or an over-long line through */
	if (jsonrpc_parse(line, len, &m, &code, &bad_id, &e) < 0) {
		if (code != JSONRPC_PARSE_ERROR && code != JSONRPC_INVALID_REQUEST)
			abort();
		out = jsonrpc_error_line(bad_id, code, e.msg, NULL);
		json_object_put(bad_id);
	} else {
		if (m.kind == JSONRPC_RESPONSE)
			out = jsonrpc_result_line(m.id, m.result);
		else if (m.method == NULL)
			abort();
		else if (m.kind == JSONRPC_NOTIFICATION)
			out = jsonrpc_notification_line(m.method, m.params);
		else
			out = jsonrpc_result_line(m.id, m.params);
		jsonrpc_msg_free(&m);
	}
	if (out == NULL || strchr(out, '\n') != out + strlen(out) - 1)
		abort();
	free(out);
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct jsonrpc_reader r = {0};
	size_t chunk, off;

	if (size == 0)
		return 0;
	chunk = (size_t)data[0] % 17 + 1;
	for (off = 1; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		jsonrpc_reader_feed(&r, (const char *)data + off, n, on_line, NULL);
	}
	jsonrpc_reader_finish(&r, on_line, NULL);
	jsonrpc_reader_free(&r);
	return 0;
}
