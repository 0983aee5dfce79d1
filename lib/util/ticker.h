/* ticker.h — a callback every period on a thread of its own, from a delay on, until stopped:
 * how a program shows that something slow is still running (agent-loop's "running: …" line).
 * The callback runs on the ticker's thread; ticker_stop returns once it will not run again. */
#ifndef SBX_TICKER_H
#define SBX_TICKER_H

#include <stdbool.h>
#include <stdint.h>

struct ticker;

/* Calls fn(arg, elapsed_ns) after delay_ns, then every period_ns, until ticker_stop. NULL
 * (and nothing ever called) when no thread could be started. */
struct ticker *ticker_start(int64_t delay_ns, int64_t period_ns,
			    void (*fn)(void *arg, int64_t elapsed_ns), void *arg);
/* Stops and frees t (NULL is allowed). Returns whether fn ever ran. */
bool ticker_stop(struct ticker *t);

#endif
