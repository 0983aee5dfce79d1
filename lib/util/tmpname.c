/* tmpname.c — temporaries named after their maker (see tmpname.h). */
#include "tmpname.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "fsutil.h"

/* /proc/PID/stat is one line of at most a few hundred bytes (comm is 16). */
#define STAT_MAX 4096

/* The first 8 hex digits of this boot's id, or "" when the kernel does not say. */
static void boot_id(char out[9])
{
	char *s = fs_read_small("/proc/sys/kernel/random/boot_id", 64, NULL);

	out[0] = '\0';
	if (s != NULL && strlen(s) >= 8)
		snprintf(out, 9, "%.8s", s);
	free(s);
}

/* pid's start time in clock ticks since boot (field 22 of /proc/PID/stat), or 0 (errno). */
static unsigned long long start_time(pid_t pid)
{
	char path[64], *s, *p;
	unsigned long long t = 0;
	int field;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((s = fs_read_small(path, STAT_MAX, NULL)) == NULL)
		return 0;
	/* after the command name, which may hold spaces and parentheses: its last ')' */
	if ((p = strrchr(s, ')')) != NULL) {
		for (field = 2; p && field < 22; field++)
			p = strchr(p + 1, ' ');
		if (p)
			t = strtoull(p + 1, NULL, 10);
	}
	free(s);
	if (t == 0)
		errno = ESRCH;
	return t;
}

int tmpname_make(const char *tool, const char *suffix, char out[TMPNAME_MAX])
{
	char boot[9];
	unsigned long long t = start_time(getpid());

	if (t == 0)
		return -1;
	boot_id(boot);
	snprintf(out, TMPNAME_MAX, ".%.32s-%s-%ld-%llu%.8s", tool, boot, (long)getpid(), t, suffix);
	return 0;
}

bool tmpname_stale(const char *tool, const char *name)
{
	char boot[9], theirs[9];
	long pid;
	unsigned long long t;
	size_t n = strlen(tool);

	if (name[0] != '.' || strncmp(name + 1, tool, n) != 0 || name[n + 1] != '-')
		return false;
	if (sscanf(name + n + 2, "%8[0-9a-f]-%ld-%llu", theirs, &pid, &t) != 3 || pid <= 0 ||
	    strlen(theirs) != 8)
		return false;
	boot_id(boot);
	if (strcmp(boot, theirs) != 0)
		return boot[0] != '\0';	/* made before this boot */
	if (pid == (long)getpid())
		return false;
	return start_time((pid_t)pid) != t;	/* no such process, or another one now */
}
