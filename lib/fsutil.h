/* fsutil.h — small file-system operations shared by the host tools and sbx-init (which links
 * this file statically, so it uses libc only). */
#ifndef SBX_FSUTIL_H
#define SBX_FSUTIL_H

#include <stddef.h>

/* rm -rf path without following symlinks; a missing path is success. Returns 0 or -1 (errno). */
int fs_remove_tree(const char *path);
/* Empties the directory path (each entry removed as fs_remove_tree does); path stays. Returns
 * 0 or -1 (errno). */
int fs_clear_dir(const char *path);
/* Writes data to path atomically (a new path.XXXXXX, fsync, rename, fsync of the directory)
 * with mode. Returns 0 or -1 (errno). */
int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode);
/* Reads a whole small file (at most max bytes) into a new NUL-terminated buffer. NULL + errno
 * on failure (EFBIG when larger than max). */
char *fs_read_small(const char *path, size_t max, size_t *len);
/* Reads what path holds from offset from on, at most its last max bytes, into a new
 * NUL-terminated buffer (empty when nothing is there). NULL + errno on failure. */
char *fs_read_tail(const char *path, long long from, size_t max, size_t *len);

#endif
