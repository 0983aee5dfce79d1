/* tap.h — a tiny TAP producer for lib/ unit tests: ok(cond, name), is_str, done_testing. */
#ifndef SBX_TAP_H
#define SBX_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_fail;

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...) tap_is_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)

__attribute__((format(printf, 4, 5))) static int tap_ok(int pass, const char *file, int line,
							 const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	printf("%s %d - ", pass ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!pass) {
		tap_fail++;
		printf("#   failed at %s:%d\n", file, line);
	}
	return pass;
}

__attribute__((format(printf, 5, 6))) static int tap_is_str(const char *got, const char *want,
							     const char *file, int line,
							     const char *fmt, ...)
{
	va_list ap;
	int pass = got && want && strcmp(got, want) == 0;

	tap_n++;
	printf("%s %d - ", pass ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!pass) {
		tap_fail++;
		printf("#   failed at %s:%d\n#        got: '%s'\n#   expected: '%s'\n", file, line,
		       got ? got : "(null)", want ? want : "(null)");
	}
	return pass;
}

static int done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_fail ? 1 : 0;
}

#endif
