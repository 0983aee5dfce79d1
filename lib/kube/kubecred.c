/* kubecred.c — the bearer token of a kubeconfig user: a token file, or an exec credential
 * plugin (client-go's ExecCredential protocol: KUBERNETES_EXEC_INFO in, the credential on
 * stdout) with its token cached in memory and in a 0600 file until it expires. */
#include "kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "child.h"
#include "exitcode.h"
#include "fsutil.h"
#include "jsonfield.h"
#include "paths.h"
#include "timeutil.h"
#include "xalloc.h"

extern char **environ;

/* --- exec credential plugins --- */

/* The cache file for this plugin invocation: a hash of everything that defines it. */
static char *cache_path(const struct kubeconfig *kc)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	char hex[2 * 16 + 1];
	const char *x = getenv("XDG_CACHE_HOME");
	struct buf k = {0};
	char *root;
	size_t i;

	buf_printf(&k, "%s\n%s\n%s\n", kc->server, kc->exec_api, kc->exec_cmd);
	for (i = 0; kc->exec_args[i]; i++)
		buf_printf(&k, "a:%s\n", kc->exec_args[i]);
	for (i = 0; kc->exec_env[i]; i++)
		buf_printf(&k, "e:%s\n", kc->exec_env[i]);
	SHA256((const unsigned char *)k.data, k.len, md);
	buf_free(&k);
	for (i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	if (x && x[0] == '/') {
		root = xasprintf("%s/sbx/kube-exec", x);
	} else {
		char *st = paths_state_root(NULL);
		if (st == NULL)
			return NULL;
		root = xasprintf("%s/.kube-exec", st);	/* never a namespace name */
		free(st);
	}
	if (paths_mkdirs(root, 0700, NULL) < 0) {
		free(root);
		return NULL;
	}
	{
		char *p = xasprintf("%s/%s.json", root, hex);
		free(root);
		return p;
	}
}

/* Takes token and expiry from an ExecCredential (or our cache file, same shape). */
static int take_credential(struct kubeconfig *kc, const char *text, size_t len, bool strict,
			   struct sbx_err *e)
{
	struct json_object *o = json_tokener_parse(text), *st;
	const char *tok, *exp, *kind;
	int64_t ns = 0;
	int rc = -1;

	(void)len;
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		err_set(e, SBX_EINVAL, "exec plugin %s printed no JSON ExecCredential", kc->exec_cmd);
		goto out;
	}
	kind = jsonfield_str(o, "kind");
	if (strict && (kind == NULL || strcmp(kind, "ExecCredential") != 0)) {
		err_set(e, SBX_EINVAL, "exec plugin %s: output is not an ExecCredential", kc->exec_cmd);
		goto out;
	}
	if (strict && (jsonfield_str(o, "apiVersion") == NULL || strcmp(jsonfield_str(o, "apiVersion"), kc->exec_api) != 0)) {
		err_set(e, SBX_EINVAL, "exec plugin %s: ExecCredential apiVersion \"%s\" does not match the requested %s",
			kc->exec_cmd, jsonfield_str(o, "apiVersion") ? jsonfield_str(o, "apiVersion") : "", kc->exec_api);
		goto out;
	}
	st = jsonfield(o, "status");
	tok = jsonfield_str(st, "token");
	if (tok == NULL || *tok == '\0') {
		err_set(e, SBX_EINVAL, "exec plugin %s: ExecCredential has no status.token%s", kc->exec_cmd,
			jsonfield_str(st, "clientCertificateData") ? " (client certificates from plugins are not supported)" : "");
		goto out;
	}
	exp = jsonfield_str(st, "expirationTimestamp");
	if (exp && *exp && time_parse_rfc3339(exp, &ns) < 0) {
		err_set(e, SBX_EINVAL, "exec plugin %s: bad expirationTimestamp \"%s\"", kc->exec_cmd, exp);
		goto out;
	}
	if (ns && ns - KUBECONFIG_EXPIRY_SLACK_NS <= time_now_ns()) {
		err_set(e, SBX_EINVAL, "exec plugin %s: the credential has already expired (%s)", kc->exec_cmd, exp);
		goto out;
	}
	free(kc->token);
	kc->token = xstrdup(tok);
	kc->token_expiry_ns = ns;
	rc = 0;
out:
	json_object_put(o);
	return rc;
}

/* Runs the plugin with KUBERNETES_EXEC_INFO set; collects its stdout (and stderr for errors). */
static int run_plugin(struct kubeconfig *kc, struct buf *out, struct sbx_err *e)
{
	struct strvec argv = {0}, env = {0};
	struct child_req r = CHILD_REQ_INIT(.path = kc->exec_cmd,
			      .timeout_ns = (int64_t)KUBECONFIG_PLUGIN_TIMEOUT_MS * 1000000,
			      .grace_ns = KUBECONFIG_PLUGIN_GRACE_NS,
			      .out_max = KUBECONFIG_PLUGIN_OUT_MAX);
	struct child_result res;
	size_t l;
	int rc = -1;

	strvec_push(&argv, kc->exec_cmd);
	strvec_pushv(&argv, kc->exec_args);
	for (size_t i = 0; environ[i]; i++)
		if (strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21) != 0)
			strvec_push(&env, environ[i]);
	strvec_pushv(&env, kc->exec_env);
	strvec_pushf(&env, "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
		     "\"spec\":{\"interactive\":false}}", kc->exec_api);
	r.argv = argv.v;
	r.envp = env.v;
	if (child_run(&r, &res, e) < 0) {
		if (e->code == SBX_ENOTFOUND)	/* as a shell says it */
			err_set(e, SBX_EPERM, "exec plugin %s failed (exit status 127): not found",
				kc->exec_cmd);
		else
			err_prefix(e, "exec plugin");
		goto out;
	}
	if (res.timed_out) {
		err_set(e, SBX_ETIMEDOUT, "exec plugin %s did not finish within %d s", kc->exec_cmd,
			KUBECONFIG_PLUGIN_TIMEOUT_MS / 1000);
	} else if (res.status != 0) {
		for (l = res.err_len; l && (res.err[l - 1] == '\n' || res.err[l - 1] == ' '); l--)
			;
		err_set(e, SBX_EPERM, "exec plugin %s failed (%s %d)%s%.*s", kc->exec_cmd,
			res.signal ? "signal" : "exit status", res.signal ? res.signal : res.status,
			l ? ": " : (res.status == EXIT_CMD_NOT_FOUND ? ": not found" : ""),
			(int)(l > 500 ? 500 : l), res.err);
	} else {
		buf_append(out, res.out, res.out_len);
		rc = 0;
	}
	child_result_free(&res);
out:
	strvec_clear(&argv);
	strvec_clear(&env);
	return rc;
}

/* Writes the token to the cache file (0600, atomically). Failures only lose the cache. */
static void cache_store(const struct kubeconfig *kc)
{
	struct json_object *o, *st;
	char tbuf[TIME_BUFSZ];
	const char *txt;

	if (kc->cache_path == NULL || kc->token_expiry_ns == 0)
		return;	/* no expiry: client-go keeps it for the process only */
	o = json_object_new_object();
	st = json_object_new_object();
	json_object_object_add(o, "kind", json_object_new_string("ExecCredential"));
	json_object_object_add(o, "apiVersion", json_object_new_string(kc->exec_api));
	json_object_object_add(st, "token", json_object_new_string(kc->token));
	json_object_object_add(st, "expirationTimestamp",
			       json_object_new_string(time_rfc3339(kc->token_expiry_ns, tbuf, sizeof tbuf)));
	json_object_object_add(o, "status", st);
	txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	fs_write_atomic(kc->cache_path, txt, strlen(txt), 0600);
	json_object_put(o);
}

static int cache_load(struct kubeconfig *kc)
{
	struct kube_blob f = {0};
	struct stat st;
	int rc;

	if (kc->cache_path == NULL || stat(kc->cache_path, &st) < 0)
		return -1;
	/* Only trust a private file of ours: anyone else could plant a token. */
	if (st.st_uid != getuid() || (st.st_mode & 077) != 0)
		return -1;
	if (kubeconfig_read_file(kc->cache_path, &f, NULL) < 0)
		return -1;
	rc = take_credential(kc, f.data, f.len, false, NULL);
	free(f.data);
	return rc;
}

int kubeconfig_token(struct kubeconfig *kc, char **token, struct sbx_err *e)
{
	struct buf out = {0};
	int rc;

	*token = NULL;
	if (kc->exec_cmd != NULL) {
		if (kc->token && (kc->token_expiry_ns == 0 ||
				  kc->token_expiry_ns - KUBECONFIG_EXPIRY_SLACK_NS > time_now_ns()))
			goto have;
		if (kc->cache_path == NULL)
			kc->cache_path = cache_path(kc);
		if (kc->token == NULL && cache_load(kc) == 0)
			goto have;
		rc = run_plugin(kc, &out, e);
		if (rc == 0)
			rc = take_credential(kc, out.data, out.len, true, e);
		buf_free(&out);
		if (rc < 0)
			return -1;
		cache_store(kc);
		goto have;
	}
	if (kc->token_file != NULL) {
		struct kube_blob f = {0};
		if (kubeconfig_read_file(kc->token_file, &f, e) < 0)
			return err_prefix(e, "token file");
		f.data[strcspn(f.data, "\r\n")] = '\0';
		*token = f.data;
		return 0;
	}
have:
	if (kc->token)
		*token = xstrdup(kc->token);
	return 0;
}

void kubeconfig_forget_token(struct kubeconfig *kc)
{
	if (kc->exec_cmd == NULL)
		return;
	free(kc->token);
	kc->token = NULL;
	kc->token_expiry_ns = 0;
	if (kc->cache_path)
		unlink(kc->cache_path);
}
