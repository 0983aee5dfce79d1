/* gemini_path.h — gemini-cli's validatePath (utils/path-validator.js): the checks every file
 * tool and run_shell_command's dir_path pass before anything is touched. Shared by libsbx
 * and the static geminicli-toolbox; no allocation. */
#ifndef SBX_GCPATH_H
#define SBX_GCPATH_H

#include <stddef.h>

/* gemini-cli's limits, in JavaScript characters (UTF-16 code units). */
#define GEMINI_PATH_MAX_CHARS 4096
#define GEMINI_PATH_COMPONENT_MAX_CHARS 255

/* NULL when p (a resolved path, UTF-8) is acceptable, else the reason after `Invalid path: `,
 * written into buf[0..size). */
const char *gemini_path_invalid(const char *p, char *buf, size_t size);

#endif
