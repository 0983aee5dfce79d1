/* llmretry.c — when and how soon a chat completion is tried again: the statuses and
 * transport errors worth a retry, jittered exponential backoff, Retry-After. */
#include "llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "curlso.h"
#include "timeutil.h"

/* ---- retry policy ---- */

bool llm_retryable_status(long status)
{
	/* What openai-python and openai-node retry: a timeout, a lock conflict, rate limiting
	 * and every server error, 52x pages of proxies like Cloudflare included. */
	return status == 408 || status == 409 || status == 429 || (status >= 500 && status <= 599);
}

bool llm_retryable_transport(int code)
{
	switch (code) {
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_PARTIAL_FILE:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

int64_t llm_backoff_ns(int attempt, int64_t base_ns, int64_t retry_after_ns, uint32_t rnd)
{
	int64_t d = base_ns > 0 ? base_ns : 0;
	int i;

	for (i = 0; i < attempt && d < LLM_BACKOFF_MAX_NS; i++)
		d *= 2;
	if (d > LLM_BACKOFF_MAX_NS)
		d = LLM_BACKOFF_MAX_NS;
	/* "Equal jitter": half fixed, half random, so clients that failed together spread out. */
	if (d > 1)
		d = d / 2 + (int64_t)((uint64_t)rnd % (uint64_t)(d / 2 + 1));
	if (retry_after_ns > LLM_RETRY_AFTER_MAX_NS)
		retry_after_ns = LLM_RETRY_AFTER_MAX_NS;
	return retry_after_ns > d ? retry_after_ns : d;
}

int64_t llm_retry_after_ns(const char *v, int64_t now_ns)
{
	struct tm tm;
	const char *end;
	int64_t secs = 0;

	while (*v == ' ' || *v == '\t')
		v++;
	if (*v >= '0' && *v <= '9') {
		for (; *v >= '0' && *v <= '9'; v++) {
			if (secs > 86400 * 365)
				return -1;
			secs = secs * 10 + (*v - '0');
		}
		while (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n')
			v++;
		return *v ? -1 : secs * DURATION_S;
	}
	memset(&tm, 0, sizeof tm);
	end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (end == NULL)
		return -1;
	secs = (int64_t)timegm(&tm) * DURATION_S - now_ns;
	return secs > 0 ? secs : 0;
}
