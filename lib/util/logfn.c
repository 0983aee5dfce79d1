/* logfn.c — messages handed to a caller's log callback (lib/util/logfn.h). */
#include "logfn.h"

#include <stdio.h>

#include "err.h"

void logfn_vprintf(logfn fn, void *arg, const char *fmt, va_list ap)
{
	/* A cause (SBX_ERR_MAX) and the words around it. */
	char msg[SBX_ERR_MAX + 256];

	if (fn == NULL)
		return;
	vsnprintf(msg, sizeof msg, fmt, ap);
	fn(arg, msg);
}

void logfn_printf(logfn fn, void *arg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	logfn_vprintf(fn, arg, fmt, ap);
	va_end(ap);
}
