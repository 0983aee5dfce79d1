/* kube_ready.c — waiting until a Sandbox is ready (or, after a pause, suspended): a watch
 * (polling as fallback) that gives up at once on a Sandbox or pod that cannot start by
 * waiting (an image that cannot be pulled, a pod Pod Security admission refuses, a home claim
 * that cannot be provisioned), with the reason in the error. */
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "kubeapi.h"
#include "timeutil.h"
#include "xalloc.h"

/* Event messages come from the cluster's components: bounded in what sbx repeats. */
#define KB_EVENT_TEXT_MAX 300

/* Upstream waits this long for Ready=True; $SBX_KUBE_READY_TIMEOUT overrides it (tests). */
#define KB_READY_TIMEOUT_NS (INT64_C(180) * 1000000000)
/* While a Sandbox is not ready its pod is looked at after this long, then at doubling
 * intervals up to the maximum (a pod stuck pulling its image fails the create at once). */
#define KB_POD_CHECK_NS (INT64_C(1000) * 1000000)
#define KB_POD_CHECK_MAX_NS (INT64_C(8000) * 1000000)
/* Watches that end early (server-side timeouts) are restarted at most this often. */
#define KB_WATCH_RESTARTS 20

/* Container states of a pod that will not start by waiting (kubelet's reasons): an image that
 * cannot be named, a container that cannot be made or keeps crashing. A pull that fails
 * (ErrImagePull, ImagePullBackOff) is not among them: registries fail for a while, and the
 * kubelet tries again, so it is waited out up to the deadline, whose message names it. */
static const char *const stuck_waiting[] = {
	"InvalidImageName", "ErrImageNeverPull",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError",
	"CrashLoopBackOff", NULL,
};

static bool in_list(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

/* The Sandbox's Ready condition (NULL if it has none). */
static struct json_object *ready_condition(struct json_object *o)
{
	struct json_object *conds = jsonfield_path(o, JPATH("status", "conditions"));

	for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = jsonfield_path_str(c, JPATH("type"));
		if (t && strcmp(t, "Ready") == 0)
			return c;
	}
	return NULL;
}

/* Why the Sandbox will not become ready by waiting, from its Ready condition, or NULL: its
 * pod ended (PodFailed, PodSucceeded), or the controller cannot make the pod because the API
 * server refuses it (ReconcilerError "... is forbidden: ..." from Pod Security admission, a
 * missing RuntimeClass or a quota; "... is invalid: ..."). New string. */
static char *sandbox_stuck(struct json_object *o)
{
	struct json_object *c = ready_condition(o);
	const char *st = jsonfield_path_str(c, JPATH("status")), *r = jsonfield_path_str(c, JPATH("reason")),
		   *m = jsonfield_path_str(c, JPATH("message"));

	if (c == NULL || st == NULL || strcmp(st, "False") != 0 || r == NULL)
		return NULL;
	if (strcmp(r, "PodFailed") == 0 || strcmp(r, "PodSucceeded") == 0 ||
	    (strcmp(r, "ReconcilerError") == 0 && m &&
	     (strstr(m, " is forbidden: ") || strstr(m, " is invalid: "))))
		return xasprintf("%s: %s", r, m && *m ? m : "(no message)");
	return NULL;
}

/* What the Sandbox's pod shows: *fatal set when it cannot start by waiting (a terminal phase,
 * a container stuck in one of stuck_waiting or terminated); otherwise the latest reason it is
 * not running yet (a container's waiting reason, e.g. ErrImagePull, else the pod's condition,
 * e.g. Unschedulable), for the timeout message. NULL when nothing to say or
 * no pod yet. New string. */
static char *pod_state(struct kubeapi *api, const char *ns, const char *name, bool *fatal)
{
	char *path = xasprintf("/api/v1/namespaces/%s/pods/%s", ns, name), *why = NULL;
	struct json_object *p = NULL, *cs, *conds;
	struct sbx_err ignored;
	const char *phase, *s;

	*fatal = false;
	if (kubeapi_request(api, "GET", path, NULL, &p, &ignored) < 0 || p == NULL)
		goto out;
	phase = jsonfield_path_str(p, JPATH("status", "phase"));
	if (phase && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0)) {
		*fatal = true;
		s = jsonfield_path_str(p, JPATH("status", "message"));
		why = xasprintf("pod %s is %s%s%s", name, phase, s ? ": " : "", s ? s : "");
		goto out;
	}
	cs = jsonfield_path(p, JPATH("status", "containerStatuses"));
	for (size_t i = 0; cs && json_object_is_type(cs, json_type_array) &&
			   i < json_object_array_length(cs); i++) {
		struct json_object *c = json_object_array_get_idx(cs, i);
		const char *cn = jsonfield_path_str(c, JPATH("name")), *r = jsonfield_path_str(c, JPATH("state", "waiting", "reason")),
			   *m = jsonfield_path_str(c, JPATH("state", "waiting", "message"));
		if (jsonfield_path(c, JPATH("state", "terminated"))) {
			r = jsonfield_path_str(c, JPATH("state", "terminated", "reason"));
			m = jsonfield_path_str(c, JPATH("state", "terminated", "message"));
			*fatal = true;
		} else if (in_list(r, stuck_waiting)) {
			*fatal = true;
		} else if (r == NULL || m == NULL || why != NULL) {
			/* The latest waiting reason with a message (ErrImagePull's, not the plain
			 * ContainerCreating, where the pod's condition says more): the first one. */
			continue;
		}
		free(why);
		why = xasprintf("pod %s: container %s: %s%s%s", name, cn ? cn : "?",
				r ? r : "Terminated", m ? ": " : "", m ? m : "");
		if (*fatal)
			goto out;
	}
	conds = jsonfield_path(p, JPATH("status", "conditions"));
	for (size_t i = 0; why == NULL && conds && json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *st = jsonfield_path_str(c, JPATH("status")), *r = jsonfield_path_str(c, JPATH("reason"));
		if (st && strcmp(st, "False") == 0 && r) {
			s = jsonfield_path_str(c, JPATH("message"));
			why = xasprintf("pod %s: %s%s%s", name, r, s ? ": " : "", s ? s : "");
			break;
		}
	}
out:
	json_object_put(p);
	free(path);
	return why;
}

struct wait {
	const char *name;
	const char *cond;		/* the condition waited for */
	struct json_object *obj;	/* the ready object */
	char *stuck;			/* why it cannot become ready */
	bool deleted, error;
	char why[256];
};

static int on_watch(const char *type, struct json_object *obj, void *arg)
{
	struct wait *w = arg;
	const char *n = jsonfield_path_str(obj, JPATH("metadata", "name"));

	if (strcmp(type, "ERROR") == 0) {
		const char *m = jsonfield_path_str(obj, JPATH("message"));
		snprintf(w->why, sizeof w->why, "%s", m ? m : "watch error");
		w->error = true;
		return 1;
	}
	if (n == NULL || strcmp(n, w->name) != 0)
		return 0;
	if (strcmp(type, "DELETED") == 0) {
		w->deleted = true;
		return 1;
	}
	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
		if (kb_cond_true(obj, w->cond)) {
			w->obj = json_object_get(obj);
			return 1;
		}
		if (strcmp(w->cond, "Ready") == 0 && (w->stuck = sandbox_stuck(obj)) != NULL)
			return 1;
	}
	return 0;
}

int64_t kb_ready_timeout(void)
{
	const char *s = getenv("SBX_KUBE_READY_TIMEOUT");
	int64_t ns;

	if (s && *s && duration_parse(s, &ns) == 0 && ns > 0)
		return ns;
	return KB_READY_TIMEOUT_NS;
}

/* One wait in kb_wait_ready's loop. */
struct waiting {
	struct sbx_backend *b;
	const char *name;
	const char *cond;		/* "Ready", or "Suspended" after a pause */
	char *path, *coll, *sel;	/* the Sandbox, its collection, a field selector for it */
	int64_t deadline, check_every, next_check;
	bool polling;			/* no watch: upstream's polling */
	int restarts;			/* watches the server ended early */
	struct json_object *ready;	/* the ready object, when it is */
	char *stuck, *pending;		/* why it cannot become ready; why it is not yet */
	bool deleted;
};

/* Watches the Sandbox for at most slice ns from resourceVersion rv (NULL: now). */
static void watch_slice(struct waiting *w, const char *rv, int64_t slice)
{
	struct wait ws = {.name = w->name, .cond = w->cond};
	struct sbx_err ge;
	char *esel = kubeapi_escape(w->sel);
	int64_t left = w->deadline - time_mono_ns(), t0 = time_mono_ns();
	char *wp = xasprintf("%s?watch=1&allowWatchBookmarks=false&fieldSelector=%s%s%s"
			     "&timeoutSeconds=%lld", w->coll, esel, rv ? "&resourceVersion=" : "",
			     rv ? rv : "", (long long)(left / 1000000000 + 1));
	int r = kubeapi_watch(kb_conn(w->b), wp, slice / 1000000 + 1, on_watch, &ws, &ge);

	free(wp);
	free(esel);
	/* Only a watch the server ended early counts: ours end at each pod check. */
	if (time_mono_ns() - t0 < slice)
		w->restarts++;
	w->ready = ws.obj;
	w->stuck = ws.stuck;
	w->deleted = ws.deleted;
	if (r < 0 || ws.error)
		w->polling = true;	/* watch refused or broken: upstream's polling */
}

/* Looks at the pod of Sandbox o (and first at its home's claim) when its time has come: true
 * when it cannot start by waiting. */
static bool pod_check(struct waiting *w, struct json_object *o, int64_t now)
{
	bool fatal;

	if (now < w->next_check)
		return false;
	free(w->pending);
	w->pending = kb_claims_state(w->b, o, &fatal);
	if (w->pending == NULL)
		w->pending = pod_state(kb_conn(w->b), w->b->namespace, w->name, &fatal);
	if (fatal) {
		w->stuck = w->pending;
		w->pending = NULL;
		return true;
	}
	w->check_every = w->check_every * 2 > KB_POD_CHECK_MAX_NS ? KB_POD_CHECK_MAX_NS
								 : w->check_every * 2;
	w->next_check = now + w->check_every;
	return false;
}

/* Waits for condition cond to be True; *out gets the object then. Upstream's error texts.
 * Waiting for Ready, a Sandbox that cannot become ready by waiting (sandbox_stuck,
 * kb_claims_state, pod_state) fails at once; its claim and pod are looked at after
 * KB_POD_CHECK_NS, then at doubling intervals up to KB_POD_CHECK_MAX_NS. */
static int wait_cond(struct sbx_backend *b, const char *ver, const char *name, const char *cond,
		     struct json_object **out, struct sbx_err *e)
{
	int64_t limit = kb_ready_timeout(), start = time_mono_ns();
	bool ready = strcmp(cond, "Ready") == 0;
	struct waiting w = {.b = b, .name = name, .cond = cond, .path = kb_path(b, ver, name),
			    .coll = kb_path(b, ver, NULL), .deadline = start + limit,
			    .check_every = KB_POD_CHECK_NS, .next_check = start + KB_POD_CHECK_NS,
			    .polling = getenv("SBX_KUBE_NO_WATCH") != NULL,
			    .sel = xasprintf("metadata.name=%s", name)};
	struct json_object *o = NULL;
	char dbuf[DURATION_BUFSZ];
	int rc = -1;

	while (w.ready == NULL && w.stuck == NULL && !w.deleted) {
		int64_t now = time_mono_ns(), left = w.deadline - now, slice;

		json_object_put(o);
		o = NULL;
		if (kubeapi_request(kb_conn(b), "GET", w.path, NULL, &o, e) < 0) {
			err_prefix(e, "error polling state of sandbox");
			goto out;
		}
		if (kb_cond_true(o, cond)) {
			w.ready = o;
			o = NULL;
			break;
		}
		if (ready && ((w.stuck = sandbox_stuck(o)) != NULL || pod_check(&w, o, now)))
			break;
		if (left <= 0)
			break;
		slice = w.next_check - now < left ? w.next_check - now : left;
		if (slice < 1000000)
			slice = 1000000;
		if (!w.polling && w.restarts < KB_WATCH_RESTARTS)
			watch_slice(&w, jsonfield_path_str(o, JPATH("metadata", "resourceVersion")), slice);
		else
			kb_nap(slice < KB_POLL_NS ? slice : KB_POLL_NS);
	}
	if (w.ready) {
		*out = w.ready;
		rc = 0;
	} else if (w.deleted) {
		err_set(e, SBX_ENOTFOUND, "Sandbox %s was deleted while waiting for it to %s", name,
			ready ? "become ready" : "be suspended");
	} else if (w.stuck) {
		err_set(e, SBX_EUNAVAIL, "Sandbox %s cannot become ready: %s", name, w.stuck);
	} else {
		err_set(e, SBX_ETIMEDOUT, "timed out waiting for Sandbox %s to %s (%s)%s%s", name,
			ready ? "become ready" : "be suspended",
			duration_format(limit, dbuf, sizeof dbuf), w.pending ? ": " : "",
			w.pending ? w.pending : "");
	}
out:
	json_object_put(o);
	free(w.stuck);
	free(w.pending);
	free(w.sel);
	free(w.coll);
	free(w.path);
	return rc;
}

int kb_wait_ready(struct sbx_backend *b, const char *ver, const char *name,
		  struct json_object **out, struct sbx_err *e)
{
	return wait_cond(b, ver, name, "Ready", out, e);
}

int kb_wait_suspended(struct sbx_backend *b, const char *ver, const char *name,
		      struct json_object **out, struct sbx_err *e)
{
	return wait_cond(b, ver, name, "Suspended", out, e);
}

/* The latest event about claim (newest last in the list, as the API server keeps them):
 * "REASON: MESSAGE", *warning set for a Warning; NULL when there is none or it cannot be read
 * (the credentials may lack list on events). New string. */
static char *claim_event(struct kubeapi *api, const char *ns, const char *claim, bool *warning)
{
	char *sel = xasprintf("involvedObject.kind=PersistentVolumeClaim,involvedObject.name=%s", claim);
	char *esel = kubeapi_escape(sel), *path = xasprintf("/api/v1/namespaces/%s/events?fieldSelector=%s", ns, esel);
	struct json_object *l = NULL, *items, *ev;
	struct sbx_err ignored;
	char *why = NULL;
	size_t n;

	*warning = false;
	if (kubeapi_request(api, "GET", path, NULL, &l, &ignored) < 0)
		goto out;
	items = jsonfield_path(l, JPATH("items"));
	if (items == NULL || !json_object_is_type(items, json_type_array) ||
	    (n = json_object_array_length(items)) == 0)
		goto out;
	ev = json_object_array_get_idx(items, n - 1);
	const char *r = jsonfield_path_str(ev, JPATH("reason")), *m = jsonfield_path_str(ev, JPATH("message")),
		   *t = jsonfield_path_str(ev, JPATH("type"));
	*warning = t && strcmp(t, "Warning") == 0;
	why = xasprintf("%.*s%s%.*s", KB_EVENT_TEXT_MAX, r ? r : "(no reason)", m ? ": " : "",
			KB_EVENT_TEXT_MAX, m ? m : "");
out:
	json_object_put(l);
	free(path);
	free(esel);
	free(sel);
	return why;
}

char *kb_claims_state(struct sbx_backend *b, struct json_object *o, bool *fatal)
{
	const char *name = jsonfield_path_str(o, JPATH("metadata", "name")), *phase;
	char *claim, *path, *why = NULL, *ev;
	struct json_object *c = NULL;
	struct sbx_err ignored;
	bool warning;

	*fatal = false;
	if (name == NULL || kb_home_template(o) == NULL)
		return NULL;
	claim = xasprintf(KB_HOME_CLAIM "-%s", name);
	path = xasprintf("/api/v1/namespaces/%s/persistentvolumeclaims/%s", b->namespace, claim);
	/* Unreadable (no get on persistentvolumeclaims) or not made yet: the pod says the rest. */
	if (kubeapi_request(kb_conn(b), "GET", path, NULL, &c, &ignored) < 0 || c == NULL)
		goto out;
	phase = jsonfield_path_str(c, JPATH("status", "phase"));
	if (phase && strcmp(phase, "Bound") == 0)
		goto out;
	ev = claim_event(kb_conn(b), b->namespace, claim, &warning);
	/* A Warning (ProvisioningFailed: no such StorageClass, a quota) is not undone by waiting. */
	*fatal = warning;
	why = xasprintf("persistentvolumeclaim %s is %s%s%s", claim, phase ? phase : "Pending",
			ev ? ": " : "", ev ? ev : "");
	free(ev);
out:
	json_object_put(c);
	free(path);
	free(claim);
	return why;
}
