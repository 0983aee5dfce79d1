/* oci_int.h — what the parts of lib/oci share (oci.c: manifests, config and the cache entry;
 * oci_blob.c: sources and verified blobs; oci_layer.c: a layer's entries unpacked by the
 * path policy). Not for other modules. */
#ifndef SBX_OCI_INT_H
#define SBX_OCI_INT_H

#include <archive.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "strset.h"

/* Bytes of file data an image may unpack to: more than any sandbox image, and it stops a
 * decompression bomb from filling the disk. */
#define UNPACK_MAX (UINT64_C(32) * 1024 * 1024 * 1024)
/* Read size for blob streams (the layer decompressor's input). */
#define BLOB_CHUNK (256 * 1024)
/* Path length of one member of a layer, after cleaning. */
#define ENTRY_PATH_MAX 4096

#define SHA256_PREFIX "sha256:"

/* Where blobs come from: a layout directory or an archive of one. */
struct source {
	bool archive;
	char *path;
	char *tag;		/* NULL: the index must hold exactly one manifest */
};

struct descriptor {
	char hex[65];
	int64_t size;
	char *media_type;
};

/* Blob streams: bytes of one blob, hashed as they pass, at most the descriptor's size. */
struct blob {
	struct archive *outer;	/* archive source positioned on the member, or NULL */
	int fd;			/* directory source, or -1 */
	EVP_MD_CTX *md;
	uint64_t got, want;
	char *buf;
};

struct unpack {
	struct archive *disk;
	struct strset written;
	struct strset dirs;	/* directories known real (see parent_safe) */
	uint64_t total;		/* file bytes unpacked so far, all layers */
	char what[96];		/* "layer N" for messages */
};

/* oci_blob.c */
bool oci_in_list(const char *s, const char *const *list, size_t n);
/* "oci-archive:PATH[:TAG]" or "oci:DIR[:TAG]" into s. */
int oci_parse_ref(const char *ref, struct source *s, struct sbx_err *e);
/* A descriptor object ({mediaType, digest, size}) into d. */
int oci_parse_descriptor(struct json_object *o, const char *what, struct descriptor *d,
			 struct sbx_err *e);
/* Blob name of s (want bytes), read in chunks as it is hashed, verified against hex at its
 * end, closed. */
int oci_blob_open(const struct source *s, const char *name, uint64_t want, struct blob *b,
		  struct sbx_err *e);
ssize_t oci_blob_read(struct blob *b, const char **out, struct sbx_err *e);
int oci_blob_verify(struct blob *b, const char *hex, const char *what, struct sbx_err *e);
void oci_blob_close(struct blob *b);
/* A JSON blob of at most max bytes (d NULL: index.json), verified. New reference. */
struct json_object *oci_read_json(const struct source *s, const struct descriptor *d,
				  size_t max, const char *what, struct sbx_err *e);

/* oci_layer.c: a member path cleaned into out (drops "./", "/" runs and "." components;
 * refuses absolute paths and ".."): its length (0 for the root itself) or -1. */
int oci_clean_path(const char *in, char *out, size_t outsz);
/* oci_layer.c: unpacks the layer d describes into the working directory, verified. */
int oci_unpack_layer(struct unpack *u, const struct source *s, const struct descriptor *d,
		     struct sbx_err *e);

#endif
