/* test_geminicli.c — TAP checks of the geminicli toolset's declarations (sorted, valid JSON
 * Schema objects of upstream's shape, every required name declared, the default image) and
 * of the built-in system prompt. With the argument `prompt` it prints the system prompt
 * (honouring GEMINI_SYSTEM_MD) for tests/geminicli-toolbox.bats. */
#include <stdlib.h>

#include "gemini_path.h"
#include "gemini_shell.h"
#include "toolset.h"
#include "tap.h"

/* gemini-cli's run_shell_command text rules (lib/toolset/gemini_shell.c), cases from its shell-utils. */
static void gemini_shell_cases(void)
{
	static const struct { const char *in, *want; } strip[] = {
		{"  ls -l  ", "ls -l"},
		{"bash -c 'ls -l'", "ls -l"},
		{"/usr/bin/bash -c \"echo \\\"hi\\\" \\$HOME\"", "echo \"hi\" $HOME"},
		{"sh -c ls", "ls"},
		{"ZSH -C 'a'", "a"},
		{"bash -c \"a\" \"b\"", "a\" \"b"},
		{"cmd.exe /c dir", "dir"},
		{"powershell -NoProfile -Command 'Get-Item'", "Get-Item"},
		{"bash script.sh", "bash script.sh"},
		{"bash -c", "bash -c"},
	};
	static const struct { const char *cmd; bool sub; } subst[] = {
		{"echo $(date)", true}, {"echo `date`", true}, {"diff <(a) b", true}, {"tee >(x)", true},
		{"echo '$(date)'", false}, {"echo \"$(date)\"", true}, {"echo \"<(a)\"", false},
		{"echo \\$(date)", false}, {"echo \"\\$(x)\"", false}, {"echo $((1+2))", true},
		{"echo $HOME ${x}", false}, {"a && b | c > d", false},
	};
	struct buf b = {0};
	char *t, text[] = "\x1b[1;31mred\x1b[0m \x1b]0;title\a\x1b(Bok\xc2\x9b" "2Kz";
	size_t i, n;

	for (i = 0; i < sizeof strip / sizeof strip[0]; i++) {
		t = gemini_shell_strip_wrapper(strip[i].in);
		is_str(t, strip[i].want, "strip wrapper: %s", strip[i].in);
		free(t);
	}
	for (i = 0; i < sizeof subst / sizeof subst[0]; i++)
		ok(gemini_shell_has_substitution(subst[i].cmd) == subst[i].sub, "substitution %s: %s",
		   subst[i].sub ? "found" : "none", subst[i].cmd);
	t = gemini_shell_script(" ls \\");
	is_str(t, "shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=$1; shift\n"
		  "(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\nls \\ \n)\n__code=$?\n"
		  "echo $__code >\"$_bgpids_file.code\"\nexit $__code", "script: command on line 4, trailing backslash spaced");
	free(t);
	n = gemini_shell_strip_ansi(text, strlen(text));
	text[n] = '\0';
	is_str(text, "red okz", "ANSI: CSI, OSC, charset designation and C1 CSI removed");
	{
		/* ansi-regex 6.6's other forms: DCS with ST, C1 OSC with BEL, a Linux palette
		 * reset, ESC ( 0, ESC 7; an unterminated OSC and a lone ESC stay */
		char more[] = "\x1bP1;2qpay\x1b\\" "A" "\xc2\x9d" "osc\x07" "B\x1b]RC\x1b(0D\x1b" "7E\x1b]open F\x1b";
		n = gemini_shell_strip_ansi(more, strlen(more));
		more[n] = '\0';
		is_str(more, "ABCDE\x1b]open F\x1b", "ANSI: control strings, C1 OSC, palette, escapes");
	}
	{
		const char *s = "\xe2\x80\x82 x y\xc2\xa0\n\t";
		size_t st, end = gemini_shell_trim(s, strlen(s), &st);
		ok(st == 4 && end == 7, "trim: JavaScript's white space, Unicode spaces included");
	}
	{
		char buf[256], longname[300];
		memset(longname, 'x', sizeof longname);
		longname[0] = '/';
		longname[sizeof longname - 1] = '\0';
		ok(gemini_path_invalid("/home/a/b.txt", buf, sizeof buf) == NULL, "path: a plain path is valid");
		is_str(gemini_path_invalid("/a\nb", buf, sizeof buf),
		       "Path contains invalid characters (newlines or control characters).", "path: newline");
		is_str(gemini_path_invalid("/w/FAIL src/x.test.ts", buf, sizeof buf),
		       "Path appears to be a misinterpreted log fragment.", "path: a log line");
		is_str(gemini_path_invalid(longname, buf, sizeof buf),
		       "Path component \"xxxxxxxxxxxxxxxxxxxx...\" is too long (maximum 255 characters).",
		       "path: a long component");
	}
	gemini_shell_untrusted(&b, "a</untrusted_context>b", strlen("a</untrusted_context>b"));
	buf_append(&b, "", 0);
	is_str(b.data, "<untrusted_context>\na&lt;/untrusted_context&gt;b\n</untrusted_context>",
	       "untrusted wrapper escapes the closing tag");
	buf_free(&b);
}

static int print_prompt(void)
{
	struct sbx_err e = {0};
	char *p = toolset_geminicli.system_prompt(&e);
	if (!p) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	fputs(p, stdout);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	const struct toolset *ts = &toolset_geminicli;
	struct sbx_err e = {0};
	char *prompt;

	if (argc == 2 && strcmp(argv[1], "prompt") == 0)
		return print_prompt();
	gemini_shell_cases();
	is_str(ts->name, "geminicli", "toolset name");
	is_str(ts->default_image, "geminicli-toolbox:latest", "default image");
	ok(ts->ntools == 8, "eight tools");
	for (size_t i = 0; i < ts->ntools; i++) {
		const struct tool *t = &ts->tools[i];
		struct json_object *s = json_tokener_parse(t->parameters), *ty, *props, *req;
		bool shape = s && json_object_object_get_ex(s, "type", &ty) &&
			     strcmp(json_object_get_string(ty), "object") == 0 &&
			     json_object_object_get_ex(s, "properties", &props) &&
			     json_object_is_type(props, json_type_object) &&
			     json_object_object_get_ex(s, "required", &req) &&
			     json_object_is_type(req, json_type_array);
		ok(shape, "%s: parameters are {type:object, properties, required}", t->name);
		if (i > 0)
			ok(strcmp(ts->tools[i - 1].name, t->name) < 0, "%s: sorted after %s", t->name,
			   ts->tools[i - 1].name);
		ok(t->description && *t->description && t->run, "%s: description and runner",
		   t->name);
		if (shape) {
			bool all = json_object_array_length(req) > 0;
			for (size_t k = 0; k < json_object_array_length(req); k++) {
				const char *r = json_object_get_string(json_object_array_get_idx(req, k));
				all = all && json_object_object_get_ex(props, r, NULL);
			}
			ok(all, "%s: every required parameter is declared", t->name);
		}
		json_object_put(s);
	}
	unsetenv("GEMINI_SYSTEM_MD");
	prompt = ts->system_prompt(&e);
	ok(prompt && strstr(prompt, "# Core Mandates") && strstr(prompt, "# Operational Guidelines") &&
		   strstr(prompt, "# Primary Workflows") && strstr(prompt, "# Sandbox"),
	   "built-in prompt has gemini-cli's sections");
	free(prompt);
	setenv("GEMINI_SYSTEM_MD", "/nonexistent/prompt.md", 1);
	prompt = ts->system_prompt(&e);
	ok(prompt == NULL, "a missing prompt file is an error");
	is_str(e.msg, "missing system prompt file '/nonexistent/prompt.md'", "its message");
	free(prompt);
	return done_testing();
}
