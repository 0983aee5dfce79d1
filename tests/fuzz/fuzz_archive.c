/* fuzz_archive.c — the archive checker and extractor restore relies on. Each input is an
 * archive (any compression): archive_check_fd must not crash; when it accepts the input,
 * archive_unpack_fd must accept it too, and nothing may appear outside the directory it
 * extracts into (a jail holds only that directory). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "fsutil.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Small, so bombs are caught quickly and extraction stays cheap. */
#define FUZZ_MAX_BYTES (1u << 20)

static char jail[64], home[96];

/* Whether the jail holds exactly one entry: the home. */
static int jail_clean(void)
{
	DIR *d = opendir(jail);
	struct dirent *de;
	int n = 0, ok = 1;

	if (d == NULL)
		abort();
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if (strcmp(de->d_name, "home") != 0)
			ok = 0;
	}
	closedir(d);
	return ok && n == 1;
}

static void cleanup(void)
{
	fs_remove_tree(jail);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct archive_stats st;
	struct sbx_err e;
	int fd = memfd_create("fuzz", 0), rc;

	if (jail[0] == '\0') {
		snprintf(jail, sizeof jail, "/tmp/fuzz_archive.XXXXXX");
		if (mkdtemp(jail) == NULL)
			abort();
		snprintf(home, sizeof home, "%s/home", jail);
		atexit(cleanup);
	}
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	lseek(fd, 0, SEEK_SET);
	rc = archive_check_fd(fd, -1, FUZZ_MAX_BYTES, ARCHIVE_LINKS_SKIP, NULL, NULL, &st, &e);
	archive_stats_free(&st);
	if (rc == 0) {
		if (mkdir(home, 0700) < 0)
			abort();
		lseek(fd, 0, SEEK_SET);
		if (archive_unpack_fd(fd, home, FUZZ_MAX_BYTES, &st, &e) < 0 &&
		    strncmp(e.msg, "cannot", 6) != 0)
			abort();	/* the checker let through what the extractor's policy refuses */
		archive_stats_free(&st);
		chmod(home, 0700);
		if (!jail_clean() || fs_remove_tree(home) < 0)
			abort();
	}
	close(fd);
	return 0;
}
