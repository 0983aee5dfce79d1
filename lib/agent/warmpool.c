/* warmpool.c — sbx-pool beside agent-loop, acp-server or sbx-mcp (-warm N). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "child.h"
#include "warmpool.h"
#include "xalloc.h"

int warmpool_start(int n, const struct warmpool_spec *spec, pid_t *pid, struct sbx_err *e)
{
	struct strvec a = {0};
	char *dir, *path;
	int null, rc;

	*pid = 0;
	if (n <= 0 || strcmp(spec->backend, "local") != 0)
		return 0;
	/* sbx-pool would refuse them at its start: said here, before the session's first call */
	for (char *const *w = spec->create_args; w && *w; w++)
		if (strncmp(*w, "-secret=", 8) == 0)
			return err_set(e, SBX_EINVAL, "-warm cannot keep -secret sandboxes ready (a "
				       "secret's value is read when its sandbox is made): give one "
				       "or the other");
	dir = child_self_dir();
	path = dir ? child_find(dir, "sbx-pool") : NULL;
	free(dir);
	if (path == NULL)
		return err_set(e, SBX_EUNAVAIL, "-warm: cannot find sbx-pool next to this program");
	strvec_push(&a, path);
	strvec_pushf(&a, "-size=%d", n);
	if (spec->ns)
		strvec_pushf(&a, "-namespace=%s", spec->ns);
	if (spec->image)
		strvec_pushf(&a, "-image=%s", spec->image);
	strvec_pushf(&a, "-homedir=%s", spec->homedir ? spec->homedir : backend_env_homedir());
	strvec_push(&a, "-with-parent");	/* it ends with us, even killed */
	for (char *const *w = spec->create_args; w && *w; w++)
		strvec_push(&a, *w);
	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
		rc = err_sys(e, errno, "cannot open /dev/null");
	} else {
		struct child_req r = CHILD_REQ_INIT(.path = path, .argv = a.v);
		rc = child_start(&r, null, null, -1, pid, e) == 0 ? 0 : -1;
		if (rc < 0)
			err_prefix(e, "-warm: cannot start sbx-pool");
		close(null);
	}
	strvec_clear(&a);
	free(path);
	return rc;
}

void warmpool_stop(pid_t pid)
{
	int st;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}
