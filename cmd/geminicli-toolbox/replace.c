/* replace.c — `replace`: replaces old_string with new_string in one file: an exact literal
 * match first, then gemini-cli's flexible match (lines compared with surrounding whitespace
 * trimmed, the replacement re-indented); one occurrence unless allow_multiple. An empty
 * old_string creates a new file. CRLF files stay CRLF. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

static const struct tb_param params[] = {
	{"file_path", TB_STRING, true, -1, false},
	{"instruction", TB_STRING, true, -1, false},
	{"old_string", TB_STRING, true, -1, false},
	{"new_string", TB_STRING, true, -1, false},
	{"allow_multiple", TB_BOOL, false, -1, false},
	{NULL, TB_STRING, false, -1, false},
};

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0, len = strlen(needle);
	for (const char *p = hay; (p = strstr(p, needle)); p += len)
		n++;
	return n;
}

static char *replace_all(const char *hay, const char *old, const char *new_text)
{
	struct tbuf b = {0};
	size_t len = strlen(old);
	const char *p = hay, *q;
	while ((q = strstr(p, old))) {
		tb_put(&b, p, (size_t)(q - p));
		tb_puts(&b, new_text);
		p = q + len;
	}
	tb_puts(&b, p);
	return b.data;
}

static char *trim_dup(const char *s, size_t n)
{
	while (n && strchr(" \t\r\n\v\f", *s)) {
		s++;
		n--;
	}
	while (n && strchr(" \t\r\n\v\f", s[n - 1]))
		n--;
	return tb_xasprintf("%.*s", (int)n, s);
}

/* Lines of s each keeping its `\n` (the /.*(?:\n|$)/g split minus the final empty match). */
static size_t source_lines(const char *s, char ***out)
{
	size_t n = 0, len = strlen(s), start = 0;
	char **v = tb_xmalloc((len + 2) * sizeof *v);
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\n') {
			v[n++] = tb_xasprintf("%.*s", (int)(i + 1 - start), s + start);
			start = i + 1;
		}
	if (start < len)
		v[n++] = tb_xstrdup(s + start);
	*out = v;
	return n;
}

static char **split_lines(const char *s, size_t *n)
{
	size_t len = strlen(s), start = 0, k = 0;
	char **v = tb_xmalloc((len + 2) * sizeof *v);
	for (size_t i = 0; i <= len; i++)
		if (i == len || s[i] == '\n') {
			v[k++] = tb_xasprintf("%.*s", (int)(i - start), s + start);
			start = i + 1;
		}
	*n = k;
	return v;
}

static size_t indent_len(const char *s)
{
	size_t i = 0;
	while (s[i] == ' ' || s[i] == '\t')
		i++;
	return i;
}

/* gemini-cli's calculateFlexibleReplacement; returns the occurrences, *out the new text. */
static size_t flexible(const char *code, const char *old, const char *new_text, char **out)
{
	char **src, **search, **repl;
	size_t nsrc = source_lines(code, &src), nsearch, nrepl, occ = 0;
	search = split_lines(old, &nsearch);
	repl = split_lines(new_text, &nrepl);
	for (size_t k = 0; k < nsearch; k++) {
		char *t = trim_dup(search[k], strlen(search[k]));
		free(search[k]);
		search[k] = t;
	}
	for (size_t i = 0; nsrc >= nsearch && i <= nsrc - nsearch; i++) {
		bool hit = true;
		for (size_t k = 0; k < nsearch && hit; k++) {
			char *t = trim_dup(src[i + k], strlen(src[i + k]));
			hit = strcmp(t, search[k]) == 0;
			free(t);
		}
		if (!hit)
			continue;
		occ++;
		{
			struct tbuf b = {0};
			size_t ti = indent_len(src[i]), ri = indent_len(repl[0]);
			const char *last = src[i + nsearch - 1];
			for (size_t k = 0; k < nrepl; k++) {
				const char *l = repl[k];
				char *t = trim_dup(l, strlen(l));
				if (k)
					tb_puts(&b, "\n");
				if (*t) {
					tb_put(&b, src[i], ti);
					if (strncmp(l, repl[0], ri) == 0)
						tb_puts(&b, l + ri);
					else
						tb_puts(&b, l + indent_len(l));
				}
				free(t);
			}
			if (!b.data)
				tb_put(&b, "", 0);
			if (*new_text && last[strlen(last) - 1] == '\n' &&
			    (b.len == 0 || b.data[b.len - 1] != '\n'))
				tb_puts(&b, "\n");
			for (size_t k = 0; k < nsearch; k++)
				free(src[i + k]);
			src[i] = b.data;
			memmove(src + i + 1, src + i + nsearch, (nsrc - i - nsearch) * sizeof *src);
			nsrc -= nsearch - 1;
		}
	}
	if (occ) {
		struct tbuf b = {0};
		for (size_t i = 0; i < nsrc; i++)
			tb_puts(&b, src[i]);
		if (!b.data)
			tb_put(&b, "", 0);
		*out = b.data;
	}
	for (size_t i = 0; i < nsrc; i++)
		free(src[i]);
	for (size_t k = 0; k < nsearch; k++)
		free(search[k]);
	for (size_t k = 0; k < nrepl; k++)
		free(repl[k]);
	free(src);
	free(search);
	free(repl);
	return occ;
}

/* The trailing-newline state of the original is kept. */
static char *restore_newline(const char *orig, char *mod)
{
	size_t ol = strlen(orig), ml = strlen(mod);
	bool had = ol && orig[ol - 1] == '\n', has = ml && mod[ml - 1] == '\n';
	if (had && !has) {
		char *r = tb_xasprintf("%s\n", mod);
		free(mod);
		return r;
	}
	if (!had && has)
		mod[ml - 1] = '\0';
	return mod;
}

static int run(struct tb_call *c)
{
	const char *fp = tb_str(c, "file_path");
	bool multi = tb_bool(c, "allow_multiple", false);
	char *abs = NULL, *raw = NULL, *text = NULL, *code = NULL, *old = NULL, *new_text = NULL;
	char *mod = NULL, *final = NULL, *snip = NULL;
	size_t rawlen, n, occ;
	struct stat st;
	int rc = -1;

	if (!(abs = tb_tool_path(c, fp)))
		return -1;
	old = tb_to_lf(tb_str(c, "old_string"), NULL);
	new_text = tb_to_lf(tb_str(c, "new_string"), NULL);
	if (stat(abs, &st) < 0) {
		if (*old) {
			tb_fail(c, "File not found: %s", abs);
			goto out;
		}
		if (tb_write_file(c, abs, new_text, strlen(new_text)) < 0)
			goto out;
		tb_printf(&c->out, "Created new file: %s with provided content. Here is the updated code:\n%s",
			  abs, new_text);
		rc = 0;
		goto out;
	}
	if (S_ISDIR(st.st_mode) || !(raw = tb_read_all(abs, TB_MAX_FILE_BYTES, &rawlen))) {
		tb_fail(c, "Failed to read content of existing file: %s", abs);
		goto out;
	}
	if (!*old) {
		tb_fail(c, "File already exists, cannot create: %s", abs);
		goto out;
	}
	text = tb_decode_text(raw, rawlen, &n);
	code = tb_to_lf(text, NULL);
	occ = count(code, old);
	if (occ > 0 && (occ == 1 || multi))
		mod = restore_newline(code, replace_all(code, old, new_text));
	else if (occ == 0 && (occ = flexible(code, old, new_text, &mod)) > 0)
		mod = restore_newline(code, mod);
	if (occ == 0) {
		tb_fail(c, "Could not find an exact match for 'old_string' in '%s'. If previous edits "
			   "modified the file or you are modifying lines outside your recent read "
			   "window, please use ReadFile to inspect the target lines before retrying "
			   "with an exact 'old_string'.", fp);
		goto out;
	}
	if (!multi && occ != 1) {
		tb_fail(c, "Failed to edit, Expected 1 occurrence but found %zu for old_string in "
			   "file: %s. If you intended to replace multiple occurrences, set "
			   "'allow_multiple' to true.", occ, fp);
		goto out;
	}
	if (strcmp(old, new_text) == 0) {
		tb_fail(c, "No changes to apply. The old_string and new_string are identical in file: %s", fp);
		goto out;
	}
	final = strstr(text, "\r\n") ? tb_to_crlf(mod) : tb_xstrdup(mod);
	if (tb_write_file(c, abs, final, strlen(final)) < 0)
		goto out;
	snip = tb_snippet(code, final);
	tb_printf(&c->out, "Successfully modified file: %s (%zu replacements). Here is the updated code:\n%s",
		  abs, occ, snip);
	rc = 0;
out:
	free(snip);
	free(final);
	free(mod);
	free(new_text);
	free(old);
	free(code);
	free(text);
	free(raw);
	free(abs);
	return rc;
}

const struct tb_tool tb_tool_replace = {"replace", params, run};
