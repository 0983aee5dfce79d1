/* paths.c — host-side locations, from the environment like upstream. */
#include "paths.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "name.h"
#include "xalloc.h"

static const char *home(struct sbx_err *e)
{
	const char *h = getenv("HOME");

	if (h == NULL || *h == '\0') {
		err_set(e, SBX_EINVAL, "HOME is not set");
		return NULL;
	}
	return h;
}

char *paths_state_root(struct sbx_err *e)
{
	const char *x = getenv("XDG_STATE_HOME"), *h;

	if (x != NULL && x[0] == '/')
		return xasprintf("%s/sbx", x);
	if ((h = home(e)) == NULL)
		return NULL;
	return xasprintf("%s/.local/state/sbx", h);
}

char *paths_session_root(struct sbx_err *e)
{
	const char *h = home(e);

	return h ? xasprintf("%s/.local/sandboxed-tools", h) : NULL;
}

int paths_mkdirs(const char *path, unsigned mode, struct sbx_err *e)
{
	char *p = xstrdup(path), *s;
	int rc = 0;

	for (s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, mode) < 0 && errno != EEXIST) {
				rc = err_sys(e, errno, "cannot create directory %s", p);
				break;
			}
			*s = c;
			if (c == '\0')
				break;
		}
	}
	free(p);
	return rc;
}

char *paths_session_dir(const char *session, const char *leaf, struct sbx_err *e)
{
	char *root, *dir;

	if (name_check(session, e) < 0)
		return NULL;
	if ((root = paths_session_root(e)) == NULL)
		return NULL;
	dir = xasprintf("%s/%s/%s", root, session, leaf);
	free(root);
	if (paths_mkdirs(dir, 0700, e) < 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* Finds a helper program next to this executable, or in ../libexec/sbx. */
char *paths_helper(const char *env, const char *name)
{
	char exe[PATH_MAX], *slash, *p;
	const char *v = getenv(env);
	ssize_t n;

	if (v && *v)
		return access(v, X_OK) == 0 ? xstrdup(v) : NULL;
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash == NULL)
		return NULL;
	*slash = '\0';
	p = xasprintf("%s/%s", exe, name);
	if (access(p, X_OK) == 0)
		return p;
	free(p);
	p = xasprintf("%s/../libexec/sbx/%s", exe, name);
	if (access(p, X_OK) == 0)
		return p;
	free(p);
	return NULL;
}

char *paths_which(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *found = NULL;

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 ? xstrdup(prog) : NULL;
	copy = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char *p = xasprintf("%s/%s", dir, prog);
		if (access(p, X_OK) == 0) {
			found = p;
			break;
		}
		free(p);
	}
	free(copy);
	return found;
}

int paths_token_write(const char *path, const char *token, struct sbx_err *e)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/'), *line;
	int rc = 0;

	if (slash && slash != dir) {
		*slash = '\0';
		rc = paths_mkdirs(dir, 0700, e);
	}
	free(dir);
	if (rc < 0)
		return -1;
	line = xasprintf("%s\n", token);
	if (fs_write_atomic(path, line, strlen(line), 0600) < 0)
		rc = err_sys(e, errno, "cannot write token file %s", path);
	explicit_bzero(line, strlen(line));
	free(line);
	return rc;
}
