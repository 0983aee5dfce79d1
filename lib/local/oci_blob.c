/* oci_blob.c — where an OCI image's blobs come from and how they are trusted: a layout
 * directory read file by file, or an oci-archive tar scanned with libarchive for the member
 * wanted (one pass per small file, one per layer; tar members are skipped by seeking); every
 * blob hashed as it is read and checked against the digest and size its descriptor gives. */
#include "oci.h"
#include "oci_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive_entry.h>
#include <openssl/evp.h>

#include "gojson.h"
#include "xalloc.h"

bool oci_in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

/* "oci-archive:PATH[:TAG]": a last ":" followed by no "/" starts the tag. */
int oci_parse_ref(const char *ref, struct source *s, struct sbx_err *e)
{
	const char *rest, *colon;

	s->archive = strncmp(ref, "oci-archive:", 12) == 0;
	rest = ref + (s->archive ? 12 : 4);
	colon = strrchr(rest, ':');
	if (colon && strchr(colon, '/') == NULL) {
		s->path = xstrndup(rest, (size_t)(colon - rest));
		s->tag = colon[1] ? xstrdup(colon + 1) : NULL;
	} else {
		s->path = xstrdup(rest);
	}
	if (s->path[0] == '\0')
		return err_set(e, SBX_EINVAL, "image %s: no path after the transport", ref);
	return 0;
}

static bool is_hex64(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[64] == '\0';
}

/* Reads a descriptor object ({mediaType, digest, size}). */
int oci_parse_descriptor(struct json_object *o, const char *what, struct descriptor *d,
			    struct sbx_err *e)
{
	struct json_object *v;
	const char *dg;

	memset(d, 0, sizeof *d);
	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "digest", &v) || !json_object_is_type(v, json_type_string))
		return err_set(e, SBX_EINVAL, "%s: descriptor without a digest", what);
	dg = json_object_get_string(v);
	if (strncmp(dg, SHA256_PREFIX, strlen(SHA256_PREFIX)) != 0 ||
	    !is_hex64(dg + strlen(SHA256_PREFIX)))
		return err_set(e, SBX_EINVAL, "%s: unsupported digest \"%.80s\" (sha256 only)", what, dg);
	memcpy(d->hex, dg + strlen(SHA256_PREFIX), 65);
	if (!json_object_object_get_ex(o, "size", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return err_set(e, SBX_EINVAL, "%s: descriptor without a valid size", what);
	d->size = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "mediaType", &v) && json_object_is_type(v, json_type_string))
		d->media_type = xstrdup(json_object_get_string(v));
	return 0;
}

void oci_blob_close(struct blob *b)
{
	if (b->outer)
		archive_read_free(b->outer);
	if (b->fd >= 0)
		close(b->fd);
	EVP_MD_CTX_free(b->md);
	free(b->buf);
	memset(b, 0, sizeof *b);
	b->fd = -1;
}

/* Opens the archive at path positioned on member name ("index.json", "blobs/sha256/<hex>"). */
static struct archive *archive_member(const char *path, const char *name, struct sbx_err *e)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ent;
	int r;

	archive_read_support_format_tar(a);
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	if (archive_read_open_filename(a, path, BLOB_CHUNK) != ARCHIVE_OK) {
		err_set(e, errno == ENOENT ? SBX_ENOTFOUND : SBX_EINVAL, "cannot open %s: %s", path,
			archive_error_string(a));
		archive_read_free(a);
		return NULL;
	}
	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK) {
		const char *n = archive_entry_pathname(ent);
		while (n && n[0] == '.' && n[1] == '/')
			n += 2;
		if (n && strcmp(n, name) == 0 && archive_entry_filetype(ent) == AE_IFREG)
			return a;
	}
	if (r == ARCHIVE_EOF)
		err_set(e, SBX_EINVAL, "%s is not an OCI archive: no %s in it", path, name);
	else
		err_set(e, SBX_EINVAL, "%s is not a readable OCI archive: %s", path,
			archive_error_string(a));
	archive_read_free(a);
	return NULL;
}

int oci_blob_open(const struct source *s, const char *name, uint64_t want, struct blob *b,
		     struct sbx_err *e)
{
	memset(b, 0, sizeof *b);
	b->fd = -1;
	b->want = want;
	if (s->archive) {
		if ((b->outer = archive_member(s->path, name, e)) == NULL)
			return -1;
	} else {
		char *p = xasprintf("%s/%s", s->path, name);
		struct stat st;
		b->fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (b->fd < 0 || fstat(b->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			err_sys(e, b->fd < 0 ? errno : EINVAL, "cannot read %s", p);
			free(p);
			return -1;
		}
		free(p);
	}
	b->md = EVP_MD_CTX_new();
	if (b->md == NULL || EVP_DigestInit_ex(b->md, EVP_sha256(), NULL) != 1)
		return err_set(e, SBX_EIO, "cannot start SHA-256");
	b->buf = xmalloc(BLOB_CHUNK);
	return 0;
}

/* Reads the next chunk; 0 at the end, -1 on error or when the blob exceeds its size. */
ssize_t oci_blob_read(struct blob *b, const char **out, struct sbx_err *e)
{
	ssize_t n;

	if (b->outer) {
		n = archive_read_data(b->outer, b->buf, BLOB_CHUNK);
		if (n < 0)
			return err_set(e, SBX_EINVAL, "archive read error: %s",
				       archive_error_string(b->outer));
	} else {
		while ((n = read(b->fd, b->buf, BLOB_CHUNK)) < 0 && errno == EINTR)
			;
		if (n < 0)
			return err_sys(e, errno, "read error");
	}
	b->got += (uint64_t)n;
	if (b->got > b->want)
		return err_set(e, SBX_EINVAL, "blob is larger than the %" PRIu64 " bytes its "
			       "descriptor gives", b->want);
	EVP_DigestUpdate(b->md, b->buf, (size_t)n);
	*out = b->buf;
	return n;
}

/* Reads the rest of the blob and compares size and digest. */
int oci_blob_verify(struct blob *b, const char *hex, const char *what, struct sbx_err *e)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	char got[65];
	unsigned len = 0, i;
	const char *p;
	ssize_t n;

	while ((n = oci_blob_read(b, &p, e)) > 0)
		;
	if (n < 0)
		return err_prefix(e, "%s", what);
	if (b->got != b->want)
		return err_set(e, SBX_EINVAL, "%s: size %" PRIu64 " does not match the %" PRIu64
			       " bytes its descriptor gives", what, b->got, b->want);
	EVP_DigestFinal_ex(b->md, md, &len);
	for (i = 0; i < len && i < 32; i++)
		snprintf(got + 2 * i, 3, "%02x", md[i]);
	if (strcmp(got, hex) != 0)
		return err_set(e, SBX_EINVAL, "%s: digest mismatch: has sha256:%s, the manifest "
			       "says sha256:%s", what, got, hex);
	return 0;
}

/* Reads a whole small blob (or index.json when hex is NULL) and parses it as JSON. */
struct json_object *oci_read_json(const struct source *s, const struct descriptor *d,
				     size_t max, const char *what, struct sbx_err *e)
{
	struct json_object *o = NULL;
	struct blob b;
	struct buf text = {0};
	char *name;
	const char *p, *why = "not JSON";
	ssize_t n;
	enum json_tokener_error jerr;

	if (d && d->size > (int64_t)max) {
		err_set(e, SBX_EINVAL, "%s is %" PRId64 " bytes, more than the %zu allowed", what,
			d->size, max);
		return NULL;
	}
	name = d ? xasprintf("blobs/sha256/%s", d->hex) : xstrdup("index.json");
	if (oci_blob_open(s, name, d ? (uint64_t)d->size : max, &b, e) < 0)
		goto out;
	while ((n = oci_blob_read(&b, &p, e)) > 0)
		buf_append(&text, p, (size_t)n);
	if (n < 0) {
		err_prefix(e, "%s", what);
		goto out;
	}
	if (d) {
		b.want = b.got;	/* everything is read: only the digest is left to compare */
		if (oci_blob_verify(&b, d->hex, what, e) < 0)
			goto out;
		if (b.got != (uint64_t)d->size) {
			err_set(e, SBX_EINVAL, "%s: size does not match its descriptor", what);
			goto out;
		}
	}
	buf_append(&text, "", 1);
	o = json_tokener_parse_verbose(text.data, &jerr);
	if (o == NULL)
		why = json_tokener_error_desc(jerr);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = NULL;
		err_set(e, SBX_EINVAL, "%s is not a JSON object: %s", what, why);
	}
out:
	if (b.md || b.fd >= 0 || b.outer)
		oci_blob_close(&b);
	buf_free(&text);
	free(name);
	return o;
}
