/* timeutil.h — clocks and RFC 3339 text. */
#ifndef SBX_TIMEUTIL_H
#define SBX_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Wall clock in nanoseconds since the epoch. */
int64_t time_now_ns(void);
/* Monotonic clock in nanoseconds. */
int64_t time_mono_ns(void);
/* Formats wall-clock ns as RFC 3339 UTC with second precision ("2026-11-30T06:00:00Z"). */
char *time_rfc3339(int64_t ns, char *buf, size_t len);
/* Parses RFC 3339 ("…Z" or "…+hh:mm", optional fraction) into ns. Returns 0 or -1. */
int time_parse_rfc3339(const char *s, int64_t *ns);

#define TIME_BUFSZ 40

#endif
