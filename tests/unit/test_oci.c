/* test_oci.c — lib/oci: layouts written here with libarchive (layers) and OpenSSL (digests):
 * unpack and cache, whiteouts, refusals, mount points that must not follow links, and the
 * sbx-image protocol of oci_image_run (lib/local/oci_image.c) against stand-in helpers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#include "fsutil.h"
#include "oci.h"
#include "xalloc.h"
#include "tap.h"

static char tmp[256];

struct member {
	const char *path;
	char type;		/* 'f' file, 'd' dir, 'l' symlink, 'c' char device */
	const char *data;	/* file data or link target */
};

static void sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned len;

	EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* Writes blob data into DIR/blobs/sha256/<hex>; returns the hex in out. */
static void put_blob(const char *dir, const void *p, size_t n, char out[65])
{
	char *path;
	FILE *f;

	sha256_hex(p, n, out);
	path = xasprintf("%s/blobs/sha256/%s", dir, out);
	f = fopen(path, "wb");
	fwrite(p, 1, n, f);
	fclose(f);
	free(path);
}

/* A gzip tar layer of the members, in memory. */
static void *make_layer(const struct member *m, size_t *len)
{
	size_t cap = 1 << 20, used = 0;
	void *buf = xmalloc(cap);
	struct archive *a = archive_write_new();

	archive_write_set_format_pax_restricted(a);
	archive_write_add_filter_gzip(a);
	archive_write_open_memory(a, buf, cap, &used);
	for (; m->path; m++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, m->path);
		archive_entry_set_perm(e, m->type == 'd' ? 0755 : 0644);
		switch (m->type) {
		case 'f':
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_size(e, (la_int64_t)strlen(m->data));
			break;
		case 'd':
			archive_entry_set_filetype(e, AE_IFDIR);
			break;
		case 'l':
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_symlink(e, m->data);
			break;
		case 'c':
			archive_entry_set_filetype(e, AE_IFCHR);
			archive_entry_set_rdev(e, 0x0103);
			break;
		}
		archive_write_header(a, e);
		if (m->type == 'f')
			archive_write_data(a, m->data, strlen(m->data));
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	*len = used;
	return buf;
}

/* Writes an OCI layout with these layers (NULL-terminated) to dir. corrupt: the last layer's
 * stored bytes differ from the digest the manifest gives. */
static void make_layout(const char *dir, const struct member *const *layers, const char *config,
			int corrupt)
{
	struct buf man = {0};
	char hex[65], chex[65], mhex[65], *p;
	FILE *f;

	p = xasprintf("%s/blobs/sha256", dir);
	fs_remove_tree(dir);
	mkdir(dir, 0755);
	p[strlen(dir) + 6] = '\0';
	mkdir(p, 0755);
	p[strlen(dir) + 6] = '/';
	mkdir(p, 0755);
	free(p);
	put_blob(dir, config, strlen(config), chex);
	buf_printf(&man, "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest."
		   "v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
		   "\"digest\":\"sha256:%s\",\"size\":%zu},\"layers\":[", chex, strlen(config));
	for (size_t i = 0; layers[i]; i++) {
		size_t n;
		unsigned char *l = make_layer(layers[i], &n);
		put_blob(dir, l, n, hex);
		if (corrupt && !layers[i + 1]) {
			char *path = xasprintf("%s/blobs/sha256/%s", dir, hex);
			l[n - 1] ^= 1;	/* the gzip trailer: still inflates, digest differs */
			f = fopen(path, "wb");
			fwrite(l, 1, n, f);
			fclose(f);
			free(path);
		}
		buf_printf(&man, "%s{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
			   "\"digest\":\"sha256:%s\",\"size\":%zu}", i ? "," : "", hex, n);
		free(l);
	}
	buf_puts(&man, "]}");
	put_blob(dir, man.data, man.len, mhex);
	p = xasprintf("%s/index.json", dir);
	f = fopen(p, "w");
	fprintf(f, "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci."
		"image.manifest.v1+json\",\"digest\":\"sha256:%s\",\"size\":%zu}]}", mhex, man.len);
	fclose(f);
	free(p);
	buf_free(&man);
}

static int exists(const char *root, const char *rel)
{
	struct stat st;
	char *p = xasprintf("%s/%s", root, rel);
	int r = lstat(p, &st) == 0;

	free(p);
	return r;
}

static void test_unpack(const char *cache)
{
	static const struct member base[] = {
		{"etc", 'd', NULL}, {"etc/passwd", 'f', "root:x:0:0::/root:/bin/sh\nbob:x:7:8::/:/x\n"},
		{"gone", 'f', "g"}, {"o", 'd', NULL}, {"o/old", 'f', "o"}, {"link", 'l', "/etc"},
		{NULL, 0, NULL}};
	static const struct member top[] = {
		{".wh.gone", 'f', ""}, {"o/.wh..wh..opq", 'f', ""}, {"o/new", 'f', "n"},
		{NULL, 0, NULL}};
	const struct member *const layers[] = {base, top, NULL};
	char *dir = xasprintf("%s/layout", tmp), *ref = xasprintf("oci:%s", dir), *outside;
	struct oci_image *img, *again;
	struct sbx_err e;

	make_layout(dir, layers, "{\"config\":{\"Env\":[\"A=1\"],\"WorkingDir\":\"/w\","
		    "\"User\":\"bob\"}}", 0);
	img = oci_prepare(ref, cache, &e);
	ok(img != NULL, "a two-layer layout unpacks%s%s", img ? "" : ": ", img ? "" : e.msg);
	if (img == NULL)
		return;
	ok(img->unpacked, "the first prepare unpacks");
	ok(!exists(img->rootfs, "gone") && exists(img->rootfs, "o/new") &&
	   !exists(img->rootfs, "o/old"), "whiteout and opaque directory applied");
	ok(exists(img->rootfs, "w") && exists(img->rootfs, "proc") && exists(img->rootfs, "run"),
	   "WorkingDir and the sandbox mount points exist");
	is_str(img->env[0], "A=1", "Env read");
	ok(img->env[1] == NULL, "Env has one entry");
	ok(img->uid == 7 && img->gid == 8, "User resolved with the image's passwd (%d:%d)",
	   (int)img->uid, (int)img->gid);
	again = oci_prepare(ref, cache, &e);
	ok(again && !again->unpacked && strcmp(again->rootfs, img->rootfs) == 0,
	   "the second prepare finds the cache");
	oci_image_free(again);

	/* A mount point under an image symlink must not be created through it on the host. */
	outside = xasprintf("%s/outside", tmp);
	mkdir(outside, 0755);
	{
		char *l = xasprintf("%s/ln", img->rootfs);
		ok(symlink(outside, l) == 0, "planted a symlink in the rootfs");
		free(l);
	}
	ok(oci_mountpoint(img, "/ln/home", &e) == 0, "mount point through a link is left alone");
	ok(!exists(outside, "home"), "nothing created outside the rootfs");
	ok(oci_mountpoint(img, "/srv/home/x", &e) == 0 && exists(img->rootfs, "srv/home/x"),
	   "missing mount point components are created");
	ok(oci_mountpoint(img, "/a/../b", &e) < 0 && e.code == SBX_EINVAL, "'..' refused: %s",
	   e.msg);
	oci_image_free(img);
	free(outside);
	free(dir);
	free(ref);
}

static void test_refusals(const char *cache)
{
	static const struct member good[] = {{"a", 'f', "a"}, {NULL, 0, NULL}};
	static const struct member dev[] = {{"dev/x", 'c', NULL}, {NULL, 0, NULL}};
	static const struct member up[] = {{"../up", 'f', "x"}, {NULL, 0, NULL}};
	const struct member *const l_good[] = {good, NULL}, *const l_dev[] = {good, dev, NULL},
				    *const l_up[] = {up, NULL};
	char *dir = xasprintf("%s/bad", tmp), *ref = xasprintf("oci:%s", dir);
	struct oci_image *img;
	struct sbx_err e;

	make_layout(dir, l_good, "{}", 1);
	img = oci_prepare(ref, cache, &e);
	ok(img == NULL && strstr(e.msg, "digest mismatch"), "digest mismatch refused: %s", e.msg);
	make_layout(dir, l_dev, "{}", 0);
	img = oci_prepare(ref, cache, &e);
	ok(img == NULL && strstr(e.msg, "device node"), "device node refused: %s", e.msg);
	make_layout(dir, l_up, "{}", 0);
	img = oci_prepare(ref, cache, &e);
	ok(img == NULL && strstr(e.msg, "escapes"), "'..' member refused: %s", e.msg);
	ok(!exists(tmp, "up"), "nothing written beside the cache");
	make_layout(dir, l_good, "{\"config\":{\"Env\":[\"NOEQUALS\"]}}", 0);
	img = oci_prepare(ref, cache, &e);
	ok(img == NULL && strstr(e.msg, "NAME=VALUE"), "bad Env refused: %s", e.msg);
	make_layout(dir, l_good, "{\"config\":{\"WorkingDir\":\"rel\"}}", 0);
	img = oci_prepare(ref, cache, &e);
	ok(img == NULL && strstr(e.msg, "not an absolute path"), "relative WorkingDir refused");
	make_layout(dir, l_good, "{\"config\":{\"User\":\"nobody\"}}", 0);
	img = oci_prepare(ref, cache, &e);
	ok(img == NULL && strstr(e.msg, "not in the image's /etc/passwd"), "unknown user: %s",
	   e.msg);
	free(dir);
	free(ref);
}

/* A stand-in for sbx-image: a shell script with the given body. */
static char *fake_helper(const char *name, const char *body)
{
	char *p = xasprintf("%s/%s", tmp, name);
	FILE *f = fopen(p, "w");

	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(p, 0755);
	return p;
}

static void test_helper(void)
{
	char *h;
	struct oci_image *img;
	struct sbx_err e;

	ok(oci_is_ref("oci:/x") && oci_is_ref("oci-archive:x.tar:t") && !oci_is_ref("host") &&
	   !oci_is_ref("/srv/root") && !oci_is_ref("debian:bookworm-slim"), "oci_is_ref");
	h = fake_helper("good", "[ \"$1 $2 $3 $4\" = \"-homedir /h -- oci:/i\" ] || exit 9\n"
			"echo '{\"digest\":\"sha256:ab\",\"rootfs\":\"/r\",\"env\":[\"A=1\"],"
			"\"workdir\":\"/w\",\"user\":\"u\",\"uid\":5,\"gid\":6,\"unpacked\":true}'");
	img = oci_image_run(h, "oci:/i", "/h", &e);
	ok(img && strcmp(img->rootfs, "/r") == 0 && strcmp(img->env[0], "A=1") == 0 &&
	   img->uid == 5 && img->gid == 6 && img->unpacked, "the helper's document is read");
	oci_image_free(img);
	free(h);
	h = fake_helper("notfound", "echo 'sbx-image: image oci:/i: gone' >&2; exit 101");
	img = oci_image_run(h, "oci:/i", "/h", &e);
	ok(img == NULL && e.code == SBX_ENOTFOUND, "exit 101 is not found");
	is_str(e.msg, "image oci:/i: gone", "its message without the program name");
	free(h);
	h = fake_helper("garbage", "echo '{\"rootfs\":\"relative\"'");
	img = oci_image_run(h, "oci:/i", "/h", &e);
	ok(img == NULL && e.code == SBX_EIO && strstr(e.msg, "unexpected document"),
	   "a bad document is an error");
	free(h);
	h = fake_helper("silent", "kill -9 $$");
	img = oci_image_run(h, "oci:/i", "/h", &e);
	ok(img == NULL && e.code == SBX_EIO, "a killed helper is an error: %s", e.msg);
	free(h);
}

int main(void)
{
	char *cache;

	snprintf(tmp, sizeof tmp, "%s/test_oci.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(tmp) == NULL)
		return 1;
	cache = xasprintf("%s/cache", tmp);
	test_unpack(cache);
	test_refusals(cache);
	test_helper();
	fs_remove_tree(tmp);
	free(cache);
	return done_testing();
}
