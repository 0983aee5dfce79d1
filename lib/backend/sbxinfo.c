/* sbxinfo.c — what a sandbox is, as every backend reports it: its info, network and limits as
 * JSON and back, and the default memory cap. One floor below the backends and their picker. */
#include "backend.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "duration.h"
#include "timeutil.h"

int64_t backend_default_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	int64_t half = pages > 0 && psize > 0 ? (int64_t)pages * psize / 2 : SBX_DEFAULT_MEMORY;

	return half < SBX_DEFAULT_MEMORY ? half : SBX_DEFAULT_MEMORY;
}

struct json_object *sbx_info_json(const struct sbx_info *in)
{
	struct json_object *o = json_object_new_object();
	char t[TIME_BUFSZ];

	json_object_object_add(o, "name", json_object_new_string(in->name));
	json_object_object_add(o, "namespace", json_object_new_string(in->namespace));
	json_object_object_add(o, "backend", json_object_new_string(in->backend ? in->backend : ""));
	json_object_object_add(o, "image", json_object_new_string(in->image));
	json_object_object_add(o, "homedir", json_object_new_string(in->homedir));
	json_object_object_add(o, "shutdown_time",
			       json_object_new_string(time_rfc3339(in->shutdown_ns, t, sizeof t)));
	json_object_object_add(o, "network", sbx_network_json(in));
	json_object_object_add(o, "limits", sbx_limits_json(&in->limits));
	json_object_object_add(o, "reused", json_object_new_boolean(in->reused));
	if (in->pooled)
		json_object_object_add(o, "pooled", json_object_new_boolean(1));
	if (in->pod_security[0])
		json_object_object_add(o, "pod_security", json_object_new_string(in->pod_security));
	if (in->runtime_class[0])
		json_object_object_add(o, "runtime_class", json_object_new_string(in->runtime_class));
	if (in->state[0])
		json_object_object_add(o, "state", json_object_new_string(in->state));
	if (in->home_volume[0]) {
		json_object_object_add(o, "home_volume", json_object_new_string(in->home_volume));
		json_object_object_add(o, "keeps_processes", json_object_new_boolean(0));
	}
	if (in->warm_pool[0])
		json_object_object_add(o, "warm_pool", json_object_new_string(in->warm_pool));
	if (in->claimed_sandbox[0])
		json_object_object_add(o, "sandbox", json_object_new_string(in->claimed_sandbox));
	sbx_idle_json(o, in);
	return o;
}

void sbx_idle_json(struct json_object *o, const struct sbx_info *in)
{
	char d[DURATION_BUFSZ], t[TIME_BUFSZ];

	if (in->idle != SBX_IDLE_PAUSE)
		return;
	json_object_object_add(o, "idle", json_object_new_string("pause"));
	json_object_object_add(o, "paused_ttl", json_object_new_string(
		duration_format(in->paused_ttl, d, sizeof d)));
	if (in->delete_ns || in->shutdown_ns)
		json_object_object_add(o, "delete_time", json_object_new_string(time_rfc3339(
			in->delete_ns ? in->delete_ns : in->shutdown_ns + in->paused_ttl, t, sizeof t)));
}

struct json_object *sbx_network_json(const struct sbx_info *in)
{
	struct json_object *o = json_object_new_object(), *list;
	const char *p = in->allow_hosts;

	json_object_object_add(o, "mode", json_object_new_string(
		p[0] ? "proxy" : in->network ? "nat" : "none"));
	if (p[0] == '\0')
		return o;
	list = json_object_new_array();
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		json_object_array_add(list, json_object_new_string_len(p, (int)n));
		p += n + (comma != NULL);
	}
	json_object_object_add(o, "allow_hosts", list);
	return o;
}

struct json_object *sbx_limits_json(const struct sbx_limits *l)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "enforced", json_object_new_boolean(l->enforced));
	if (!l->enforced)
		return o;
	json_object_object_add(o, "memory", json_object_new_int64(l->memory));
	json_object_object_add(o, "pids", json_object_new_int64(l->pids));
	if (l->cpus_milli % 1000 == 0)
		json_object_object_add(o, "cpus", json_object_new_int64(l->cpus_milli / 1000));
	else
		json_object_object_add(o, "cpus", json_object_new_double((double)l->cpus_milli / 1000));
	json_object_object_add(o, "disk", json_object_new_int64(l->disk));
	if (l->cgroup[0])
		json_object_object_add(o, "cgroup", json_object_new_string(l->cgroup));
	return o;
}

int sbx_limits_from_json(struct json_object *o, struct sbx_limits *l)
{
	struct json_object *v;

	memset(l, 0, sizeof *l);
	if (!json_object_is_type(o, json_type_object))
		return -1;
	if (json_object_object_get_ex(o, "enforced", &v))
		l->enforced = json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "memory", &v))
		l->memory = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "pids", &v))
		l->pids = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "cpus", &v))
		l->cpus_milli = (int64_t)(json_object_get_double(v) * 1000 + 0.5);
	if (json_object_object_get_ex(o, "disk", &v))
		l->disk = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "cgroup", &v))
		snprintf(l->cgroup, sizeof l->cgroup, "%s", json_object_get_string(v));
	return 0;
}
