/* logfn.h — how lib/ hands a message for people to its caller: a callback the caller gave
 * (a main prints it with its program name), never a print of its own. */
#ifndef SBX_LOGFN_H
#define SBX_LOGFN_H

#include <stdarg.h>

/* A log callback: msg is a line without its newline, borrowed for the call. */
typedef void (*logfn)(void *arg, const char *msg);

/* Formats the message (cut at SBX_ERR_MAX + 256 bytes) and hands it to fn; nothing when fn
 * is NULL. */
void logfn_vprintf(logfn fn, void *arg, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
void logfn_printf(logfn fn, void *arg, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
