/* fuzz_toolbox.c — geminicli-toolbox's parameter decoding, as a hostile model drives it: the
 * first byte picks the tool, the rest is the JSON read from stdin. The document is parsed and
 * validated against the tool's parameter table exactly as main does; the read-only tools
 * (glob, grep_search, list_directory, read_file, read_many_files) then run in a small private
 * working directory. write_file and replace stop after validation so nothing is written.
 * A document holding a string that could name something outside that directory (absolute,
 * `~`, or containing `..`) is validated but not run: walking the host's / (its /proc, /sys,
 * devices) measures the machine, not the tool, and did hang a CI run for 20 minutes.
 * Built from the program's own sources (the FUZZ_SOURCES line below; main renamed). */
// FUZZ_SOURCES: cmd/geminicli-toolbox/*.c -lpcre2-8 -lm
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define main geminicli_toolbox_main_unused
#include "../../cmd/geminicli-toolbox.c"
#undef main

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int geminicli_toolbox_main_unused(int argc, char **argv);

static char dir[64];

static void put(const char *name, const char *text)
{
	char p[160];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	if ((f = fopen(p, "w")) == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static void setup_dir(void)
{
	char p[128];

	snprintf(dir, sizeof dir, "/tmp/fuzz_toolbox.XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(p, sizeof p, "%s/sub", dir);
	mkdir(p, 0755);
	put("a.txt", "hello\nworld\n");
	put("sub/b.c", "int main(void) { return 0; }\n");
	put(".gitignore", "*.log\n");
	put("x.log", "ignored\n");
	snprintf(p, sizeof p, "%s/pipe", dir);	/* a FIFO: no tool may block on it */
	if (mkfifo(p, 0644) < 0)
		abort();
}

/* True when some string in v could lead a tool out of the private directory. */
static int escapes(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_string: {
		const char *t = json_object_get_string(v);
		return t[0] == '/' || t[0] == '~' || strstr(t, "..") != NULL;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (escapes(json_object_array_get_idx(v, i)))
				return 1;
		return 0;
	case json_type_object: {
		json_object_object_foreach(v, key, val) {
			(void)key;
			if (escapes(val))
				return 1;
		}
		return 0;
	}
	default:
		return 0;
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const struct tb_tool *tool;
	struct buf in = {0};
	struct tb_call c = {0};
	char *why = NULL;

	if (size == 0 || size > 4096)
		return 0;
	if (dir[0] == '\0')
		setup_dir();
	tool = tools[data[0] % (sizeof tools / sizeof tools[0])];
	buf_append(&in, data + 1, size - 1);
	c.params = parse(&in, &why);
	if (c.params == NULL) {
		if (why == NULL)
			abort();
		goto out;
	}
	c.workdir = dir;
	if (tb_validate(&c, tool->params) < 0) {
		if (c.err.data == NULL)
			abort();	/* refused without saying why */
		goto out;
	}
	if (tool != &tb_tool_write_file && tool != &tb_tool_replace && !escapes(c.params))
		if (tool->run(&c) < 0 && c.err.data == NULL)
			abort();
out:
	json_object_put(c.params);
	buf_free(&c.out);
	buf_free(&c.err);
	buf_free(&in);
	free(why);
	return 0;
}
