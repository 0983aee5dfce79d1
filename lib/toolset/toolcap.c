/* toolcap.c — tool results fit for the model (see toolcap.h). */
#include "toolcap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "utf8.h"
#include "xalloc.h"

/* gemini-cli's formatTruncatedToolOutput: 20 % of the threshold from the start, the rest
 * from the end. */
#define TOOLCAP_HEAD (TOOLCAP_MAX / 5)
#define TOOLCAP_TAIL (TOOLCAP_MAX - TOOLCAP_HEAD)
/* A call id longer than this is cut in the file name. */
#define TOOLCAP_ID_MAX 64

char *toolcap_utf8(const char *raw, size_t n, size_t *len)
{
	char *out = xmalloc(utf8_repair_room(raw, n) + 1);

	*len = utf8_repair(raw, n, out);
	out[*len] = '\0';
	return out;
}

void toolcap_thousands(unsigned long long n, char *out, size_t size)
{
	char digits[32];
	int k = snprintf(digits, sizeof digits, "%llu", n);
	size_t o = 0;

	for (int i = 0; i < k && o + 1 < size; i++) {
		if (i > 0 && (k - i) % 3 == 0 && o + 2 < size)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = '\0';
}

/* sanitizeFilenamePart: anything but [A-Za-z0-9_-] becomes `_`. */
static void sanitize(struct buf *b, const char *s, size_t max, bool lower)
{
	for (size_t i = 0; s[i] && i < max; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '-';
		if (ok && lower && c >= 'A' && c <= 'Z')
			c = (char)(c + 32);
		buf_append(b, ok ? &c : "_", 1);
	}
}

/* The file for the whole text, written in the sandbox; NULL with *why when it cannot be. */
static char *save(const struct tool_ctx *ctx, const char *tool, const char *text, size_t len,
		  char **why)
{
	struct buf dir = {0}, name = {0};
	unsigned char rnd[8];
	char *file, *argv[] = {"sh", "-c", "mkdir -p -- \"$1\" && cat > \"$2\"", "sh", NULL, NULL, NULL};
	struct capture_req rq = {.argv = argv, .in = text, .in_len = len, .in_fd = -1,
				 .timeout_ns = ctx->timeout_ns, .cancel_fd = ctx->cancel_fd};
	struct capture c;
	struct sbx_err e;

	buf_puts(&dir, TOOLCAP_DIR "/session-");
	sanitize(&dir, ctx->sandbox, TOOLCAP_ID_MAX, false);
	buf_append(&dir, "", 0);
	sanitize(&name, tool, TOOLCAP_ID_MAX, true);
	buf_puts(&name, "_");
	if (ctx->call_id && *ctx->call_id) {
		sanitize(&name, ctx->call_id, TOOLCAP_ID_MAX, true);
	} else if (getentropy(rnd, sizeof rnd) == 0) {
		for (size_t i = 0; i < sizeof rnd; i++)
			buf_printf(&name, "%02x", rnd[i]);
	}
	buf_append(&name, "", 0);
	file = xasprintf("%s/%s.txt", dir.data, name.data);
	argv[4] = dir.data;
	argv[5] = file;
	if (capture_run(ctx->b, ctx->sandbox, &rq, &c, &e) < 0) {
		*why = xstrdup(e.msg);
	} else {
		if (c.res.exit_code != 0 || c.res.timed_out || c.res.canceled)
			*why = xasprintf("%s", *c.err ? c.err : "cannot write the file");
		capture_free(&c);
	}
	buf_free(&dir);
	buf_free(&name);
	if (*why) {
		size_t n = strlen(*why);
		while (n > 0 && (*why)[n - 1] == '\n')
			(*why)[--n] = '\0';
		free(file);
		return NULL;
	}
	return file;
}

char *toolcap_cut(char *text, size_t *len, const char *where)
{
	size_t units = utf8_utf16_len(text, *len), h, t;
	char a[32], b[32], omitted[32];
	bool hsplit, tsplit;
	struct buf out = {0};

	if (units <= TOOLCAP_MAX)
		return text;
	h = utf8_utf16_prefix(text, *len, TOOLCAP_HEAD, &hsplit);
	t = utf8_utf16_suffix(text, *len, TOOLCAP_TAIL, &tsplit);
	toolcap_thousands(TOOLCAP_HEAD, a, sizeof a);
	toolcap_thousands(TOOLCAP_TAIL, b, sizeof b);
	toolcap_thousands(units - TOOLCAP_MAX, omitted, sizeof omitted);
	buf_printf(&out, "Output too large. Showing first %s and last %s characters. For full output "
		   "see: %s\n", a, b, where);
	buf_append(&out, text, h);
	/* half of a surrogate pair is all JavaScript keeps there; JSON carries it as U+FFFD */
	if (hsplit)
		buf_puts(&out, "\xef\xbf\xbd");
	buf_printf(&out, "\n\n... [%s characters omitted] ...\n\n", omitted);
	if (tsplit)
		buf_puts(&out, "\xef\xbf\xbd");
	buf_append(&out, text + t, *len - t);
	free(text);
	*len = out.len;
	return buf_steal(&out);
}

char *toolcap_apply(const struct tool_ctx *ctx, const char *tool, char *text, size_t *len)
{
	char *file, *why = NULL, *where, *out;

	if (utf8_utf16_len(text, *len) <= TOOLCAP_MAX)
		return text;
	file = save(ctx, tool, text, *len, &why);
	where = file ? xstrdup(file) : xasprintf("(not saved: %s)", why);
	out = toolcap_cut(text, len, where);
	free(where);
	free(file);
	free(why);
	return out;
}
