/* gcshell.c — gemini-cli's run_shell_command text rules (see gcshell.h). */
#include "gcshell.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* gemini-cli's stripShellWrapper pattern, in POSIX extended syntax, case-insensitive. */
static const char wrapper_re[] =
	"^[[:space:]]*(([^[:space:]]+/)?(sh|bash|zsh)[[:space:]]+-c|cmd\\.exe[[:space:]]+/c|"
	"powershell(\\.exe)?[[:space:]]+(-NoProfile[[:space:]]+)?-Command|"
	"pwsh(\\.exe)?[[:space:]]+(-NoProfile[[:space:]]+)?-Command)[[:space:]]+";

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static char *trimmed(const char *s, size_t len)
{
	while (len > 0 && is_space(*s))
		s++, len--;
	while (len > 0 && is_space(s[len - 1]))
		len--;
	return xstrndup(s, len);
}

/* The inside of a double-quoted word as shell-quote reads it, or NULL when the text is more
 * than that one word (an unescaped quote inside). */
static char *unquote_double(const char *s, size_t len)
{
	struct buf b = {0};
	size_t i;

	for (i = 1; i + 1 < len; i++) {
		if (s[i] == '"') {
			buf_free(&b);
			return NULL;
		}
		if (s[i] == '\\' && i + 2 < len && strchr("\"\\$", s[i + 1])) {
			buf_append(&b, s + i + 1, 1);
			i++;
			continue;
		}
		buf_append(&b, s + i, 1);
	}
	buf_append(&b, "", 0);
	return buf_steal(&b);
}

char *gcshell_strip_wrapper(const char *command)
{
	regex_t re;
	regmatch_t m[1];
	char *rest, *out;
	size_t n;
	bool posix;

	if (regcomp(&re, wrapper_re, REG_EXTENDED | REG_ICASE) != 0)
		return trimmed(command, strlen(command));
	if (regexec(&re, command, 1, m, 0) != 0) {
		regfree(&re);
		return trimmed(command, strlen(command));
	}
	regfree(&re);
	/* the match ends in white space; the wrapper word before it is `-c` for POSIX shells */
	n = (size_t)m[0].rm_eo;
	while (n > 0 && is_space(command[n - 1]))
		n--;
	posix = n >= 2 && command[n - 2] == '-' && (command[n - 1] == 'c' || command[n - 1] == 'C');
	rest = trimmed(command + m[0].rm_eo, strlen(command + m[0].rm_eo));
	n = strlen(rest);
	if (n < 2 || !((rest[0] == '"' && rest[n - 1] == '"') || (rest[0] == '\'' && rest[n - 1] == '\'')))
		return rest;
	if (posix && rest[0] == '"' && (out = unquote_double(rest, n)) != NULL) {
		free(rest);
		return out;
	}
	out = xstrndup(rest + 1, n - 2);
	free(rest);
	return out;
}

bool gcshell_has_substitution(const char *c)
{
	bool in_single = false, in_double = false;
	size_t i = 0, n = strlen(c);

	while (i < n) {
		char ch = c[i];
		if (ch == '\'' && !in_double) {
			in_single = !in_single;
			i++;
			continue;
		}
		if (ch == '"' && !in_single) {
			in_double = !in_double;
			i++;
			continue;
		}
		if (in_single) {
			i++;
			continue;
		}
		if (ch == '\\' && i + 1 < n) {
			if (!in_double || strchr("$`\"\\\n", c[i + 1])) {
				i += 2;
				continue;
			}
		}
		if (ch == '$' && c[i + 1] == '(')
			return true;
		if (!in_double && (ch == '<' || ch == '>') && c[i + 1] == '(')
			return true;
		if (ch == '`')
			return true;
		i++;
	}
	return false;
}

char *gcshell_script(const char *command)
{
	struct buf b = {0};
	char *t = trimmed(command, strlen(command));
	size_t n = strlen(t);

	buf_puts(&b, "shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=$1; shift\n"
		     "(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\n");
	buf_puts(&b, t);
	if (n > 0 && t[n - 1] == '\\')
		buf_puts(&b, " ");	/* a trailing backslash must not join the next line */
	buf_puts(&b, "\n)\n__code=$?\necho $__code >\"$_bgpids_file.code\"\nexit $__code");
	free(t);
	return buf_steal(&b);
}

size_t gcshell_strip_ansi(char *s, size_t len)
{
	size_t i = 0, o = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t j;
		if (c == 0x1b && i + 1 < len && s[i + 1] == '[') {
			/* CSI: parameters and intermediates, then one final byte 0x40-0x7e */
			for (j = i + 2; j < len && ((unsigned char)s[j] < 0x40 || (unsigned char)s[j] > 0x7e); j++)
				;
			i = j < len ? j + 1 : len;
			continue;
		}
		if (c == 0x1b && i + 1 < len && s[i + 1] == ']') {
			/* OSC: up to BEL or ESC \ */
			for (j = i + 2; j < len && s[j] != '\a' && !(s[j] == 0x1b && j + 1 < len && s[j + 1] == '\\'); j++)
				;
			i = j >= len ? len : s[j] == '\a' ? j + 1 : j + 2;
			continue;
		}
		if (c == 0x1b && i + 1 < len) {
			i += 2;	/* a two-byte escape (ESC =, ESC >, ESC ( B's first half …) */
			if (i < len && (s[i - 1] == '(' || s[i - 1] == ')'))
				i++;	/* a character set designation has one more byte */
			continue;
		}
		if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] == 0x9b) {
			/* C1 CSI (U+009B) */
			for (j = i + 2; j < len && ((unsigned char)s[j] < 0x40 || (unsigned char)s[j] > 0x7e); j++)
				;
			i = j < len ? j + 1 : len;
			continue;
		}
		s[o++] = s[i++];
	}
	return o;
}

void gcshell_untrusted(struct buf *b, const char *text)
{
	static const char close_tag[] = "</untrusted_context>";
	const char *p;

	buf_puts(b, "<untrusted_context>\n");
	while ((p = strstr(text, close_tag)) != NULL) {
		buf_append(b, text, (size_t)(p - text));
		buf_puts(b, "&lt;/untrusted_context&gt;");
		text = p + strlen(close_tag);
	}
	buf_puts(b, text);
	buf_puts(b, "\n</untrusted_context>");
}
