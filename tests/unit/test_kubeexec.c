/* test_kubeexec.c — exec frames (channel byte + payload), status-channel decoding and the
 * exec request path. */
#include <stdlib.h>

#include "kubeexec.h"
#include "tap.h"

static void frames(void)
{
	unsigned char out[16];
	const unsigned char *pl;
	size_t n, pn;
	int ch;

	n = kubeexec_frame_encode(KUBEEXEC_CH_STDIN, "abc", 3, out);
	ok(n == 4 && out[0] == 0 && memcmp(out + 1, "abc", 3) == 0, "stdin frame");
	n = kubeexec_frame_encode(KUBEEXEC_CH_CLOSE, (unsigned char[]){KUBEEXEC_CH_STDIN}, 1, out);
	ok(n == 2 && out[0] == 255 && out[1] == 0, "v5 close-stdin frame is [255, 0]");
	ch = kubeexec_frame_channel((const unsigned char *)"\x01hello", 6, &pl, &pn);
	ok(ch == KUBEEXEC_CH_STDOUT && pn == 5 && memcmp(pl, "hello", 5) == 0, "stdout frame decoded");
	ch = kubeexec_frame_channel((const unsigned char *)"\x02", 1, &pl, &pn);
	ok(ch == KUBEEXEC_CH_STDERR && pn == 0, "empty stderr frame");
	ok(kubeexec_frame_channel((const unsigned char *)"", 0, &pl, &pn) == -1, "empty message refused");
}

static void status(void)
{
	static const struct {
		const char *json;
		int rc, code;
		const char *msg;
	} cases[] = {
		{"{\"metadata\":{},\"status\":\"Success\"}", 0, 0, ""},
		{"{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"3\"}]}}",
		 0, 3, NULL},
		{"{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"Other\",\"message\":\"x\"},{\"reason\":\"ExitCode\",\"message\":\"137\"}]}}",
		 0, 137, NULL},
		{"{\"status\":\"Failure\",\"message\":\"exec: \\\"nope\\\": executable file not found in $PATH\",\"reason\":\"InternalError\"}",
		 1, 0, "exec: \"nope\": executable file not found in $PATH"},
		{"{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"999\"}]}}",
		 1, 0, NULL},
		{"not json", -1, 0, NULL},
		{"{\"kind\":\"Pod\"}", -1, 0, NULL},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char msg[256];
		int code = -1;
		int rc = kubeexec_decode_status(cases[i].json, strlen(cases[i].json), &code, msg, sizeof msg);
		ok(rc == cases[i].rc && (rc != 0 || code == cases[i].code) &&
		   (cases[i].msg == NULL || strcmp(msg, cases[i].msg) == 0),
		   "status %zu -> rc %d code %d (got rc %d code %d msg '%s')", i, cases[i].rc, cases[i].code,
		   rc, code, msg);
	}
}

static void path(void)
{
	char *argv[] = {"sh", "-c", "echo a&b", NULL};
	char *p = kubeexec_path("default", "demo", "sandbox", argv, true);

	is_str(p, "/api/v1/namespaces/default/pods/demo/exec?container=sandbox&stdin=true&stdout=true&stderr=true"
		  "&command=sh&command=-c&command=echo%20a%26b", "one command= per argv element, escaped");
	free(p);
	p = kubeexec_path("default", "demo", "sandbox", argv, false);
	ok(p && strstr(p, "stdin=false"), "stdin=false without input");
	free(p);
	{
		static char big[KUBEEXEC_QUERY_MAX];
		char *av[] = {big, NULL};
		memset(big, 'a', sizeof big - 1);
		ok(kubeexec_path("d", "p", "c", av, false) == NULL, "over-long command line refused");
	}
}

int main(void)
{
	frames();
	status();
	path();
	return done_testing();
}
