/* sse.c — Server-Sent Events, parsed a byte range at a time (WHATWG HTML §9.2.6). */
#include "sse.h"

#include <string.h>

void sse_init(struct sse_parser *p, size_t line_max, size_t event_max, sse_fn fn, void *arg)
{
	memset(p, 0, sizeof *p);
	p->line_max = line_max;
	p->event_max = event_max;
	p->fn = fn;
	p->arg = arg;
}

void sse_free(struct sse_parser *p)
{
	buf_free(&p->line);
	buf_free(&p->data);
	buf_free(&p->type);
	buf_free(&p->id);
}

bool sse_pending(const struct sse_parser *p)
{
	return p->line.len > 0 || p->data.len > 0;
}

/* A blank line ends the event: hand it over unless it carried no data (the spec drops those). */
static int dispatch(struct sse_parser *p, struct sbx_err *e)
{
	struct sse_event ev;
	int rc = 0;

	if (p->data.len > 0) {
		p->data.data[--p->data.len] = '\0';	/* the last line's '\n' */
		ev.type = p->type.len ? p->type.data : "message";
		ev.id = p->id.len ? p->id.data : "";
		ev.data = p->data.data;
		ev.len = p->data.len;
		rc = p->fn(&ev, p->arg, e);
	}
	p->data.len = 0;
	p->type.len = 0;
	return rc;
}

static void set_field(struct buf *b, const char *v, size_t n)
{
	b->len = 0;
	buf_append(b, v, n);
}

/* One complete line, without its terminator. */
static int process_line(struct sse_parser *p, struct sbx_err *e)
{
	const char *s = p->line.data ? p->line.data : "";
	size_t n = p->line.len, flen, vlen;
	const char *colon, *val;

	if (!p->started) {
		p->started = true;
		if (n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
			s += 3;
			n -= 3;
		}
	}
	if (n == 0)
		return dispatch(p, e);
	if (s[0] == ':')
		return 0;	/* a comment, used by servers as a keep-alive */
	colon = memchr(s, ':', n);
	flen = colon ? (size_t)(colon - s) : n;
	val = colon ? colon + 1 : s + n;
	vlen = (size_t)(s + n - val);
	if (vlen > 0 && *val == ' ') {
		val++;
		vlen--;
	}
	if (flen == 4 && memcmp(s, "data", 4) == 0) {
		if (p->data.len + vlen + 1 > p->event_max) {
			p->failed = true;
			return err_set(e, SBX_EIO, "event stream: event larger than %zu bytes",
				       p->event_max);
		}
		buf_append(&p->data, val, vlen);
		buf_append(&p->data, "\n", 1);
	} else if (flen == 5 && memcmp(s, "event", 5) == 0) {
		set_field(&p->type, val, vlen);
	} else if (flen == 2 && memcmp(s, "id", 2) == 0) {
		if (memchr(val, '\0', vlen) == NULL)
			set_field(&p->id, val, vlen);
	}
	/* "retry" and unknown fields are ignored, as the spec says. */
	return 0;
}

int sse_feed(struct sse_parser *p, const char *bytes, size_t n, struct sbx_err *e)
{
	size_t i = 0;

	if (p->failed)
		return err_set(e, SBX_EIO, "event stream: parser already failed");
	while (i < n) {
		size_t start = i;
		char c;

		if (p->cr && bytes[i] == '\n') {	/* the LF of a CRLF split across calls */
			p->cr = false;
			i++;
			continue;
		}
		p->cr = false;
		while (i < n && bytes[i] != '\n' && bytes[i] != '\r')
			i++;
		if (p->line.len + (i - start) > p->line_max) {
			p->failed = true;
			return err_set(e, SBX_EIO, "event stream: line longer than %zu bytes",
				       p->line_max);
		}
		buf_append(&p->line, bytes + start, i - start);
		if (i == n)
			break;
		c = bytes[i++];
		if (c == '\r') {
			if (i < n && bytes[i] == '\n')
				i++;
			else if (i == n)
				p->cr = true;
		}
		if (process_line(p, e) < 0) {
			p->failed = true;
			return -1;
		}
		p->line.len = 0;
	}
	return 0;
}
