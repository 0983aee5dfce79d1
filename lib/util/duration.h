/* duration.h — Go time.Duration text ("500ms", "2m0s", "1h30m"), in nanoseconds. */
#ifndef SBX_DURATION_H
#define SBX_DURATION_H

#include <stddef.h>
#include <stdint.h>

#define DURATION_MS INT64_C(1000000)
#define DURATION_S INT64_C(1000000000)

/* Parses Go duration syntax into *ns. Returns 0, or -1 for text Go would reject. */
int duration_parse(const char *s, int64_t *ns);
/* Formats ns as Go's Duration.String() does ("2m0s", "1.5s", "0s") into buf. */
char *duration_format(int64_t ns, char *buf, size_t len);

/* ns times SBX_TEST_TIME_SCALE when that is a number in (0, 1], else ns: the test suite's
 * knob, so that a retry's wait is not slept out whole. Only ever shortens a wait; read at each
 * call, in this one place. */
int64_t duration_test_scaled(int64_t ns);

/* Enough room for any formatted duration. */
#define DURATION_BUFSZ 40

#endif
