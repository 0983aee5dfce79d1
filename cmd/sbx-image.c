/* sbx-image — unpack an OCI image into the local backend's rootfs cache and describe it. */
#include <locale.h>
#include <stdlib.h>

#include "oci.h"
#include "paths.h"
#include "xalloc.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-image [-homedir D] IMAGE\n"
	"Verifies the OCI image IMAGE (oci-archive:PATH[:TAG] or oci:DIR[:TAG]), unpacks it once\n"
	"into the local backend's cache ($XDG_STATE_HOME/sbx/images/<digest>/rootfs) and prints\n"
	"its rootfs, Env, WorkingDir and User as one JSON line. sbx-create -image runs it.\n"
	"\n"
	"  -homedir D  also make D (absolute) a directory in the rootfs, as a mount point\n"
	"  -h          show this help\n";

int main(int argc, char **argv)
{
	const char *homedir = NULL;
	const struct flag flags[] = {
		{"homedir", FLAG_STRING, &homedir, NULL},
		{NULL, 0, NULL, NULL},
	};
	const struct cli c = {.usage = usage, .flags = flags, .min = 1, .max = 1,
			      .missing = "missing IMAGE"};
	struct oci_image *img;
	struct json_object *o;
	struct sbx_err e;
	char *root, *cache;
	int i = cli_parse(&c, argc, argv), rc;

	/* Layer member names are UTF-8 (pax); libarchive converts them to the locale's charset,
	 * so use one that holds them all, whatever the caller's environment says. */
	setlocale(LC_CTYPE, "C.UTF-8");
	if (!oci_is_ref(argv[i]))
		cli_usage_error(usage, "IMAGE must start with oci-archive: or oci:");
	if (homedir && homedir[0] != '/')
		cli_usage_error(usage, "-homedir must be an absolute path");
	if ((root = paths_state_root(&e)) == NULL)
		cli_die_err("", &e);
	cache = xasprintf("%s/images", root);
	img = oci_prepare(argv[i], cache, &e);
	if (img == NULL || (homedir && oci_mountpoint(img, homedir, &e) < 0))
		cli_die(cli_status(e.code), "image %s: %s", argv[i], e.msg);
	o = oci_image_json(img, argv[i]);
	rc = cli_print_json(o) < 0 ? EXIT_FAIL : EXIT_OK;
	json_object_put(o);
	oci_image_free(img);
	free(cache);
	free(root);
	return cli_finish(rc);
}
