/* test_acpauth.c — token files and principals, the per-source guard's caps and growing
 * back-off (with the clock given), the sources it counts (lib/util/net.h), and the issued-sessions
 * file (lib/acpreg). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acpauth.h"
#include "acpreg.h"
#include "net.h"
#include "paths.h"
#include "tap.h"

#define S (INT64_C(1000000000))

static char dir[] = "/tmp/test_acpauth.XXXXXX";

static const char *file_with(const char *name, const char *text, int mode)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		abort();
	close(fd);
	chmod(path, (mode_t)mode);
	return path;
}

static void token_files(void)
{
	struct acp_auth a;
	struct sbx_err e;
	bool loose;
	char *t;
	struct stat st;

	ok(acp_auth_load(&a, file_with("t1", "  s3cret  \n", 0600), &loose, &e) == 0 && a.n == 1,
	   "a bare token");
	is_str(a.v[0].name, "operator", "a bare token is the operator's");
	is_str(a.v[0].token, "s3cret", "white space around it trimmed");
	ok(!loose, "0600 is not loose");
	acp_auth_free(&a);
	ok(acp_auth_load(&a, file_with("t2", "# c\nalice\tA-1\r\n\nbob  B-2\n", 0644), &loose, &e) == 0 &&
	   a.n == 2, "two named principals, a comment, CRLF, tabs");
	ok(loose, "0644 is loose");
	is_str(acp_auth_check(&a, "B-2"), "bob", "B-2 is bob");
	is_str(acp_auth_check(&a, "A-1"), "alice", "A-1 is alice");
	ok(acp_auth_check(&a, "A-") == NULL && acp_auth_check(&a, "") == NULL &&
	   acp_auth_check(&a, "A-11") == NULL, "prefixes and extensions are nobody");
	acp_auth_free(&a);
	ok(acp_auth_load(&a, file_with("t3", "\n# only\n", 0600), NULL, &e) < 0, "empty refused");
	ok(strstr(e.msg, "is empty") != NULL, "says empty: %s", e.msg);
	ok(acp_auth_load(&a, file_with("t4", "x a\ny a\n", 0600), NULL, &e) < 0 &&
	   strstr(e.msg, "line 2: the same token") != NULL, "a token twice: %s", e.msg);
	ok(acp_auth_load(&a, file_with("t5", "b@d tok\n", 0600), NULL, &e) < 0 &&
	   strstr(e.msg, "line 1: a principal name") != NULL, "a bad name: %s", e.msg);
	ok(acp_auth_load(&a, file_with("t6", "a tok\xc3\xa9\n", 0600), NULL, &e) < 0 &&
	   strstr(e.msg, "printable") != NULL, "a non-ASCII token: %s", e.msg);
	ok(acp_auth_load(&a, "/nonexistent/tok", NULL, &e) < 0 && e.code == SBX_EINVAL,
	   "a missing file is a configuration error");
	t = acp_token_generate(&e);
	ok(t && strlen(t) == 64 && strspn(t, "0123456789abcdef") == 64, "generated: 256 bits as hex");
	{
		char p[300];
		snprintf(p, sizeof p, "%s/sub/dir/token-1", dir);
		ok(paths_token_write(p, t, &e) == 0 && stat(p, &st) == 0 && (st.st_mode & 0777) == 0600,
		   "written 0600");
		snprintf(p, sizeof p, "%s/sub/dir", dir);
		ok(stat(p, &st) == 0 && (st.st_mode & 0777) == 0700, "its directory 0700");
		snprintf(p, sizeof p, "%s/sub/dir/token-1", dir);
		ok(acp_auth_load(&a, p, NULL, &e) == 0 && acp_auth_check(&a, t) != NULL, "reads back");
		acp_auth_free(&a);
	}
	free(t);
}

static void guard(void)
{
	struct acp_guard *g = acp_guard_new(2, 3);
	int64_t t = 1000 * S, wait;
	bool log;
	int n;

	ok(acp_guard_connect(g, "10.0.0.1", t, &wait, &log) == ACP_GUARD_OK, "first connection");
	ok(acp_guard_connect(g, "10.0.0.1", t, &wait, &log) == ACP_GUARD_OK, "second");
	ok(acp_guard_connect(g, "10.0.0.1", t, &wait, &log) == ACP_GUARD_TOO_MANY && log,
	   "the third from one source is refused, logged");
	ok(acp_guard_connect(g, "10.0.0.1", t, &wait, &log) == ACP_GUARD_TOO_MANY && !log,
	   "the next refusal within a second is not logged again");
	ok(acp_guard_connect(g, "10.0.0.2", t, &wait, &log) == ACP_GUARD_OK, "another source is fine");
	acp_guard_disconnect(g, "10.0.0.1");
	ok(acp_guard_connect(g, "10.0.0.1", t, &wait, &log) == ACP_GUARD_OK, "a slot came back");

	ok(acp_guard_fail(g, "10.0.0.1", t, &n) == 0 && n == 1, "one failure");
	ok(acp_guard_fail(g, "10.0.0.1", t + S, &n) == 0 && n == 2, "two");
	ok(acp_guard_fail(g, "10.0.0.1", t + 2 * S, &n) == 10 * S, "the third blocks for 10 s");
	ok(acp_guard_blocked(g, "10.0.0.1", t + 3 * S, &wait) && wait == 9 * S, "blocked, 9 s left");
	ok(acp_guard_connect(g, "10.0.0.1", t + 3 * S, &wait, &log) == ACP_GUARD_BLOCKED && log,
	   "connections refused while blocked, the first logged");
	ok(acp_guard_connect(g, "10.0.0.1", t + 4 * S, &wait, &log) == ACP_GUARD_BLOCKED && !log,
	   "the rest of the block is quiet");
	ok(!acp_guard_blocked(g, "10.0.0.2", t + 3 * S, &wait), "the other source is not");
	t += 13 * S;
	ok(!acp_guard_blocked(g, "10.0.0.1", t, &wait), "the block ends");
	acp_guard_fail(g, "10.0.0.1", t, &n);
	acp_guard_fail(g, "10.0.0.1", t, &n);
	ok(acp_guard_fail(g, "10.0.0.1", t, &n) == 20 * S, "the next block is twice as long");
	t += 21 * S;
	acp_guard_fail(g, "10.0.0.1", t, &n);
	ok(acp_guard_fail(g, "10.0.0.1", t + 61 * S, &n) == 0 && n == 1,
	   "failures a minute apart start a new window");
	for (int i = 0; i < 40; i++) {
		int64_t b;
		t += 2000 * S;
		acp_guard_fail(g, "10.0.0.3", t, &n);
		acp_guard_fail(g, "10.0.0.3", t, &n);
		b = acp_guard_fail(g, "10.0.0.3", t, &n);
		if (i == 1)
			ok(b == 10 * S, "a source forgiven after 15 quiet minutes starts at 10 s again");
	}
	t += 1;
	for (int i = 0; i < 12; i++) {
		acp_guard_fail(g, "10.0.0.4", t, &n);
		acp_guard_fail(g, "10.0.0.4", t, &n);
		wait = acp_guard_fail(g, "10.0.0.4", t, &n);
		t += wait + S;
	}
	ok(wait == ACP_GUARD_BACKOFF_MAX_NS, "the back-off stops growing at 15 minutes");
	acp_guard_free(g);

	/* A full table forgets idle sources, never a blocked one. */
	g = acp_guard_new(0, 1);
	acp_guard_fail(g, "blocked", 0, &n);
	for (int i = 0; i < ACP_GUARD_SOURCES_MAX + 10; i++) {
		char k[32];
		snprintf(k, sizeof k, "s%d", i);
		acp_guard_connect(g, k, i + 1, &wait, &log);
		acp_guard_disconnect(g, k);
	}
	ok(acp_guard_blocked(g, "blocked", 5, &wait), "a blocked source survives a flood of others");
	acp_guard_free(g);
}

/* The server-wide bucket: 2 s worth of failures, then 1 a second for sources that failed. */
static void bucket(void)
{
	struct acp_guard *g = acp_guard_new(0, 0);
	int64_t t = 100 * S, wait;
	int n, i;

	acp_guard_set_rate(g, 1);
	for (i = 0; i < 2; i++) {
		ok(acp_guard_may_try(g, "a", t, &wait), "within the bucket %d", i);
		acp_guard_fail(g, "a", t, &n);
	}
	ok(!acp_guard_may_try(g, "a", t, &wait) && wait > 0 && wait <= S,
	   "empty: a source that failed waits, at most a second");
	ok(acp_guard_may_try(g, "b", t, &wait), "a source with no failure is still heard");
	ok(acp_guard_may_try(g, "a", t + S, &wait), "a second later one more");
	acp_guard_fail(g, "a", t + S, &n);
	ok(!acp_guard_may_try(g, "a", t + S + S / 2, &wait), "and no more");
	ok(acp_guard_may_try(g, "a", t + S + ACP_GUARD_WINDOW_NS, &wait),
	   "a source whose failures are old is heard again");
	acp_guard_free(g);
	g = acp_guard_new(0, 0);
	acp_guard_fail(g, "a", t, &n);
	ok(acp_guard_may_try(g, "a", t, &wait), "no rate: no bucket");
	acp_guard_free(g);
}

/* Every loopback address is one source per local user: a peer at 127.0.0.7 is "local uid N". */
static void sources(void)
{
	struct sbx_err e;
	struct sockaddr_in from = {.sin_family = AF_INET}, to;
	socklen_t len = sizeof to;
	char want[64], got[NET_ADDR_MAX] = "";
	int l = net_listen("127.0.0.1:0", &e), c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), a = -1;

	inet_pton(AF_INET, "127.0.0.7", &from.sin_addr);
	ok(l >= 0 && c >= 0 && getsockname(l, (struct sockaddr *)&to, &len) == 0 &&
	   bind(c, (struct sockaddr *)&from, sizeof from) == 0 &&
	   connect(c, (struct sockaddr *)&to, sizeof to) == 0 &&
	   (a = accept4(l, NULL, NULL, SOCK_CLOEXEC)) >= 0, "a connection from 127.0.0.7");
	if (a >= 0)
		net_peer_source(a, got, sizeof got);
	snprintf(want, sizeof want, "local uid %lu", (unsigned long)getuid());
	is_str(got, want, "counted under its local user, not its address");
	if (a >= 0)
		close(a);
	close(c);
	close(l);
}

static void registry(void)
{
	char path[300];
	struct acpreg *r, *r2;
	struct json_object *f = json_object_new_object(), *l;
	struct sbx_err e;
	char *who;
	int fd;

	snprintf(path, sizeof path, "%s/state/sessions.jsonl", dir);
	ok((r = acpreg_open(path, &e)) != NULL, "opened (created)");
	ok(acpreg_owner(r, "acp1") == NULL, "nothing issued yet");
	json_object_object_add(f, "principal", json_object_new_string("alice"));
	json_object_object_add(f, "updated_at", json_object_new_string("2026-01-01T00:00:00Z"));
	ok(acpreg_put(r, "acp1", f, &e) == 0, "issued acp1");
	who = acpreg_owner(r, "acp1");
	is_str(who, "alice", "acp1 is alice's");
	free(who);
	/* A second writer (another server on the same state): seen on the next miss. */
	ok((r2 = acpreg_open(path, &e)) != NULL, "a second reader");
	json_object_object_add(f, "principal", json_object_new_string("bob"));
	json_object_object_add(f, "updated_at", json_object_new_string("2026-02-01T00:00:00Z"));
	acpreg_put(r2, "acp2", f, &e);
	who = acpreg_owner(r, "acp2");
	is_str(who, "bob", "the first sees what the second appended");
	free(who);
	/* A torn line (a crash mid-write) is skipped until it is complete. */
	fd = open(path, O_WRONLY | O_APPEND);
	if (write(fd, "{\"id\":\"acp3\",\"princ", 19) != 19)
		abort();
	close(fd);
	ok(acpreg_owner(r, "acp3") == NULL, "a torn line is not read");
	json_object_object_add(f, "principal", json_object_new_string("alice"));
	json_object_object_add(f, "updated_at", json_object_new_string("2026-03-01T00:00:00Z"));
	acpreg_put(r, "acp1", f, &e);
	l = acpreg_list(r, "alice");
	ok(json_object_array_length(l) == 1, "alice has one session");
	json_object_put(l);
	acpreg_free(r);
	acpreg_free(r2);
	ok((r = acpreg_open(path, &e)) != NULL, "reopened");
	who = acpreg_owner(r, "acp1");
	is_str(who, "alice", "the record survived");
	free(who);
	l = acpreg_get(r, "acp1");
	is_str(json_object_get_string(json_object_object_get(l, "updated_at")), "2026-03-01T00:00:00Z",
	       "the line written after a torn one is whole");
	json_object_put(l);
	l = acpreg_list(r, "bob");
	ok(json_object_array_length(l) == 1, "bob's too");
	json_object_put(l);
	acpreg_free(r);
	json_object_put(f);
}

int main(void)
{
	if (mkdtemp(dir) == NULL)
		abort();
	token_files();
	guard();
	bucket();
	sources();
	registry();
	{
		char cmd[300];
		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return done_testing();
}
