/* fuzz_kubeconfig.c — kubeconfig YAML loading: each input is written to a file in a private
 * directory and loaded as $KUBECONFIG would be. Loading must fail cleanly or give a server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "kubeconfig.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static char dir[64], path[96];

static void cleanup(void)
{
	fs_remove_tree(dir);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct kubeconfig kc = {0};
	struct sbx_err e;
	FILE *f;

	if (dir[0] == '\0') {
		snprintf(dir, sizeof dir, "/tmp/fuzz_kubeconfig.XXXXXX");
		if (mkdtemp(dir) == NULL)
			abort();
		snprintf(path, sizeof path, "%s/config", dir);
		atexit(cleanup);
		/* No exec plugin may run and no in-cluster config may be found. */
		setenv("PATH", "/nonexistent", 1);
	}
	f = fopen(path, "w");
	if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	if (kubeconfig_load_files(&kc, path, &e) == 0 && (kc.server == NULL || kc.source == NULL))
		abort();
	kubeconfig_free(&kc);
	return 0;
}
