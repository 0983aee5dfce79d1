/* err.c — error values for lib/: formatted once, never printed here. */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A cause longer than SBX_ERR_MAX is cut; its end says so, rather than stop mid-word. */
static void mark_cut(char *msg, size_t cap, int wanted)
{
	if (wanted >= (int)cap && cap > 4)
		memcpy(msg + cap - 4, "...", 4);
}

int err_set(struct sbx_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return -1;
	e->code = code;
	va_start(ap, fmt);
	mark_cut(e->msg, sizeof e->msg, vsnprintf(e->msg, sizeof e->msg, fmt, ap));
	va_end(ap);
	return -1;
}

int err_sys(struct sbx_err *e, int errnum, const char *fmt, ...)
{
	va_list ap;
	size_t n;
	int code = SBX_EIO;

	if (e == NULL)
		return -1;
	if (errnum == ENOENT)
		code = SBX_ENOTFOUND;
	else if (errnum == EACCES || errnum == EPERM)
		code = SBX_EPERM;
	else if (errnum == ETIMEDOUT)
		code = SBX_ETIMEDOUT;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	mark_cut(e->msg, sizeof e->msg,
		 (int)n + snprintf(e->msg + n, sizeof e->msg - n, ": %s", strerror(errnum)));
	return -1;
}

int err_prefix(struct sbx_err *e, const char *fmt, ...)
{
	char head[SBX_ERR_MAX], old[SBX_ERR_MAX];
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof old);
	mark_cut(e->msg, sizeof e->msg, snprintf(e->msg, sizeof e->msg, "%s: %s", head, old));
	if (e->code == SBX_OK)
		e->code = SBX_EIO;
	return -1;
}

void err_clear(struct sbx_err *e)
{
	if (e != NULL) {
		e->code = SBX_OK;
		e->msg[0] = '\0';
	}
}
