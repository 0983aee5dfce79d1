/* cli.c — the shared front end of the sbx programs. */
#include "cli.h"

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gojson.h"
#include "helptext.h"
#include "termtext.h"
#include "xalloc.h"
#include "version.h"

const char *cli_prog = "sbx";

/* The shared sandbox flags, the one table that parses them and writes their -h rows: a program
 * takes the rows whose bit it names (struct cli_sandbox's take). help is the row's text for
 * the sbx tools, agent_help (NULL: the same) for the agent programs (CLI_SBX_AGENT), which hand
 * the flags to sbx-create and pick their backend with backend_default. */
static const struct cli_row {
	unsigned take;
	const char *name, *arg;
	enum flag_type type;
	size_t off;			/* of the value in struct cli_sandbox */
	const char *help, *agent_help;
} cli_rows[] = {
	{.take = CLI_SBX_BACKEND, .name = "backend", .arg = "B", .type = FLAG_STRING,
	 .off = offsetof(struct cli_sandbox, backend),
	 .help = "local (default) or kubernetes; env SANDBOX_BACKEND",
	 .agent_help = "local or kubernetes; env SANDBOX_BACKEND, default kubernetes when a "
		       "Kubernetes configuration exists, else local"},
	{.take = CLI_SBX_BACKEND, .name = "namespace", .arg = "NS", .type = FLAG_STRING,
	 .off = offsetof(struct cli_sandbox, ns),
	 .help = "namespace; env SANDBOX_NAMESPACE, default \"" SBX_DEFAULT_NAMESPACE "\""},
	{.take = CLI_SBX_IMAGE, .name = "image", .arg = "I", .type = FLAG_STRING,
	 .off = offsetof(struct cli_sandbox, image),
	 .help = "local: \"host\" (default), a root filesystem directory, or an OCI image "
		 "oci-archive:PATH[:TAG] / oci:DIR[:TAG] (see sbx-image); kubernetes: a container "
		 "image (default debian:bookworm-slim); env SANDBOX_IMAGE",
	 .agent_help = "sandbox image; env SANDBOX_IMAGE (kubernetes default: the toolset's "
		       "image, else debian:bookworm-slim; local: the host root)"},
	{.take = CLI_SBX_HOMEDIR, .name = "homedir", .arg = "D", .type = FLAG_STRING,
	 .off = offsetof(struct cli_sandbox, homedir),
	 .help = "home directory inside, the only persistent place; env SANDBOX_HOME_DIR, "
		 "default " SBX_DEFAULT_HOMEDIR,
	 .agent_help = "home directory in the sandbox, the one backed up; env SANDBOX_HOME_DIR, "
		       "default " SBX_DEFAULT_HOMEDIR},
	{.take = CLI_SBX_TTL, .name = "ttl", .arg = "D", .type = FLAG_DURATION,
	 .off = offsetof(struct cli_sandbox, ttl_ns),
	 .help = "shutdown time = now + D (Go duration, default 5m)"},
};
#define CLI_SBX_ROWS (sizeof cli_rows / sizeof cli_rows[0])

/* The shared sandbox flags' rows (lib/util/flag.h) for sb: how many were written to tbl. */
static size_t sandbox_rows(struct cli_sandbox *sb, struct flag *tbl)
{
	size_t n = 0;

	for (size_t r = 0; r < CLI_SBX_ROWS; r++)
		if (sb->take & cli_rows[r].take)
			tbl[n++] = (struct flag){.name = cli_rows[r].name, .type = cli_rows[r].type,
						 .ptr = (char *)sb + cli_rows[r].off};
	if (sb->take & CLI_SBX_SPEC)
		n += specflags_table(&sb->sf, tbl + n);
	return n;
}

/* -h: the usage with, at its CLI_SBX_USAGE line, the rows of the shared flags sb takes, laid
 * out at the column of the usage's own rows. */
static _Noreturn void help(const char *usage, const struct cli_sandbox *sb)
{
	const char *at = strstr(usage, CLI_SBX_USAGE);
	struct buf b = {0};
	int col = helptext_column(usage, 24);

	if (at == NULL || sb == NULL)
		cli_help(usage);
	buf_append(&b, usage, (size_t)(at - usage));
	for (size_t r = 0; r < CLI_SBX_ROWS; r++) {
		const struct cli_row *w = &cli_rows[r];
		char *flag;

		if (!(sb->take & w->take))
			continue;
		flag = xasprintf("-%s %s", w->name, w->arg);
		helptext_row(&b, col, flag, sb->take & CLI_SBX_AGENT && w->agent_help ? w->agent_help
											    : w->help);
		free(flag);
	}
	buf_puts(&b, at + strlen(CLI_SBX_USAGE));
	fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
	exit(cli_finish(EXIT_OK));
}

int cli_parse(const struct cli *c, int argc, char **argv)
{
	size_t own = 0, n;
	struct flag *tbl;
	struct sbx_err e;
	int i, ops;

	cli_init(argc, argv);
	while (c->flags && c->flags[own].name)
		own++;
	/* Room for the program's rows, every shared one and the end. */
	tbl = xcalloc(own + CLI_SBX_ROWS + SPECF_COUNT + 1, sizeof *tbl);
	memcpy(tbl, c->flags ? c->flags : tbl, own * sizeof *tbl);
	n = own + (c->sandbox ? sandbox_rows(c->sandbox, tbl + own) : 0);
	tbl[n].name = NULL;
	i = flag_parse(tbl, argc, argv, &e);
	free(tbl);
	if (i == FLAG_HELP)
		help(c->usage, c->sandbox);
	if (i < 0)
		cli_usage_error(c->usage, e.msg);
	ops = argc - i;
	if (ops < c->min)
		cli_usage_error(c->usage, c->missing ? c->missing : "missing arguments");
	if (c->max >= 0 && ops > c->max)
		cli_usage_error(c->usage, c->too_many ? c->too_many : "too many arguments");
	return i;
}

const char *cli_sandbox_image(const struct cli_sandbox *sb)
{
	return sb->image ? sb->image : backend_env_image();
}

const char *cli_sandbox_homedir(const struct cli_sandbox *sb)
{
	return sb->homedir ? sb->homedir : backend_env_homedir();
}

void cli_sandbox_spec(const struct cli_sandbox *sb, struct sbx_spec *spec)
{
	const char *image = cli_sandbox_image(sb);

	if (image && strlen(image) >= sizeof spec->image)
		cli_die(EXIT_USAGE, "invalid image: longer than %zu bytes", sizeof spec->image - 1);
	if (image)
		strcpy(spec->image, image);
	if (sb->homedir) {
		if (strlen(sb->homedir) >= sizeof spec->homedir)
			cli_die(EXIT_USAGE, "invalid homedir: longer than %zu bytes",
				sizeof spec->homedir - 1);
		strcpy(spec->homedir, sb->homedir);
	}
}

const char *cli_sandbox_backend(const struct cli_sandbox *sb, const char **why)
{
	if (sb->backend && *sb->backend) {
		*why = "selected with -backend";
		return sb->backend;
	}
	return backend_default(why);
}

struct sbx_backend *cli_backend_open(const struct cli_sandbox *sb)
{
	struct sbx_backend *b;
	struct sbx_err e;

	if ((b = backend_open(sb->backend, sb->ns, &e)) == NULL)
		cli_die_err("", &e);
	return b;
}

void cli_names_check(enum name_kind kind, char *const *names, int n)
{
	struct sbx_err e;

	for (int i = 0; i < n; i++)
		if (name_given_check(kind, names[i], &e) < 0)
			cli_die(EXIT_USAGE, "%s", e.msg);
}

void cli_init(int argc, char **argv)
{
	const char *argv0 = argc > 0 ? argv[0] : NULL, *s = argv0 ? strrchr(argv0, '/') : NULL;

	cli_prog = s ? s + 1 : (argv0 && *argv0 ? argv0 : "sbx");
	if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-version") == 0)) {
		printf("%s (sbx) %s\n", cli_prog, SBX_VERSION);
		exit(cli_finish(EXIT_OK));
	}
}

/* A message often quotes what a sandbox, a model or a peer said (a command's stderr, an API's
 * error body, a path from an archive): its controls are shown, never acted on (termtext.h). */
static void vmsg(const char *pre, const char *fmt, va_list ap)
{
	char line[4096], *shown;

	vsnprintf(line, sizeof line, fmt, ap);
	shown = termtext_str(line, TERMTEXT_TEXT);
	fprintf(stderr, "%s: %s%s\n", cli_prog, pre, shown);
	free(shown);
}

void cli_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void cli_die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	fflush(stdout);
	exit(status);
}

int cli_status(int code)
{
	return exitcode_of_err(code);
}

void cli_die_err(const char *what, const struct sbx_err *e)
{
	if (what && *what)
		cli_die(cli_status(e->code), "%s: %s", what, e->msg);
	cli_die(cli_status(e->code), "%s", e->msg);
}

void cli_usage_error(const char *usage, const char *why)
{
	const char *nl = strchr(usage, '\n');
	int n = nl ? (int)(nl - usage) : (int)strlen(usage);

	if (why)
		fprintf(stderr, "%s: %s\n", cli_prog, why);
	fprintf(stderr, "%.*s\n", n, usage);
	fprintf(stderr, "Try '%s -h' for more information.\n", cli_prog);
	exit(EXIT_USAGE);
}

void cli_help(const char *usage)
{
	fputs(usage, stdout);
	exit(cli_finish(EXIT_OK));
}

int cli_print_json(struct json_object *obj)
{
	struct buf b = {0};
	int rc = 0;

	gojson_append(&b, obj);
	buf_append(&b, "\n", 1);
	if (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0)
		rc = -1;
	buf_free(&b);
	return rc;
}

int cli_print_handle(const struct sbx_info *in)
{
	struct json_object *o = sbx_info_json(in);
	int rc;

	json_object_object_del(o, "reused");
	rc = cli_print_json(o);
	json_object_put(o);
	return rc;
}

int cli_pause_main(const char *usage, bool paused, int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const struct cli c = {.usage = usage, .sandbox = &sb, .min = 1, .max = 1,
			      .missing = "missing NAME"};
	struct sbx_info info;
	struct sbx_backend *b;
	struct sbx_err e;
	int i = cli_parse(&c, argc, argv), rc;

	b = cli_backend_open(&sb);
	if (sbx_pause(b, argv[i], paused, &info, &e) < 0)
		cli_die(cli_status(e.code), "unable to %s sandbox %s: %s",
			paused ? "pause" : "resume", argv[i], e.msg);
	rc = cli_print_handle(&info) < 0 ? EXIT_FAIL : EXIT_OK;
	backend_close(b);
	return cli_finish(rc);
}

int cli_print_deleted(const char *name)
{
	struct json_object *o = json_object_new_object();
	int rc;

	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "deleted", json_object_new_boolean(1));
	rc = cli_print_json(o);
	json_object_put(o);
	return rc;
}

char *cli_read_stdin(size_t max, const char *what, size_t *len)
{
	struct buf b = {0};
	char chunk[65536];
	ssize_t r;

	while ((r = read(0, chunk, sizeof chunk)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			cli_die(EXIT_FAIL, "cannot read the %s: %s", what, strerror(errno));
		if (b.len + (size_t)r > max)
			cli_die(EXIT_USAGE, "invalid %s: larger than %zu bytes", what, max);
		buf_append(&b, chunk, (size_t)r);
	}
	*len = b.len;
	return buf_steal(&b);
}

int cli_finish(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		if (errno != EPIPE)
			fprintf(stderr, "%s: write error: %s\n", cli_prog, strerror(errno));
		return status == EXIT_OK ? EXIT_FAIL : status;
	}
	return status;
}
