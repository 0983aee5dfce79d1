/* fuzz_lpayload.c — the exec service's request decoder (sbx-init serve), which reads what a
 * client sends over the sandbox's socket. Every string it returns must lie inside the input.
 * serve.c calls the in-sandbox half of lib/local/local_bwrap.c, built here as sbx-init builds it. */
// FUZZ_SOURCES: -DSBX_INIT lib/local/local_bwrap.c -lseccomp
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define main sbx_init_main_unused
#include "../../cmd/sbx-init/serve.c"
#undef main

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *buf, *workdir = NULL, **argv = NULL, **env = NULL;

	if (size > LP_MAX_PAYLOAD)
		return 0;
	buf = malloc(size + 1);
	memcpy(buf, data, size);
	if (parse_payload(buf, (uint32_t)size, &workdir, &argv, &env) == 0) {
		for (char **p = argv; *p; p++)
			if (*p < buf || *p >= buf + size || strlen(*p) >= size)
				abort();
		for (char **p = env; *p; p++)
			if (*p < buf || *p >= buf + size)
				abort();
		if (workdir < buf || workdir >= buf + size)
			abort();
	}
	free(argv);
	free(env);
	free(buf);
	return 0;
}
