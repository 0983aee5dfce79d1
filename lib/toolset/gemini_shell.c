/* gemini_shell.c — gemini-cli's run_shell_command text rules (see gemini_shell.h). */
#include "gemini_shell.h"

#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

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

char *gemini_shell_strip_wrapper(const char *command)
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

bool gemini_shell_has_substitution(const char *c)
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

char *gemini_shell_script(const char *command)
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

/* The code point at s[i] (valid UTF-8) and its length. */
static uint32_t cp_at(const char *s, size_t len, size_t i, size_t *n)
{
	uint32_t cp;
	*n = utf8_decode((const unsigned char *)s + i, len - i, &cp);
	return cp;
}

/* String terminator ST: ESC \ or U+009C; its length at s[i], 0 if none. */
static size_t st_at(const char *s, size_t len, size_t i)
{
	size_t n;
	if (i + 1 < len && s[i] == 0x1b && s[i + 1] == '\\')
		return 2;
	return i < len && cp_at(s, len, i, &n) == 0x9c ? n : 0;
}

static bool string_control(uint32_t c)
{
	return c == 0x18 || c == 0x1a || c == 0x1b || (c >= 0x80 && c <= 0x9f);
}

static bool is_hexdigit(char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* The length of the ansi-regex 6.6 match at s[i], 0 if none: its alternatives in order
 * (Linux palette, OSC, control strings, CSI, other escapes). */
static size_t ansi_at(const char *s, size_t len, size_t i)
{
	size_t n, j, k;
	uint32_t c = cp_at(s, len, i, &n), d;

	/* ESC ] P hhhhhhh | ESC ] R, then BEL or ST if there */
	if (c == 0x1b && i + 2 < len && s[i + 1] == ']') {
		j = 0;
		if (s[i + 2] == 'R') {
			j = i + 3;
		} else if (s[i + 2] == 'P' && i + 10 <= len) {
			for (k = i + 3; k < i + 10 && is_hexdigit(s[k]); k++)
				;
			if (k == i + 10)
				j = k;
		}
		if (j) {
			if (j < len && s[j] == 0x07)
				j++;
			else
				j += st_at(s, len, j);
			return j - i;
		}
	}
	/* OSC: ESC ] or U+009D, a payload without controls, BEL or ST */
	if ((c == 0x1b && i + 1 < len && s[i + 1] == ']') || c == 0x9d) {
		j = i + (c == 0x9d ? n : 2);
		while (j < len && (d = cp_at(s, len, j, &k)) != 0x07 && !string_control(d))
			j += k;
		if (j < len && s[j] == 0x07)
			return j + 1 - i;
		if ((k = st_at(s, len, j)))
			return j + k - i;
	}
	/* DCS, SOS, PM, APC and titles: ESC P X ^ _ k or their C1 forms, a payload, ST */
	if ((c == 0x1b && i + 1 < len && strchr("PX^_k", s[i + 1]) && s[i + 1]) ||
	    c == 0x90 || c == 0x98 || c == 0x9e || c == 0x9f) {
		j = i + (c == 0x1b ? 2 : n);
		while (j < len && !string_control(cp_at(s, len, j, &k)))
			j += k;
		if ((k = st_at(s, len, j)))
			return j + k - i;
	}
	/* CSI: ESC [ or U+009B, parameters 0x30-0x3f, intermediates 0x20-0x2f, a final 0x40-0x7e */
	if ((c == 0x1b && i + 1 < len && s[i + 1] == '[') || c == 0x9b) {
		j = i + (c == 0x9b ? n : 2);
		while (j < len && s[j] >= 0x30 && s[j] <= 0x3f)
			j++;
		while (j < len && s[j] >= 0x20 && s[j] <= 0x2f)
			j++;
		if (j < len && s[j] >= 0x40 && s[j] <= 0x7e)
			return j + 1 - i;
	}
	/* ESC, intermediates, a final 0x30-0x7e; or one of the two-byte escapes */
	if (c == 0x1b && i + 1 < len) {
		j = i + 1;
		while (j < len && s[j] >= 0x20 && s[j] <= 0x2f)
			j++;
		if (j > i + 1 && j < len && s[j] >= 0x30 && s[j] <= 0x7e)
			return j + 1 - i;
		if (s[i + 1] && strchr("0123456789ABCDEFGHIJKLMNOPRSTZcfghijklmnoqrstuy=><~|}", s[i + 1]))
			return 2;
	}
	return 0;
}

size_t gemini_shell_strip_ansi(char *s, size_t len)
{
	size_t i = 0, o = 0, m;

	while (i < len) {
		if ((unsigned char)s[i] == 0x1b || (unsigned char)s[i] == 0xc2) {
			if ((m = ansi_at(s, len, i)) > 0) {
				i += m;
				continue;
			}
		}
		s[o++] = s[i++];
	}
	return o;
}

/* JavaScript's white space and line terminators (String#trim). */
static bool js_space(uint32_t c)
{
	return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
	       c == 0x205f || c == 0x3000 || c == 0xfeff;
}

size_t gemini_shell_trim(const char *s, size_t len, size_t *start)
{
	size_t i = 0, end = len, n;

	while (i < len && js_space(cp_at(s, len, i, &n)))
		i += n;
	while (end > i) {
		size_t b = end - 1;
		while (b > i && ((unsigned char)s[b] & 0xc0) == 0x80)
			b--;
		if (!js_space(cp_at(s, len, b, &n)))
			break;
		end = b;
	}
	*start = i;
	return end;
}

void gemini_shell_untrusted(struct buf *b, const char *text, size_t len)
{
	static const char close_tag[] = "</untrusted_context>";
	const char *p, *end = text + len;

	buf_puts(b, "<untrusted_context>\n");
	while ((p = memmem(text, (size_t)(end - text), close_tag, sizeof close_tag - 1)) != NULL) {
		buf_append(b, text, (size_t)(p - text));
		buf_puts(b, "&lt;/untrusted_context&gt;");
		text = p + sizeof close_tag - 1;
	}
	buf_append(b, text, (size_t)(end - text));
	buf_puts(b, "\n</untrusted_context>");
}
