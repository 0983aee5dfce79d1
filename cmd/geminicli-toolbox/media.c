/* media.c — the files gemini-cli sends the model as inline data (images, PDF, audio, video):
 * their MIME types as the `mime/lite` table of gemini-cli 0.61.0 gives them, the audio types
 * it accepts, base64 for the data, and the path segments its workspace check refuses. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "tb.h"

/* mime 4.0.7's standard table (what mime/lite knows), restricted to the types
 * detectFileType sends inline: image/, audio/, video/ and application/pdf. Sorted. */
static const struct {
	const char *ext, *mime;
} media_types[] = {
	{"3g2", "video/3gpp2"},
	{"3gp", "video/3gpp"},
	{"3gpp", "video/3gpp"},
	{"aac", "audio/aac"},
	{"adp", "audio/adpcm"},
	{"adts", "audio/aac"},
	{"amr", "audio/amr"},
	{"apng", "image/apng"},
	{"au", "audio/basic"},
	{"avci", "image/avci"},
	{"avcs", "image/avcs"},
	{"avif", "image/avif"},
	{"bmp", "image/bmp"},
	{"cgm", "image/cgm"},
	{"dib", "image/bmp"},
	{"dpx", "image/dpx"},
	{"drle", "image/dicom-rle"},
	{"emf", "image/emf"},
	{"exr", "image/aces"},
	{"fits", "image/fits"},
	{"g3", "image/g3fax"},
	{"gif", "image/gif"},
	{"h261", "video/h261"},
	{"h263", "video/h263"},
	{"h264", "video/h264"},
	{"heic", "image/heic"},
	{"heics", "image/heic-sequence"},
	{"heif", "image/heif"},
	{"heifs", "image/heif-sequence"},
	{"hej2", "image/hej2k"},
	{"ief", "image/ief"},
	{"jaii", "image/jaii"},
	{"jais", "image/jais"},
	{"jfif", "image/pjpeg"},
	{"jhc", "image/jphc"},
	{"jls", "image/jls"},
	{"jp2", "image/jp2"},
	{"jpe", "image/jpeg"},
	{"jpeg", "image/jpeg"},
	{"jpf", "image/jpx"},
	{"jpg", "image/jpeg"},
	{"jpg2", "image/jp2"},
	{"jpgm", "image/jpm"},
	{"jpgv", "video/jpeg"},
	{"jph", "image/jph"},
	{"jpm", "image/jpm"},
	{"jpx", "image/jpx"},
	{"jxl", "image/jxl"},
	{"jxr", "image/jxr"},
	{"jxra", "image/jxra"},
	{"jxrs", "image/jxrs"},
	{"jxs", "image/jxs"},
	{"jxsc", "image/jxsc"},
	{"jxsi", "image/jxsi"},
	{"jxss", "image/jxss"},
	{"kar", "audio/midi"},
	{"ktx", "image/ktx"},
	{"ktx2", "image/ktx2"},
	{"m1v", "video/mpeg"},
	{"m2a", "audio/mpeg"},
	{"m2t", "video/mp2t"},
	{"m2ts", "video/mp2t"},
	{"m2v", "video/mpeg"},
	{"m3a", "audio/mpeg"},
	{"m4a", "audio/mp4"},
	{"m4b", "audio/mp4"},
	{"m4s", "video/iso.segment"},
	{"mid", "audio/midi"},
	{"midi", "audio/midi"},
	{"mj2", "video/mj2"},
	{"mjp2", "video/mj2"},
	{"mov", "video/quicktime"},
	{"mp2", "audio/mpeg"},
	{"mp2a", "audio/mpeg"},
	{"mp3", "audio/mpeg"},
	{"mp4", "video/mp4"},
	{"mp4a", "audio/mp4"},
	{"mp4v", "video/mp4"},
	{"mpe", "video/mpeg"},
	{"mpeg", "video/mpeg"},
	{"mpg", "video/mpeg"},
	{"mpg4", "video/mp4"},
	{"mpga", "audio/mpeg"},
	{"mts", "video/mp2t"},
	{"mxmf", "audio/mobile-xmf"},
	{"oga", "audio/ogg"},
	{"ogg", "audio/ogg"},
	{"ogv", "video/ogg"},
	{"opus", "audio/ogg"},
	{"pdf", "application/pdf"},
	{"png", "image/png"},
	{"qt", "video/quicktime"},
	{"rmi", "audio/midi"},
	{"s3m", "audio/s3m"},
	{"sgi", "image/sgi"},
	{"sil", "audio/silk"},
	{"snd", "audio/basic"},
	{"spx", "audio/ogg"},
	{"svg", "image/svg+xml"},
	{"svgz", "image/svg+xml"},
	{"t38", "image/t38"},
	{"tfx", "image/tiff-fx"},
	{"tif", "image/tiff"},
	{"tiff", "image/tiff"},
	{"ts", "video/mp2t"},
	{"wav", "audio/wav"},
	{"weba", "audio/webm"},
	{"webm", "video/webm"},
	{"webp", "image/webp"},
	{"wmf", "image/wmf"},
	{"xm", "audio/xm"},
};

/* getSupportedAudioMimeTypeForFile: these extensions even where the table lacks them, and
 * the table's synonyms normalised; any other audio type is refused. */
static const struct {
	const char *ext, *mime;
} audio_exts[] = {
	{"mp3", "audio/mpeg"}, {"wav", "audio/wav"}, {"aiff", "audio/aiff"}, {"aif", "audio/aiff"},
	{"aac", "audio/aac"}, {"ogg", "audio/ogg"}, {"flac", "audio/flac"},
};
static const char *const audio_supported[] = {
	"audio/mpeg", "audio/wav", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac",
};

static int cmp_ext(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

/* mime.getType's extension: after the last dot of the base name, lower-cased; none when
 * the base name has no dot (or only a leading one). */
static bool ext_of(const char *path, char *buf, size_t n)
{
	const char *base = tb_basename(path), *dot = strrchr(base, '.');
	size_t i;
	if (!dot || dot == base || strlen(dot + 1) >= n || !dot[1])
		return false;
	for (i = 0; dot[1 + i]; i++)
		buf[i] = (char)tolower((unsigned char)dot[1 + i]);
	buf[i] = '\0';
	return true;
}

const char *tb_media_mime(const char *path)
{
	char ext[16];
	const void *hit;
	if (!ext_of(path, ext, sizeof ext))
		return NULL;
	hit = bsearch(ext, media_types, sizeof media_types / sizeof media_types[0],
		      sizeof media_types[0], cmp_ext);
	return hit ? ((const char *const *)hit)[1] : NULL;
}

const char *tb_audio_mime(const char *path)
{
	const char *m = tb_media_mime(path);
	char ext[16];
	if (m && strncmp(m, "audio/", 6) == 0)
		for (size_t i = 0; i < sizeof audio_supported / sizeof audio_supported[0]; i++)
			if (strcmp(m, audio_supported[i]) == 0)
				return m;
	if (!ext_of(path, ext, sizeof ext))
		return NULL;
	for (size_t i = 0; i < sizeof audio_exts / sizeof audio_exts[0]; i++)
		if (strcmp(ext, audio_exts[i].ext) == 0)
			return audio_exts[i].mime;
	return NULL;
}

void tb_inline_part(struct tb_call *c, const char *abs, const char *mime, const char *data,
		    size_t len)
{
	char *b64 = xmalloc(BASE64_LEN(len) + 1);
	struct json_object *part = json_object_new_object(), *in = json_object_new_object();
	size_t n = base64_encode(data, len, b64);
	json_object_object_add(in, "data", json_object_new_string_len(b64, (int)n));
	json_object_object_add(in, "mimeType", json_object_new_string(mime));
	json_object_object_add(in, "displayName", json_object_new_string(abs));
	json_object_object_add(part, "inlineData", in);
	tb_text_part(c);
	if (!c->parts)
		c->parts = json_object_new_array();
	json_object_array_add(c->parts, part);
	free(b64);
}

void tb_text_part(struct tb_call *c)
{
	struct json_object *part;
	if (!c->out.len)
		return;
	if (!c->parts)
		c->parts = json_object_new_array();
	part = json_object_new_object();
	json_object_object_add(part, "text", json_object_new_string_len(c->out.data, (int)c->out.len));
	json_object_array_add(c->parts, part);
	c->out.len = 0;
}

/* NTFS short names of the blocked segments: PREFIX or TWO+4 hex digits, `~`, digits, then
 * the suffix (gemini-cli's *_SFN_REGEX). */
static bool short_name(const char *s, const char *prefix, const char *two, const char *suffix)
{
	size_t n = strlen(prefix), i;
	if (strncmp(s, prefix, n) == 0) {
		s += n;
	} else if (strncmp(s, two, 2) == 0) {
		for (i = 2; i < 6; i++)
			if (!isxdigit((unsigned char)s[i]))
				return false;
		s += 6;
	} else {
		return false;
	}
	if (*s++ != '~' || !isdigit((unsigned char)*s))
		return false;
	while (isdigit((unsigned char)*s))
		s++;
	if (strcmp(suffix, ".json") == 0)
		return strcmp(s, ".json") == 0 || strcmp(s, ".jso") == 0;
	return *s == '\0';
}

bool tb_blocked_segment(const char *rel)
{
	while (*rel) {
		size_t n = strcspn(rel, "/\\"), k = strcspn(rel, ":/\\");
		char seg[256];
		if (k > n)
			k = n;
		while (k > 0 && (rel[k - 1] == ' ' || rel[k - 1] == '.'))
			k--;
		if (k < sizeof seg) {
			for (size_t i = 0; i < k; i++)
				seg[i] = (char)tolower((unsigned char)rel[i]);
			seg[k] = '\0';
			if (!strcmp(seg, ".git") || !strcmp(seg, ".env") || !strcmp(seg, "node_modules") ||
			    short_name(seg, "git", "gi", "") || short_name(seg, "env", "en", "") ||
			    short_name(seg, "node_m", "no", "") ||
			    short_name(seg, "gha-cr", "gh", ".json") ||
			    (!strncmp(seg, "gha-creds-", 10) && k >= 15 && !strcmp(seg + k - 5, ".json")))
				return true;
		}
		rel += n;
		while (*rel == '/' || *rel == '\\')
			rel++;
	}
	return false;
}
