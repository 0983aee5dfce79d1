/* sbx-pool — keep N ready local sandboxes of one spec, for sbx-create of that spec to take. */
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "cancel.h"
#include "local_pool.h"
#include "cli.h"

/* Most sandboxes one pool keeps: each is a supervisor, a bubblewrap and a home image. */
#define POOL_SIZE_MAX 64
/* How often a running pool looks for taken and expired sandboxes to replace. */
#define POOL_PERIOD_MS 200
/* How long a pooled sandbox waits unclaimed before it is recycled (removed and replaced). */
#define POOL_TTL_NS (INT64_C(600) * 1000000000)

static const char usage[] =
	"usage: sbx-pool -size N [-once] [-namespace NS] [-image I] [-homedir D] [-ttl 10m]\n"
	"                " SPECFLAGS_SYNOPSIS_WRAPPED("                ") "\n"
	"Keeps N ready local sandboxes of the spec the flags give (as sbx-create's), under pool\n"
	"names; sbx-create NAME with the same spec takes one instead of starting a sandbox.\n"
	"Prints one JSON line (pool, namespace, ready, made) whenever it makes some; on SIGINT\n"
	"or SIGTERM removes the pooled sandboxes it kept and exits.\n"
	"\n"
	"  -size N               sandboxes to keep ready (1-64; 0 with -once: remove them)\n"
	"  -once                 fill the pool, print its line and exit (they stay their ttl)\n"
	"  -with-parent          stop (and remove them) when the process that started it ends\n"
	"                        (how agent-loop, acp-server and sbx-mcp -warm start it)\n"
	"  -backend B            local only (kubernetes pools are the cluster's)\n"
	"  -namespace NS         namespace; env SANDBOX_NAMESPACE, default \"default\"\n"
	"  -image I              as sbx-create's; env SANDBOX_IMAGE, default host\n"
	"  -homedir D            as sbx-create's; env SANDBOX_HOME_DIR\n"
	"  -ttl D                a pooled sandbox unclaimed for D is recycled (default 10m);\n"
	"                        a taken one gets sbx-create's -ttl from then\n"
	SPECFLAGS_USAGE
	"  -h                    show this help\n";

/* The line a fill prints. */
static int report(const struct sbx_backend *b, const struct sbx_spec *spec,
		  const struct local_pool_fill *f)
{
	char key[LOCAL_POOL_KEY_LEN + 1];
	struct json_object *o = json_object_new_object();
	int rc;

	local_pool_key(spec, key);
	json_object_object_add(o, "pool", json_object_new_string(key));
	json_object_object_add(o, "namespace", json_object_new_string(b->namespace));
	json_object_object_add(o, "ready", json_object_new_int(f->ready));
	json_object_object_add(o, "made", json_object_new_int(f->made));
	rc = cli_print_json(o);
	json_object_put(o);
	return rc;
}

/* Fills the pool every POOL_PERIOD_MS until a signal (or, with_parent, until the process
 * that started it ends); then drains it. */
static int keep(struct sbx_backend *b, const struct sbx_spec *spec, int size, int cancel,
		bool with_parent)
{
	struct local_pool_fill f;
	struct sbx_err e;
	bool first = true;
	pid_t parent = getppid();

	while (cancel_signal() == 0 && (!with_parent || getppid() == parent)) {
		struct pollfd p = {.fd = cancel, .events = POLLIN};
		if (local_pool_fill(b, spec, size, &f, &e) < 0)
			cli_warn("cannot fill the pool: %s", e.msg);
		else if ((f.made > 0 || first) && report(b, spec, &f) < 0)
			break;
		first = false;
		poll(&p, 1, POOL_PERIOD_MS);
	}
	if (local_pool_drain(b, spec, &e) < 0)
		cli_warn("cannot remove the pooled sandboxes: %s", e.msg);
	if (cancel_signal())
		return EXIT_SIGNAL_BASE + cancel_signal();
	return with_parent && getppid() != parent ? EXIT_OK : EXIT_FAIL;
}

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND | CLI_SBX_IMAGE | CLI_SBX_HOMEDIR |
					 CLI_SBX_TTL | CLI_SBX_SPEC, .ttl_ns = POOL_TTL_NS};
	long long size = 0;
	bool once = false, size_seen = false, with_parent = false;
	const struct flag flags[] = {
		{"size", FLAG_INT, &size, &size_seen},
		{"once", FLAG_BOOL, &once, NULL},
		{"with-parent", FLAG_BOOL, &with_parent, NULL},
		{NULL},
	};
	const struct cli c = {.usage = usage, .flags = flags, .sandbox = &sb, .max = 0};
	const char *kind;
	struct local_pool_fill f;
	struct sbx_spec spec;
	struct sbx_backend *b;
	struct sbx_err e;
	int cancel, rc;

	backend_spec_init(&spec);
	cli_parse(&c, argc, argv);
	if (!size_seen)
		cli_usage_error(usage, "missing -size N");
	if (size < !once || size > POOL_SIZE_MAX)
		cli_usage_error(usage, once ? "invalid -size: not between 0 and 64"
					    : "invalid -size: not between 1 and 64");
	kind = sb.backend ? sb.backend : "local";
	if (strcmp(kind, "local") != 0)
		cli_usage_error(usage, "sbx-pool keeps local sandboxes only: on kubernetes, a "
				"SandboxWarmPool keeps them");
	spec.ttl_ns = sb.ttl_ns;
	cli_sandbox_spec(&sb, &spec);
	if (specflags_apply(&sb.sf, &spec, &e) < 0 || backend_spec_check("local", &spec, &e) < 0 ||
	    local_pool_spec_check(&spec, &e) < 0)
		cli_die(EXIT_USAGE, "%s", e.msg);
	sb.backend = "local";
	b = cli_backend_open(&sb);
	if (!specflags_given(&sb.sf, SPECF_MEMORY))
		spec.limits.memory = backend_default_memory_of(b);
	if (once && size == 0) {
		if (local_pool_drain(b, &spec, &e) < 0)
			cli_die(cli_status(e.code), "unable to remove the pool: %s", e.msg);
		memset(&f, 0, sizeof f);
		rc = report(b, &spec, &f) < 0 ? EXIT_FAIL : EXIT_OK;
	} else if (once) {
		if (local_pool_fill(b, &spec, (int)size, &f, &e) < 0)
			cli_die(cli_status(e.code), "unable to fill the pool: %s", e.msg);
		rc = report(b, &spec, &f) < 0 ? EXIT_FAIL : EXIT_OK;
	} else {
		if ((cancel = cancel_install(&e)) < 0)
			cli_die_err("", &e);
		rc = keep(b, &spec, (int)size, cancel, with_parent);
	}
	backend_close(b);
	return cli_finish(rc);
}
