/* execreq.h — sbx-exec's request document, {"command":[...],"stdin","timeout","workdir","env"}:
 * parsed and checked whole, and a captured run's result as the document sbx-exec prints.
 * Ownership: argv's strings, workdir and in point into doc; argv and env are the request's, freed
 * with execreq_free. A request a caller fills from a command line (no doc) owns nothing. */
#ifndef SBX_EXECREQ_H
#define SBX_EXECREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "capture.h"
#include "err.h"

/* A request document is read whole; its stdin field is the only big part. */
#define EXECREQ_MAX (64u << 20)

struct execreq {
	char **argv;
	char **env;			/* "K=V", NULL-terminated; NULL: none */
	const char *workdir;		/* NULL: not given */
	const char *in;			/* NULL: no stdin field */
	size_t in_len;
	int64_t timeout_ns;
	bool has_timeout;		/* the request named one: it wins over -timeout, "0s" too */
	struct json_object *doc;
};

/* Parses len bytes of text into rq; a malformed request (not JSON, an unknown field, a field
 * of the wrong type, a string holding a NUL byte) is SBX_EINVAL, "invalid request: …". */
int execreq_parse(const char *text, size_t len, struct execreq *rq, struct sbx_err *e);
/* Frees what execreq_parse made (nothing of a request without doc). */
void execreq_free(struct execreq *rq);
/* {"stdout","stderr","exit_code"} of c, with "timed_out", "oom_killed" and "truncated" when
 * they apply. New reference. */
struct json_object *execreq_result_json(const struct capture *c);

#endif
