/* sbx-init — the local backend's internal helper (installed in libexec, not for users).
 *   sbx-init supervise DIR NSLOCK UID GID IDMAP HOME INIT TOOLBOX ROOTFS -- BWRAP-ARGV... (host)
 *     holds DIR/lock for the sandbox's lifetime, runs bubblewrap, and tears the sandbox down
 *     when DIR/deadline passes or on SIGTERM.
 *   sbx-init serve                                           (inside the sandbox)
 *     the exec service on the listening socket inherited as fd 3.
 * Linked statically: it runs inside root filesystems that may lack a matching libc. */
#include <stdio.h>
#include <string.h>

#include "sbx-init/init.h"
#include "version.h"

static const char usage[] =
	"usage: sbx-init supervise DIR NSLOCK UID GID IDMAP HOME INIT TOOLBOX ROOTFS -- BWRAP-ARGV...\n"
	"       sbx-init serve\n"
	"sbx-init is started by sbx-create; it is not meant to be run by hand.\n";

int main(int argc, char **argv)
{
	/* answered like every sbx program, for whoever finds it in libexec */
	if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-version") == 0)) {
		printf("sbx-init (sbx) %s\n", SBX_VERSION);
		return fclose(stdout) == 0 ? 0 : EXIT_FAIL;
	}
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-help") == 0)) {
		fputs(usage, stdout);
		return fclose(stdout) == 0 ? 0 : EXIT_FAIL;
	}
	if (argc >= 2 && strcmp(argv[1], "serve") == 0)
		return init_serve(3);
	if (argc >= 13 && strcmp(argv[1], "supervise") == 0 && strcmp(argv[11], "--") == 0) {
		const char *const ids[3] = {argv[4], argv[5], argv[6]};
		const char *const stage[4] = {argv[7], argv[8], argv[9], argv[10]};
		return init_supervise(argv[2], argv[3], ids, stage, argv + 12);
	}
	fputs(usage, stderr);
	return EXIT_USAGE;
}
