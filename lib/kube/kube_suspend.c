/* kube_suspend.c — pausing a Sandbox on the kubernetes backend: Agent Sandbox's suspend
 * (spec.operatingMode Suspended; replicas 0 on v1alpha1, which its conversion maps to it).
 * The controller deletes the pod and keeps the Sandbox and the claims of its
 * volumeClaimTemplates, so only a Sandbox whose home is on a claim (-idle pause) is paused:
 * its home comes back from the volume on resume; its processes do not (a new pod starts).
 * Resume sets Running and waits for Ready; every use of a suspended Sandbox (exec, touch, a
 * reusing create) resumes it first. A claim that stays Pending is explained from its events. */
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeapi.h"
#include "timeutil.h"
#include "xalloc.h"


/* Sets the mode of a spec: v1alpha1's replicas when it has that field, else operatingMode. */
static void set_mode(struct json_object *spec, bool suspended)
{
	if (jsonfield_path(spec, JPATH("replicas")))
		jset(spec, "replicas", json_object_new_int(suspended ? 0 : 1));
	else
		jset(spec, "operatingMode", json_object_new_string(suspended ? "Suspended" : "Running"));
}

/* The mode of Sandbox o's spec, and with a home on a claim (-idle pause) the shutdownPolicy
 * that goes with it: Delete while suspended (the controller deletes it at the shutdown time a
 * pause sets), Retain while running (the shutdown time tears down the pod only). */
static void set_mode_policy(struct json_object *o, struct json_object *spec, bool suspended)
{
	set_mode(spec, suspended);
	if (kb_home_template(o))
		jset(spec, "shutdownPolicy", json_object_new_string(suspended ? "Delete" : "Retain"));
}

void kb_set_running(struct json_object *o, struct json_object *spec)
{
	set_mode_policy(o, spec, false);
}

int kb_delete_overdue(struct sbx_backend *b, const char *name, struct sbx_err *e)
{
	if (b->ops->remove(b, name, e) < 0)	/* the backend's own remove, through its table */
		return -1;
	return err_set(e, SBX_ENOTFOUND, "sandbox %s not found in namespace %s (it was paused past "
		       "its -paused-ttl and is deleted now)", name, b->namespace);
}

/* What a pause or a resume does to the spec: the mode, and the shutdown time (a paused
 * Sandbox goes after its -paused-ttl; a resumed one gets its own ttl back). */
struct mode_change {
	bool suspend;
	int64_t ttl_ns;
};

static int change_mode(struct json_object *o, struct json_object *spec, void *arg)
{
	struct mode_change *m = arg;
	char t[TIME_BUFSZ];

	/* already so (pausing twice is fine); an idle-expired Sandbox is paused, not running */
	if (m->suspend ? kb_spec_suspended(spec) : !kb_spec_suspended(spec) && !kb_idle_expired(o))
		return 1;
	set_mode_policy(o, spec, m->suspend);
	jset(spec, "shutdownTime",
	     json_object_new_string(time_rfc3339(time_now_ns() + m->ttl_ns, t, sizeof t)));
	return 0;
}

/* The ttl Sandbox o was made with (KB_TTL_KEY), else upstream's default. */
static int64_t ttl_of(struct json_object *o)
{
	return kb_secs_annotation(o, KB_TTL_KEY, SBX_DEFAULT_TTL_NS);
}

/* Sets the mode of Sandbox name (o: as read) and waits until the controller has done it. */
static int switch_mode(struct sbx_backend *b, const char *ver, const char *name,
		       struct json_object *o, bool suspend, struct json_object **out,
		       struct sbx_err *e)
{
	struct mode_change m = {.suspend = suspend,
				.ttl_ns = suspend ? kb_paused_ttl_of(o) : ttl_of(o)};
	struct json_object *u = NULL;

	if (kb_update(b, ver, name, change_mode, &m, &u, e) < 0)
		return -1;
	json_object_put(u);
	return suspend ? kb_wait_suspended(b, ver, name, out, e) : kb_wait_ready(b, ver, name, out, e);
}

/* GET of Sandbox name: *ver its version, *o the object. -1 with e (SBX_ENOTFOUND worded as
 * every tool words it; also for one paused past its -paused-ttl, deleted now). */
static int read_sandbox(struct sbx_backend *b, const char *name, const char **ver,
			struct json_object **o, struct sbx_err *e)
{
	char *path;
	int rc;

	if ((*ver = kb_version(b, e)) == NULL)
		return -1;
	path = kb_path(b, *ver, name);
	rc = kubeapi_request(kb_conn(b), "GET", path, NULL, o, e);
	free(path);
	if (rc < 0 && e->code == SBX_ENOTFOUND)
		err_set(e, SBX_ENOTFOUND, "sandbox %s not found in namespace %s", name, b->namespace);
	if (rc == 0 && kb_overdue(*o)) {
		json_object_put(*o);
		*o = NULL;
		return kb_delete_overdue(b, name, e);
	}
	return rc;
}

int kb_pause(struct sbx_backend *b, const char *name, bool paused, struct sbx_info *info,
	     struct sbx_err *e)
{
	struct json_object *o = NULL, *done = NULL;
	const char *ver;
	int rc = -1;

	if (read_sandbox(b, name, &ver, &o, e) < 0)
		goto out;
	if (paused && kb_home_template(o) == NULL) {
		err_set(e, SBX_EUNAVAIL, "sandbox %s keeps its home on an emptyDir, which suspending "
			"it would delete with its pod; a sandbox made with -idle pause has its home on "
			"a PersistentVolumeClaim and can be paused", name);
		goto out;
	}
	if (paused ? kb_suspended(o) && kb_cond_true(o, "Suspended")
		   : !kb_suspended(o) && kb_is_ready(o)) {
		done = json_object_get(o);	/* already so */
	} else if (switch_mode(b, ver, name, o, paused, &done, e) < 0) {
		goto out;
	}
	kb_fill_info(b, done, info);
	rc = 0;
out:
	json_object_put(done);
	json_object_put(o);
	return rc;
}

int kb_wake(struct sbx_backend *b, const char *name, struct sbx_err *e)
{
	struct json_object *o = NULL, *done = NULL;
	const char *ver;
	int rc = -1;

	if (read_sandbox(b, name, &ver, &o, e) < 0)
		rc = e->code == SBX_ENOTFOUND ? 0 : -1;
	else if (!kb_suspended(o) && !kb_idle_expired(o))
		rc = 0;
	else if (switch_mode(b, ver, name, o, false, &done, e) == 0)
		rc = 1;
	json_object_put(done);
	json_object_put(o);
	return rc;
}

