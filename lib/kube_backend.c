/* kube_backend.c — placeholder until the Kubernetes backend lands (issue 3). */
#include "backend.h"

static int unavailable(struct sbx_err *e)
{
	return err_set(e, SBX_EUNAVAIL, "the kubernetes backend is not built yet");
}

static int k_create(struct sbx_backend *b, const struct sbx_spec *s, struct sbx_info *i,
		    struct sbx_err *e)
{
	(void)b, (void)s, (void)i;
	return unavailable(e);
}

static int k_exec(struct sbx_backend *b, const char *n, const struct sbx_exec *x,
		  struct sbx_exec_result *r, struct sbx_err *e)
{
	(void)b, (void)n, (void)x, (void)r;
	return unavailable(e);
}

static int k_touch(struct sbx_backend *b, const char *n, int64_t t, struct sbx_info *i,
		   struct sbx_err *e)
{
	(void)b, (void)n, (void)t, (void)i;
	return unavailable(e);
}

static int k_remove(struct sbx_backend *b, const char *n, struct sbx_err *e)
{
	(void)b, (void)n;
	return unavailable(e);
}

static int k_get(struct sbx_backend *b, const char *n, struct sbx_info *i, struct sbx_err *e)
{
	(void)b, (void)n, (void)i;
	return unavailable(e);
}

static int k_list(struct sbx_backend *b, int (*fn)(const struct sbx_info *, void *), void *arg,
		  struct sbx_err *e)
{
	(void)b, (void)fn, (void)arg;
	return unavailable(e);
}

const struct backend_ops kube_backend_ops = {
	.name = "kubernetes",
	.create = k_create,
	.exec = k_exec,
	.touch = k_touch,
	.remove = k_remove,
	.get = k_get,
	.list = k_list,
};
