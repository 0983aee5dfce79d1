/* fuzz_sse.c — the SSE parser llm-chat streams through. The input is fed twice, whole and in
 * pieces whose sizes come from the input itself; both must yield the same events, and each
 * event's data must stay within the limit. */
#include <stdlib.h>
#include <string.h>

#include "sse.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define LINE_MAX_ 4096
#define EVENT_MAX 8192

static int collect(const struct sse_event *ev, void *arg, struct sbx_err *e)
{
	struct buf *b = arg;

	(void)e;
	if (ev->len > EVENT_MAX || ev->data[ev->len] != '\0')
		abort();
	buf_puts(b, ev->type);
	buf_append(b, "\x01", 1);
	buf_append(b, ev->data, ev->len);
	buf_append(b, "\x02", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct buf whole = {0}, parts = {0};
	struct sse_parser p;
	struct sbx_err e;
	int r1, r2 = 0;
	size_t off = 0, i = 0;

	sse_init(&p, LINE_MAX_, EVENT_MAX, collect, &whole);
	r1 = sse_feed(&p, (const char *)data, size, &e);
	sse_free(&p);
	sse_init(&p, LINE_MAX_, EVENT_MAX, collect, &parts);
	while (off < size && r2 == 0) {
		size_t n = 1 + data[i++ % size] % 7;
		if (n > size - off)
			n = size - off;
		r2 = sse_feed(&p, (const char *)data + off, n, &e);
		off += n;
	}
	sse_free(&p);
	if (r1 != r2 || whole.len != parts.len ||
	    (whole.len && memcmp(whole.data, parts.data, whole.len) != 0))
		abort();
	buf_free(&whole);
	buf_free(&parts);
	return 0;
}
