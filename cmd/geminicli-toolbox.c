/* geminicli-toolbox — the in-sandbox helper behind `-toolset geminicli`: runs one gemini-cli
 * file tool with its JSON parameters on stdin and prints the model-visible result. Statically
 * linked and self-contained so it works in any image. Contract (upstream cmd/geminicli-toolbox):
 * success → the result on stdout exactly as gemini-cli gives it to the model (no newline
 * added), exit 0; the tool's failure (the model sees "failed (exit code 1)") → the message on
 * stderr, nothing on stdout, exit 1. With --parts, success prints the result as one JSON
 * document of gemini-cli Parts instead, {"parts":[{"text":…},{"inlineData":{"data":…,
 * "mimeType":…}}]}, so that images, PDF, audio and video reach the model as gemini-cli sends
 * them (the text mode names them "Cannot display content of binary file"). The helper's own troubles use the sbx table: 100 usage,
 * 111 its input or output failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "geminicli-toolbox/tb.h"
#include "exitcode.h"
#include "version.h"

static const char usage[] =
	"usage: geminicli-toolbox [--workdir=DIR] [--parts] TOOL_NAME (tool parameters as JSON on stdin)\n";

/* Parameters arrive whole on stdin; a write_file of the 20 MB file limit, JSON-escaped, fits. */
#define TB_MAX_INPUT (64u * 1024 * 1024)

/* The dispatch table: tool name → parameter table and handler (one file per tool). */
static const struct tb_tool *const tools[] = {
	&tb_tool_glob, &tb_tool_grep_search, &tb_tool_list_directory, &tb_tool_read_file,
	&tb_tool_read_many_files, &tb_tool_replace, &tb_tool_write_file,
};

static int fail(const char *msg)
{
	fprintf(stderr, "%s\n", msg);
	return EXIT_TOOL_FAILED;
}

/* The working directory: --workdir, else $HOME, else the process cwd; made absolute. */
static char *workdir_of(const char *flag)
{
	char cwd[4096];
	const char *w = flag ? flag : getenv("HOME");
	if (!getcwd(cwd, sizeof cwd))
		strcpy(cwd, "/");
	if (!w || !*w)
		w = cwd;
	return tb_resolve(cwd, w);
}

static int read_input(struct buf *in)
{
	char chunk[65536];
	for (;;) {
		ssize_t n = read(0, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		if (in->len + (size_t)n > TB_MAX_INPUT) {
			errno = EFBIG;
			return -1;
		}
		buf_append(in, chunk, (size_t)n);
	}
}

/* One JSON document, nothing but whitespace after it; empty input is `{}`. */
static struct json_object *parse(const struct buf *in, char **why)
{
	struct json_tokener *tok;
	struct json_object *obj;
	size_t i = 0;
	while (i < in->len && strchr(" \t\r\n", in->data[i]))
		i++;
	if (i == in->len)
		return json_object_new_object();
	tok = json_tokener_new();
	obj = json_tokener_parse_ex(tok, in->data, (int)in->len);
	if (!obj) {
		enum json_tokener_error je = json_tokener_get_error(tok);
		*why = xstrdup(je == json_tokener_continue ? "unexpected end of JSON input"
							       : json_tokener_error_desc(je));
	} else {
		size_t off = json_tokener_get_parse_end(tok);
		while (off < in->len && strchr(" \t\r\n", in->data[off]))
			off++;
		if (off < in->len) {
			json_object_put(obj);
			obj = NULL;
			*why = xstrdup("invalid character after top-level value");
		}
	}
	json_tokener_free(tok);
	return obj;
}

/* The options before the tool's name (--workdir DIR, --workdir=DIR, --parts); the index of
 * the first other argument. */
static int parse_options(int argc, char **argv, const char **workdir, bool *parts)
{
	int i = 1;

	for (;;) {
		if (i < argc && (!strncmp(argv[i], "--workdir=", 10) || !strncmp(argv[i], "-workdir=", 9))) {
			*workdir = strchr(argv[i], '=') + 1;
			i++;
		} else if (i + 1 < argc && (!strcmp(argv[i], "--workdir") || !strcmp(argv[i], "-workdir"))) {
			*workdir = argv[i + 1];
			i += 2;
		} else if (i < argc && (!strcmp(argv[i], "--parts") || !strcmp(argv[i], "-parts"))) {
			*parts = true;
			i++;
		} else {
			return i;
		}
	}
}

static const struct tb_tool *tool_named(const char *name)
{
	for (size_t t = 0; t < sizeof tools / sizeof tools[0]; t++)
		if (!strcmp(tools[t]->name, name))
			return tools[t];
	return NULL;
}

/* --parts: the text so far becomes the last text part; the Parts document replaces the text. */
static void parts_document(struct tb_call *c)
{
	struct json_object *doc = json_object_new_object();

	tb_text_part(c);
	json_object_object_add(doc, "parts", c->parts ? c->parts : json_object_new_array());
	c->parts = NULL;
	buf_free(&c->out);
	buf_puts(&c->out, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
}

int main(int argc, char **argv)
{
	const char *flag = NULL, *name;
	const struct tb_tool *tool = NULL;
	struct buf in = {0};
	struct tb_call c = {0};
	char *workdir, *why = NULL;
	int i, rc = EXIT_TOOL_FAILED;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
			  !strcmp(argv[1], "-help"))) {
		fputs(usage, stdout);
		return fclose(stdout) == 0 ? 0 : EXIT_FAIL;
	}
	if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-version"))) {
		printf("geminicli-toolbox (sbx) %s\n", SBX_VERSION);
		return fclose(stdout) == 0 ? 0 : EXIT_FAIL;
	}
	i = parse_options(argc, argv, &flag, &c.inline_media);
	if (argc - i != 1) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	name = argv[i];
	workdir = workdir_of(flag);
	if (read_input(&in) < 0) {
		int err = errno;
		fprintf(stderr, "failed to read tool parameters: %s\n",
			err == EFBIG ? "input too large" : strerror(err));
		rc = err == EFBIG ? EXIT_TOOL_FAILED : EXIT_FAIL;	/* too large: the model's doing */
		goto out;
	}
	if (!(c.params = parse(&in, &why))) {
		fprintf(stderr, "invalid tool parameters: %s\n", why);
		goto out;
	}
	if (!(tool = tool_named(name))) {
		fprintf(stderr, "unknown tool \"%s\"\n", name);
		goto out;
	}
	c.workdir = workdir;
	if (tb_validate(&c, tool->params) < 0 || tool->run(&c) < 0) {
		rc = fail(c.err.data ? c.err.data : "tool failed");
		goto out;
	}
	if (c.inline_media)
		parts_document(&c);
	if (!c.out.data)
		buf_append(&c.out, "", 0);
	if (fwrite(c.out.data, 1, c.out.len, stdout) != c.out.len || fflush(stdout) != 0) {
		fail("failed to write the result");
		rc = EXIT_FAIL;
		goto out;
	}
	rc = 0;
out:
	if (fclose(stdout) != 0 && rc == 0)
		rc = EXIT_FAIL;
	json_object_put(c.params);
	json_object_put(c.parts);
	buf_free(&c.out);
	buf_free(&c.err);
	buf_free(&in);
	free(workdir);
	free(why);
	return rc;
}
