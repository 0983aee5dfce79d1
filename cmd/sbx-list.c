/* sbx-list — one JSON line per sandbox in a namespace. */
#include <string.h>

#include "duration.h"
#include "local_pool.h"
#include "portfwd.h"
#include "timeutil.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-list [-backend local|kubernetes] [-namespace NS]\n"
	"Prints one JSON line per sandbox: name, namespace, backend, age, created,\n"
	"shutdown_time, limits, ready, network (mode none, nat or proxy, and allow_hosts), state\n"
	"(local: running or paused), ports (sbx-port -d's forwards on this host: port, url,\n"
	"listen or unix), and with -idle pause idle, paused_ttl and delete_time (when a paused\n"
	"sandbox is deleted); a local sandbox whose state is corrupt: name, namespace,\n"
	"backend, ready false, state \"broken\" and reason (sbx-create NAME replaces it).\n"
	"Local sandboxes kept by sbx-pool come after the others, named after their pool\n"
	"slot, with state \"pooled\" and pool (the key of their spec).\n"
	"\n"
	CLI_SBX_USAGE
	"  -h             show this help\n";

static int print_doc(const struct sbx_info *in, const char *pool, void *arg)
{
	struct json_object *o = json_object_new_object();
	char t[TIME_BUFSZ], d[DURATION_BUFSZ];
	int64_t age = time_now_ns() - in->created_ns;
	int *failed = arg;

	age -= age % 1000000000;	/* whole seconds, as kubectl shows ages */
	json_object_object_add(o, "name", json_object_new_string(in->name));
	if (in->broken[0]) {	/* nothing else of it is known */
		json_object_object_add(o, "namespace", json_object_new_string(in->namespace));
		json_object_object_add(o, "backend", json_object_new_string(in->backend));
		json_object_object_add(o, "ready", json_object_new_boolean(0));
		json_object_object_add(o, "state", json_object_new_string("broken"));
		json_object_object_add(o, "reason", json_object_new_string(in->broken));
		goto print;
	}
	json_object_object_add(o, "namespace", json_object_new_string(in->namespace));
	json_object_object_add(o, "backend", json_object_new_string(in->backend));
	json_object_object_add(o, "age", json_object_new_string(
		in->created_ns ? duration_format(age < 0 ? 0 : age, d, sizeof d) : ""));
	json_object_object_add(o, "created", json_object_new_string(
		in->created_ns ? time_rfc3339(in->created_ns, t, sizeof t) : ""));
	json_object_object_add(o, "shutdown_time", json_object_new_string(
		in->shutdown_ns ? time_rfc3339(in->shutdown_ns, t, sizeof t) : ""));
	json_object_object_add(o, "limits", sbx_limits_json(&in->limits));
	json_object_object_add(o, "ready", json_object_new_boolean(in->ready));
	json_object_object_add(o, "network", sbx_network_json(in));
	if (in->state[0])
		json_object_object_add(o, "state", json_object_new_string(in->state));
	if (in->claimed_sandbox[0])	/* kubernetes -warm-pool: the Sandbox bound to the claim */
		json_object_object_add(o, "sandbox", json_object_new_string(in->claimed_sandbox));
	if (pool)
		json_object_object_add(o, "pool", json_object_new_string(pool));
	/* sbx-port -d's forwards */
	json_object_object_add(o, "ports", strcmp(in->backend, "local") == 0
			       ? portfwd_ports(in->namespace, in->name)
			       : portfwd_remote_ports(in->backend, in->namespace, in->name));
	sbx_idle_json(o, in);
print:
	if (cli_print_json(o) < 0)
		*failed = 1;
	json_object_put(o);
	return *failed;
}

static int print_one(const struct sbx_info *in, void *arg)
{
	return print_doc(in, NULL, arg);
}

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const struct cli c = {.usage = usage, .sandbox = &sb, .max = 0};
	struct sbx_backend *b;
	struct sbx_err e;
	int failed = 0;

	cli_parse(&c, argc, argv);
	b = cli_backend_open(&sb);
	if (b->ops->list(b, print_one, &failed, &e) < 0)
		cli_die(cli_status(e.code), "unable to list sandboxes: %s", e.msg);
	if (!failed && strcmp(b->ops->name, "local") == 0 &&
	    local_pool_list(b, print_doc, &failed, &e) < 0)
		cli_die(cli_status(e.code), "unable to list pooled sandboxes: %s", e.msg);
	backend_close(b);
	return cli_finish(failed ? EXIT_FAIL : EXIT_OK);
}
