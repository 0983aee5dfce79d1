/* sse.h — an incremental parser for Server-Sent Events (the WHATWG text/event-stream format).
 * Bytes go in as they come off the wire, split anywhere (inside a line, between CR and LF, inside
 * a UTF-8 sequence); each complete event comes out through a callback. Lines and events are
 * bounded by the limits given at init, so a hostile server cannot grow memory without end.
 * Ownership: the parser owns its buffers (sse_free releases them); the strings in the event
 * passed to the callback are valid only during the call. */
#ifndef SBX_SSE_H
#define SBX_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "xalloc.h"

struct sse_event {
	const char *type;	/* the "event:" field, or "message" */
	const char *id;		/* the last "id:" seen on the stream, or "" */
	const char *data;	/* the "data:" lines joined by '\n', NUL-terminated */
	size_t len;		/* length of data */
};

/* Called once per dispatched event. Return 0 to go on; -1 (with e set) stops sse_feed, which
 * then returns -1. */
typedef int (*sse_fn)(const struct sse_event *ev, void *arg, struct sbx_err *e);

struct sse_parser {
	sse_fn fn;
	void *arg;
	size_t line_max, event_max;
	struct buf line;	/* the line being read, without its terminator */
	struct buf data;	/* data lines of the event being built, each followed by '\n' */
	struct buf type;	/* event type of the event being built ("" = message) */
	struct buf id;		/* last event id */
	bool cr;		/* the last byte seen was CR: a following LF belongs to it */
	bool started;		/* past the first line (where a UTF-8 BOM is dropped) */
	bool failed;		/* a limit was hit; the stream is unusable */
};

/* Prepares p; line_max bounds one line, event_max the data of one event (both in bytes). */
void sse_init(struct sse_parser *p, size_t line_max, size_t event_max, sse_fn fn, void *arg);
/* Parses n more bytes. Returns 0, or -1 with e set (a limit was passed, or the callback
 * failed); after -1 every later call fails too. */
int sse_feed(struct sse_parser *p, const char *bytes, size_t n, struct sbx_err *e);
/* True when bytes of an unfinished line or event are buffered (the stream ended mid-event). */
bool sse_pending(const struct sse_parser *p);
void sse_free(struct sse_parser *p);

#endif
