/* test_kubeconfig.c — kubeconfig loading: single file, merged KUBECONFIG lists, relative paths,
 * token files, exec credential plugins and their cache, in-cluster variables, bad input. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kubeconfig.h"
#include "xalloc.h"
#include "tap.h"

static char dir[] = "/tmp/test_kubeconfig.XXXXXX";

static char *put(const char *name, const char *text, int mode)
{
	char *p = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");

	fputs(text, f);
	fclose(f);
	chmod(p, (mode_t)mode);
	return p;
}

static int count_runs(void)
{
	char *p = xasprintf("%s/runs", dir);
	FILE *f = fopen(p, "r");
	int n = 0, c;

	free(p);
	if (f == NULL)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == 'x';
	fclose(f);
	return n;
}

static void single(void)
{
	struct kubeconfig kc;
	struct sbx_err e = {0};
	char *p = put("one.yaml",
		      "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
		      "clusters:\n- name: c1\n  cluster:\n    server: https://127.0.0.1:6443/\n"
		      "    certificate-authority-data: aGVsbG8gY2E=\n"
		      "contexts:\n- name: dev\n  context: {cluster: c1, user: u1, namespace: team}\n"
		      "users:\n- name: u1\n  user:\n    token: s3cret\n", 0600);
	char *tok = NULL;

	ok(kubeconfig_load_files(&kc, p, &e) == 0, "single file loads (%s)", e.msg);
	is_str(kc.server, "https://127.0.0.1:6443", "server, trailing slash trimmed");
	is_str(kc.context, "dev", "current context");
	is_str(kc.namespace, "team", "context namespace");
	ok(kc.ca.data && kc.ca.len == 8 && memcmp(kc.ca.data, "hello ca", 8) == 0, "CA data decoded");
	ok(!kc.insecure, "TLS verified by default");
	ok(kubeconfig_token(&kc, &tok, &e) == 0 && tok && strcmp(tok, "s3cret") == 0, "static token");
	free(tok);
	kubeconfig_free(&kc);
	free(p);
}

static void merged(void)
{
	struct kubeconfig kc;
	struct sbx_err e = {0};
	char *a = put("a.yaml",
		      "current-context: ctx\n"
		      "clusters:\n- name: c\n  cluster:\n    server: https://first:1\n"
		      "    insecure-skip-tls-verify: true\n"
		      "contexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\n", 0600);
	char *b = put("b.yaml",
		      "current-context: other\n"
		      "clusters:\n- name: c\n  cluster:\n    server: https://second:2\n"
		      "users:\n- name: u\n  user:\n    tokenFile: tok.txt\n", 0600);
	char *t = put("tok.txt", "from-file\n", 0600);
	char *list = xasprintf("%s/missing.yaml:%s:%s", dir, a, b);
	char *tok = NULL;

	ok(kubeconfig_load_files(&kc, list, &e) == 0, "merged list loads, missing file skipped (%s)", e.msg);
	is_str(kc.server, "https://first:1", "first file wins for a cluster defined twice");
	is_str(kc.context, "ctx", "first current-context wins");
	ok(kc.insecure, "insecure-skip-tls-verify read");
	ok(kubeconfig_token(&kc, &tok, &e) == 0 && tok && strcmp(tok, "from-file") == 0,
	   "tokenFile from the second file, relative to it, newline trimmed");
	free(tok);
	kubeconfig_free(&kc);
	free(a), free(b), free(t), free(list);
}

static void certs(void)
{
	struct kubeconfig kc;
	struct sbx_err e = {0};
	char *c = put("client.crt", "CERT PEM\n", 0600), *k = put("client.key", "KEY PEM\n", 0600);
	char *ca = put("ca.crt", "CA PEM\n", 0600);
	char *p = put("certs.yaml",
		      "current-context: x\n"
		      "clusters:\n- name: c\n  cluster:\n    server: https://h:3\n    certificate-authority: ca.crt\n"
		      "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
		      "users:\n- name: u\n  user:\n    client-certificate: client.crt\n    client-key: client.key\n",
		      0600);
	char *half = put("half.yaml",
			 "current-context: x\n"
			 "clusters:\n- name: c\n  cluster:\n    server: https://h:3\n"
			 "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
			 "users:\n- name: u\n  user:\n    client-certificate-data: Q0VSVA==\n", 0600);

	ok(kubeconfig_load_files(&kc, p, &e) == 0, "client certificate config loads (%s)", e.msg);
	ok(kc.cert.data && strcmp(kc.cert.data, "CERT PEM\n") == 0, "client certificate file read");
	ok(kc.key.data && strcmp(kc.key.data, "KEY PEM\n") == 0, "client key file read");
	ok(kc.ca.data && strcmp(kc.ca.data, "CA PEM\n") == 0, "CA file relative to the kubeconfig");
	kubeconfig_free(&kc);
	ok(kubeconfig_load_files(&kc, half, &e) < 0 && strstr(e.msg, "without a key"),
	   "certificate without key refused: %s", e.msg);
	free(c), free(k), free(ca), free(p), free(half);
}

static void plugin(void)
{
	struct kubeconfig kc, kc2;
	struct sbx_err e = {0};
	char *script = xasprintf(
		"#!/bin/sh\n"
		"printf x >>'%s/runs'\n"
		"case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*) ;; *) echo no exec info >&2; exit 3;; esac\n"
		"[ \"$PLUGIN_MODE\" = fail ] && { echo 'login required' >&2; exit 2; }\n"
		"echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
		"\"status\":{\"token\":\"plugin-'$1'\",\"expirationTimestamp\":\"2200-01-01T00:00:00Z\"}}'\n",
		dir);
	char *pl = put("plugin.sh", script, 0755);
	char *p = put("exec.yaml",
		      "current-context: x\n"
		      "clusters:\n- name: c\n  cluster:\n    server: https://h:4\n"
		      "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
		      "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
		      "      command: ./plugin.sh\n      args: [abc]\n      env:\n      - {name: PLUGIN_MODE, value: ok}\n",
		      0600);
	char *bad = put("fail.yaml",
			"current-context: x\n"
			"clusters:\n- name: c\n  cluster:\n    server: https://h:4\n"
			"contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
			"users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
			"      command: ./plugin.sh\n      env:\n      - {name: PLUGIN_MODE, value: fail}\n",
			0600);
	char *tok = NULL, *cache = xasprintf("%s/cache", dir);
	struct stat st;

	setenv("XDG_CACHE_HOME", cache, 1);
	ok(kubeconfig_load_files(&kc, p, &e) == 0, "exec plugin config loads (%s)", e.msg);
	ok(kubeconfig_token(&kc, &tok, &e) == 0 && tok && strcmp(tok, "plugin-abc") == 0,
	   "plugin token (%s)", e.msg);
	free(tok);
	ok(kubeconfig_token(&kc, &tok, &e) == 0 && tok && strcmp(tok, "plugin-abc") == 0 &&
	   count_runs() == 1, "second call uses the cached token (runs: %d)", count_runs());
	free(tok);
	ok(kc.cache_path && stat(kc.cache_path, &st) == 0 && (st.st_mode & 0777) == 0600,
	   "cache file is private (0600)");
	ok(kubeconfig_load_files(&kc2, p, &e) == 0 && kubeconfig_token(&kc2, &tok, &e) == 0 &&
	   tok && strcmp(tok, "plugin-abc") == 0 && count_runs() == 1,
	   "a new process reads the cache file instead of running the plugin");
	free(tok);
	kubeconfig_forget_token(&kc2);
	ok(kubeconfig_token(&kc2, &tok, &e) == 0 && count_runs() == 2, "forgotten token runs the plugin again");
	free(tok);
	kubeconfig_free(&kc2);
	kubeconfig_free(&kc);
	ok(kubeconfig_load_files(&kc, bad, &e) == 0, "failing plugin config loads");
	ok(kubeconfig_token(&kc, &tok, &e) < 0 && strstr(e.msg, "login required") &&
	   strstr(e.msg, "exit status 2"), "plugin failure reported with its stderr: %s", e.msg);
	kubeconfig_free(&kc);
	unsetenv("XDG_CACHE_HOME");
	free(script), free(pl), free(p), free(bad), free(cache);
}

static void incluster(void)
{
	struct kubeconfig kc;
	struct sbx_err e = {0};
	char *sa = xasprintf("%s/sa", dir), *tok = NULL;

	mkdir(sa, 0700);
	free(put("sa/token", "sa-token\n", 0600));
	free(put("sa/ca.crt", "SA CA\n", 0600));
	free(put("sa/namespace", "agents\n", 0600));
	setenv("SBX_KUBE_SA_DIR", sa, 1);
	unsetenv("KUBERNETES_SERVICE_HOST");
	ok(kubeconfig_load_incluster(&kc, &e) == 0, "no KUBERNETES_SERVICE_HOST: not in a cluster");
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	ok(kubeconfig_load(&kc, &e) == 0, "in-cluster config loads (%s)", e.msg);
	is_str(kc.server, "https://10.0.0.1:443", "server from the service variables");
	is_str(kc.namespace, "agents", "namespace file");
	ok(kc.ca.data && strcmp(kc.ca.data, "SA CA\n") == 0, "service-account CA");
	ok(kubeconfig_token(&kc, &tok, &e) == 0 && tok && strcmp(tok, "sa-token") == 0, "service-account token");
	free(tok);
	kubeconfig_free(&kc);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	ok(kubeconfig_load(&kc, &e) == 0, "IPv6 service host");
	is_str(kc.server, "https://[fd00::1]:443", "IPv6 host in brackets");
	kubeconfig_free(&kc);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	unsetenv("SBX_KUBE_SA_DIR");
	free(sa);
}

static void bad(void)
{
	static const struct {
		const char *name, *text, *want;
	} cases[] = {
		{"nocur.yaml", "clusters: []\n", "no current-context"},
		{"noctx.yaml", "current-context: a\ncontexts: []\n", "context \"a\" is not defined"},
		{"nocl.yaml", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: zz}\n",
		 "cluster \"zz\", which is not defined"},
		{"yaml.yaml", "current-context: [a\n", "invalid YAML"},
		{"list.yaml", "- a\n- b\n", "not a kubeconfig"},
		{"b64.yaml",
		 "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\nclusters:\n- name: c\n"
		 "  cluster: {server: 'https://x', certificate-authority-data: '!!!'}\n",
		 "not valid base64"},
		{"cafile.yaml",
		 "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\nclusters:\n- name: c\n"
		 "  cluster: {server: 'https://x', certificate-authority: nope.crt}\n",
		 "nope.crt"},
		{"api.yaml",
		 "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n"
		 "  cluster: {server: 'https://x'}\nusers:\n- name: u\n  user:\n    exec: {command: x, apiVersion: client.authentication.k8s.io/v1alpha1}\n",
		 "not supported"},
	};
	struct kubeconfig kc;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct sbx_err e = {0};
		char *p = put(cases[i].name, cases[i].text, 0600);
		ok(kubeconfig_load_files(&kc, p, &e) < 0 && strstr(e.msg, cases[i].want) &&
		   e.code != SBX_ENOTFOUND, "%s refused: %s", cases[i].name, e.msg);
		free(p);
	}
	{
		struct sbx_err e = {0};
		char *p = xasprintf("%s/none.yaml", dir);
		ok(kubeconfig_load_files(&kc, p, &e) < 0 && e.code == SBX_EUNAVAIL &&
		   strstr(e.msg, "no Kubernetes configuration"), "no kubeconfig at all: %s", e.msg);
		free(p);
	}
}

static void base64(void)
{
	struct kube_blob b;

	ok(kubeconfig_base64("aGk=", &b) == 0 && b.len == 2 && memcmp(b.data, "hi", 2) == 0, "base64 one pad");
	free(b.data);
	ok(kubeconfig_base64("aGVs\nbG8=", &b) == 0 && b.len == 5 && memcmp(b.data, "hello", 5) == 0,
	   "base64 with a newline");
	free(b.data);
	ok(kubeconfig_base64("abc", &b) < 0, "base64 bad length refused");
}

int main(void)
{
	if (mkdtemp(dir) == NULL)
		return 1;
	single();
	merged();
	certs();
	plugin();
	incluster();
	bad();
	base64();
	{
		char *cmd = xasprintf("rm -rf '%s'", dir);
		if (system(cmd) != 0)
			ok(0, "cleanup");
		free(cmd);
	}
	return done_testing();
}
