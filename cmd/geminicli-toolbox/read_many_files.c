/* read_many_files.c — `read_many_files`: every file under the working directory matching the
 * include globs (case-insensitive) and none of the excludes (gemini-cli's default list unless
 * useDefaultExcludes is false), each read as read_file reads it, joined with `--- path ---`
 * separators. */
#include <stdlib.h>
#include <string.h>

#include "tb.h"

static const struct tb_param params[] = {
	{"include", TB_STRARRAY, true, 1, true},
	{"exclude", TB_STRARRAY, false, -1, true},
	{"recursive", TB_BOOL, false, -1, false},
	{"useDefaultExcludes", TB_BOOL, false, -1, false},
	{"file_filtering_options", TB_FILTERING, false, -1, false},
	{NULL, TB_STRING, false, -1, false},
};

/* gemini-cli's default excludes for read_many_files. */
static const char *const default_excludes[] = {
	"**/node_modules/**", "**/.git/**", "**/bower_components/**", "**/.svn/**", "**/.hg/**",
	"**/.vscode/**", "**/.idea/**", "**/dist/**", "**/build/**", "**/coverage/**",
	"**/__pycache__/**",
	"**/*.{bin,exe,dll,so,dylib,class,jar,war,zip,tar,gz,bz2,rar,7z,pak,rpa,doc,docx,xls,xlsx,ppt,pptx,odt,ods,odp}",
	"**/*.pyc", "**/*.pyo", "**/.DS_Store", "**/.env", "**/GEMINI.md", NULL,
};

struct state {
	struct tb_glob **inc, **exc;
	size_t ninc, nexc;
	char **files;
	size_t n;
};

static bool any(struct tb_glob **g, size_t n, const char *rel)
{
	for (size_t i = 0; i < n; i++)
		if (tb_glob_match(g[i], rel))
			return true;
	return false;
}

/* A directory is entered when some include could match below it and no exclude takes all
 * of its contents (probed with a name no real pattern targets). */
static bool descend(const char *rel, void *arg)
{
	struct state *s = arg;
	char *probe;
	bool may = false, gone;
	for (size_t i = 0; i < s->ninc && !may; i++)
		may = tb_glob_may_descend(s->inc[i], rel);
	if (!may)
		return false;
	probe = xasprintf("%s/\x01", rel);
	gone = any(s->exc, s->nexc, probe);
	free(probe);
	return !gone;
}

static int add(const char *abs, const char *rel, void *arg)
{
	struct state *s = arg;
	if (!any(s->inc, s->ninc, rel) || any(s->exc, s->nexc, rel))
		return 0;
	s->files = xrealloc(s->files, (s->n + 1) * sizeof *s->files);
	s->files[s->n++] = xstrdup(abs);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Images, PDFs and audio are read only when an include names their extension or name. */
static bool asked_for(const char *abs, const char **inc, size_t ninc)
{
	char ext[32], *stem;
	const char *base = tb_basename(abs);
	bool hit = false;
	tb_extname(abs, ext, sizeof ext);
	stem = xasprintf("%.*s", (int)(strlen(base) - strlen(ext)), base);
	for (size_t i = 0; i < ninc && !hit; i++) {
		char *low = xstrdup(inc[i]);
		for (char *p = low; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p + 32);
		hit = (*ext && strstr(low, ext)) || strstr(inc[i], stem);
		free(low);
	}
	free(stem);
	return hit;
}

/* gemini-cli's workspace check on each match (validatePathAccess): a resolved path inside
 * the workspace with a .git, .env, node_modules or gha-creds-*.json segment is refused, also
 * when useDefaultExcludes is false. */
static bool blocked(struct tb_call *c, const char *abs)
{
	char *real = tb_real_or_same(abs), *rel = tb_relative(c->workdir, real);
	bool out = strcmp(rel, "..") != 0 && strncmp(rel, "../", 3) != 0 && tb_blocked_segment(rel);
	free(rel);
	free(real);
	return out;
}

static struct tb_glob *compile_rel(struct tb_call *c, const char *p)
{
	char *norm = xstrdup(p), *full, *esc = NULL, *why = NULL;
	const char *use;
	struct stat st;
	struct tb_glob *g;
	size_t wl = strlen(c->workdir);
	for (char *q = norm; *q; q++)
		if (*q == '\\')
			*q = '/';
	use = norm;
	if (!strncmp(use, c->workdir, wl) && use[wl] == '/')
		use += wl + 1;
	full = tb_resolve(c->workdir, use);
	if (stat(full, &st) == 0 && S_ISREG(st.st_mode))
		use = esc = tb_glob_escape(use);
	g = tb_glob_compile(use, true, &why);
	free(why);
	free(esc);
	free(full);
	free(norm);
	return g;
}

/* Long: gemini-cli's read_many_files execute() in its order (patterns, excludes, walk, each
 * file read, the answer), each message at byte parity. */
static int run(struct tb_call *c)
{
	size_t ninc, nexc, nparts = 0;
	bool joined = true;	/* the text goes on from a text part (not an inline one) */
	const char **inc = tb_strs(c, "include", &ninc), **exc = tb_strs(c, "exclude", &nexc);
	struct state s = {0};
	struct tb_walk w = {0};

	s.inc = xmalloc(ninc * sizeof *s.inc);
	s.exc = xmalloc((nexc + 32) * sizeof *s.exc);
	for (size_t i = 0; i < ninc; i++) {
		struct tb_glob *g = compile_rel(c, inc[i]);
		if (g)
			s.inc[s.ninc++] = g;
	}
	if (tb_bool(c, "useDefaultExcludes", true))
		for (size_t i = 0; default_excludes[i]; i++) {
			char *why = NULL;
			struct tb_glob *g = tb_glob_compile(default_excludes[i], true, &why);
			free(why);
			if (g)
				s.exc[s.nexc++] = g;
		}
	for (size_t i = 0; i < nexc; i++) {
		char *why = NULL;
		struct tb_glob *g = tb_glob_compile(exc[i], true, &why);
		free(why);
		if (g)
			s.exc[s.nexc++] = g;
	}
	w.root = c->workdir;
	w.descend = descend;
	w.fn = add;
	w.arg = &s;
	tb_walk(&w);
	{
		struct tb_ignore *ig = tb_ignore_open(c->workdir, tb_filtering(c, "respect_git_ignore"),
						      tb_filtering(c, "respect_gemini_ignore"));
		size_t kept = 0;
		for (size_t i = 0; i < s.n; i++) {
			char *rel = tb_relative(c->workdir, s.files[i]);
			if (tb_ignore_match(ig, rel, false) || blocked(c, s.files[i]))
				free(s.files[i]);	/* skipped: ignored, or not in the workspace */
			else
				s.files[kept++] = s.files[i];
			free(rel);
		}
		s.n = kept;
		tb_ignore_close(ig);
	}
	tb_sort(s.files, s.n, sizeof *s.files, cmp_str);
	for (size_t i = 0; i < s.n; i++) {
		struct tb_read r;
		struct tb_call sub = {c->workdir, c->params, {0}, {0}, c->inline_media, NULL};
		if (tb_file_type(s.files[i]) == TB_MEDIA && !asked_for(s.files[i], inc, ninc))
			continue;	/* skipped: not explicitly requested */
		if (tb_read_file(&sub, s.files[i], 0, 0, &r) < 0) {
			buf_free(&sub.err);	/* skipped: read error (not shown to the model) */
			buf_free(&r.text);
			continue;
		}
		if (r.mime) {	/* a part of its own, without the separator */
			tb_inline_part(c, s.files[i], r.mime, r.text.data, r.text.len);
			nparts++;
			joined = false;
			buf_free(&r.text);
			continue;
		}
		if (nparts++ && joined)
			buf_puts(&c->out, "\n");
		joined = true;
		buf_printf(&c->out, "--- %s ---\n\n%s", s.files[i],
			  r.truncated ? "[WARNING: This file was truncated. To view the full "
					"content, use the 'read_file' tool on this specific file.]\n\n"
				      : "");
		buf_append(&c->out, r.text.data, r.text.len);
		buf_puts(&c->out, "\n\n");
		buf_free(&r.text);
		buf_free(&sub.err);
	}
	if (nparts)	/* after an inline part the parts' join gives the first newline */
		buf_puts(&c->out, joined ? "\n\n--- End of content ---" : "\n--- End of content ---");
	else
		buf_puts(&c->out, "No files matching the criteria were found or all were skipped.");
	for (size_t i = 0; i < s.n; i++)
		free(s.files[i]);
	for (size_t i = 0; i < s.ninc; i++)
		tb_glob_free(s.inc[i]);
	for (size_t i = 0; i < s.nexc; i++)
		tb_glob_free(s.exc[i]);
	free(s.files);
	free(s.inc);
	free(s.exc);
	free(inc);
	free(exc);
	return 0;
}

const struct tb_tool tb_tool_read_many_files = {"read_many_files", params, run};
