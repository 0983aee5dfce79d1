/* test_kubeapi.c — metav1.Status decoding into messages, RBAC terms for requests, query
 * escaping, an unreachable server, and the Sandbox object sbx posts. */
#include <stdlib.h>

#include "backend.h"
#include "kubeapi.h"
#include "xalloc.h"
#include "tap.h"

struct json_object *kube_backend_object(const char *api_version, const char *ns,
					const struct sbx_spec *s);

static void describe(void)
{
	static const struct {
		const char *method, *path, *verb, *res, *ns;
	} cases[] = {
		{"GET", "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/a", "get",
		 "sandboxes.agents.x-k8s.io", "default"},
		{"GET", "/apis/agents.x-k8s.io/v1beta1/namespaces/ns1/sandboxes", "list",
		 "sandboxes.agents.x-k8s.io", "ns1"},
		{"GET", "/apis/agents.x-k8s.io/v1beta1/namespaces/ns1/sandboxes?watch=1&fieldSelector=x", "watch",
		 "sandboxes.agents.x-k8s.io", "ns1"},
		{"POST", "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes", "create",
		 "sandboxes.agents.x-k8s.io", "default"},
		{"PUT", "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/a", "update",
		 "sandboxes.agents.x-k8s.io", "default"},
		{"DELETE", "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/a", "delete",
		 "sandboxes.agents.x-k8s.io", "default"},
		{"GET", "/api/v1/namespaces/default/pods/a/exec?command=true", "create", "pods/exec", "default"},
		{"GET", "/apis/agents.x-k8s.io", "get", "/apis/agents.x-k8s.io", ""},
	};
	char verb[32], res[128], ns[80];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		kubeapi_describe(cases[i].method, cases[i].path, verb, sizeof verb, res, sizeof res, ns, sizeof ns);
		ok(strcmp(verb, cases[i].verb) == 0 && strcmp(res, cases[i].res) == 0 &&
		   strcmp(ns, cases[i].ns) == 0, "%s %s -> %s %s in %s (got %s %s in %s)", cases[i].method,
		   cases[i].path, cases[i].verb, cases[i].res, cases[i].ns, verb, res, ns);
	}
}

static void status(void)
{
	const char *p = "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/demo";
	const char *forbidden =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"sandboxes.agents.x-k8s.io "
		"\\\"demo\\\" is forbidden: User \\\"bob\\\" cannot update resource\",\"reason\":\"Forbidden\",\"code\":403}";
	const char *nf = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"sandboxes.agents.x-k8s.io \\\"demo\\\" not found\",\"reason\":\"NotFound\",\"code\":404}";
	const char *inv = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Sandbox.agents.x-k8s.io \\\"demo\\\" is invalid: spec.shutdownPolicy: Unsupported value: \\\"Sometimes\\\"\",\"reason\":\"Invalid\",\"code\":422}";
	struct sbx_err e;

	kubeapi_status_error(403, forbidden, strlen(forbidden), "PUT", p, &e);
	ok(e.code == SBX_EPERM && strstr(e.msg, "may not update sandboxes.agents.x-k8s.io in namespace default") &&
	   strstr(e.msg, "cannot update resource"), "403 names verb, resource and namespace: %s", e.msg);
	kubeapi_status_error(403, forbidden, strlen(forbidden), "GET",
			     "/api/v1/namespaces/ns1/pods/demo/exec?command=true", &e);
	ok(e.code == SBX_EPERM && strstr(e.msg, "may not exec into pods in namespace ns1 (RBAC needs "
	   "verbs \"get\" and \"create\" on \"pods/exec\")"), "403 on a WebSocket exec names both verbs: %s",
	   e.msg);
	kubeapi_status_error(404, nf, strlen(nf), "GET", p, &e);
	ok(e.code == SBX_ENOTFOUND && strcmp(e.msg, "sandboxes.agents.x-k8s.io \"demo\" not found") == 0,
	   "404 is not found with the server's message: %s", e.msg);
	kubeapi_status_error(409, "{\"message\":\"the object has been modified\"}", 40, "PUT", p, &e);
	ok(e.code == SBX_ECONFLICT && strstr(e.msg, "the object has been modified"), "409 conflict: %s", e.msg);
	kubeapi_status_error(422, inv, strlen(inv), "POST", p, &e);
	ok(e.code == SBX_EINVAL && strstr(e.msg, "rejected the object (422") &&
	   strstr(e.msg, "Unsupported value"), "422 carries the validation message: %s", e.msg);
	kubeapi_status_error(401, "", 0, "GET", p, &e);
	ok(e.code == SBX_EPERM && strstr(e.msg, "401 Unauthorized"), "401: %s", e.msg);
	kubeapi_status_error(500, "<html>oops\n</html>", 18, "GET", p, &e);
	ok(e.code == SBX_EUNAVAIL && strstr(e.msg, "failed (500)") && strstr(e.msg, "<html>oops"),
	   "500 with a non-JSON body shows the body: %s", e.msg);
}

static void escape(void)
{
	char *s = kubeapi_escape("sh -c 'a&b=c'/x");

	is_str(s, "sh%20-c%20%27a%26b%3Dc%27%2Fx", "query escaping");
	free(s);
}

static void unreachable(void)
{
	struct kubeconfig kc = {0};
	struct kubeapi *api;
	struct sbx_err e = {0};

	kc.server = xstrdup("https://127.0.0.1:1");
	kc.source = xstrdup("test");
	api = kubeapi_new(&kc);
	ok(kubeapi_request(api, "GET", "/api", NULL, NULL, &e) < 0 && e.code == SBX_EUNAVAIL &&
	   strstr(e.msg, "cannot reach the Kubernetes API server at https://127.0.0.1:1"),
	   "unreachable server: %s", e.msg);
	kubeapi_close(api);
}

static void object(void)
{
	struct sbx_spec s;
	struct json_object *o;
	const char *txt;

	memset(&s, 0, sizeof s);
	strcpy(s.name, "demo");
	strcpy(s.homedir, SBX_DEFAULT_HOMEDIR);
	s.ttl_ns = SBX_DEFAULT_TTL_NS;
	o = kube_backend_object("agents.x-k8s.io/v1beta1", "default", &s);
	txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	ok(strstr(txt, "\"apiVersion\":\"agents.x-k8s.io/v1beta1\",\"kind\":\"Sandbox\"") != NULL, "kind and version");
	ok(strstr(txt, "\"labels\":{\"app.kubernetes.io/managed-by\":\"sbx\"}") != NULL, "managed-by label");
	ok(strstr(txt, "{\"automountServiceAccountToken\":false,\"restartPolicy\":\"Never\",\"securityContext\":{\"runAsNonRoot\":true,\"runAsUser\":1000,\"runAsGroup\":1000,\"fsGroup\":1000,\"seccompProfile\":{\"type\":\"RuntimeDefault\"}},\"containers\":[{\"name\":\"sandbox\",\"image\":\"debian:bookworm-slim\",\"command\":[\"sleep\",\"infinity\"],\"workingDir\":\"/home/clawtainer\",\"env\":[{\"name\":\"HOME\",\"value\":\"/home/clawtainer\"}],\"volumeMounts\":[{\"name\":\"home\",\"mountPath\":\"/home/clawtainer\"},{\"name\":\"tmp\",\"mountPath\":\"/tmp\"}],\"securityContext\":{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":[\"ALL\"]},\"readOnlyRootFilesystem\":true,\"runAsNonRoot\":true,\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}}],\"volumes\":[{\"name\":\"home\",\"emptyDir\":{}},{\"name\":\"tmp\",\"emptyDir\":{}}]}") != NULL,
	   "pod template as upstream's, confined (restricted), starting in the home: %s", txt);
	ok(strstr(txt, "\"podTemplate\":{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":\"sbx\",\"app.kubernetes.io/instance\":\"demo\"}}") != NULL,
	   "pod labels for the NetworkPolicy");
	json_object_put(o);
	s.run_as_root = true;
	strcpy(s.runtime_class, "gvisor");
	s.limits.enforced = true;
	s.limits.memory = INT64_C(3) << 29;
	s.limits.cpus_milli = 1500;
	s.limits.disk = INT64_C(5) << 30;
	o = kube_backend_object("agents.x-k8s.io/v1beta1", "default", &s);
	txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	ok(strstr(txt, "\"runtimeClassName\":\"gvisor\"") && strstr(txt, "\"securityContext\":{\"runAsUser\":0,\"runAsGroup\":0,\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}") &&
	   strstr(txt, "\"readOnlyRootFilesystem\":false") && !strstr(txt, "\"tmp\""),
	   "-run-as-root, -runtime-class: %s", txt);
	ok(strstr(txt, "\"resources\":{\"limits\":{\"memory\":\"1536Mi\",\"cpu\":\"1500m\",\"ephemeral-storage\":\"5Gi\"},\"requests\":{\"memory\":\"256Mi\",\"cpu\":\"100m\",\"ephemeral-storage\":\"1Gi\"}}") &&
	   strstr(txt, "{\"name\":\"home\",\"emptyDir\":{\"sizeLimit\":\"5Gi\"}}"), "limits as resources and sizeLimit");
	ok(strstr(txt, "\"shutdownPolicy\":\"Delete\"") && strstr(txt, "\"shutdownTime\":\""), "lifecycle");
	json_object_put(o);
}

int main(void)
{
	describe();
	status();
	escape();
	unreachable();
	object();
	return done_testing();
}
