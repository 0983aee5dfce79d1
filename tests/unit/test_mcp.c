/* test_mcp.c — MCP revisions, initialize both ways, tools ⇄ declarations, tools/call params
 * and results, ids. */
#include <stdlib.h>
#include <string.h>

#include "gojson.h"
#include "mcp.h"
#include "tap.h"

static char *enc(struct json_object *o)
{
	char *s = gojson_encode(o);

	json_object_put(o);
	return s;
}

static void versions(void)
{
	ok(mcp_version_find(MCP_VERSION_LATEST) != NULL, "the current revision is spoken");
	ok(mcp_version_find(MCP_VERSION_PREVIOUS) != NULL, "the previous revision is spoken");
	ok(mcp_version_find("2024-11-05") == NULL, "an old revision is not");
	ok(mcp_version_find("2025-03-26") && !mcp_version_find("2025-03-26")->structured,
	   "2025-03-26 is spoken, without structured output");
	is_str(mcp_negotiate("2025-06-18")->name, "2025-06-18", "a spoken revision is answered as asked");
	is_str(mcp_negotiate("2024-11-05")->name, MCP_VERSION_LATEST, "another gets the latest");
	is_str(mcp_negotiate(NULL)->name, MCP_VERSION_LATEST, "none gets the latest");
}

static void initialize(void)
{
	struct mcp_impl srv = {"sbx-mcp", "sbx sandbox tools", "1.0"}, cli = {"acp", NULL, "2"};
	struct json_object *r = mcp_initialize_result(mcp_negotiate(NULL), &srv, "be careful");
	struct sbx_err e;
	char *s;

	ok(mcp_initialize_check(r, &e) == mcp_negotiate(NULL), "a client accepts our own result");
	s = enc(r);
	is_str(s, "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{\"listChanged\":false}},"
	       "\"serverInfo\":{\"name\":\"sbx-mcp\",\"title\":\"sbx sandbox tools\",\"version\":\"1.0\"},"
	       "\"instructions\":\"be careful\"}", "initialize result");
	free(s);
	s = enc(mcp_initialize_params(&cli));
	is_str(s, "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"acp\","
	       "\"version\":\"2\"}}", "initialize params");
	free(s);
	r = json_tokener_parse("{\"protocolVersion\":\"2024-11-05\"}");
	ok(mcp_initialize_check(r, &e) == NULL && strstr(e.msg, "2024-11-05"), "an old answer is refused: %s", e.msg);
	json_object_put(r);
}

static void tools(void)
{
	const struct mcp_version *v = mcp_negotiate(NULL);
	struct json_object *l = mcp_tools_list(&toolset_basic, v), *arr, *t = NULL, *x, *d;
	struct sbx_err e;
	char *s;
	size_t i;

	json_object_object_get_ex(l, "tools", &arr);
	ok(json_object_array_length(arr) == toolset_basic.ntools, "every basic tool is listed");
	for (i = 0; i < json_object_array_length(arr); i++) {
		t = json_object_array_get_idx(arr, i);
		json_object_object_get_ex(t, "name", &x);
		if (strcmp(json_object_get_string(x), "run_command") == 0)
			break;
	}
	ok(json_object_object_get_ex(t, "outputSchema", &x), "run_command has an outputSchema");
	json_object_object_get_ex(t, "annotations", &x);
	s = gojson_encode(x);
	is_str(s, "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,"
	       "\"openWorldHint\":false}", "run_command's annotations");
	free(s);
	d = mcp_tool_declaration(t, &e);
	s = enc(d);
	is_str(s, "{\"type\":\"function\",\"function\":{\"name\":\"run_command\",\"description\":"
	       "\"Executes a shell command inside a sandbox and returns the stdout and stderr.\","
	       "\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\","
	       "\"description\":\"The shell command to execute\"}},\"required\":[\"command\"]}}}",
	       "an MCP tool back as a declaration");
	free(s);
	json_object_put(l);
	t = json_tokener_parse("{\"name\":\"bad name\",\"inputSchema\":{}}");
	ok(mcp_tool_declaration(t, &e) == NULL, "a name with a space is refused");
	json_object_put(t);
	t = json_tokener_parse("{\"name\":\"x\",\"inputSchema\":[]}");
	ok(mcp_tool_declaration(t, &e) == NULL, "a non-object schema is refused");
	json_object_put(t);
	l = mcp_tools_list(&toolset_geminicli, v);
	s = enc(l);
	ok(strstr(s, "\"name\":\"read_file\"") && strstr(s, "\"readOnlyHint\":true"), "geminicli tools listed");
	free(s);
}

static void calls(void)
{
	struct json_object *p, *tok;
	const char *name;
	char *args, *s;
	struct sbx_err e;
	bool err;

	p = json_tokener_parse("{\"name\":\"ls\",\"arguments\":{\"path\":\"/\"},\"_meta\":{\"progressToken\":7}}");
	ok(mcp_call_params(p, &name, &args, &tok, &e) == 0, "tools/call params read");
	is_str(name, "ls", "name");
	is_str(args, "{\"path\":\"/\"}", "arguments as JSON text");
	ok(tok && json_object_get_int(tok) == 7, "progress token");
	free(args);
	json_object_put(p);
	p = json_tokener_parse("{\"name\":\"ls\"}");
	ok(mcp_call_params(p, &name, &args, &tok, &e) == 0 && strcmp(args, "{}") == 0 && tok == NULL,
	   "no arguments: {}");
	free(args);
	json_object_put(p);
	p = json_tokener_parse("{\"name\":\"ls\",\"arguments\":[1]}");
	ok(mcp_call_params(p, &name, &args, &tok, &e) < 0, "array arguments refused: %s", e.msg);
	json_object_put(p);
	p = json_tokener_parse("{\"arguments\":{}}");
	ok(mcp_call_params(p, &name, &args, &tok, &e) < 0, "a missing name refused");
	json_object_put(p);
	p = json_tokener_parse("{\"name\":\"x\",\"_meta\":{\"progressToken\":1.5}}");
	ok(mcp_call_params(p, &name, &args, &tok, &e) < 0, "a fractional token refused");
	json_object_put(p);

	p = mcp_call_result(mcp_negotiate(NULL), "out", true, json_tokener_parse("{\"exit_code\":1}"));
	s = gojson_encode(p);
	is_str(s, "{\"content\":[{\"type\":\"text\",\"text\":\"out\"}],\"structuredContent\":{\"exit_code\":1},"
	       "\"isError\":true}", "a call result");
	free(s);
	s = mcp_call_result_text(p, &err, &e);
	ok(s && strcmp(s, "out") == 0 && err, "read back by a client");
	free(s);
	json_object_put(p);
	p = json_tokener_parse("{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image\"}]}");
	s = mcp_call_result_text(p, &err, &e);
	is_str(s, "a\n[image content]", "other block types are named");
	ok(!err, "isError absent: false");
	free(s);
	json_object_put(p);
	p = mcp_call_result(mcp_version_find("2025-03-26"), "x", false, json_tokener_parse("{\"a\":1}"));
	s = enc(p);
	is_str(s, "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"isError\":false}",
	       "no structuredContent for 2025-03-26");
	free(s);
	p = mcp_tools_list(&toolset_basic, mcp_version_find("2025-03-26"));
	s = enc(p);
	ok(strstr(s, "outputSchema") == NULL, "no outputSchema for 2025-03-26");
	free(s);

	tok = json_object_new_string("t1");
	s = enc(mcp_progress_params(tok, 3, "running"));
	is_str(s, "{\"progressToken\":\"t1\",\"progress\":3,\"message\":\"running\"}", "progress params");
	free(s);
	p = json_object_new_int(1);
	ok(!mcp_id_equal(tok, p), "\"t1\" is not 1");
	json_object_put(tok);
	tok = json_object_new_string("1");
	ok(!mcp_id_equal(tok, p), "\"1\" is not 1");
	json_object_put(tok);
	tok = json_object_new_int(1);
	ok(mcp_id_equal(tok, p), "1 is 1");
	json_object_put(tok);
	json_object_put(p);
}

int main(void)
{
	versions();
	initialize();
	tools();
	calls();
	return done_testing();
}
