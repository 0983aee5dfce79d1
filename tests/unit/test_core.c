/* test_core.c — durations, names, flags, Go-compatible JSON, UTF-8 as JavaScript sees it and
 * the model-facing cut of tool results. */
#include <stdlib.h>

#include "duration.h"
#include "flag.h"
#include "gojson.h"
#include "name.h"
#include "timeutil.h"
#include "toolcap.h"
#include "toolmsg.h"
#include "utf8.h"
#include "tap.h"

static void durations(void)
{
	static const struct {
		const char *in;
		int64_t ns;
		const char *out;
	} cases[] = {
		{"2m", 120 * DURATION_S, "2m0s"},
		{"30s", 30 * DURATION_S, "30s"},
		{"500ms", 500 * DURATION_MS, "500ms"},
		{"1h", 3600 * DURATION_S, "1h0m0s"},
		{"1.5s", 1500 * DURATION_MS, "1.5s"},
		{"2m0s", 120 * DURATION_S, "2m0s"},
		{"1h30m", 5400 * DURATION_S, "1h30m0s"},
		{"0", 0, "0s"},
		{"-5s", -5 * DURATION_S, "-5s"},
		{"1500us", 1500000, "1.5ms"},
		{"10ns", 10, "10ns"},
	};
	char buf[DURATION_BUFSZ];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t ns = -1;
		ok(duration_parse(cases[i].in, &ns) == 0 && ns == cases[i].ns, "parse %s", cases[i].in);
		is_str(duration_format(cases[i].ns, buf, sizeof buf), cases[i].out, "format %s",
		       cases[i].out);
	}
	{
		const char *bad[] = {"", "5", "s", "1x", "1.s.", "--1s", "1 s"};
		int64_t ns;
		for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
			ok(duration_parse(bad[i], &ns) < 0, "reject duration '%s'", bad[i]);
	}
	/* the test suite's knob: only a number in (0, 1] shortens a wait */
	unsetenv("SBX_TEST_TIME_SCALE");
	ok(duration_test_scaled(DURATION_S) == DURATION_S, "no SBX_TEST_TIME_SCALE: the wait as it is");
	setenv("SBX_TEST_TIME_SCALE", "0.01", 1);
	ok(duration_test_scaled(DURATION_S) == 10 * DURATION_MS, "SBX_TEST_TIME_SCALE=0.01: 1s is 10ms");
	{
		const char *ignored[] = {"", "0", "-1", "2", "1e9", "abc", "0.5x", "nan"};
		for (i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
			setenv("SBX_TEST_TIME_SCALE", ignored[i], 1);
			ok(duration_test_scaled(DURATION_S) == DURATION_S,
			   "SBX_TEST_TIME_SCALE='%s' never lengthens or zeroes a wait", ignored[i]);
		}
	}
	unsetenv("SBX_TEST_TIME_SCALE");
}

static void names(void)
{
	struct sbx_err e;
	char long41[42];

	memset(long41, 'a', 41);
	long41[41] = 0;
	ok(name_check("demo42", &e) == 0, "valid name");
	ok(name_check("Demo", &e) < 0 && strcmp(e.msg, "session name must be lowercase alphanumeric") == 0,
	   "uppercase refused with upstream text");
	ok(name_check("../x", &e) < 0, "path refused");
	ok(name_check("", &e) < 0 && e.code == SBX_EINVAL, "empty refused");
	ok(name_check(long41, &e) < 0 &&
	   strcmp(e.msg, "session name must be no more than 40 characters long") == 0, "41 chars refused");
	long41[40] = 0;
	ok(name_check(long41, &e) == 0, "40 chars accepted");
	ok(name_given_check(NAME_SANDBOX, "Bad", &e) < 0 && e.code == SBX_EINVAL &&
	   strcmp(e.msg, "invalid sandbox name \"Bad\": sandbox name must be lowercase "
		  "alphanumeric") == 0, "a given sandbox name refused, named in the message");
	ok(name_given_check(NAME_SESSION, "demo", &e) == 0, "a given session name accepted");
	ok(namespace_check("kube-system", &e) == 0, "namespace with dash");
	ok(namespace_check("-x", &e) < 0, "namespace leading dash refused");
}

static void flags(void)
{
	bool b = false;
	const char *s = NULL;
	int64_t d = 0;
	long long n = 0;
	struct flag table[] = {
		{"network", FLAG_BOOL, &b, NULL},
		{"image", FLAG_STRING, &s, NULL},
		{"ttl", FLAG_DURATION, &d, NULL},
		{"max-output", FLAG_SIZE, &n, NULL},
		{NULL, 0, NULL, NULL},
	};
	char *argv1[] = {"p", "-network", "--image=x", "-ttl", "1m", "-max-output", "8M", "name", "-z", NULL};
	char *argv2[] = {"p", "-nope", NULL};
	char *argv3[] = {"p", "--help", NULL};
	char *argv4[] = {"p", "-image", NULL};
	char *argv5[] = {"p", "-network=false", "--", "-x", NULL};
	struct sbx_err e;

	ok(flag_parse(table, 9, argv1, &e) == 7, "flags stop at first operand");
	ok(b && strcmp(s, "x") == 0 && d == 60 * DURATION_S && n == 8 << 20, "flag values set");
	ok(flag_parse(table, 2, argv2, &e) < 0 && strstr(e.msg, "not defined: -nope"), "unknown flag");
	ok(flag_parse(table, 2, argv3, &e) == FLAG_HELP, "--help");
	ok(flag_parse(table, 2, argv4, &e) < 0 && strstr(e.msg, "needs an argument"), "missing value");
	ok(flag_parse(table, 4, argv5, &e) == 3 && !b, "bool =false and --");
	ok(flag_parse_size("1T", &n) == 0 && n == 1LL << 40, "size: T suffix");
	ok(flag_parse_size("2GiB", &n) == 0 && n == 2LL << 30, "size: GiB");
	ok(flag_parse_size("8388607T", &n) == 0 && n == 8388607LL << 40, "size: the largest T");
	ok(flag_parse_size("8388608T", &n) < 0, "size: 2^63 does not fit");
	ok(flag_parse_size("17179869185G", &n) < 0, "size: 2^64 + 1G refused, not wrapped to 1G");
	ok(flag_parse_size("99999999999999999999", &n) < 0, "size: beyond long long refused");
	ok(flag_parse_size("1P", &n) < 0 && flag_parse_size("-1M", &n) < 0 &&
	   flag_parse_size("1.5G", &n) < 0 && flag_parse_size("", &n) < 0 && flag_parse_size("M", &n) < 0,
	   "size: bad text refused");
}

static void json(void)
{
	const char *why;
	const char *doc = "{\"b\":\"<a&b>\\u2028\",\"a\":[1,2.5,true,null],\"c\":\"\\/x\"}";
	struct json_object *o = gojson_parse(doc, strlen(doc), &why);
	char *s;

	ok(o != NULL, "parse object");
	s = gojson_encode(o);
	is_str(s, "{\"b\":\"\\u003ca\\u0026b\\u003e\\u2028\",\"a\":[1,2.5,true,null],\"c\":\"/x\"}",
	       "Go escaping and key order");
	free(s);
	json_object_put(o);
	ok(gojson_parse("{\"a\":1} x", 9, &why) == NULL && why, "trailing garbage refused");
	ok(gojson_parse("{\"a\":", 5, &why) == NULL && why, "truncated refused");
	o = gojson_parse("42", 2, &why);
	ok(o && json_object_get_int(o) == 42, "bare number");
	ok(gojson_parse("NaN", 3, &why) == NULL && gojson_parse("[1,-Infinity]", 13, &why) == NULL, "NaN and Infinity refused");
	json_object_put(o);
	{
		struct buf b = {0};
		gojson_append_string(&b, "a\xff\x01\n", 4);
		is_str(b.data, "\"a\\ufffd\\u0001\\n\"", "invalid UTF-8 and control bytes");
		buf_free(&b);
	}
}

static void times(void)
{
	char buf[TIME_BUFSZ];
	int64_t ns;

	ok(time_parse_rfc3339("2026-11-30T06:00:00Z", &ns) == 0, "parse Z");
	is_str(time_rfc3339(ns, buf, sizeof buf), "2026-11-30T06:00:00Z", "round trip");
	ok(time_parse_rfc3339("2026-11-30T07:00:00+01:00", &ns) == 0 &&
	   strcmp(time_rfc3339(ns, buf, sizeof buf), "2026-11-30T06:00:00Z") == 0, "offset");
	ok(time_parse_rfc3339("2026-11-30 06:00", &ns) < 0, "garbage refused");
}

/* WHATWG decoding (Node's Buffer#toString, TextDecoder): one U+FFFD per maximal invalid
 * subpart; UTF-16 lengths and cuts. */
static void utf8(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"plain", "plain"},
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
		{"a\xff" "b", "a\xef\xbf\xbd" "b"},
		{"\xe2\x82", "\xef\xbf\xbd"},			/* a truncated sequence is one */
		{"\xe2\x82x", "\xef\xbf\xbdx"},
		{"\xf0\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},	/* F0 needs 90..BF next */
		{"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},	/* no surrogates */
		{"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},		/* no overlong forms */
		{"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},	/* nothing past U+10FFFF */
		{"\xef\xbf\xbd", "\xef\xbf\xbd"},			/* a real U+FFFD stays */
	};
	char out[64];
	bool split;
	size_t n;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		n = utf8_repair(cases[i].in, strlen(cases[i].in), out);
		out[n] = '\0';
		is_str(out, cases[i].want, "utf8_repair case %zu", i);
		ok(utf8_valid(cases[i].in, strlen(cases[i].in)) == (strcmp(cases[i].in, cases[i].want) == 0),
		   "utf8_valid case %zu", i);
	}
	n = utf8_repair("a\0b", 3, out);
	ok(n == 3 && out[1] == '\0', "NUL bytes are text");
	ok(utf8_utf16_len("a\xc3\xa9\xf0\x9f\x98\x80", 7) == 4, "UTF-16 length: astral counts two");
	n = utf8_utf16_prefix("ab\xf0\x9f\x98\x80" "c", 7, 3, &split);
	ok(n == 2 && split, "prefix cut inside a pair stops before it and says so");
	n = utf8_utf16_prefix("ab\xf0\x9f\x98\x80" "c", 7, 4, &split);
	ok(n == 6 && !split, "prefix through the pair");
	n = utf8_utf16_suffix("ab\xf0\x9f\x98\x80" "c", 7, 2, &split);
	ok(n == 6 && split, "suffix cut inside a pair starts after it and says so");
	n = utf8_utf16_suffix("ab\xf0\x9f\x98\x80" "c", 7, 9, &split);
	ok(n == 0 && !split, "a suffix longer than the text is all of it");
}

/* The texts the model gets instead of a tool's result, and how ACP's replay tells them apart. */
static void toolmsgs(void)
{
	char *t;

	t = toolmsg_run_failed("ls", "boom");
	is_str(t, "Error calling tool \"ls\": failed to run tool: boom", "run failure text");
	ok(toolmsg_is_harness("ls", t), "a run failure is the harness's");
	free(t);
	t = toolmsg_error("x", "tool \"%s\" not found", "x");
	is_str(t, "Error calling tool \"x\": tool \"x\" not found", "registry error text");
	free(t);
	t = toolmsg_denied("rm");
	is_str(t, "The user denied permission to run tool \"rm\".", "denial text (upstream's)");
	ok(toolmsg_is_harness("rm", t), "a denial is the harness's");
	ok(!toolmsg_is_harness("ls", t), "another tool's denial is a tool result");
	free(t);
	t = toolmsg_cancelled("rm");
	is_str(t, "Tool \"rm\" was not run to completion: the user cancelled the turn.",
	       "cancellation text");
	ok(toolmsg_is_harness("rm", t), "a cancellation is the harness's");
	free(t);
	ok(!toolmsg_is_harness("ls", "total 0\n"), "a tool's own output is not");
}

static void toolcap(void)
{
	char b[32];
	toolcap_thousands(0, b, sizeof b);
	is_str(b, "0", "thousands: 0");
	toolcap_thousands(999, b, sizeof b);
	is_str(b, "999", "thousands: 999");
	toolcap_thousands(40000, b, sizeof b);
	is_str(b, "40,000", "thousands: 40,000");
	toolcap_thousands(16737361, b, sizeof b);
	is_str(b, "16,737,361", "thousands: 16,737,361");
}

int main(void)
{
	utf8();
	toolcap();
	toolmsgs();
	durations();
	names();
	flags();
	json();
	times();
	return done_testing();
}
