/* oci_image.c — an OCI image as the local backend holds it: the handle sbx-image prints (its
 * rootfs, Env, WorkingDir, User), read back by running sbx-image, so the commands that only
 * run images never load libarchive or OpenSSL. */
#include "oci.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "exitcode.h"
#include "gojson.h"
#include "jsonfield.h"
#include "xalloc.h"

/* sbx-image prints one line with the image's Env: a few KiB; 1 MiB is not ours. */
#define HELPER_OUT_MAX (1024 * 1024)

int oci_is_ref(const char *image)
{
	return strncmp(image, "oci:", 4) == 0 || strncmp(image, "oci-archive:", 12) == 0;
}

void oci_image_free(struct oci_image *img)
{
	if (img == NULL)
		return;
	for (size_t i = 0; img->env && img->env[i]; i++)
		free(img->env[i]);
	free(img->env);
	free(img->rootfs);
	free(img->workdir);
	free(img->user);
	free(img);
}

struct json_object *oci_image_json(const struct oci_image *img, const char *ref)
{
	struct json_object *o = json_object_new_object(), *env = json_object_new_array();

	for (size_t i = 0; img->env[i]; i++)
		json_object_array_add(env, json_object_new_string(img->env[i]));
	json_object_object_add(o, "image", json_object_new_string(ref));
	json_object_object_add(o, "digest", json_object_new_string(img->digest));
	json_object_object_add(o, "rootfs", json_object_new_string(img->rootfs));
	json_object_object_add(o, "env", env);
	json_object_object_add(o, "workdir", json_object_new_string(img->workdir));
	json_object_object_add(o, "user", json_object_new_string(img->user));
	json_object_object_add(o, "uid", json_object_new_int64(img->uid));
	json_object_object_add(o, "gid", json_object_new_int64(img->gid));
	json_object_object_add(o, "unpacked", json_object_new_boolean(img->unpacked));
	return o;
}

static struct oci_image *from_json(const char *text, size_t len, struct sbx_err *e)
{
	struct oci_image *img = xcalloc(1, sizeof *img);
	const char *why;
	struct json_object *o = gojson_parse(text, len, &why), *env, *v;
	const char *rootfs, *workdir, *user, *digest;
	size_t i, n;

	rootfs = o ? jsonfield_str(o, "rootfs") : NULL;
	workdir = o ? jsonfield_str(o, "workdir") : NULL;
	user = o ? jsonfield_str(o, "user") : NULL;
	digest = o ? jsonfield_str(o, "digest") : NULL;
	if (!rootfs || rootfs[0] != '/' || !workdir || !user || !digest ||
	    !json_object_object_get_ex(o, "env", &env) || !json_object_is_type(env, json_type_array)) {
		err_set(e, SBX_EIO, "sbx-image printed an unexpected document");
		json_object_put(o);
		oci_image_free(img);
		return NULL;
	}
	img->rootfs = xstrdup(rootfs);
	img->workdir = xstrdup(workdir);
	img->user = xstrdup(user);
	snprintf(img->digest, sizeof img->digest, "%s", digest);
	n = json_object_array_length(env);
	img->env = xcalloc(n + 1, sizeof(char *));
	for (i = 0; i < n; i++)
		img->env[i] = xstrdup(json_object_get_string(json_object_array_get_idx(env, i)));
	if (json_object_object_get_ex(o, "uid", &v))
		img->uid = (uid_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "gid", &v))
		img->gid = (gid_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "unpacked", &v))
		img->unpacked = json_object_get_boolean(v);
	json_object_put(o);
	return img;
}

struct oci_image *oci_image_run(const char *helper, const char *ref, const char *homedir,
				 struct sbx_err *e)
{
	char *const argv[] = {(char *)helper, "-homedir", (char *)homedir, "--", (char *)ref, NULL};
	struct child_req r = CHILD_REQ_INIT(.path = helper, .argv = argv, .out_max = HELPER_OUT_MAX);
	struct child_result res;
	struct oci_image *img = NULL;
	char *msg;

	if (child_run(&r, &res, e) < 0)
		return NULL;
	if (res.status == 0) {
		img = from_json(res.out, res.out_len, e);
	} else {
		/* "sbx-image: what: why" — what follows the program name. */
		int code = res.signal ? SBX_EIO : exitcode_to_err(res.status);
		msg = child_err_message(&res, "sbx-image");
		if (*msg)
			err_set(e, code, "%s", msg);
		else
			err_set(e, code, "%s failed (status %d)", helper, res.status);
		free(msg);
	}
	child_result_free(&res);
	return img;
}
