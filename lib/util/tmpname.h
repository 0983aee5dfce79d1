/* tmpname.h — names of temporaries that say who made them: ".TOOL-BOOT-PID-START" (the
 * first 8 hex digits of this boot's id, the maker's pid and its start time in clock ticks),
 * so that a later run finding one can tell whether its maker is gone (another boot, no such
 * pid, or a pid since reused) and remove it, as git does with stale lock files. libc only.
 * Ownership: nothing returned needs freeing. */
#ifndef SBX_TMPNAME_H
#define SBX_TMPNAME_H

#include <stdbool.h>
#include <stddef.h>

/* Room for a name (the tool's name up to 32 bytes, and a suffix of up to 8). */
#define TMPNAME_MAX 96

/* This process's temporary name for tool ("sbx-cp"), with suffix appended, into out. 0, or
 * -1 with errno when /proc cannot tell this process's start time. */
int tmpname_make(const char *tool, const char *suffix, char out[TMPNAME_MAX]);
/* Whether name is one of tool's temporaries whose maker is gone (never this process's own,
 * never one whose maker may still run). */
bool tmpname_stale(const char *tool, const char *name);

#endif
