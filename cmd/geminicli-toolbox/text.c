/* text.c — reading files the way gemini-cli does: type detection (extension lists and the
 * isbinaryfile sniff), BOM decoding, the 2000-line/2000-character window, and the ICU-like
 * order JavaScript's localeCompare gives names. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb.h"
#include "utf8.h"

/* isbinaryfile looks at the first 512 bytes (plus 3 so a UTF-8 sequence is not cut). */
#define SNIFF_BYTES 512
#define SNIFF_RESERVE 3

/* gemini-cli's BINARY_EXTENSIONS (ignorePatterns.js). */
static const char *const binary_exts[] = {
	".7z", ".a", ".bin", ".bz2", ".class", ".dat", ".dll", ".doc", ".docx", ".dylib",
	".exe", ".gz", ".jar", ".lib", ".o", ".obj", ".odp", ".ods", ".odt", ".pak", ".ppt",
	".pptx", ".pyc", ".pyo", ".rar", ".rpa", ".so", ".tar", ".wasm", ".war", ".xls", ".xlsx",
	".zip", NULL,
};
static bool in_list(const char *const *list, const char *ext)
{
	for (; *list; list++)
		if (strcmp(*list, ext) == 0)
			return true;
	return false;
}

/* The isbinaryfile package's decision on a sample (its protobuf sniff left out). */
static bool sniff_binary(const unsigned char *b, size_t got)
{
	size_t total, scan, suspicious = 0;
	if (got == 0)
		return false;
	total = got;
	scan = total < SNIFF_BYTES ? total : SNIFF_BYTES;
	if (got >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf)
		return false;
	if (got >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0xfe && b[3] == 0xff)
		return false;
	if (got >= 4 && b[0] == 0xff && b[1] == 0xfe && b[2] == 0 && b[3] == 0)
		return false;
	if (got >= 4 && b[0] == 0x84 && b[1] == 0x31 && b[2] == 0x95 && b[3] == 0x33)
		return false;
	if (total >= 5 && memcmp(b, "%PDF-", 5) == 0)
		return true;
	if (got >= 2 && ((b[0] == 0xfe && b[1] == 0xff) || (b[0] == 0xff && b[1] == 0xfe)))
		return false;
	for (size_t i = 0; i < scan; i++) {
		if (b[i] == 0)
			return true;
		if ((b[i] < 7 || b[i] > 14) && (b[i] < 32 || b[i] > 127)) {
			if (b[i] >= 0xc0 && b[i] <= 0xdf && i + 1 < total) {
				i++;
				if (b[i] >= 0x80 && b[i] <= 0xbf)
					continue;
			} else if (b[i] >= 0xe0 && b[i] <= 0xef && i + 2 < total) {
				i++;
				if (b[i] >= 0x80 && b[i] <= 0xbf && b[i + 1] >= 0x80 && b[i + 1] <= 0xbf) {
					i++;
					continue;
				}
			} else if (b[i] >= 0xf0 && b[i] <= 0xf7 && i + 3 < total) {
				i++;
				if (b[i] >= 0x80 && b[i] <= 0xbf && b[i + 1] >= 0x80 &&
				    b[i + 1] <= 0xbf && b[i + 2] >= 0x80 && b[i + 2] <= 0xbf) {
					i += 2;
					continue;
				}
			}
			suspicious++;
			if (i >= 32 && suspicious * 100 / scan > 10)
				return true;
		}
	}
	return suspicious * 100 / scan > 10;
}

/* Reads open with O_NONBLOCK and check for a regular file first: a FIFO, a terminal or a
 * blocking pseudo-file (/proc/kmsg) a hostile model points a tool at must fail at once, not
 * hang the tool until its timeout. */
#define TB_READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

static bool file_is_binary(const char *path)
{
	unsigned char b[SNIFF_BYTES + SNIFF_RESERVE];
	struct stat st;
	ssize_t got;
	int fd = open(path, TB_READ_FLAGS);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return false;
	}
	got = read(fd, b, sizeof b);
	close(fd);
	return got > 0 && sniff_binary(b, (size_t)got);
}

enum tb_ftype tb_file_type(const char *path)
{
	char ext[32];
	const char *mime;
	tb_extname(path, ext, sizeof ext);
	if (!strcmp(ext, ".ts") || !strcmp(ext, ".mts") || !strcmp(ext, ".cts"))
		return TB_TEXT;
	if (!strcmp(ext, ".svg"))
		return TB_SVG;
	if ((mime = tb_media_mime(path)) != NULL) {
		if (!strncmp(mime, "image/", 6) || !strcmp(mime, "application/pdf"))
			return TB_MEDIA;
		/* audio and video only when the content agrees (gemini-cli #16888) */
		if (!file_is_binary(path))
			return TB_TEXT;
		return !strncmp(mime, "audio/", 6) ? TB_MEDIA : TB_VIDEO;
	}
	if (tb_audio_mime(path))
		return file_is_binary(path) ? TB_MEDIA : TB_TEXT;
	if (in_list(binary_exts, ext))
		return TB_BINARY;
	return file_is_binary(path) ? TB_BINARY : TB_TEXT;
}

char *tb_read_all(const char *path, size_t max, size_t *len)
{
	struct buf b = {0};
	char chunk[65536];
	struct stat st;
	int fd = open(path, TB_READ_FLAGS);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int saved = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		close(fd);
		errno = saved;
		return NULL;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0) {
			int saved = errno;
			if (saved == EINTR)
				continue;
			close(fd);
			buf_free(&b);
			errno = saved;
			return NULL;
		}
		if (n == 0)
			break;
		if (b.len + (size_t)n > max) {
			close(fd);
			buf_free(&b);
			errno = EFBIG;
			return NULL;
		}
		buf_append(&b, chunk, (size_t)n);
	}
	close(fd);
	if (!b.data)
		buf_append(&b, "", 0);
	*len = b.len;
	return b.data;
}

static void put_cp(struct buf *b, uint32_t cp)
{
	char s[4];
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		s[0] = (char)cp;
		buf_append(b, s, 1);
	} else if (cp < 0x800) {
		s[0] = (char)(0xc0 | cp >> 6);
		s[1] = (char)(0x80 | (cp & 0x3f));
		buf_append(b, s, 2);
	} else if (cp < 0x10000) {
		s[0] = (char)(0xe0 | cp >> 12);
		s[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		buf_append(b, s, 3);
	} else {
		s[0] = (char)(0xf0 | cp >> 18);
		s[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		s[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		s[3] = (char)(0x80 | (cp & 0x3f));
		buf_append(b, s, 4);
	}
}

static void decode16(struct buf *b, const unsigned char *p, size_t n, bool le)
{
	for (size_t i = 0; i + 1 < n; i += 2) {
		uint32_t u = le ? (uint32_t)(p[i] | p[i + 1] << 8) : (uint32_t)(p[i] << 8 | p[i + 1]);
		if (u >= 0xd800 && u <= 0xdbff && i + 3 < n) {
			uint32_t v = le ? (uint32_t)(p[i + 2] | p[i + 3] << 8)
					: (uint32_t)(p[i + 2] << 8 | p[i + 3]);
			if (v >= 0xdc00 && v <= 0xdfff) {
				put_cp(b, 0x10000 + ((u - 0xd800) << 10) + (v - 0xdc00));
				i += 2;
				continue;
			}
		}
		put_cp(b, u);
	}
}

static void decode32(struct buf *b, const unsigned char *p, size_t n, bool le)
{
	for (size_t i = 0; i + 3 < n; i += 4)
		put_cp(b, le ? (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
				       (uint32_t)p[i + 3] << 24
			     : (uint32_t)p[i + 3] | (uint32_t)p[i + 2] << 8 |
				       (uint32_t)p[i + 1] << 16 | (uint32_t)p[i] << 24);
}

char *tb_decode_text(const char *buf, size_t len, size_t *outlen)
{
	const unsigned char *p = (const unsigned char *)buf;
	struct buf b = {0};
	if (len >= 4 && p[0] == 0xff && p[1] == 0xfe && p[2] == 0 && p[3] == 0)
		decode32(&b, p + 4, len - 4, true);
	else if (len >= 4 && p[0] == 0 && p[1] == 0 && p[2] == 0xfe && p[3] == 0xff)
		decode32(&b, p + 4, len - 4, false);
	else if (len >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
		return tb_utf8_text(buf + 3, len - 3, outlen);
	else if (len >= 2 && p[0] == 0xff && p[1] == 0xfe)
		decode16(&b, p + 2, len - 2, true);
	else if (len >= 2 && p[0] == 0xfe && p[1] == 0xff)
		decode16(&b, p + 2, len - 2, false);
	else
		return tb_utf8_text(buf, len, outlen);
	if (!b.data)
		buf_append(&b, "", 0);
	*outlen = b.len;
	return b.data;
}

char *tb_utf8_text(const char *buf, size_t len, size_t *outlen)
{
	char *out = xmalloc(utf8_repair_room(buf, len) + 1);

	*outlen = utf8_repair(buf, len, out);
	out[*outlen] = '\0';
	return out;
}

size_t tb_utf8_len(const char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			k++;
	return k;
}

size_t tb_utf8_prefix(const char *s, size_t n, size_t chars)
{
	size_t k = 0, i;
	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && k++ == chars)
			return i;
	return n;
}

/* Long: gemini-cli's readFile steps in its order (stat, directory, size, binary and media
 * types, SVG, the line window), each early answer one of its messages at byte parity. */
/* An image, PDF, audio or video file as gemini-cli sends it: the whole file (the window is
 * ignored) with its MIME type; audio of a type gemini-cli does not take is an error. */
static int read_media(struct tb_call *c, const char *abs, struct tb_read *r)
{
	const char *mime = tb_media_mime(abs);
	size_t len;
	char *raw;
	if (mime && !strncmp(mime, "audio/", 6))
		mime = tb_audio_mime(abs);
	else if (!mime)
		mime = tb_audio_mime(abs);
	if (!mime)
		return tb_fail(c, "Unsupported audio file format for %s. Supported audio formats are "
			       "MP3, WAV, AIFF, AAC, OGG, and FLAC.", abs);
	if (!(raw = tb_read_all(abs, TB_MAX_FILE_BYTES, &len)))
		return tb_fail(c, "Error reading file %s: %s", abs, strerror(errno));
	buf_append(&r->text, raw, len);
	r->mime = mime;
	free(raw);
	return 0;
}

int tb_read_file(struct tb_call *c, const char *abs, int64_t start, int64_t end, struct tb_read *r)
{
	struct stat st;
	char *raw = NULL, *text = NULL, *rel = tb_relative(c->workdir, abs);
	size_t rawlen, len, nlines = 0, lo, hi;
	const char **lines = NULL;
	size_t *lens = NULL;
	int rc = -1;

	memset(r, 0, sizeof *r);
	if (stat(abs, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			tb_fail(c, "File not found: %s", abs);
		else
			tb_fail(c, "Error reading file %s: %s", abs, strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		tb_fail(c, "Path is a directory, not a file: %s", abs);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		tb_fail(c, "Error reading file %s: not a regular file", abs);
		goto out;
	}
	if ((uint64_t)st.st_size > TB_MAX_FILE_BYTES) {
		tb_fail(c, "File size exceeds the 20MB limit: %s (%.2fMB)", abs,
			(double)st.st_size / (1024.0 * 1024.0));
		goto out;
	}
	switch (tb_file_type(abs)) {
	case TB_MEDIA:
	case TB_VIDEO:
		if (c->inline_media) {
			rc = read_media(c, abs, r);
			goto out;
		}
		__attribute__((fallthrough));	/* the text mode can only name the file */
	case TB_BINARY:
		buf_printf(&r->text, "Cannot display content of binary file: %s", rel);
		rc = 0;
		goto out;
	case TB_SVG:
		if ((uint64_t)st.st_size > TB_SVG_MAX_BYTES) {
			buf_printf(&r->text, "Cannot display content of SVG file larger than 1MB: %s", rel);
			rc = 0;
			goto out;
		}
		if (!(raw = tb_read_all(abs, TB_MAX_FILE_BYTES, &rawlen))) {
			tb_fail(c, "Error reading file %s: %s", abs, strerror(errno));
			goto out;
		}
		text = tb_decode_text(raw, rawlen, &len);
		buf_append(&r->text, text, len);
		rc = 0;
		goto out;
	case TB_TEXT:
		break;
	}
	if (!(raw = tb_read_all(abs, TB_MAX_FILE_BYTES, &rawlen))) {
		tb_fail(c, "Error reading file %s: %s", abs, strerror(errno));
		goto out;
	}
	text = tb_decode_text(raw, rawlen, &len);
	r->is_text = true;
	/* split on \r?\n: a trailing newline gives an empty last line */
	{
		size_t cap = 16, s = 0;
		lines = xmalloc(cap * sizeof *lines);
		lens = xmalloc(cap * sizeof *lens);
		for (size_t i = 0; i <= len; i++) {
			if (i < len && text[i] != '\n')
				continue;
			if (nlines == cap) {
				cap *= 2;
				lines = xrealloc(lines, cap * sizeof *lines);
				lens = xrealloc(lens, cap * sizeof *lens);
			}
			lines[nlines] = text + s;
			lens[nlines] = i - s;
			if (i < len && lens[nlines] > 0 && text[i - 1] == '\r')
				lens[nlines]--;
			nlines++;
			s = i + 1;
		}
	}
	/* the window, as processSingleFileContent computes it */
	lo = 0;
	hi = nlines;
	if (start > 0 || end > 0) {
		lo = start > 0 ? (size_t)(start - 1) : 0;
		if (end > 0)
			hi = (uint64_t)end < nlines ? (size_t)end : nlines;
		else
			hi = lo + TB_MAX_LINES < nlines ? lo + TB_MAX_LINES : nlines;
	} else if (hi > TB_MAX_LINES) {
		hi = TB_MAX_LINES;
	}
	if (lo > nlines)
		lo = nlines;
	r->truncated = lo > 0 || hi < nlines;
	{
		struct buf body = {0};
		for (size_t i = lo; i < hi; i++) {
			bool split;
			/* String#length and #substring count UTF-16 units; a cut inside a pair leaves
			 * half of it, which JSON can only carry as U+FFFD */
			size_t cut = utf8_utf16_len(lines[i], lens[i]) > TB_MAX_LINE_CHARS
				     ? utf8_utf16_prefix(lines[i], lens[i], TB_MAX_LINE_CHARS, &split) : lens[i];
			if (i > lo)
				buf_puts(&body, "\n");
			buf_append(&body, lines[i], cut);
			if (cut < lens[i]) {
				if (split)
					buf_puts(&body, "\xef\xbf\xbd");
				buf_puts(&body, "... [truncated]");
				r->truncated = true;
			}
		}
		if (body.data)
			buf_append(&r->text, body.data, body.len);
		else
			buf_append(&r->text, "", 0);
		buf_free(&body);
	}
	r->shown_start = (int64_t)lo + 1;
	r->shown_end = (int64_t)(hi < lo ? lo : hi);
	if (hi < lo)
		r->shown_end = (int64_t)hi;
	r->total = (int64_t)nlines;
	rc = 0;
out:
	if (!r->text.data)
		buf_append(&r->text, "", 0);
	free(lines);
	free(lens);
	free(text);
	free(raw);
	free(rel);
	return rc;
}

/* ---- ICU root collation, enough of it for file names ---- */

#include "collate_table.h"

struct ckey {
	uint32_t primary;
	uint8_t secondary;	/* accent */
	uint8_t tertiary;	/* 0 lower, 1 upper, 2 and 3 their variants (ß, æ, ς) */
};

static int cmp_row(const void *key, const void *row)
{
	uint32_t cp = *(const uint32_t *)key, r = ((const struct coll_row *)row)->cp;
	return cp < r ? -1 : cp > r;
}

static int cmp_punct(const void *key, const void *row)
{
	uint32_t cp = *(const uint32_t *)key, r = ((const struct coll_punct *)row)->cp;
	return cp < r ? -1 : cp > r;
}

/* The collation elements of one code point (at most four); returns how many, 0 for an
 * ignorable one (a control character). An element of primary 0 weighs at the secondary and
 * tertiary levels only. */
static int keys_of(uint32_t cp, struct ckey k[4])
{
	static const uint32_t smiley = 0x1f600;	/* emoji sort where this one does */
	const struct coll_row *r;
	const struct coll_punct *p;
	k[0] = (struct ckey){0, 0, 0};
	if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
		return 0;	/* controls are ignorable */
	if (cp >= '0' && cp <= '9') {
		k[0].primary = COLL_DIGITS + (cp - '0');
		return 1;
	}
	if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
		k[0].primary = COLL_LATIN + 2 * (uint32_t)((cp | 0x20) - 'a');
		k[0].tertiary = cp <= 'Z';
		return 1;
	}
	for (size_t i = 0; i < sizeof coll_expand / sizeof coll_expand[0]; i++)
		if (coll_expand[i].cp == cp) {
			/* … sorts as ... (a tertiary variant of it) */
			int n = 0;
			for (const char *a = coll_expand[i].as; *a && n < 4; a++) {
				uint32_t c = (unsigned char)*a;
				p = bsearch(&c, coll_punct, sizeof coll_punct / sizeof coll_punct[0],
					    sizeof coll_punct[0], cmp_punct);
				k[n++] = (struct ckey){p ? p->primary : 0, 0, 2};
			}
			return n;
		}
	p = bsearch(&cp, coll_punct, sizeof coll_punct / sizeof coll_punct[0], sizeof coll_punct[0],
		    cmp_punct);
	if (!p && cp >= 0x1f000 && cp <= 0x1faff)
		p = bsearch(&smiley, coll_punct, sizeof coll_punct / sizeof coll_punct[0],
			    sizeof coll_punct[0], cmp_punct);
	if (p) {
		k[0].primary = p->primary;
		if (p->cp != cp)	/* another emoji: after the listed one, in code point order */
			k[0].secondary = (uint8_t)(1 + (cp & 0x7f));
		return 1;
	}
	r = bsearch(&cp, coll_rows, sizeof coll_rows / sizeof coll_rows[0], sizeof coll_rows[0], cmp_row);
	if (r) {
		/* the letter, its accent as an element of its own (as DUCET has it, so "øa" and
		 * "ŒØe" order right), then the second letter of an expansion */
		int n = 0;
		k[n++] = (struct ckey){r->primary, 0, r->tertiary};
		if (r->secondary)
			k[n++] = (struct ckey){0, r->secondary, 0};
		if (r->mid)
			k[n++] = (struct ckey){0, r->mid, r->tertiary};
		if (r->primary2)
			k[n++] = (struct ckey){r->primary2, 0, r->tertiary};
		return n;
	}
	k[0].primary = 10000 + cp;	/* CJK and other scripts after these, by code point */
	return 1;
}

uint32_t *tb_collate_key(const char *s)
{
	size_t n = 0, cap = 16, k = 0;
	struct ckey *keys = xmalloc(cap * sizeof *keys);
	const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
	uint32_t *out;
	while (p < end) {
		struct ckey c[4];
		uint32_t cp;
		int m;
		p += utf8_decode(p, (size_t)(end - p), &cp);
		m = keys_of(cp, c);
		if (n + 4 > cap) {
			cap *= 2;
			keys = xrealloc(keys, cap * sizeof *keys);
		}
		for (int i = 0; i < m; i++)
			keys[n++] = c[i];
	}
	/* primaries (but 0), 0, secondaries + 1, 0, tertiaries + 1, 0: a shorter run sorts first */
	out = xmalloc((3 * n + 3) * sizeof *out);
	for (size_t i = 0; i < n; i++)
		if (keys[i].primary)
			out[k++] = keys[i].primary;
	out[k++] = 0;
	for (size_t i = 0; i < n; i++)
		out[k++] = keys[i].secondary + 1u;
	out[k++] = 0;
	for (size_t i = 0; i < n; i++)
		out[k++] = keys[i].tertiary + 1u;
	out[k++] = 0;
	free(keys);
	return out;
}

int tb_collate_cmp(const uint32_t *a, const uint32_t *b)
{
	int zeros = 0;
	for (;; a++, b++) {
		if (*a != *b)
			return *a < *b ? -1 : 1;
		if (*a == 0 && ++zeros == 3)
			return 0;	/* equal through all three levels */
	}
}

int tb_collate(const char *a, const char *b)
{
	uint32_t *ka = tb_collate_key(a), *kb = tb_collate_key(b);
	int r = tb_collate_cmp(ka, kb);
	free(ka);
	free(kb);
	return r;
}
