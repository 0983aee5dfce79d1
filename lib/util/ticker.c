/* ticker.c — a periodic callback on its own thread (see ticker.h). */
#include "ticker.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "timeutil.h"
#include "xalloc.h"

struct ticker {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* on CLOCK_MONOTONIC */
	bool stop, fired;
	int64_t start_ns, delay_ns, period_ns;
	void (*fn)(void *arg, int64_t elapsed_ns);
	void *arg;
};

static void *ticker_main(void *p)
{
	struct ticker *t = p;
	int64_t next = t->start_ns + t->delay_ns;
	sigset_t all;

	/* signals go to the program's own threads, never to this one */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		struct timespec ts = {.tv_sec = next / 1000000000, .tv_nsec = next % 1000000000};
		int64_t now;

		if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) != ETIMEDOUT || t->stop)
			continue;
		now = time_mono_ns();
		if (now < next)
			continue;
		t->fired = true;
		/* the lock is held while fn runs, so ticker_stop never returns during a call */
		t->fn(t->arg, now - t->start_ns);
		while (next <= now)
			next += t->period_ns;
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

struct ticker *ticker_start(int64_t delay_ns, int64_t period_ns,
			    void (*fn)(void *arg, int64_t elapsed_ns), void *arg)
{
	struct ticker *t = xcalloc(1, sizeof *t);
	pthread_condattr_t ca;

	t->start_ns = time_mono_ns();
	t->delay_ns = delay_ns;
	t->period_ns = period_ns > 0 ? period_ns : 1000000000;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_init(&t->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&t->th, NULL, ticker_main, t) != 0) {
		pthread_cond_destroy(&t->cv);
		pthread_mutex_destroy(&t->mu);
		free(t);
		return NULL;
	}
	return t;
}

bool ticker_stop(struct ticker *t)
{
	bool fired;

	if (t == NULL)
		return false;
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->th, NULL);
	fired = t->fired;
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t);
	return fired;
}
