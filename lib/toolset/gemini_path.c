/* gemini_path.c — gemini-cli's validatePath (see gemini_path.h). */
#include "gemini_path.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

/* Strings that start a path or a component of one only when a log line was taken for a
 * path. */
static const char *const log_markers[] = {
	"AssertionError:", "FAIL ", "\u2713 ", "\u00d7 ", "TestingLibraryElementError:",
};

const char *gemini_path_invalid(const char *p, char *buf, size_t size)
{
	size_t len = strlen(p);

	if (strpbrk(p, "\n\r\t"))
		return "Path contains invalid characters (newlines or control characters).";
	for (size_t i = 0; i < sizeof log_markers / sizeof log_markers[0]; i++)
		for (const char *q = p; (q = strstr(q, log_markers[i])) != NULL; q++)
			if (q == p || q[-1] == '/' || q[-1] == '\\')
				return "Path appears to be a misinterpreted log fragment.";
	if ((strchr(p, '"') || strstr(p, "...")) && utf8_utf16_len(p, len) > 20)
		return "Path contains suspicious characters (double quotes or ellipses) and is too "
		       "long to be a simple filename.";
	if (utf8_utf16_len(p, len) > GEMINI_PATH_MAX_CHARS) {
		snprintf(buf, size, "Path is too long (maximum %d characters).", GEMINI_PATH_MAX_CHARS);
		return buf;
	}
	for (const char *q = p; *q;) {
		size_t n = strcspn(q, "/\\");
		if (utf8_utf16_len(q, n) > GEMINI_PATH_COMPONENT_MAX_CHARS) {
			bool split;
			size_t k = utf8_utf16_prefix(q, n, 20, &split);
			snprintf(buf, size, "Path component \"%.*s%s...\" is too long (maximum %d characters).",
				 (int)k, q, split ? "\xef\xbf\xbd" : "", GEMINI_PATH_COMPONENT_MAX_CHARS);
			return buf;
		}
		q += n;
		if (*q)
			q++;
	}
	return NULL;
}
