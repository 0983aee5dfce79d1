/* xalloc.h — allocators that never return NULL: out of memory ends the process (the one
 * place lib/ may exit, as skalibs does), so no caller needs an OOM path. */
#ifndef SBX_XALLOC_H
#define SBX_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Returns a newly allocated formatted string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* A growable byte buffer; data is always NUL-terminated for convenience. */
struct buf {
	char *data;
	size_t len, cap;
};
void buf_append(struct buf *b, const void *p, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);
/* Hands the data to the caller (who frees it) and resets b. */
char *buf_steal(struct buf *b);

/* A growable NULL-terminated vector of strings it owns (git's strvec): v is never NULL after
 * the first push; zero-initialise, push, use v as an argv, then strvec_clear. */
struct strvec {
	char **v;
	size_t n, cap;
};
void strvec_push(struct strvec *sv, const char *s);
void strvec_pushf(struct strvec *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Pushes every string of a NULL-terminated vector (NULL: none). */
void strvec_pushv(struct strvec *sv, char *const *v);
void strvec_clear(struct strvec *sv);

#endif
