/* test_acptool.c — tool calls as ACP shows them: the cwd ⇄ sandbox mapping, titles, kinds,
 * locations, statuses from exit codes, diffs and rawOutput. */
#include <stdlib.h>

#include <json-c/json_pointer.h>

#include "acptool.h"
#include "tap.h"

static const char *get(struct json_object *o, const char *path)
{
	struct json_object *v = NULL;

	return json_pointer_get(o, path, &v) == 0 && v ? json_object_get_string(v) : NULL;
}

static void mapping(void)
{
	struct acp_pathmap pm = {.client = "/home/u/proj", .sandbox = "/home/clawtainer/proj"};
	char *w;

	w = acptool_workdir("/home/clawtainer", "/home/u/proj/");
	is_str(w, "/home/clawtainer/proj", "a client cwd maps to <home>/<its last name>");
	free(w);
	w = acptool_workdir("/home/clawtainer", "/home/clawtainer/x");
	is_str(w, "/home/clawtainer/x", "a cwd inside the sandbox home is used as it is");
	free(w);
	w = acptool_workdir("/home/clawtainer", "/");
	is_str(w, "/home/clawtainer", "/ is the home");
	free(w);
	w = acptool_workdir("/home/clawtainer", "/a/..");
	is_str(w, "/home/clawtainer", "a name of .. is the home, never its parent");
	free(w);
	w = acptool_client_path(&pm, "src/a.c");
	is_str(w, "/home/u/proj/src/a.c", "a relative path is the client's, under its cwd");
	free(w);
	w = acptool_client_path(&pm, "/home/clawtainer/proj");
	is_str(w, "/home/u/proj", "the directory itself");
	free(w);
	w = acptool_client_path(&pm, "/home/clawtainer/projx/a");
	is_str(w, "/home/clawtainer/projx/a", "a sibling with the same prefix is not under it");
	free(w);
	w = acptool_client_path(&pm, "/etc/passwd");
	is_str(w, "/etc/passwd", "elsewhere stays as the sandbox names it");
	free(w);
}

static void describing(void)
{
	struct acp_pathmap pm = {.client = "/c", .sandbox = "/s"};
	struct json_object *o = json_object_new_object();

	acptool_describe(o, "run_command", "{\"command\":\"make test\\nmake install\"}", &pm);
	is_str(get(o, "/title"), "Run `make test…`", "a command's first line, quoted");
	is_str(get(o, "/kind"), "execute", "kind");
	ok(!json_object_object_get_ex(o, "locations", NULL), "a command points at no file");
	json_object_put(o);
	o = json_object_new_object();
	acptool_describe(o, "write_todos", "{\"todos\":[{\"description\":\"x\",\"status\":\"pending\"}]}", &pm);
	is_str(get(o, "/title"), "Plan 1 step", "the plan tool says how many steps");
	is_str(get(o, "/kind"), "think", "and is thinking, not a change");
	json_object_put(o);
	o = json_object_new_object();
	acptool_describe(o, "write_todos", "{\"todos\":[]}", &pm);
	is_str(get(o, "/title"), "Clear the plan", "an empty list clears it");
	json_object_put(o);
	o = json_object_new_object();
	acptool_describe(o, "read_file", "{\"file_path\":\"a.c\",\"start_line\":7}", &pm);
	is_str(get(o, "/title"), "Read a.c", "read_file");
	is_str(get(o, "/locations/0/path"), "/c/a.c", "its location in the client's terms");
	is_str(get(o, "/locations/0/line"), "7", "with its line");
	json_object_put(o);
	o = json_object_new_object();
	acptool_describe(o, "grep_search", "{\"pattern\":\"TODO\",\"dir_path\":\"src\"}", &pm);
	is_str(get(o, "/title"), "Search for `TODO` in src", "grep_search");
	json_object_put(o);
	o = json_object_new_object();
	acptool_describe(o, "read_many_files", "{\"include\":[\"a\",\"b\",\"c\",\"d\"]}", &pm);
	is_str(get(o, "/title"), "Read a, b, c and 1 more", "read_many_files");
	json_object_put(o);
	o = json_object_new_object();
	acptool_describe(o, "mystery", "not json", &pm);
	is_str(get(o, "/title"), "mystery", "an unknown tool is its name");
	is_str(get(o, "/kind"), "other", "of kind other");
	ok(!json_object_object_get_ex(o, "rawInput", NULL), "no rawInput for arguments that are not JSON");
	json_object_put(o);
}

static void results(void)
{
	struct acp_pathmap pm = {.client = "/c", .sandbox = "/s"};
	struct json_object *o;

	ok(acptool_failed_text("run_command", "stdout:\n\nstderr:\n\nexit_code: 2"),
	   "a kept result with a non-zero exit failed");
	ok(!acptool_failed_text("run_command", "stdout:\nexit_code: 9\n\nstderr:\n\nexit_code: 0"),
	   "the last exit code counts");
	ok(acptool_failed_text("run_shell_command", "Output: x\nExit Code: 1\n"), "gemini-cli's Exit Code");
	ok(acptool_failed_text("run_shell_command", "Output: x\nSignal: 9\n"), "gemini-cli's Signal");
	ok(!acptool_failed_text("read", "exit_code: 1"), "only commands have exits");
	ok(acptool_failed_text("read", "Failed to read \"x\":\nstdout:\n"), "basic's read failure");
	ok(acptool_failed_text("read_file", "Error: tool \"read_file\" failed (exit code 1): no"),
	   "the toolbox's failure");
	ok(acptool_failed_text("read", "Error calling tool \"read\": failed to run tool: x"),
	   "the registry's failure");
	o = json_object_new_object();
	acptool_result(o, "read", "{}", "Output: x\nExit Code: 1\n", false, &pm);
	is_str(get(o, "/status"), "completed", "a live result's status is its flag, never its text");
	json_object_put(o);
	o = json_object_new_object();
	acptool_result(o, "read", "{}", "x", true, &pm);
	is_str(get(o, "/status"), "failed", "the flag fails the call");
	json_object_put(o);
	o = json_object_new_object();
	acptool_result(o, "replace", "{\"file_path\":\"a.c\",\"old_string\":\"x\",\"new_string\":\"y\"}",
		       "ok", false, &pm);
	is_str(get(o, "/content/0/type"), "diff", "a completed edit leads with its diff");
	is_str(get(o, "/content/0/path"), "/c/a.c", "in the client's terms");
	is_str(get(o, "/content/0/oldText"), "x", "old");
	is_str(get(o, "/content/0/newText"), "y", "new");
	is_str(get(o, "/content/1/content/text"), "ok", "then the result text");
	json_object_put(o);
	o = json_object_new_object();
	acptool_result(o, "write", "{\"path\":\"a\",\"content\":\"z\"}", "denied", true, &pm);
	is_str(get(o, "/content/0/type"), "content", "a failed edit has no diff");
	is_str(get(o, "/rawOutput/content"), "denied", "rawOutput");
	json_object_put(o);
	o = json_object_new_object();
	acptool_result(o, "run_command", "{}", "stdout:\nhi\n\nstderr:\n\nexit_code: 0", false, &pm);
	is_str(get(o, "/rawOutput/stdout"), "hi\n", "run_command's rawOutput is its parts");
	is_str(get(o, "/rawOutput/exit_code"), "0", "with the exit code");
	json_object_put(o);
}

int main(void)
{
	mapping();
	describing();
	results();
	return done_testing();
}
