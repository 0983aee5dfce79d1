/* tb.h — what the geminicli-toolbox tools share: the call (workdir, params, output, error),
 * parameter validation with gemini-cli's schema messages, path resolution, file reading,
 * binary detection, ICU-like ordering and glob matching.
 * The helper runs statically linked in any image: of lib/ it carries only what
 * geminicli-toolbox_LIBSRC in the Makefile names (xalloc, utf8, gemini_path), not libsbx.a.
 * Ownership: strings returned by tb_* are newly allocated and the caller frees them; the
 * call's buffers belong to the call and are freed by main. */
#ifndef TB_H
#define TB_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "xalloc.h"

/* gemini-cli's read limits: 2000 lines per read, 2000 characters per line, 20 MB per file. */
#define TB_MAX_LINES 2000
#define TB_MAX_LINE_CHARS 2000
#define TB_MAX_FILE_BYTES (20u * 1024 * 1024)
/* gemini-cli reads SVG files as text only up to 1 MiB. */
#define TB_SVG_MAX_BYTES (1u * 1024 * 1024)
/* Directory walks stop descending past this depth: deeper trees are symlink loops or abuse. */
#define TB_MAX_DEPTH 256

/* Buffers and allocation are lib/util/xalloc.h's (struct buf, xmalloc, …): out of memory ends the
 * process. */

/* qsort that accepts an empty array (base may then be NULL, which qsort itself forbids). */
void tb_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* One tool call: handlers fill out (success) or err (the failure message) and return 0/-1. */
struct tb_call {
	const char *workdir;		/* absolute, no trailing slash (except "/") */
	struct json_object *params;	/* validated against the tool's parameter table */
	struct buf out, err;
	/* --parts: media files become inline data parts (gemini-cli's), else the text mode's
	 * "Cannot display content of binary file" line names them */
	bool inline_media;
	struct json_object *parts;	/* NULL, or the parts so far (out holds the open text) */
};
int tb_fail(struct tb_call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parameter tables: validated before the handler runs, with the schema messages the model
 * knows from gemini-cli (`params must have required property 'x'`, `params/x must be string`). */
enum tb_type { TB_STRING, TB_INT, TB_BOOL, TB_STRARRAY, TB_FILTERING };
struct tb_param {
	const char *name;
	enum tb_type type;
	bool required;
	int min;			/* TB_INT: minimum; TB_STRARRAY: minItems; -1: none */
	bool nonempty_items;		/* TB_STRARRAY: items have minLength 1 */
};
struct tb_tool {
	const char *name;
	const struct tb_param *params;	/* terminated by a NULL name */
	int (*run)(struct tb_call *c);
};
/* One per file in cmd/geminicli-toolbox/; main's dispatch table lists them. */
extern const struct tb_tool tb_tool_glob, tb_tool_grep_search, tb_tool_list_directory,
	tb_tool_read_file, tb_tool_read_many_files, tb_tool_replace, tb_tool_write_file;
int tb_validate(struct tb_call *c, const struct tb_param *params);

/* Typed accessors after validation; absent (or null) gives the default. */
const char *tb_str(struct tb_call *c, const char *name);	/* NULL when absent */
bool tb_bool(struct tb_call *c, const char *name, bool dflt);
bool tb_int(struct tb_call *c, const char *name, int64_t *out);	/* false when absent */
/* The strings of an array parameter (NULL-terminated, shallow: owned by params); count. */
const char **tb_strs(struct tb_call *c, const char *name, size_t *n);

/* Node's path.resolve(workdir, p): lexical, normalised, no trailing slash. */
char *tb_resolve(const char *workdir, const char *p);
/* Node's path.relative(from, to) for absolute normalised paths. */
char *tb_relative(const char *from, const char *to);
/* gemini-cli's resolveToRealPath: %XX escapes decoded (decodeURIComponent), then realpath,
 * a dangling link followed, or the real path of the nearest existing parent followed by the
 * rest. NULL with *err (newly allocated) where it throws (loops, EACCES). */
char *tb_realpath(const char *p, char **err);
/* The same, p itself where it would throw. */
char *tb_real_or_same(const char *p);
/* gemini-cli's validatePath on a resolved path (control characters, log fragments, lengths);
 * -1 with `Invalid path: …` in c->err. */
int tb_check_path(struct tb_call *c, const char *abs);
/* The user-facing path rules of gemini-cli's file tools: leading `@` stripped unless a
 * literal `@…` path exists; control characters rejected. NULL with c->err set on failure. */
char *tb_tool_path(struct tb_call *c, const char *p);
/* The path as resolveDefensiveToolPath leaves it (still relative when p is), `@` rule only. */
char *tb_tool_literal(struct tb_call *c, const char *p);
const char *tb_basename(const char *p);
/* The extension with its dot, lower-cased into buf ("" when none), as Node's path.extname. */
const char *tb_extname(const char *p, char *buf, size_t n);

/* Node's error text for errno: `ENOENT: no such file or directory, <syscall> '<path>'`. */
char *tb_node_err(int errnum, const char *syscall, const char *path);

/* File types as gemini-cli's detectFileType decides them: TB_MEDIA is image, PDF or audio
 * (read_many_files reads those only when asked for by name), TB_VIDEO the rest it inlines. */
enum tb_ftype { TB_TEXT, TB_SVG, TB_BINARY, TB_MEDIA, TB_VIDEO };
enum tb_ftype tb_file_type(const char *path);
/* Reads a whole file (at most max bytes); returns NULL with errno set. */
char *tb_read_all(const char *path, size_t max, size_t *len);
/* Decodes per BOM (UTF-8/16/32, stripped) into UTF-8; newly allocated. Invalid UTF-8
 * becomes U+FFFD as Node's decoder makes it. */
char *tb_decode_text(const char *buf, size_t len, size_t *outlen);
/* Node's buf.toString('utf8'): no BOM handling (U+FEFF stays), invalid bytes → U+FFFD. */
char *tb_utf8_text(const char *buf, size_t len, size_t *outlen);

/* gemini-cli's processSingleFileContent for one path. Returns 0 with the model text in *text
 * (and *truncated, *shown_start, *shown_end, *total for text files), -1 with the error
 * message in c->err. start/end are 0 when absent. */
struct tb_read {
	struct buf text;
	bool truncated, is_text;
	int64_t shown_start, shown_end, total;
	/* with c->inline_media, a media file: its MIME type (static) and bytes in text */
	const char *mime;
};
int tb_read_file(struct tb_call *c, const char *abs, int64_t start, int64_t end,
		 struct tb_read *r);

/* media.c: the MIME type mime/lite gives the path's extension when it is image/, audio/,
 * video/ or application/pdf, else NULL; the audio type gemini-cli accepts for the path
 * (getSupportedAudioMimeTypeForFile), else NULL. Static strings. */
const char *tb_media_mime(const char *path);
const char *tb_audio_mime(const char *path);
/* Appends an inlineData part (data base64-encoded, displayName the absolute path) after
 * the text written so far, which tb_text_part first closes into a text part of its own. */
void tb_inline_part(struct tb_call *c, const char *abs, const char *mime, const char *data,
		    size_t len);
void tb_text_part(struct tb_call *c);
/* Whether a path (relative to the workspace) has a segment gemini-cli's workspace check
 * refuses: .git, .env, node_modules, gha-creds-*.json (any case, trailing dots and spaces and
 * an NTFS stream suffix ignored, NTFS short names too). */
bool tb_blocked_segment(const char *rel);

/* ICU root-collation order as JavaScript's localeCompare gives it (for ASCII and Latin-1). */
int tb_collate(const char *a, const char *b);
/* The same order through precomputed keys (newly allocated), for sorting many strings. */
uint32_t *tb_collate_key(const char *s);
int tb_collate_cmp(const uint32_t *a, const uint32_t *b);
/* Counts UTF-8 code points. */
size_t tb_utf8_len(const char *s, size_t n);
/* Byte length of the first `chars` code points of s[0..n). */
size_t tb_utf8_prefix(const char *s, size_t n, size_t chars);

/* A name longer than this many UTF-16 units matches no pattern (no file system allows one). */
#define TB_NAME_MAX_UNITS 1024
/* UTF-8 → UTF-16 code units (invalid bytes become U+FFFD); -1 when more than max. */
long tb_utf16(const char *s, size_t n, uint16_t *out, size_t max);

/* Glob patterns as the `glob` npm package (minimatch) reads them: brace expansion, `**`,
 * `*`, `?`, `[...]`; `dot` semantics are always on (dotfiles match). */
struct tb_glob;
struct tb_glob *tb_glob_compile(const char *pattern, bool nocase, char **why);
/* Matches a path relative to the walk root ("a/b/c.txt"). */
bool tb_glob_match(const struct tb_glob *g, const char *rel);
/* Whether a directory (relative) could contain matches (prunes walks). */
bool tb_glob_may_descend(const struct tb_glob *g, const char *reldir);
void tb_glob_free(struct tb_glob *g);
/* glob's escape(): the pattern that matches the literal text. */
char *tb_glob_escape(const char *s);

/* V8's message when pattern does not compile as `new RegExp(pattern)` (jsre.c), else NULL. */
const char *tb_jsre_error(const char *pattern);

/* gemini-cli's "Here is the updated code" text: the whole new text when old is empty, else
 * the changed lines of new with 5 lines of context and `...` for the rest. */
char *tb_snippet(const char *old, const char *new_text);

/* Whether text has an omission placeholder line (`// rest of code ...`) that old (NULL: none)
 * does not have, as gemini-cli's detectOmissionPlaceholders decides. */
bool tb_has_new_placeholder(const char *text, const char *old);

/* replace's fallbacks (replace_match.c); each returns the occurrences and *out the new text
 * (set only when > 0). Fuzzy also writes gemini-cli's "Applied fuzzy match at line…" note. */
size_t tb_replace_flexible(const char *code, const char *old, const char *new_text, char **out);
size_t tb_replace_regex(const char *code, const char *old, const char *new_text, char **out);
size_t tb_replace_fuzzy(const char *code, const char *old, const char *new_text, char **out,
			struct buf *feedback);

/* CRLF → LF, and LF → CRLF (lone LFs only); newly allocated. */
char *tb_to_lf(const char *s, size_t *n);
char *tb_to_crlf(const char *s);
/* Writes a whole file, creating parents; failures in gemini-cli's words in c->err. */
int tb_write_file(struct tb_call *c, const char *abs, const char *data, size_t len);

/* The ignore files of the working directory (ignore.c): .gitignore files (in a git repository)
 * and .geminiignore. rel is relative to the root; paths outside it are never ignored. */
struct tb_ignore;
struct tb_ignore *tb_ignore_open(const char *root, bool respect_git, bool respect_gemini);
bool tb_ignore_match(struct tb_ignore *ig, const char *rel, bool is_dir);
/* FileDiscoveryService's verdict on a path relative to the root or absolute: the rules above,
 * and a symbolic link is ignored when it points outside the real root, else judged as its
 * target. is_link: 1 or 0 when the caller knows, -1 to look. */
bool tb_ignore_path(struct tb_ignore *ig, const char *path, bool is_dir, int is_link);
/* Whether any rule applies at all (else every match is false). */
bool tb_ignore_active(const struct tb_ignore *ig);
void tb_ignore_close(struct tb_ignore *ig);
/* file_filtering_options.<key> (default true). */
bool tb_filtering(struct tb_call *c, const char *key);

/* A directory walk: calls fn for every regular file (and symlink to one unless no_links)
 * under root, in byte order of names; never follows directory symlinks. skip_dir decides
 * which directory names are not entered. fn returning non-zero stops the walk. */
struct tb_walk {
	const char *root;
	bool no_links;		/* rg's walk: symbolic links are not searched at all */
	bool (*skip_dir)(const char *name, const char *rel, void *arg);
	bool (*skip_file)(const char *name, void *arg);
	int (*fn)(const char *abs, const char *rel, void *arg);
	bool (*descend)(const char *rel, void *arg);
	void *arg;
};
int tb_walk(const struct tb_walk *w);

#endif
