/* kube_netpol.c — the NetworkPolicy that confines each Sandbox of the kubernetes backend: no
 * ingress, egress to the cluster's DNS only, and with -network to public addresses; owned by
 * the Sandbox, so the garbage collector removes it with it. */
#include "kube_int.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static char *netpol_path(struct sbx_backend *b, const char *name)
{
	return xasprintf("/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies%s%s%s",
			 b->namespace, name ? "/" KB_NETPOL_PREFIX : "", name ? name : "",
			 "");
}

static struct json_object *jports53(void)
{
	struct json_object *a = json_object_new_array();
	static const char *const protos[] = {"UDP", "TCP", NULL};

	for (const char *const *p = protos; *p; p++) {
		struct json_object *o = json_object_new_object();
		jset(o, "protocol", json_object_new_string(*p));
		jset(o, "port", json_object_new_int(53));
		json_object_array_add(a, o);
	}
	return a;
}

static struct json_object *jlabels1(const char *k, const char *v)
{
	struct json_object *sel = json_object_new_object(), *ml = json_object_new_object();

	jset(ml, k, json_object_new_string(v));
	jset(sel, "matchLabels", ml);
	return sel;
}

static struct json_object *ip_block(const char *cidr, const char *const *except)
{
	struct json_object *peer = json_object_new_object(), *blk = json_object_new_object();

	jset(blk, "cidr", json_object_new_string(cidr));
	jset(blk, "except", kb_strs(except));
	jset(peer, "ipBlock", blk);
	return peer;
}

/* Addresses a -network Sandbox may not reach (as Agent Sandbox's own default policy for
 * templates): private networks (the cluster's pods and services, the VPC), link-local (the
 * cloud metadata server), CGNAT space, loopback; IPv6 unique-local and link-local. */
static const char *const private_v4[] = {
	"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10",
	"127.0.0.0/8", NULL,
};
static const char *const private_v6[] = {"fc00::/7", "fe80::/10", "::1/128", NULL};

/* The NetworkPolicy of Sandbox s (uid: its owner): no ingress at all; egress only to the
 * cluster's DNS (kube-dns in kube-system, port 53), and with s->network also to every public
 * address. Labelled as sbx's, owned by the Sandbox (deleted with it by the garbage collector). */
static struct json_object *netpol_object(const char *ns, const char *sandbox_api,
					 const struct sbx_spec *s, const char *uid)
{
	struct json_object *o = json_object_new_object(), *md = json_object_new_object(),
			   *owners = json_object_new_array(),
			   *owner = json_object_new_object(), *spec = json_object_new_object(),
			   *sel = json_object_new_object(),
			   *egress = json_object_new_array(), *dns = json_object_new_object(),
			   *to = json_object_new_array(), *peer = json_object_new_object();
	static const char *const types[] = {"Ingress", "Egress", NULL};
	char *name = xasprintf(KB_NETPOL_PREFIX "%s", s->name);

	jset(o, "apiVersion", json_object_new_string("networking.k8s.io/v1"));
	jset(o, "kind", json_object_new_string("NetworkPolicy"));
	jset(md, "name", json_object_new_string(name));
	jset(md, "namespace", json_object_new_string(ns));
	jset(md, "labels", kb_instance_labels(s->name));
	jset(owner, "apiVersion", json_object_new_string(sandbox_api));
	jset(owner, "kind", json_object_new_string("Sandbox"));
	jset(owner, "name", json_object_new_string(s->name));
	jset(owner, "uid", json_object_new_string(uid));
	json_object_array_add(owners, owner);
	jset(md, "ownerReferences", owners);
	jset(o, "metadata", md);
	jset(sel, "matchLabels", kb_instance_labels(s->name));
	jset(spec, "podSelector", sel);
	jset(spec, "policyTypes", kb_strs(types));
	jset(spec, "ingress", json_object_new_array());
	jset(peer, "namespaceSelector", jlabels1("kubernetes.io/metadata.name", "kube-system"));
	jset(peer, "podSelector", jlabels1("k8s-app", "kube-dns"));
	json_object_array_add(to, peer);
	jset(dns, "to", to);
	jset(dns, "ports", jports53());
	json_object_array_add(egress, dns);
	if (s->network) {
		struct json_object *out = json_object_new_object(), *pub = json_object_new_array();
		json_object_array_add(pub, ip_block("0.0.0.0/0", private_v4));
		json_object_array_add(pub, ip_block("::/0", private_v6));
		jset(out, "to", pub);
		json_object_array_add(egress, out);
	}
	jset(spec, "egress", egress);
	jset(o, "spec", spec);
	free(name);
	return o;
}

/* Exported for the unit tests: the NetworkPolicy sbx posts. */
struct json_object *kube_backend_netpol(const char *ns, const char *sandbox_api,
					const struct sbx_spec *s, const char *uid);
struct json_object *kube_backend_netpol(const char *ns, const char *sandbox_api,
					const struct sbx_spec *s, const char *uid)
{
	return netpol_object(ns, sandbox_api, s, uid);
}

/* Deletes the NetworkPolicy of Sandbox name if it is sbx's (a policy of that name someone
 * else made stays), with its uid as a precondition. Best effort: the policy names the Sandbox
 * as its owner, so the garbage collector removes it anyway (also after an expiry, when
 * nobody runs sbx-delete). */
void kb_netpol_remove(struct sbx_backend *b, const char *name)
{
	struct kubeapi *api = kb_conn(b);
	char *path = netpol_path(b, name);
	struct json_object *have = NULL, *opts, *pre;
	struct sbx_err ignored;
	const char *mgr, *inst, *uid;

	if (kubeapi_request(api, "GET", path, NULL, &have, &ignored) == 0 &&
	    (mgr = jsonfield_path_str(have, JPATH("metadata", "labels", KB_LABEL_KEY))) &&
	    strcmp(mgr, KB_LABEL_VALUE) == 0 &&
	    (inst = jsonfield_path_str(have, JPATH("metadata", "labels", KB_INSTANCE_KEY))) &&
	    strcmp(inst, name) == 0 && (uid = jsonfield_path_str(have, JPATH("metadata", "uid")))) {
		opts = json_object_new_object();
		pre = json_object_new_object();
		jset(pre, "uid", json_object_new_string(uid));
		jset(opts, "preconditions", pre);
		jset(opts, "kind", json_object_new_string("DeleteOptions"));
		jset(opts, "apiVersion", json_object_new_string("v1"));
		kubeapi_request(api, "DELETE", path, opts, NULL, &ignored);
		json_object_put(opts);
	}
	json_object_put(have);
	free(path);
}

/* Makes sure Sandbox sandbox (just made or reused) has its NetworkPolicy as spec s wants it:
 * created; one already there that is sbx's and says the same is kept, one that says
 * otherwise is replaced (delete and create: the Role needs no update), and one that is not
 * sbx's is an error. */
int kb_netpol_ensure(struct sbx_backend *b, const char *sandbox_api, const struct sbx_spec *s,
			 struct json_object *sandbox, struct sbx_err *e)
{
	struct kubeapi *api = kb_conn(b);
	const char *uid = jsonfield_path_str(sandbox, JPATH("metadata", "uid"));
	char *coll = netpol_path(b, NULL), *path = netpol_path(b, s->name);
	struct json_object *want, *have = NULL;
	int rc = -1;

	if (uid == NULL) {
		err_set(e, SBX_EIO, "the API server gave Sandbox %s no uid", s->name);
		goto out;
	}
	want = netpol_object(b->namespace, sandbox_api, s, uid);
	for (int attempt = 0; attempt < 2; attempt++) {
		const char *mgr;
		if (kubeapi_request(api, "POST", coll, want, NULL, e) == 0) {
			rc = 0;
			break;
		}
		if (e->code != SBX_ECONFLICT || kubeapi_request(api, "GET", path, NULL, &have, e) < 0)
			break;
		mgr = jsonfield_path_str(have, JPATH("metadata", "labels", KB_LABEL_KEY));
		if (mgr == NULL || strcmp(mgr, KB_LABEL_VALUE) != 0) {
			err_set(e, SBX_EEXIST, "a NetworkPolicy named " KB_NETPOL_PREFIX "%s exists in "
				"namespace %s and is not sbx's (no label %s=%s)", s->name,
				b->namespace, KB_LABEL_KEY, KB_LABEL_VALUE);
			break;
		}
		if (json_object_equal(jsonfield_path(have, JPATH("spec")), jsonfield_path(want, JPATH("spec"))) &&
		    json_object_equal(jsonfield_path(have, JPATH("metadata", "ownerReferences")),
				      jsonfield_path(want, JPATH("metadata", "ownerReferences")))) {
			rc = 0;
			break;
		}
		json_object_put(have);
		have = NULL;
		if (kubeapi_request(api, "DELETE", path, NULL, NULL, e) < 0 && e->code != SBX_ENOTFOUND)
			break;
	}
	json_object_put(want);
	if (rc < 0)
		err_prefix(e, "cannot set up the NetworkPolicy " KB_NETPOL_PREFIX "%s that confines it",
			   s->name);
out:
	json_object_put(have);
	free(path);
	free(coll);
	return rc;
}
