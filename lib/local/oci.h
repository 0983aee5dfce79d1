/* oci.h — OCI images as root filesystems for the local backend. An image layout directory
 * ("oci:DIR[:TAG]") or an archive of one ("oci-archive:PATH[:TAG]") is checked against its
 * digests, its layers are unpacked once into a cache shared by every sandbox made from it
 * (keyed by the manifest digest), and its config's Env, WorkingDir and User are read.
 * lib/local/oci.c (with oci_blob.c and oci_layer.c) does the work (libarchive, OpenSSL) and runs in
 * the sbx-image program;
 * lib/local/oci_image.c is how the local backend asks sbx-image, so the commands that only run
 * sandboxes never load those libraries.
 * Ownership: returned images are freed with oci_image_free and own all their strings;
 * returned json_object * are new references the caller puts. */
#ifndef SBX_OCI_H
#define SBX_OCI_H

#include <stdbool.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "err.h"

struct oci_image {
	char digest[80];	/* "sha256:<hex>" of the manifest: the cache key */
	char *rootfs;		/* the unpacked root filesystem; never written once cached */
	char **env;		/* the config's Env (NAME=VALUE), NULL-terminated */
	char *workdir;		/* the config's WorkingDir, "" when unset */
	char *user;		/* the config's User as written, "" when unset */
	uid_t uid;		/* User resolved with the image's /etc/passwd and /etc/group */
	gid_t gid;
	bool unpacked;		/* this call unpacked the layers (false: found in the cache) */
};

/* 1 when image names an OCI image ("oci:" or "oci-archive:" prefix), else 0. */
int oci_is_ref(const char *image);
/* Verifies the image named by ref and makes sure its root filesystem is unpacked below
 * cache_dir (created 0700 if missing); concurrent callers unpack it once. Nothing is written
 * outside cache_dir. While unpacking, the process's working directory is changed and then
 * restored, so this must not run beside other threads. NULL on failure. */
struct oci_image *oci_prepare(const char *ref, const char *cache_dir, struct sbx_err *e);
/* Makes sure the absolute path (a mount point such as a sandbox's home) exists as a directory
 * in the image's root filesystem, creating missing components 0755 without following any
 * symbolic link; a path through a link is left to resolve inside the sandbox. */
int oci_mountpoint(const struct oci_image *img, const char *path, struct sbx_err *e);
void oci_image_free(struct oci_image *img);

/* The image as sbx-image prints it: {"image","digest","rootfs","env","workdir","user","uid",
 * "gid","unpacked"}. */
struct json_object *oci_image_json(const struct oci_image *img, const char *ref);
/* Runs "HELPER -homedir HOMEDIR REF" (sbx-image) and reads the image it prints; its error
 * message becomes e's, with a code from its exit status. NULL on failure. */
struct oci_image *oci_image_run(const char *helper, const char *ref, const char *homedir,
				 struct sbx_err *e);

#endif
