/* fsutil.h — small file-system operations shared by the host tools and sbx-init (which links
 * this file statically, so it uses libc only). */
#ifndef SBX_FSUTIL_H
#define SBX_FSUTIL_H

#include <stddef.h>

/* rm -rf path without following symlinks; a missing path is success. Returns 0 or -1 (errno). */
int fs_remove_tree(const char *path);
/* The same for name in the directory dirfd (AT_FDCWD: the working directory), never
 * following a symlink on the way. */
int fs_remove_at(int dirfd, const char *name);
/* Empties the directory open as dirfd by names relative to it (each entry as fs_remove_at).
 * Returns 0 or -1 (errno). */
int fs_clear_at(int dirfd);
/* Opens path below dirfd as openat(2) with flags would, except that no component may be a
 * symlink (ELOOP) or lead out of dirfd (".." or absolute: EXDEV): openat2(2) with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, or one component at a time
 * with O_NOFOLLOW where the kernel has no openat2. With O_PATH | O_NOFOLLOW a trailing symlink
 * itself is opened. Always O_CLOEXEC. Returns the fd or -1 (errno). */
int fs_open_beneath(int dirfd, const char *path, int flags, unsigned mode);
/* Empties the directory path (each entry removed as fs_remove_tree does); path stays. Returns
 * 0 or -1 (errno). */
int fs_clear_dir(const char *path);
/* Writes data to path atomically (a new path.XXXXXX, fsync, rename, fsync of the directory)
 * with mode. Returns 0 or -1 (errno). */
int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode);
/* The same without the fsyncs: readers and a crash of the writer see the old file or the new
 * one, never a part; a power loss may lose it (for state that does not outlive a reboot). */
int fs_write_replace(const char *path, const void *data, size_t len, unsigned mode);
/* Reads a whole small file (at most max bytes) into a new NUL-terminated buffer. NULL + errno
 * on failure (EFBIG when larger than max). */
char *fs_read_small(const char *path, size_t max, size_t *len);
/* Reads what path holds from offset from on, at most its last max bytes, into a new
 * NUL-terminated buffer (empty when nothing is there). NULL + errno on failure. */
char *fs_read_tail(const char *path, long long from, size_t max, size_t *len);

#endif
