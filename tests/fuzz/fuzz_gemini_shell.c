/* fuzz_gemini_shell.c — gemini-cli's run_shell_command rules on a hostile model's command text:
 * wrapper stripping, substitution detection, the wrapper script, ANSI stripping and the
 * <untrusted_context> wrapper. Properties checked: stripping never grows the text, the
 * script keeps the command on line 4, ANSI stripping never grows, trimming stays inside
 * the text, and the wrapped result holds exactly one closing tag, at its end. */
#include <stdlib.h>
#include <string.h>

#include "gemini_shell.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *cmd, *stripped, *script, *p, *ansi;
	struct buf b = {0};
	size_t n, lines = 0;

	if (size > 8192)
		return 0;
	cmd = malloc(size + 1);
	memcpy(cmd, data, size);
	cmd[size] = '\0';
	stripped = gemini_shell_strip_wrapper(cmd);
	if (strlen(stripped) > strlen(cmd))
		abort();
	(void)gemini_shell_has_substitution(stripped);
	script = gemini_shell_script(stripped);
	for (p = script; (p = strchr(p, '\n')) != NULL && lines < 3; p++)
		lines++;
	if (lines != 3 || strncmp(script, "shopt -u ", 9) != 0)
		abort();
	ansi = malloc(size + 1);
	memcpy(ansi, data, size);
	n = gemini_shell_strip_ansi(ansi, size);
	if (n > size)
		abort();
	ansi[n] = '\0';
	{
		size_t st, end = gemini_shell_trim(ansi, n, &st);
		if (st > end || end > n)
			abort();
	}
	gemini_shell_untrusted(&b, cmd, strlen(cmd));
	buf_append(&b, "", 0);
	p = strstr(b.data, "</untrusted_context>");
	if (p == NULL || strcmp(p, "</untrusted_context>") != 0 || p[-1] != '\n')
		abort();
	buf_free(&b);
	free(ansi);
	free(script);
	free(stripped);
	free(cmd);
	return 0;
}
