/* toolset_geminicli.c — the `geminicli` toolset: gemini-cli 0.61.0's tool declarations (names,
 * parameter names, types and required lists), run in the sandbox: run_shell_command through
 * bash, every file tool through the `geminicli-toolbox` helper found on the sandbox PATH.
 * Also the toolset's system prompt, replaceable with GEMINI_SYSTEM_MD as in gemini-cli. */
#include "toolset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "gemini_path.h"
#include "gemini_shell.h"
#include "gojson.h"
#include "toolcap.h"
#include "toolparts.h"
#include "xalloc.h"

/* gemini-cli's output buffer for run_shell_command: the last 16 MiB of merged output
 * (gemini-cli counts characters; bytes here, the same for ASCII). */
#define SHELL_OUTPUT_MAX (16u << 20)
/* A system prompt file larger than this is not a prompt. */
#define PROMPT_FILE_MAX (1u << 20)

static const char params_glob[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"pattern\":{\"description\":\"The glob pattern to match against (e.g., '**/*.py', 'docs/*.md').\",\"type\":\"string\"},"
	"\"dir_path\":{\"description\":\"Optional: The absolute path to the directory to search within.\",\"type\":\"string\"},"
	"\"case_sensitive\":{\"description\":\"Optional: Whether the search should be case-sensitive.\",\"type\":\"boolean\"},"
	"\"respect_git_ignore\":{\"description\":\"Optional: Whether to respect .gitignore patterns when finding files.\",\"type\":\"boolean\"},"
	"\"respect_gemini_ignore\":{\"description\":\"Optional: Whether to respect .geminiignore patterns when finding files.\",\"type\":\"boolean\"}"
	"},\"required\":[\"pattern\"]}";

static const char params_grep_search[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"pattern\":{\"description\":\"The pattern to search for.\",\"type\":\"string\"},"
	"\"dir_path\":{\"description\":\"Directory or file to search.\",\"type\":\"string\"},"
	"\"include_pattern\":{\"description\":\"Glob pattern to filter files (e.g., '*.ts', 'src/**').\",\"type\":\"string\"},"
	"\"exclude_pattern\":{\"description\":\"Optional: A regular expression pattern to exclude from the search results.\",\"type\":\"string\"},"
	"\"names_only\":{\"description\":\"Optional: If true, only the file paths of the matches will be returned, without the line content or line numbers.\",\"type\":\"boolean\"},"
	"\"case_sensitive\":{\"description\":\"If true, search is case-sensitive.\",\"type\":\"boolean\"},"
	"\"fixed_strings\":{\"description\":\"If true, treats the `pattern` as a literal string instead of a regular expression.\",\"type\":\"boolean\"},"
	"\"context\":{\"description\":\"Show this many lines of context around each match (equivalent to grep -C).\",\"type\":\"integer\",\"minimum\":0},"
	"\"after\":{\"description\":\"Show this many lines after each match (equivalent to grep -A).\",\"type\":\"integer\",\"minimum\":0},"
	"\"before\":{\"description\":\"Show this many lines before each match (equivalent to grep -B).\",\"type\":\"integer\",\"minimum\":0},"
	"\"no_ignore\":{\"description\":\"If true, searches all files including those usually ignored (like in .gitignore, build/, dist/, etc).\",\"type\":\"boolean\"},"
	"\"max_matches_per_file\":{\"description\":\"Optional: Maximum number of matches to return per file.\",\"type\":\"integer\",\"minimum\":1},"
	"\"total_max_matches\":{\"description\":\"Optional: Maximum number of total matches to return.\",\"type\":\"integer\",\"minimum\":1}"
	"},\"required\":[\"pattern\"]}";

static const char params_list_directory[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"dir_path\":{\"description\":\"The path to the directory to list\",\"type\":\"string\"},"
	"\"ignore\":{\"description\":\"List of glob patterns to ignore\",\"items\":{\"type\":\"string\"},\"type\":\"array\"},"
	"\"file_filtering_options\":{\"description\":\"Optional: Whether to respect ignore patterns from .gitignore or .geminiignore\",\"type\":\"object\",\"properties\":{\"respect_git_ignore\":{\"description\":\"Optional: Whether to respect .gitignore patterns when listing files.\",\"type\":\"boolean\"},\"respect_gemini_ignore\":{\"description\":\"Optional: Whether to respect .geminiignore patterns when listing files.\",\"type\":\"boolean\"}}}"
	"},\"required\":[\"dir_path\"]}";

static const char params_read_file[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"file_path\":{\"description\":\"The path to the file to read.\",\"type\":\"string\"},"
	"\"start_line\":{\"description\":\"Optional: The 1-based line number to start reading from.\",\"type\":\"integer\",\"minimum\":1},"
	"\"end_line\":{\"description\":\"Optional: The 1-based line number to end reading at (inclusive).\",\"type\":\"integer\",\"minimum\":1}"
	"},\"required\":[\"file_path\"]}";

static const char params_read_many_files[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"include\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1},\"minItems\":1,\"description\":\"An array of glob patterns or paths.\"},"
	"\"exclude\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1},\"description\":\"Optional. Glob patterns for files/directories to exclude.\",\"default\":[]},"
	"\"recursive\":{\"type\":\"boolean\",\"description\":\"Optional. Whether to search recursively (primarily controlled by `**` in glob patterns).\",\"default\":true},"
	"\"useDefaultExcludes\":{\"type\":\"boolean\",\"description\":\"Optional. Whether to apply a list of default exclusion patterns (e.g., node_modules, .git, binary files).\",\"default\":true},"
	"\"file_filtering_options\":{\"description\":\"Whether to respect ignore patterns from .gitignore or .geminiignore\",\"type\":\"object\",\"properties\":{\"respect_git_ignore\":{\"description\":\"Optional: Whether to respect .gitignore patterns when listing files.\",\"type\":\"boolean\"},\"respect_gemini_ignore\":{\"description\":\"Optional: Whether to respect .geminiignore patterns when listing files.\",\"type\":\"boolean\"}}}"
	"},\"required\":[\"include\"]}";

static const char params_replace[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"file_path\":{\"description\":\"The path to the file to modify.\",\"type\":\"string\"},"
	"\"instruction\":{\"description\":\"A clear, semantic instruction for the code change, acting as a high-quality prompt for an expert LLM assistant.\",\"type\":\"string\"},"
	"\"old_string\":{\"description\":\"The exact literal text to replace, preferably unescaped.\",\"type\":\"string\"},"
	"\"new_string\":{\"description\":\"The exact literal text to replace `old_string` with, preferably unescaped.\",\"type\":\"string\"},"
	"\"allow_multiple\":{\"type\":\"boolean\",\"description\":\"If true, the tool will replace all occurrences of `old_string`.\"}"
	"},\"required\":[\"file_path\",\"instruction\",\"old_string\",\"new_string\"]}";

static const char params_run_shell_command[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"command\":{\"type\":\"string\",\"description\":\"Exact bash command to execute as `bash -c <command>`\"},"
	"\"description\":{\"type\":\"string\",\"description\":\"Brief description of the command for the user.\"},"
	"\"dir_path\":{\"type\":\"string\",\"description\":\"(OPTIONAL) The path of the directory to run the command in.\"},"
	"\"is_background\":{\"type\":\"boolean\",\"description\":\"Set to true if this command should be run in the background (e.g. for long-running servers or watchers).\"},"
	"\"delay_ms\":{\"type\":\"integer\",\"description\":\"Optional. Delay in milliseconds to wait after starting the process in the background.\"}"
	"},\"required\":[\"command\"]}";

static const char params_write_file[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"file_path\":{\"description\":\"The path to the file to write to.\",\"type\":\"string\"},"
	"\"content\":{\"description\":\"The content to write to the file.\",\"type\":\"string\"}"
	"},\"required\":[\"file_path\",\"content\"]}";

/* Both scripts start alike: $1 dir_path, $2 the script from gemini_shell_script(), $3 a marker.
 * bash is resolved on PATH as gemini-cli resolves it (its messages then name
 * /usr/bin/bash); a dir_path that is missing, not a directory or not enterable is what
 * Node's spawn would fail on: one line "<marker> spawn <code> <bash>" and nothing runs. */
#define SHELL_PROLOGUE                                                                        \
	"cd \"${HOME:-/}\" || exit 1\n"                                                           \
	"b=$(command -v bash) || b=bash\n"                                                        \
	"if [ -n \"$1\" ]; then\n"                                                                \
	"  if [ ! -e \"$1\" ]; then printf '%s spawn ENOENT %s\\n' \"$3\" \"$b\"; exit 0; fi\n"       \
	"  if [ ! -d \"$1\" ]; then printf '%s spawn ENOTDIR %s\\n' \"$3\" \"$b\"; exit 0; fi\n"      \
	"  cd \"$1\" 2>/dev/null || { printf '%s spawn EACCES %s\\n' \"$3\" \"$b\"; exit 0; }\n"       \
	"fi\n"

/* The foreground script. bash runs the command as a job of its own (job control on: its own
 * process group, PGID = its pid, signals at their defaults; the job notices go to
 * /dev/null), stdin from /dev/null. Then a trailer line: marker, pid, status, and the signal
 * when the shell was killed (no status file), then the background PIDs its EXIT trap
 * recorded. */
static const char shell_script[] =
	SHELL_PROLOGUE
	"d=$(mktemp -d /tmp/gemini-shell-XXXXXX) || exit 1\n"
	"set -m\n"
	"exec 3>&2 2>/dev/null\n"
	"\"$b\" -c \"$2\" \"$b\" \"$d/bgpids.tmp\" </dev/null 2>&3 3>&- &\n"
	"pid=$!\n"
	"wait $pid\n"
	"code=$? sig= bg=\n"
	"[ -f \"$d/bgpids.tmp.code\" ] || sig=$((code - 128))\n"
	"while read -r l; do bg=\"$bg $l\"; done <\"$d/bgpids.tmp\" 2>/dev/null\n"
	"rm -rf \"$d\"\n"
	"printf '\\n%s %s %s %s%s\\n' \"$3\" \"$pid\" \"$code\" \"${sig:--}\" \"$bg\"\n"
	"exit $code\n";

/* The background script ($4: the delay in seconds). The command runs in its own session
 * (PGID = its PID), its output going to SHELL_BG_DIR/background-<pid>.log as gemini-cli
 * keeps it (there under ~/.gemini/tmp): the log is opened before the command starts and
 * named once its pid is known. After the delay, one line "<marker> <pid>". */
#define SHELL_BG_DIR "/tmp/sbx/background-processes"
static const char shell_bg_script[] =
	SHELL_PROLOGUE
	"l=" SHELL_BG_DIR "\n"
	"mkdir -p -m 700 \"$l\" && t=$(mktemp \"$l/starting-XXXXXX\") || exit 1\n"
	"d=$(mktemp -d /tmp/gemini-shell-XXXXXX) || exit 1\n"
	"exec 4>\"$t\"\n"
	"setsid \"$b\" -c \"$2\" \"$b\" \"$d/bgpids.tmp\" </dev/null >&4 2>&1 4>&- &\n"
	"pid=$!\n"
	"exec 4>&-\n"
	"mv -f \"$t\" \"$l/background-$pid.log\"\n"
	"sleep \"$4\"\n"
	"printf '%s %s\\n' \"$3\" \"$pid\"\n";

/* gemini-cli's non-interactive environment for shell commands: pagers off, no prompts, no
 * user or system git configuration, git's helper programs blanked. */
static char *const shell_env[] = {
	"GEMINI_CLI=1", "TERM=xterm-256color", "PAGER=cat", "GIT_PAGER=cat",
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=",
	"GIT_CONFIG_KEY_1=core.fsmonitor", "GIT_CONFIG_VALUE_1=",
	"GIT_CONFIG_KEY_2=core.hooksPath", "GIT_CONFIG_VALUE_2=",
	"GIT_CONFIG_KEY_3=core.sshCommand", "GIT_CONFIG_VALUE_3=",
	"GIT_CONFIG_KEY_4=core.pager", "GIT_CONFIG_VALUE_4=cat",
	"GIT_CONFIG_KEY_5=core.editor", "GIT_CONFIG_VALUE_5=",
	"GIT_CONFIG_KEY_6=sequence.editor", "GIT_CONFIG_VALUE_6=",
	"GIT_CONFIG_KEY_7=diff.external", "GIT_CONFIG_VALUE_7=",
	"GIT_CONFIG_COUNT=8", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=",
	"GH_PROMPT_DISABLED=1", "GCM_INTERACTIVE=never", "DISPLAY=", "DBUS_SESSION_BUS_ADDRESS=",
	NULL,
};

static const struct tool *find_tool(const char *name);

static const char *arg_str(struct json_object *args, const char *key)
{
	struct json_object *v;
	if (!json_object_object_get_ex(args, key, &v) || !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

static bool arg_bool(struct json_object *args, const char *key)
{
	struct json_object *v;
	return json_object_object_get_ex(args, key, &v) && json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

/* AJV's first error for args against a tool's schema (the keywords run_shell_command's
 * uses: required, type), in gemini-cli's words; NULL when they are valid. */
static char *schema_error(const char *schema_text, struct json_object *args)
{
	struct json_object *schema = json_tokener_parse(schema_text), *props = NULL, *req = NULL;
	char *err = NULL;

	json_object_object_get_ex(schema, "properties", &props);
	json_object_object_get_ex(schema, "required", &req);
	for (size_t i = 0; req && !err && i < json_object_array_length(req); i++) {
		const char *k = json_object_get_string(json_object_array_get_idx(req, i));
		if (!json_object_object_get_ex(args, k, NULL))
			err = xasprintf("params must have required property '%s'", k);
	}
	json_object_object_foreach(props, key, spec) {
		struct json_object *v, *ty = NULL;
		const char *t;
		bool ok = true;
		if (err || !json_object_object_get_ex(args, key, &v))
			continue;
		json_object_object_get_ex(spec, "type", &ty);
		t = ty ? json_object_get_string(ty) : "";
		if (!strcmp(t, "string"))
			ok = json_object_is_type(v, json_type_string);
		else if (!strcmp(t, "boolean"))
			ok = json_object_is_type(v, json_type_boolean);
		else if (!strcmp(t, "integer"))
			ok = json_object_is_type(v, json_type_int) ||
			     (json_object_is_type(v, json_type_double) &&
			      json_object_get_double(v) == (double)(int64_t)json_object_get_double(v));
		if (!ok)
			err = xasprintf("params/%s must be %s", key, t);
	}
	json_object_put(schema);
	return err;
}

/* The trailer of shell_script: finds the last "\n<marker> " in out[0..*len) (NUL bytes
 * allowed) and reads it; the output is cut there. False when it is missing (output capped,
 * shell killed early). */
static bool shell_trailer(char *out, size_t *len, const char *marker, long *pid, int *code,
			  int *sig, char **bg)
{
	size_t ml = strlen(marker);
	char *p = NULL, *q = out, *end, *stop = out + *len;

	while ((q = memmem(q, (size_t)(stop - q), marker, ml)) != NULL) {
		if (q > out && q[-1] == '\n' && q + ml < stop && q[ml] == ' ')
			p = q;
		q += ml;
	}
	if (p == NULL || !memchr(p, '\n', (size_t)(stop - p)))
		return false;
	q = p + ml + 1;
	*pid = strtol(q, &end, 10);
	if (*end != ' ')
		return false;
	*code = (int)strtol(end + 1, &end, 10);
	if (*end != ' ')
		return false;
	*sig = end[1] == '-' ? 0 : (int)strtol(end + 1, &end, 10);
	end += strcspn(end, " \n");
	*bg = xstrndup(end, strcspn(end, "\n"));
	*len = (size_t)(p - 1 - out);
	out[*len] = '\0';
	return true;
}

/* The spawn failure line of SHELL_PROLOGUE: gemini-cli's error `spawn <bash> <code>`. */
static bool spawn_failed(const char *out, size_t len, const char *marker, struct sbx_err *e)
{
	char code[16], bash[1024];
	size_t ml = strlen(marker);
	if (len < ml + 8 || strncmp(out, marker, ml) != 0 || strncmp(out + ml, " spawn ", 7) != 0 ||
	    sscanf(out + ml + 7, "%15s %1023s", code, bash) != 2)
		return false;
	/* Node names the program for the errors it reports late (ENOENT, EACCES), not for
	 * the ones spawn throws at once */
	if (!strcmp(code, "ENOENT") || !strcmp(code, "EACCES"))
		err_set(e, SBX_EINVAL, "spawn %s %s", bash, code);
	else
		err_set(e, SBX_EINVAL, "spawn %s", code);
	return true;
}

/* The delay before a background command is reported: delay_ms (gemini-cli's default
 * 200 ms), at most SHELL_BG_DELAY_MAX_MS. */
#define SHELL_BG_DELAY_MS 200
#define SHELL_BG_DELAY_MAX_MS 60000

/* The shell's directory: dir_path, relative to the tools' working directory when one is set
 * (gemini-cli resolves it against its target directory); "" = the script's default. */
static char *shell_dir(const struct tool_ctx *ctx, struct json_object *args)
{
	const char *d = arg_str(args, "dir_path");

	if (ctx->workdir == NULL || d[0] == '/')
		return xstrdup(d);
	return d[0] ? xasprintf("%s/%s", ctx->workdir, d) : xstrdup(ctx->workdir);
}

static char *run_shell_bg(const struct tool_ctx *ctx, struct json_object *args, char *script,
			  const char *marker, size_t *len, struct sbx_err *e)
{
	struct json_object *v;
	int64_t delay = SHELL_BG_DELAY_MS;
	char *dir = shell_dir(ctx, args);
	char secs[32], *argv[] = {"bash", "-c", (char *)shell_bg_script, "run_shell_command",
				  dir, script, (char *)marker, secs, NULL};
	struct capture_req rq = {.argv = argv, .env = shell_env, .merge = true};
	struct capture c;
	struct buf b = {0}, t = {0};
	long pid = 0;
	size_t ml = strlen(marker);

	if (json_object_object_get_ex(args, "delay_ms", &v) && json_object_is_type(v, json_type_int))
		delay = json_object_get_int64(v);
	if (delay < 0)
		delay = 0;
	if (delay > SHELL_BG_DELAY_MAX_MS)
		delay = SHELL_BG_DELAY_MAX_MS;
	snprintf(secs, sizeof secs, "%lld.%03lld", (long long)(delay / 1000), (long long)(delay % 1000));
	if (toolset_capture(ctx, &rq, &c, e) < 0) {
		free(dir);
		return NULL;
	}
	free(dir);
	if (spawn_failed(c.out, c.out_len, marker, e)) {
		capture_free(&c);
		return NULL;
	}
	if (c.res.exit_code != 0 || c.out_len <= ml || strncmp(c.out, marker, ml) != 0 ||
	    (pid = strtol(c.out + ml, NULL, 10)) <= 0) {
		/* the log could not be made: what the shell said */
		err_set(e, SBX_EIO, "cannot start the command in the background: %.*s",
			(int)strcspn(c.out, "\n"), *c.out ? c.out : "no output");
		capture_free(&c);
		return NULL;
	}
	buf_printf(&t, "Command moved to background (PID: %ld). Output hidden. Press Ctrl+B to view.", pid);
	gemini_shell_untrusted(&b, t.data, t.len);
	buf_free(&t);
	capture_free(&c);
	*len = b.len;
	return buf_steal(&b);
}

/* gemini-cli's child-process output rules on the merged output c->out[0..len): a NUL byte
 * among the first bytes makes it binary (nothing is shown); otherwise UTF-8 text (invalid
 * bytes U+FFFD, NUL bytes kept), the last SHELL_OUTPUT_MAX of it with a warning when there
 * was more, ANSI escapes removed, trimmed. Appends the text to b. */
#define SHELL_SNIFF_BYTES 512
/* Room for the trailer line beyond the output kept (so the trailer never costs output). */
#define SHELL_TRAILER_MAX 4096
static void shell_output(struct buf *b, const struct capture *c, size_t len)
{
	size_t from = c->out_dropped ? SHELL_SNIFF_BYTES : 0, n, start, end;
	bool truncated = c->out_dropped > 0;
	char *text;

	if (memchr(c->out, '\0', len < SHELL_SNIFF_BYTES ? len : SHELL_SNIFF_BYTES))
		return;	/* binary: gemini-cli stops collecting at the first chunk */
	if (from > len)
		from = len;
	if (len - from > SHELL_OUTPUT_MAX) {
		from = len - SHELL_OUTPUT_MAX;
		truncated = true;
	}
	text = toolcap_utf8(c->out + from, len - from, &n);
	if (truncated) {
		text = xrealloc(text, n + 80);
		n += (size_t)sprintf(text + n,
				     "\n[GEMINI_CLI_WARNING: Output truncated. The buffer is limited to %uMB.]",
				     SHELL_OUTPUT_MAX >> 20);
	}
	n = gemini_shell_strip_ansi(text, n);
	end = gemini_shell_trim(text, n, &start);
	buf_append(b, text + start, end - start);
	free(text);
}

/* gemini-cli's validation of a call: the schema, a command, a valid dir_path. */
static int shell_check(const struct tool_ctx *ctx, struct json_object *args, struct sbx_err *e)
{
	const char *cmd, *dp;
	char *why, pathbuf[256];
	size_t st;

	if ((why = schema_error(find_tool("run_shell_command")->parameters, args)) != NULL) {
		err_set(e, SBX_EINVAL, "%s", why);
		free(why);
		return -1;
	}
	cmd = arg_str(args, "command");
	if (gemini_shell_trim(cmd, strlen(cmd), &st) == st)
		return err_set(e, SBX_EINVAL, "Command cannot be empty.");
	if (*(dp = arg_str(args, "dir_path"))) {
		char *abs = dp[0] == '/' ? xstrdup(dp)
			    : xasprintf("%s/%s", ctx->workdir ? ctx->workdir : ctx->homedir, dp);
		const char *bad = gemini_path_invalid(abs, pathbuf, sizeof pathbuf);
		free(abs);
		if (bad)
			return err_set(e, SBX_EINVAL, "Invalid path: %s", bad);
	}
	return 0;
}

/* Long: gemini-cli's run_shell_command in its order (checks, substitution refusal, wrapper
 * script, exec, background pids, the answer), its texts at byte parity; the text rules are
 * gemini_shell.c. */
static char *run_shell_command(const struct tool_ctx *ctx, struct json_object *args,
			       size_t *outlen, bool *failed, struct sbx_err *e)
{
	char *command = NULL, *script = NULL, *bg = NULL;
	char *dir = shell_dir(ctx, args);
	char marker[40], *argv[] = {"bash", "-c", (char *)shell_script, "run_shell_command",
				    dir, NULL, marker, NULL};
	struct capture_req rq = {.argv = argv, .env = shell_env,
				 .max = SHELL_OUTPUT_MAX + SHELL_TRAILER_MAX, .merge = true,
				 .keep_tail = true, .head = SHELL_SNIFF_BYTES};
	struct capture c;
	struct buf b = {0}, t = {0};
	unsigned char rnd[12];
	char *res = NULL;
	size_t len, n, before;
	long pid = 0;
	int code = 0, sig = 0;
	bool have;
	char oom[256];

	if (shell_check(ctx, args, e) < 0) {
		free(dir);
		return NULL;
	}
	command = gemini_shell_strip_wrapper(arg_str(args, "command"));
	if (gemini_shell_has_substitution(command)) {
		res = xstrdup(GEMINI_SHELL_BLOCKED_TEXT);
		*outlen = strlen(res);
		*failed = true;	/* refused: nothing ran */
		goto out;
	}
	if (getentropy(rnd, sizeof rnd) < 0) {
		err_sys(e, errno, "getentropy");
		goto out;
	}
	strcpy(marker, "sbx-shell-");
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(marker + strlen(marker), 3, "%02x", rnd[i]);
	script = gemini_shell_script(command);
	if (arg_bool(args, "is_background")) {
		res = run_shell_bg(ctx, args, script, marker, outlen, e);
		goto out;
	}
	argv[5] = script;
	if (toolset_capture(ctx, &rq, &c, e) < 0)
		goto out;
	if (spawn_failed(c.out, c.out_len, marker, e)) {
		capture_free(&c);
		goto out;
	}
	len = c.out_len;
	have = shell_trailer(c.out, &len, marker, &pid, &code, &sig, &bg);
	if (!have)
		code = c.res.exit_code;
	buf_puts(&t, "Output: ");
	before = t.len;
	shell_output(&t, &c, len);
	if (t.len == before)
		buf_puts(&t, "(empty)");
	/* where gemini-cli puts a process-level error */
	if (c.res.oom_killed)
		buf_printf(&t, "\nError: %s", toolset_oom_text(&c.res, oom, sizeof oom));
	if (sig > 0)
		buf_printf(&t, "\nSignal: %d", sig);
	else if (code != 0)
		buf_printf(&t, "\nExit Code: %d", code);
	if (bg) {
		/* the shell's own pid is not a background job */
		char *save = NULL, *tok, *sep = "";
		struct buf l = {0};
		for (tok = strtok_r(bg, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			if (strtol(tok, NULL, 10) != pid && strspn(tok, "0123456789") == strlen(tok)) {
				buf_printf(&l, "%s%s", sep, tok);
				sep = ", ";
			}
		if (l.len)
			buf_printf(&t, "\nBackground PIDs: %.*s", (int)l.len, l.data);
		buf_free(&l);
	}
	if (have && pid > 0)
		buf_printf(&t, "\nProcess Group PGID: %ld", pid);
	*failed = c.res.oom_killed || sig > 0 || code != 0;
	gemini_shell_untrusted(&b, t.data, t.len);
	buf_free(&t);
	capture_free(&c);
	/* the scheduler's cut of run_shell_command results (truncateToolOutputThreshold) */
	n = b.len;
	res = toolcap_apply(ctx, "run_shell_command", buf_steal(&b), &n);
	*outlen = n;
out:
	free(command);
	free(script);
	free(bg);
	free(dir);
	return res;
}

/* The toolbox's stdin: the arguments the tool's schema declares, as the model sent them
 * (the toolbox checks them with gemini-cli's messages); others are dropped, as gemini-cli's
 * tools never read them. */
static char *toolbox_input(const struct tool *t, struct json_object *args)
{
	struct json_object *schema = json_tokener_parse(t->parameters), *props, *in, *v;
	char *s;

	in = json_object_new_object();
	json_object_object_get_ex(schema, "properties", &props);
	json_object_object_foreach(props, key, spec) {
		(void)spec;
		if (json_object_object_get_ex(args, key, &v))
			json_object_object_add(in, key, json_object_get(v));
	}
	s = xstrdup(json_object_to_json_string_ext(in, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(in);
	json_object_put(schema);
	return s;
}

/* The toolbox's --parts answer: the text (inline parts named in it), the Parts to
 * ctx->parts when they hold inline data; NULL with *why for an answer that is not one. */
static char *toolbox_parts(const struct tool_ctx *ctx, const char *out, size_t n, size_t *len,
			   const char **why)
{
	struct json_object *doc = gojson_parse(out, n, why), *parts = NULL, *v;
	struct sbx_err pe;
	char *text = NULL;

	if (doc && json_object_object_get_ex(doc, "parts", &v) && (parts = toolparts_check(v, &pe))) {
		text = toolparts_text(parts, len);
		if (ctx->parts && toolparts_has_media(parts))
			*ctx->parts = json_object_get(parts);
	} else if (doc) {
		*why = "no valid \"parts\"";
	}
	json_object_put(parts);
	json_object_put(doc);
	return text;
}

/* Every file tool: `geminicli-toolbox --parts <name>` with the parameters on stdin. */
static char *run_toolbox(const char *name, const struct tool_ctx *ctx, struct json_object *args,
			 size_t *len, bool *failed, struct sbx_err *e)
{
	const struct tool *t = find_tool(name);
	char *wd = ctx->workdir ? xasprintf("--workdir=%s", ctx->workdir) : NULL;
	char *argv[] = {"geminicli-toolbox", "--parts", wd ? wd : (char *)name,
			wd ? (char *)name : NULL, NULL};
	char *in = toolbox_input(t, args), *out;
	const char *why = NULL;
	struct capture_req rq = {.argv = argv, .in = in, .in_len = strlen(in),
				 .max = TOOLPARTS_OUTPUT_MAX};
	struct capture c;
	struct buf msg = {0};
	size_t a, z;
	char oomtext[256];

	if (toolset_capture(ctx, &rq, &c, e) < 0) {
		free(in);
		free(wd);
		return NULL;
	}
	free(in);
	free(wd);
	if (c.res.exit_code == 0 && !c.out_truncated &&
	    (out = toolbox_parts(ctx, c.out, c.out_len, len, &why)) != NULL) {
		capture_free(&c);
		return out;
	}
	if (c.res.exit_code == 0) {	/* a foreign helper on PATH, or an old toolbox image */
		*failed = true;
		out = xasprintf("Error: tool \"%s\" failed: geminicli-toolbox's answer is not a "
				"--parts document: %s", name, c.out_truncated ? "too large" : why);
		*len = strlen(out);
		capture_free(&c);
		return out;
	}
	buf_printf(&msg, "%s\n%s", c.err, c.out);
	for (a = 0; a < msg.len && strchr(" \t\r\n\v\f", msg.data[a]); a++)
		;
	for (z = msg.len; z > a && strchr(" \t\r\n\v\f", msg.data[z - 1]); z--)
		;
	*failed = true;
	out = xasprintf("Error: tool \"%s\" failed (exit code %d): %.*s%s%s", name, c.res.exit_code,
			(int)(z - a), msg.data + a, c.res.oom_killed ? "\n" : "",
			toolset_oom_text(&c.res, oomtext, sizeof oomtext));
	*len = strlen(out);
	buf_free(&msg);
	capture_free(&c);
	return out;
}

#define TOOLBOX_RUN(tool)                                                                     \
	static char *run_##tool(const struct tool_ctx *ctx, struct json_object *args,         \
				size_t *len, bool *failed, struct sbx_err *e)                 \
	{                                                                                     \
		return run_toolbox(#tool, ctx, args, len, failed, e);                         \
	}
TOOLBOX_RUN(glob)
TOOLBOX_RUN(grep_search)
TOOLBOX_RUN(list_directory)
TOOLBOX_RUN(read_file)
TOOLBOX_RUN(read_many_files)
TOOLBOX_RUN(replace)
TOOLBOX_RUN(write_file)

/* Sorted by name (upstream offers schemas in byte order). */
static const struct tool tools[] = {
	{"glob",
	 "Efficiently finds files matching specific glob patterns (e.g., `src/**/*.ts`, `**/*.md`), "
	 "returning absolute paths sorted by modification time (newest first).",
	 params_glob, run_glob},
	{"grep_search", "Searches for a regular expression pattern within file contents.",
	 params_grep_search, run_grep_search},
	{"list_directory",
	 "Lists the names of files and subdirectories directly within a specified directory path.",
	 params_list_directory, run_list_directory},
	{"read_file", "Reads and returns the content of a specified file.", params_read_file,
	 run_read_file},
	{"read_many_files",
	 "Reads content from multiple files specified by glob patterns within a configured target "
	 "directory.",
	 params_read_many_files, run_read_many_files},
	{"replace", "Replaces text within a file.", params_replace, run_replace},
	{"run_shell_command", "This tool executes a given shell command as `bash -c <command>`.",
	 params_run_shell_command, run_shell_command},
	{"write_file", "Writes content to a specified file in the local filesystem.",
	 params_write_file, run_write_file},
};
#define NTOOLS (sizeof tools / sizeof tools[0])

static const struct tool *find_tool(const char *name)
{
	for (size_t i = 0; i < NTOOLS; i++)
		if (strcmp(tools[i].name, name) == 0)
			return &tools[i];
	return NULL;
}

/* Our own prompt, covering the ground gemini-cli's covers: who the agent is, its core rules,
 * the usual workflows, how to talk and use tools, the sandbox, and a closing reminder. */
static const char builtin_prompt[] =
	"You are a command-line software engineering agent. You help the user with programming "
	"tasks by reading, searching, editing and running code with the tools you are given. "
	"Work carefully, keep the user's goals in view, and finish what you start.\n"
	"\n"
	"# Core Mandates\n"
	"\n"
	"## Security & System Integrity\n"
	"- Never reveal, print, log or commit secrets such as API keys, tokens or passwords.\n"
	"- Do not weaken security settings, and do not touch files outside the task without a reason.\n"
	"\n"
	"## Context Efficiency\n"
	"- Read only what you need: search with `grep_search` and `glob` before opening files, and "
	"use `start_line`/`end_line` of `read_file` for large files.\n"
	"- Prefer one well-aimed tool call to many speculative ones; run independent calls together.\n"
	"\n"
	"## Engineering Standards\n"
	"- Follow the conventions of the code around you: style, naming, structure, libraries and "
	"frameworks already in use. Check that a library is actually used before relying on it.\n"
	"- Keep changes focused. Add comments only where they explain why, not what.\n"
	"- Verify your work: run the project's own build, linters and tests when they exist, and add "
	"tests for new behaviour.\n"
	"- Use absolute paths or paths relative to the working directory with the file tools; never "
	"assume a file's content without reading it.\n"
	"\n"
	"# Primary Workflows\n"
	"\n"
	"## Development Lifecycle\n"
	"1. Understand: explore the code and the request with the search and read tools.\n"
	"2. Plan: decide on a small, coherent approach; tell the user briefly when it helps.\n"
	"3. Implement: make the change with `replace` or `write_file`, matching local conventions.\n"
	"4. Verify: build and test with `run_shell_command`; fix what you broke.\n"
	"5. Finish: stop when the task is done and the checks pass; summarise only if asked.\n"
	"\n"
	"## New Applications\n"
	"When asked for something new, pick a mainstream, well-supported stack, scaffold it with the "
	"usual tools (non-interactive flags), build a working first version, and check that it runs. "
	"Ask before making large technology choices the request leaves open.\n"
	"\n"
	"# Operational Guidelines\n"
	"\n"
	"## Tone and Style\n"
	"Be concise and direct, as fits a terminal. No filler, no long preambles or recaps. Use "
	"GitHub-flavoured Markdown when formatting helps. Say plainly when you cannot do something.\n"
	"\n"
	"## Security and Safety Rules\n"
	"Before running a command that changes the system or deletes data, state in one sentence "
	"what it does and why. Never run commands that exfiltrate data or harm the machine.\n"
	"\n"
	"## Tool Usage\n"
	"- `run_shell_command` runs `bash -c <command>`. Prefer non-interactive commands (for example "
	"`npm init -y`, `git --no-pager`). Start servers and watchers with `is_background`.\n"
	"- `replace` needs the exact current text in `old_string`, with enough surrounding lines to "
	"be unique; set `allow_multiple` to change every occurrence.\n"
	"- `write_file` writes whole files; use it for new files or complete rewrites.\n"
	"- `list_directory`, `glob`, `grep_search`, `read_file` and `read_many_files` explore the "
	"workspace.\n"
	"\n"
	"## Interaction Details\n"
	"Respect the user's decisions: if a tool call is refused, do not retry it unchanged; ask or "
	"choose another way. Do not revert changes you did not make unless asked.\n"
	"\n"
	"# Sandbox\n"
	"You run inside an isolated sandbox: your tools see its filesystem and processes, not the "
	"user's machine. Network access and installed software may be limited; when a command fails "
	"for such a reason, say so and suggest what the user could change.\n"
	"\n"
	"# Final Reminder\n"
	"Your job is to solve the user's problem correctly and safely. Read before you change, "
	"verify after you change, and keep going until the request is complete.\n";

/* Replaces every `from` in *s with `to`. */
static void substitute(char **s, const char *from, const char *to)
{
	struct buf b = {0};
	const char *p = *s, *q;
	size_t n = strlen(from);
	if (!strstr(p, from))
		return;
	while ((q = strstr(p, from))) {
		buf_append(&b, p, (size_t)(q - p));
		buf_puts(&b, to);
		p = q + n;
	}
	buf_puts(&b, p);
	free(*s);
	*s = buf_steal(&b);
}

/* GEMINI_SYSTEM_MD as gemini-cli reads it: unset/0/false → the built-in prompt; 1/true →
 * ./.gemini/system.md; anything else a path (`~` expanded, relative to the cwd). The file
 * replaces the prompt whole; ${AvailableTools} and ${<tool>_ToolName} are substituted. */
static char *system_prompt(struct sbx_err *e)
{
	const char *v = getenv("GEMINI_SYSTEM_MD"), *home = getenv("HOME");
	char *path = NULL, *text = NULL, cwd[4096];
	FILE *f = NULL;
	struct buf b = {0}, tools_list = {0};
	char chunk[8192];
	size_t n;

	if (v == NULL || *v == '\0' || strcasecmp(v, "0") == 0 || strcasecmp(v, "false") == 0)
		return xstrdup(builtin_prompt);
	if (getcwd(cwd, sizeof cwd) == NULL)
		strcpy(cwd, ".");
	if (strcasecmp(v, "1") == 0 || strcasecmp(v, "true") == 0)
		path = xasprintf("%s/.gemini/system.md", cwd);
	else if ((v[0] == '~' && v[1] == '\0') || (v[0] == '~' && v[1] == '/'))
		path = xasprintf("%s%s", home ? home : "", v + 1);
	else if (v[0] == '/')
		path = xstrdup(v);
	else
		path = xasprintf("%s/%s", cwd, v);
	if ((f = fopen(path, "r")) == NULL) {
		if (errno == ENOENT)
			err_set(e, SBX_EINVAL, "missing system prompt file '%s'", path);
		else
			err_sys(e, errno, "cannot read system prompt file '%s'", path);
		goto out;
	}
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (b.len + n > PROMPT_FILE_MAX) {
			err_set(e, SBX_EINVAL, "system prompt file '%s' is larger than %u bytes", path,
				PROMPT_FILE_MAX);
			goto out;
		}
		buf_append(&b, chunk, n);
	}
	if (ferror(f)) {
		err_sys(e, EIO, "cannot read system prompt file '%s'", path);
		goto out;
	}
	text = b.data ? buf_steal(&b) : xstrdup("");
	for (size_t i = 0; i < NTOOLS; i++) {
		char *key = xasprintf("${%s_ToolName}", tools[i].name);
		substitute(&text, key, tools[i].name);
		free(key);
		buf_printf(&tools_list, "%s- %s", i ? "\n" : "", tools[i].name);
	}
	substitute(&text, "${AvailableTools}", tools_list.data);
	substitute(&text, "${AgentSkills}", "");
	substitute(&text, "${SubAgents}", "");
	/* runs of three or more newlines collapse to two, as gemini-cli does */
	while (strstr(text, "\n\n\n"))
		substitute(&text, "\n\n\n", "\n\n");
out:
	if (f)
		fclose(f);
	buf_free(&b);
	buf_free(&tools_list);
	free(path);
	return text;
}

const struct toolset toolset_geminicli = {
	.name = "geminicli",
	.default_image = "geminicli-toolbox:latest",
	.tools = tools,
	.ntools = NTOOLS,
	.system_prompt = system_prompt,
	.own_validation = true,
};
