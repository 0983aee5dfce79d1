/* test_agent.c — history (Go field order, torn last line), child (lines, stdin, cancel,
 * SIGKILL after the grace period), agent startup checks and backend choice. */
#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "backend.h"
#include "backup.h"
#include "chatview.h"
#include "child.h"
#include "gojson.h"
#include "history.h"
#include "timeutil.h"
#include "xalloc.h"
#include "tap.h"

static char *slurp(const char *path)
{
	struct buf b = {0};
	char chunk[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		buf_append(&b, chunk, (size_t)n);
	close(fd);
	return b.data ? buf_steal(&b) : xstrdup("");
}

static void put(const char *path, const char *text, const char *mode)
{
	FILE *f = fopen(path, mode);

	fputs(text, f);
	fclose(f);
}

static void normalize(void)
{
	struct json_object *in = json_tokener_parse(
		"{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\",\"name\":\"ls\"},"
		"\"type\":\"function\",\"id\":\"c1\"}],\"extra_content\":{\"google\":{\"x\":1}},"
		"\"content\":null,\"role\":\"assistant\",\"weird\":\"<kept>\"}");
	struct json_object *out = history_normalize(in);
	char *s = gojson_encode(out);

	is_str(s, "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
	       "\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}],\"extra_content\":{\"google\":"
	       "{\"x\":1}},\"weird\":\"\\u003ckept\\u003e\"}",
	       "normalize: upstream field order, null content and streaming index dropped");
	free(s);
	json_object_put(out);
	json_object_put(in);

	in = json_tokener_parse("{\"content\":\"\",\"role\":\"assistant\",\"tool_calls\":[]}");
	out = history_normalize(in);
	s = gojson_encode(out);
	is_str(s, "{\"role\":\"assistant\",\"content\":\"\"}", "an empty content is kept, empty tool_calls not");
	free(s);
	json_object_put(out);
	json_object_put(in);
}

static void history(const char *home)
{
	struct sbx_err e;
	struct history *h;
	struct json_object *m[2];
	struct stat st;
	char *path, *text;

	ok(history_open("Bad", &e) == NULL && strcmp(e.msg, "session name must be lowercase alphanumeric") == 0,
	   "open refuses a bad session name");
	h = history_open("h1", &e);
	ok(h != NULL && json_object_array_length(history_messages(h)) == 0, "a missing file is an empty history");
	path = xasprintf("%s/.local/sandboxed-tools/h1/sessions/latest.jsonl", home);
	is_str(history_path(h), path, "upstream's path");
	m[0] = json_tokener_parse("{\"role\":\"user\",\"content\":\"a & b\"}");
	m[1] = json_tokener_parse("{\"content\":\"ok\",\"role\":\"assistant\"}");
	ok(history_append(h, m, 2, &e) == 0, "append two messages at once");
	text = slurp(path);
	is_str(text, "{\"role\":\"user\",\"content\":\"a \\u0026 b\"}\n{\"role\":\"assistant\",\"content\":\"ok\"}\n",
	       "one line each, Go encoding");
	free(text);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "file mode 0600");
	{
		/* one holder at a time, even within a process; the second is told who holds it */
		char *want = xasprintf("session \"h1\" is in use by test_agent (pid %ld): a session is "
				       "used by one process at a time", (long)getpid());
		ok(history_open("h1", &e) == NULL && e.code == SBX_EBUSY, "a held session is refused");
		is_str(e.msg, want, "naming the holder");
		ok(history_lock("h1", &e) < 0 && e.code == SBX_EBUSY, "history_lock refuses it too");
		free(want);
	}
	history_close(h);
	{
		int fd = history_lock("h1", &e);
		ok(fd >= 0, "closing the history frees the session");
		close(fd);
	}

	/* a crash mid-append: the torn bytes are moved aside and cut off at once */
	put(path, "{\"role\":\"tool\",\"cont", "a");
	h = history_open("h1", &e);
	ok(h && json_object_array_length(history_messages(h)) == 2, "the torn line is skipped");
	ok(h && history_warning(h) && strstr(history_warning(h), "moved 1 bad line of ") &&
	   strstr(history_warning(h), "latest.jsonl.corrupt (line 3: torn, "), "with a warning naming the file: %s",
	   h && history_warning(h) ? history_warning(h) : "(none)");
	text = slurp(path);
	is_str(text, "{\"role\":\"user\",\"content\":\"a \\u0026 b\"}\n{\"role\":\"assistant\",\"content\":\"ok\"}\n",
	       "the torn bytes were cut at load, nothing else");
	free(text);
	ok(history_append(h, m, 1, &e) == 0, "append after a torn line");
	history_close(h);
	text = slurp(path);
	is_str(text, "{\"role\":\"user\",\"content\":\"a \\u0026 b\"}\n{\"role\":\"assistant\",\"content\":\"ok\"}\n"
	       "{\"role\":\"user\",\"content\":\"a \\u0026 b\"}\n", "the next line starts on its own");
	free(text);
	{
		char *corrupt = xasprintf("%s.corrupt", path);
		text = slurp(corrupt);
		is_str(text, "{\"role\":\"tool\",\"cont\n", "the torn bytes are kept in latest.jsonl.corrupt");
		free(text);
		unlink(corrupt);
		free(corrupt);
	}

	/* a good last line without its newline gets one before the next line */
	put(path, "{\"role\":\"user\",\"content\":\"x\"}", "a");
	h = history_open("h1", &e);
	ok(h && json_object_array_length(history_messages(h)) == 4 && history_warning(h) == NULL,
	   "a complete last line without newline is a message");
	ok(history_append(h, m + 1, 1, &e) == 0, "append after it");
	history_close(h);
	h = history_open("h1", &e);
	ok(h && json_object_array_length(history_messages(h)) == 5, "both lines load");
	history_close(h);

	/* garbage in the middle is moved aside; the good lines keep their own bytes */
	put(path, "not json\n{\"role\":\"user\", \"content\":\"z\"}\n[1]\n{\"role\":\"assistant\",\"content\":\"k\"}\n", "w");
	h = history_open("h1", &e);
	ok(h && json_object_array_length(history_messages(h)) == 2, "the good lines load around bad ones");
	ok(h && history_warning(h) && strstr(history_warning(h), "moved 2 bad lines of ") &&
	   strstr(history_warning(h), "(line 1: ") && strstr(history_warning(h), "; line 3: "),
	   "the warning names both: %s", h && history_warning(h) ? history_warning(h) : "(none)");
	history_close(h);
	text = slurp(path);
	is_str(text, "{\"role\":\"user\", \"content\":\"z\"}\n{\"role\":\"assistant\",\"content\":\"k\"}\n",
	       "the file was rewritten without them");
	free(text);
	{
		char *corrupt = xasprintf("%s.corrupt", path);
		text = slurp(corrupt);
		is_str(text, "not json\n[1]\n", "they are in latest.jsonl.corrupt");
		free(text);
		unlink(corrupt);
		free(corrupt);
	}
	put(path, "\n  \n{\"role\":\"user\",\"content\":\"y\"}\n\n", "w");
	h = history_open("h1", &e);
	ok(h && json_object_array_length(history_messages(h)) == 1, "blank lines are ignored");
	history_close(h);

	/* calls without results: answered once as interrupted, where they belong */
	put(path, "{\"role\":\"user\",\"content\":\"go\"}\n"
	    "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"a1\",\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}},"
	    "{\"id\":\"a2\",\"type\":\"function\",\"function\":{\"name\":\"rm\",\"arguments\":\"{}\"}}]}\n"
	    "{\"role\":\"tool\",\"content\":\"x\",\"tool_call_id\":\"a1\"}\n"
	    "{\"role\":\"user\",\"content\":\"again\"}\n"
	    "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"b1\",\"type\":\"function\",\"function\":{\"name\":\"cat\",\"arguments\":\"{}\"}}]}\n", "w");
	h = history_open("h1", &e);
	ok(h && json_object_array_length(history_messages(h)) == 7, "two tool messages added");
	ok(h && history_warning(h) && strstr(history_warning(h), "2 tool calls in "),
	   "with a warning: %s", h && history_warning(h) ? history_warning(h) : "(none)");
	history_close(h);
	text = slurp(path);
	is_str(text, "{\"role\":\"user\",\"content\":\"go\"}\n"
	       "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"a1\",\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}},"
	       "{\"id\":\"a2\",\"type\":\"function\",\"function\":{\"name\":\"rm\",\"arguments\":\"{}\"}}]}\n"
	       "{\"role\":\"tool\",\"content\":\"x\",\"tool_call_id\":\"a1\"}\n"
	       "{\"role\":\"tool\",\"content\":\"Error calling tool \\\"rm\\\": the call was interrupted before its result "
	       "was saved; it was not run again: check what it did before repeating it\",\"tool_call_id\":\"a2\"}\n"
	       "{\"role\":\"user\",\"content\":\"again\"}\n"
	       "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"b1\",\"type\":\"function\",\"function\":{\"name\":\"cat\",\"arguments\":\"{}\"}}]}\n"
	       "{\"role\":\"tool\",\"content\":\"Error calling tool \\\"cat\\\": the call was interrupted before its result "
	       "was saved; it was not run again: check what it did before repeating it\",\"tool_call_id\":\"b1\"}\n", "each after its turn's tool messages");
	free(text);
	h = history_open("h1", &e);
	ok(h && json_object_array_length(history_messages(h)) == 7 && history_warning(h) == NULL,
	   "loaded again: nothing more to set right");
	{
		/* a call whose tool message was never appended (it could not be saved) is answered
		 * before the next message, in memory and in the file */
		struct json_object *call = json_tokener_parse("{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c9\","
			"\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}");
		struct json_object *last;
		ok(history_append(h, &call, 1, &e) == 0 && history_append(h, m, 1, &e) == 0,
		   "a user message after an unanswered call");
		last = json_object_array_get_idx(history_messages(h), 8);
		ok(json_object_array_length(history_messages(h)) == 10 &&
		   strcmp(json_object_get_string(json_object_object_get(last, "tool_call_id")), "c9") == 0,
		   "the call is answered before it");
		json_object_put(call);
	}
	history_close(h);
	h = history_open("h1", &e);
	ok(h && json_object_array_length(history_messages(h)) == 10 && history_warning(h) == NULL,
	   "and so in the file");
	history_close(h);
	json_object_put(m[0]);
	json_object_put(m[1]);
	free(path);
}

struct lines {
	int n;
	char last[64];
};

static int on_line(void *arg, char *line, size_t len)
{
	struct lines *l = arg;

	l->n++;
	snprintf(l->last, sizeof l->last, "%.*s", (int)len, line);
	return 0;
}

/* Asks to stop the child once it said it is ready. */
static int stop_when_ready(void *arg, char *line, size_t len)
{
	(void)arg;
	return len == 5 && memcmp(line, "ready", 5) == 0;
}

static void child(void)
{
	char *cat[] = {"cat", NULL};
	char *sh_err[] = {"sh", "-c", "echo one; echo two >&2; echo 'prog: it broke' >&2; exit 7", NULL};
	char *sleeper[] = {"sh", "-c", "sleep 30", NULL};
	char *stubborn[] = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done", NULL};
	struct child_req r = {.path = "cat", .argv = cat, .in = "a\nb\nlast", .in_len = 9, .cancel_fd = -1};
	struct child_result res;
	struct lines l = {0};
	struct sbx_err e;
	char *msg;
	int p[2];
	int64_t t0;

	ok(child_run(&r, &res, &e) == 0 && res.status == 0 && strcmp(res.out, "a\nb\nlast") == 0,
	   "stdin in, stdout collected");
	child_result_free(&res);
	r.on_line = on_line;
	r.arg = &l;
	ok(child_run(&r, &res, &e) == 0 && l.n == 3 && strcmp(l.last, "last") == 0,
	   "stdout line by line, the unterminated last line too");
	child_result_free(&res);

	r = (struct child_req){.path = "/bin/sh", .argv = sh_err, .cancel_fd = -1};
	ok(child_run(&r, &res, &e) == 0 && res.status == 7, "exit status");
	msg = child_err_message(&res, "prog");
	is_str(msg, "it broke", "the error message is stderr's last line without the program name");
	free(msg);
	child_result_free(&res);

	r = (struct child_req){.path = "no-such-program-here", .argv = cat, .cancel_fd = -1};
	ok(child_run(&r, &res, &e) < 0 && strstr(e.msg, "cannot run no-such-program-here"), "a missing program");

	ok(pipe(p) == 0, "pipe");
	ok(write(p[1], "x", 1) == 1, "cancel requested before the start");
	r = (struct child_req){.path = "sh", .argv = sleeper, .cancel_fd = p[0]};
	t0 = time_mono_ns();
	ok(child_run(&r, &res, &e) == 0 && res.canceled && res.status == 128 + 15,
	   "cancel stops the child with SIGTERM");
	ok(time_mono_ns() - t0 < 10 * INT64_C(1000000000), "promptly");
	child_result_free(&res);
	r = (struct child_req){.path = "sh", .argv = stubborn, .cancel_fd = -1,
			       .grace_ns = 200 * INT64_C(1000000), .on_line = stop_when_ready};
	ok(child_run(&r, &res, &e) == 0 && res.aborted && res.status == 128 + 9,
	   "a child ignoring SIGTERM gets SIGKILL after the grace period (%d %d)", res.canceled, res.status);
	child_result_free(&res);
	close(p[0]);
	close(p[1]);

	{	/* an environment of its own, a deadline, child_start's descriptors */
		char *env_argv[] = {"sh", "-c", "printf %s \"$ONLY\"; env | wc -l", NULL};
		char *envp[] = {"ONLY=this", NULL};
		char *echo_argv[] = {"sh", "-c", "echo started", NULL};
		char got[64] = "";
		pid_t pid;
		int st, q[2];

		r = (struct child_req){.path = "/bin/sh", .argv = env_argv, .envp = envp, .cancel_fd = -1};
		ok(child_run(&r, &res, &e) == 0 && strncmp(res.out, "this", 4) == 0 &&
		   atoi(res.out + 4) <= 3, "envp replaces the environment");
		child_result_free(&res);
		r = (struct child_req){.path = "sh", .argv = sleeper, .cancel_fd = -1,
				       .timeout_ns = 100 * INT64_C(1000000)};
		t0 = time_mono_ns();
		ok(child_run(&r, &res, &e) == 0 && res.timed_out && !res.canceled &&
		   res.status == 128 + 15 && res.signal == 15, "a deadline stops the child");
		ok(time_mono_ns() - t0 < 10 * INT64_C(1000000000), "at the deadline");
		child_result_free(&res);
		ok(pipe(q) == 0, "pipe");
		r = (struct child_req){.path = "sh", .argv = echo_argv, .cancel_fd = -1};
		ok(child_start(&r, -1, q[1], -1, &pid, &e) == 0, "child_start");
		close(q[1]);
		ok(read(q[0], got, sizeof got - 1) > 0 && strcmp(got, "started\n") == 0 &&
		   waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "child_start wires the descriptors it is given");
		close(q[0]);
		r = (struct child_req){.path = "no-such-program-here", .argv = echo_argv, .cancel_fd = -1};
		ok(child_start(&r, -1, -1, -1, &pid, &e) == ENOENT, "child_start: ENOENT when not found");
	}
}

static void startup(void)
{
	struct agent_config c = {.session = "ok1", .homedir = ""};
	struct sbx_err e;

	setenv("OPENAI_MODEL", "fake-eliza", 1);
	ok(agent_session_open(&c, &e) == NULL && strcmp(e.msg, "homeDir must not be empty") == 0, "homeDir");
	c.homedir = NULL;
	c.session = "";
	ok(agent_session_open(&c, &e) == NULL && strcmp(e.msg, "sessionName is required") == 0, "sessionName");
	c.session = "a/b";
	is_str(agent_session_open(&c, &e) ? "" : e.msg,
	       "invalid sessionName \"a/b\": session name must be lowercase alphanumeric", "invalid name");
	c.session = "ok1";
	setenv("OPENAI_MODEL", "gpt-x", 1);
	unsetenv("GEMINI_API_KEY");
	unsetenv("OPENAI_API_KEY");
	is_str(agent_session_open(&c, &e) ? "" : e.msg,
	       "GEMINI_API_KEY or OPENAI_API_KEY environment variable is required", "API key");
	setenv("OPENAI_MODEL", "fake-eliza", 1);
	c.toolset = "nope";
	is_str(agent_session_open(&c, &e) ? "" : e.msg,
	       "unknown toolset \"nope\" (available: basic, geminicli)", "toolset");
	c.toolset = NULL;
	c.must_exist = true;
	ok(agent_session_open(&c, &e) == NULL && e.code == SBX_ENOTFOUND, "must_exist without history");
	c.must_exist = false;
	{
		struct agent_session *s = agent_session_open(&c, &e);
		ok(s && agent_session_is_new(s) && json_object_array_length(agent_session_history(s)) == 1,
		   "a new session gets the system prompt");
		agent_session_free(s);
		c.must_exist = true;
		s = agent_session_open(&c, &e);
		ok(s && !agent_session_is_new(s), "and exists afterwards");
		ok(s && strcmp(agent_session_model(s), "fake-eliza") == 0, "model from the environment");
		agent_session_free(s);
	}
}

static void view(void)
{
	char a[] = " \t /exit \r\n", b[] = "   ", c[] = "x";
	struct chatview v = {0};
	struct json_object *m = json_tokener_parse("{\"role\":\"assistant\",\"content\":\"hi\"}");
	char *text = NULL;
	size_t len = 0;

	is_str(chatview_trim(a), "/exit", "trim both ends");
	is_str(chatview_trim(b), "", "trim to nothing");
	is_str(chatview_trim(c), "x", "nothing to trim");
	v.out = open_memstream(&text, &len);
	chatview_assistant(&v, m, true);	/* nothing streamed */
	chatview_delta(&v, "str", 3);
	chatview_delta(&v, "eamed", 5);
	chatview_assistant(&v, m, false);
	chatview_delta(&v, "cut", 3);
	chatview_end_turn(&v);
	fclose(v.out);
	is_str(text, "\nAgent> hi\n\nAgent> streamed\n\nAgent> cut\n", "answers as upstream prints them");
	free(text);
	json_object_put(m);
}

static void backends(const char *home)
{
	const char *why;
	char *kc = xasprintf("%s/kc", home);

	unsetenv("KUBECONFIG");
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("SANDBOX_BACKEND");
	is_str(backend_default(&why), "local", "no configuration: local");
	setenv("KUBECONFIG", kc, 1);
	is_str(backend_default(&why), "local", "KUBECONFIG naming no file: local");
	put(kc, "apiVersion: v1\n", "w");
	is_str(backend_default(&why), "kubernetes", "KUBECONFIG naming a file: kubernetes");
	setenv("SANDBOX_BACKEND", "local", 1);
	is_str(backend_default(&why), "local", "SANDBOX_BACKEND wins");
	unsetenv("SANDBOX_BACKEND");
	unsetenv("KUBECONFIG");
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	is_str(backend_default(&why), "kubernetes", "in a pod: kubernetes");
	unsetenv("KUBERNETES_SERVICE_HOST");
	free(kc);
}

/* count_lines: how many lines of the file at path hold needle. */
static int count_lines(const char *path, const char *needle)
{
	char *text = slurp(path), *line, *save = NULL;
	int n = 0;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save))
		n += strstr(line, needle) != NULL;
	free(text);
	return n;
}

/* A tools-only session whose restore is found unfinished between two calls restores again, and
 * then makes its working directory again (the restore may have replaced the home). The sbx
 * programs are stand-ins that log their command lines. */
static void tools_only_restore(const char *home)
{
	char *bin = xasprintf("%s/fakebin", home), *log = xasprintf("%s/fake.log", home);
	char *script = xasprintf("#!/bin/sh\necho \"${0##*/} $*\" >>'%s'\necho '{}'\n", log);
	const char *progs[] = {"sbx-create", "sbx-restore", "sbx-exec", "sbx-delete", NULL};
	struct agent_config cfg = {.session = "wdtools", .backend = "local", .tools_only = true,
				   .bindir = bin, .workdir = "/w/x"};
	struct agent_session *s;
	struct sbx_err e;
	char *dir, *mark;

	mkdir(bin, 0700);
	for (const char **p = progs; *p; p++) {
		char *path = xasprintf("%s/%s", bin, *p);
		put(path, script, "w");
		chmod(path, 0700);
		free(path);
	}
	s = agent_session_open(&cfg, &e);
	ok(s != NULL, "tools-only session with a working directory opens");
	if (s == NULL)
		goto out;
	ok(agent_session_ensure_sandbox(s, -1, &e) == 0, "first call: sandbox made");
	ok(count_lines(log, "sbx-restore") == 1, "first call: restored once");
	ok(count_lines(log, "wdtools -- mkdir -p -- /w/x") == 1, "first call: workdir made");
	dir = backup_dir("wdtools", &e);
	ok(dir && backup_restoring_mark(dir, "backup-1.tar.gz", &e) == 0, "a restore left unfinished");
	ok(agent_session_ensure_sandbox(s, -1, &e) == 0, "next call, soon after: ok");
	ok(count_lines(log, "sbx-restore") == 2, "next call: restored again");
	ok(count_lines(log, "wdtools -- mkdir -p -- /w/x") == 2,
	   "next call: the working directory made again after that restore");
	mark = xasprintf("%s/%s", dir, BACKUP_RESTORING);
	unlink(mark);
	free(mark);
	free(dir);
	agent_session_close(s, &e);
out:
	free(script);
	free(log);
	free(bin);
}

int main(void)
{
	char tmpl[] = "/tmp/test_agent.XXXXXX", *home = mkdtemp(tmpl), *cmd;

	setenv("HOME", home, 1);
	normalize();
	history(home);
	child();
	startup();
	view();
	backends(home);
	tools_only_restore(home);
	cmd = xasprintf("rm -rf '%s'", home);
	if (system(cmd) != 0)
		ok(0, "cleanup");
	free(cmd);
	return done_testing();
}
