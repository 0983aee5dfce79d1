/* kubeconfig.c — client-go's loading rules in C: in-cluster, then merged kubeconfig files
 * (parsed with libyaml into json-c trees), then the current context's cluster and user.
 * Exec credential plugins and their token cache: kubecred.c. */
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

/* Limit on kubeconfig files in $KUBECONFIG: more is a mistake, not a configuration. */
#define KUBECONFIG_FILES_MAX 64
/* YAML nesting deeper than this is not a kubeconfig (and would recurse without bound). */
#define YAML_DEPTH_MAX 64

int kubeconfig_read_file(const char *path, struct kube_blob *out, struct sbx_err *e)
{
	struct buf b = {0};
	char chunk[8192];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		err_sys(e, errno, "cannot read %s", path);
		goto nocode;
	}
	while ((n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err_sys(e, errno, "cannot read %s", path);
			close(fd);
			goto nocode;
		}
		if (b.len + (size_t)n > KUBECONFIG_FILE_MAX) {
			err_set(e, SBX_EINVAL, "%s is larger than %d bytes", path, KUBECONFIG_FILE_MAX);
			goto fail;
		}
		buf_append(&b, chunk, (size_t)n);
	}
	close(fd);
	if (b.data == NULL)
		buf_append(&b, "", 0);
	out->len = b.len;
	out->data = buf_steal(&b);
	return 0;
fail:
	close(fd);
	buf_free(&b);
	return -1;
nocode:
	/* A missing config file is a configuration problem, not a missing sandbox. */
	buf_free(&b);
	if (e)
		e->code = SBX_EUNAVAIL;
	return -1;
}

int kubeconfig_base64(const char *in, struct kube_blob *out)
{
	size_t n = strlen(in), i, m = 0;
	char *clean = xmalloc(n + 4);
	unsigned char *dec;
	int len, pad = 0;

	for (i = 0; i < n; i++) {
		if (in[i] == ' ' || in[i] == '\n' || in[i] == '\r' || in[i] == '\t')
			continue;
		clean[m++] = in[i];
	}
	clean[m] = '\0';
	if (m % 4 != 0) {
		free(clean);
		return -1;
	}
	dec = xmalloc(m / 4 * 3 + 1);
	len = m ? EVP_DecodeBlock(dec, (unsigned char *)clean, (int)m) : 0;
	if (len < 0) {
		free(clean), free(dec);
		return -1;
	}
	if (m >= 1 && clean[m - 1] == '=')
		pad++;
	if (m >= 2 && clean[m - 2] == '=')
		pad++;
	free(clean);
	out->len = (size_t)len - (size_t)pad;
	dec[out->len] = '\0';
	out->data = (char *)dec;
	return 0;
}

/* Converts one libyaml document node into JSON (scalars stay strings). */
static struct json_object *yaml_to_json(yaml_document_t *doc, yaml_node_t *node, int depth)
{
	struct json_object *o = NULL;

	if (node == NULL || depth > YAML_DEPTH_MAX)
		return NULL;
	switch (node->type) {
	case YAML_SCALAR_NODE:
		if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    (node->data.scalar.length == 0 ||
		     (node->data.scalar.length == 4 && memcmp(node->data.scalar.value, "null", 4) == 0) ||
		     (node->data.scalar.length == 1 && node->data.scalar.value[0] == '~')))
			return NULL;
		return json_object_new_string_len((const char *)node->data.scalar.value,
						  (int)node->data.scalar.length);
	case YAML_SEQUENCE_NODE: {
		yaml_node_item_t *it;
		o = json_object_new_array();
		for (it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++)
			json_object_array_add(o, yaml_to_json(doc, yaml_document_get_node(doc, *it),
							      depth + 1));
		return o;
	}
	case YAML_MAPPING_NODE: {
		yaml_node_pair_t *p;
		o = json_object_new_object();
		for (p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);
			if (k == NULL || k->type != YAML_SCALAR_NODE)
				continue;
			json_object_object_add(o, (const char *)k->data.scalar.value,
					       yaml_to_json(doc, yaml_document_get_node(doc, p->value),
							    depth + 1));
		}
		return o;
	}
	default:
		return NULL;
	}
}

/* Parses one kubeconfig file into JSON. An empty file is an empty object. */
static struct json_object *parse_yaml(const char *path, struct sbx_err *e)
{
	struct kube_blob f = {0};
	yaml_parser_t p;
	yaml_document_t doc;
	struct json_object *o = NULL;
	yaml_node_t *root;

	if (kubeconfig_read_file(path, &f, e) < 0)
		return NULL;
	if (!yaml_parser_initialize(&p)) {
		free(f.data);
		err_set(e, SBX_EIO, "cannot initialise the YAML parser");
		return NULL;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)f.data, f.len);
	if (!yaml_parser_load(&p, &doc)) {
		err_set(e, SBX_EINVAL, "%s: invalid YAML at line %zu: %s", path,
			p.problem_mark.line + 1, p.problem ? p.problem : "parse error");
		goto out;
	}
	root = yaml_document_get_root_node(&doc);
	if (root == NULL)
		o = json_object_new_object();
	else if (root->type != YAML_MAPPING_NODE)
		err_set(e, SBX_EINVAL, "%s: not a kubeconfig (the top level is not a mapping)", path);
	else
		o = yaml_to_json(&doc, root, 0);
	yaml_document_delete(&doc);
out:
	yaml_parser_delete(&p);
	free(f.data);
	return o;
}

/* Finds the named entry of a kubeconfig list ("clusters", "users", "contexts") across the
 * files in order (first wins) and returns its inner object (e.g. "cluster"). */
static struct json_object *find_named(struct json_object **files, size_t n, const char *list,
				      const char *inner, const char *name, size_t *which)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		struct json_object *a = jsonfield(files[i], list);
		if (a == NULL || !json_object_is_type(a, json_type_array))
			continue;
		for (j = 0; j < json_object_array_length(a); j++) {
			struct json_object *it = json_object_array_get_idx(a, j);
			const char *nm = jsonfield_str(it, "name");
			if (nm && strcmp(nm, name) == 0 && jsonfield(it, inner)) {
				*which = i;
				return jsonfield(it, inner);
			}
		}
	}
	return NULL;
}

/* A path from a kubeconfig, relative to the directory of the file that holds it. */
static char *resolve_path(const char *p, const char *file)
{
	const char *slash = strrchr(file, '/');

	if (p[0] == '/' || slash == NULL)
		return xstrdup(p);
	if (p[0] == '~' && p[1] == '/' && getenv("HOME"))
		return xasprintf("%s%s", getenv("HOME"), p + 1);
	return xasprintf("%.*s/%s", (int)(slash - file), file, p);
}

/* Loads a PEM blob from "<key>-data" (base64) or "<key>" (a path). */
static int load_blob(struct json_object *o, const char *key, const char *file,
		     struct kube_blob *out, struct sbx_err *e)
{
	char dkey[64];
	const char *s;

	snprintf(dkey, sizeof dkey, "%s-data", key);
	if ((s = jsonfield_str(o, dkey)) != NULL && *s) {
		if (kubeconfig_base64(s, out) < 0)
			return err_set(e, SBX_EINVAL, "%s: %s is not valid base64", file, dkey);
		return 0;
	}
	if ((s = jsonfield_str(o, key)) != NULL && *s) {
		char *p = resolve_path(s, file);
		int rc = kubeconfig_read_file(p, out, e);
		free(p);
		if (rc < 0)
			return err_prefix(e, "%s: %s", file, key);
	}
	return 0;
}

static char **str_array(struct json_object *a)
{
	size_t i, n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
	char **v = xcalloc(n + 1, sizeof *v);
	size_t m = 0;

	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(a, i);
		if (s && json_object_is_type(s, json_type_string))
			v[m++] = xstrdup(json_object_get_string(s));
	}
	return v;
}

static void free_strv(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Reads the user's exec plugin stanza. */
static int load_exec(struct kubeconfig *kc, struct json_object *ex, const char *file,
		     struct sbx_err *e)
{
	const char *cmd = jsonfield_str(ex, "command"), *api = jsonfield_str(ex, "apiVersion");
	struct json_object *env = jsonfield(ex, "env");
	size_t i, n, m = 0;

	if (cmd == NULL || *cmd == '\0')
		return err_set(e, SBX_EINVAL, "%s: user exec plugin has no command", file);
	if (api == NULL || (strcmp(api, "client.authentication.k8s.io/v1") != 0 &&
			    strcmp(api, "client.authentication.k8s.io/v1beta1") != 0))
		return err_set(e, SBX_EINVAL,
			       "%s: exec plugin apiVersion \"%s\" is not supported (use client.authentication.k8s.io/v1 or v1beta1)",
			       file, api ? api : "");
	/* A bare name is looked up on PATH; a relative path is relative to the kubeconfig. */
	kc->exec_cmd = strchr(cmd, '/') ? resolve_path(cmd, file) : xstrdup(cmd);
	kc->exec_api = xstrdup(api);
	kc->exec_args = str_array(jsonfield(ex, "args"));
	n = env && json_object_is_type(env, json_type_array) ? json_object_array_length(env) : 0;
	kc->exec_env = xcalloc(n + 1, sizeof *kc->exec_env);
	for (i = 0; i < n; i++) {
		struct json_object *it = json_object_array_get_idx(env, i);
		const char *k = jsonfield_str(it, "name"), *v = jsonfield_str(it, "value");
		if (k && *k)
			kc->exec_env[m++] = xasprintf("%s=%s", k, v ? v : "");
	}
	return 0;
}

/* The parsed kubeconfig files in order (client-go's merge: the first wins). */
struct kfiles {
	struct json_object *doc[KUBECONFIG_FILES_MAX];
	char *name[KUBECONFIG_FILES_MAX];
	size_t n;
};

/* Parses every existing file of the ':'-separated list (default ~/.kube/config) into f;
 * kc->source gets the list of those read. */
static int parse_files(struct kubeconfig *kc, const char *paths, struct kfiles *f,
		       struct sbx_err *e)
{
	char *list, *tok, *save = NULL;
	struct buf src = {0};
	int rc = -1;

	if (paths == NULL || *paths == '\0') {
		const char *h = getenv("HOME");
		if (h == NULL || *h == '\0')
			return err_set(e, SBX_EUNAVAIL,
				       "no Kubernetes configuration: not in a cluster, KUBECONFIG and HOME are not set");
		list = xasprintf("%s/.kube/config", h);
	} else {
		list = xstrdup(paths);
	}
	for (tok = strtok_r(list, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
		if (*tok == '\0')
			continue;
		if (access(tok, F_OK) < 0 && errno == ENOENT)
			continue;	/* client-go skips missing files in the list */
		if (f->n == KUBECONFIG_FILES_MAX) {
			err_set(e, SBX_EINVAL, "KUBECONFIG lists more than %d files", KUBECONFIG_FILES_MAX);
			goto out;
		}
		if ((f->doc[f->n] = parse_yaml(tok, e)) == NULL)
			goto out;
		f->name[f->n] = xstrdup(tok);
		buf_printf(&src, "%s%s", f->n ? ":" : "", tok);
		f->n++;
	}
	if (f->n == 0) {
		err_set(e, SBX_EUNAVAIL, "no Kubernetes configuration: not in a cluster and no "
			"kubeconfig at %s", paths && *paths ? paths : list);
		goto out;
	}
	kc->source = buf_steal(&src);
	rc = 0;
out:
	buf_free(&src);
	free(list);
	return rc;
}

/* The cluster's server (https:// or http://), TLS trust and certificate authority. */
static int take_cluster(struct kubeconfig *kc, struct json_object *cl, const char *cname,
			const char *file, struct sbx_err *e)
{
	const char *s = jsonfield_str(cl, "server");

	if (s == NULL || (strncmp(s, "https://", 8) != 0 && strncmp(s, "http://", 7) != 0))
		return err_set(e, SBX_EINVAL, "%s: cluster \"%s\" has no https:// server", kc->source,
			       cname);
	kc->server = xstrdup(s);
	while (kc->server[0] && kc->server[strlen(kc->server) - 1] == '/')
		kc->server[strlen(kc->server) - 1] = '\0';
	s = jsonfield_str(cl, "insecure-skip-tls-verify");
	kc->insecure = s && strcmp(s, "true") == 0;
	return load_blob(cl, "certificate-authority", file, &kc->ca, e);
}

/* The user's credentials: a client certificate and key, a token or token file, an exec
 * plugin (an auth-provider is refused). */
static int take_user(struct kubeconfig *kc, struct json_object *user, const char *uname,
		     const char *file, struct sbx_err *e)
{
	const char *s;

	if (load_blob(user, "client-certificate", file, &kc->cert, e) < 0 ||
	    load_blob(user, "client-key", file, &kc->key, e) < 0)
		return -1;
	if ((kc->cert.data == NULL) != (kc->key.data == NULL))
		return err_set(e, SBX_EINVAL, "%s: user \"%s\" has a client certificate without a key "
			       "(or a key without a certificate)", file, uname);
	if ((s = jsonfield_str(user, "token")) && *s)
		kc->token = xstrdup(s);
	if ((s = jsonfield_str(user, "tokenFile")) && *s)
		kc->token_file = resolve_path(s, file);
	if (jsonfield(user, "exec") && load_exec(kc, jsonfield(user, "exec"), file, e) < 0)
		return -1;
	if (jsonfield(user, "auth-provider"))
		return err_set(e, SBX_EINVAL, "%s: user \"%s\" uses an auth-provider, which is not "
			       "supported (use an exec plugin)", file, uname);
	return 0;
}

int kubeconfig_load_files(struct kubeconfig *kc, const char *paths, struct sbx_err *e)
{
	struct kfiles f = {0};
	const char *ctxname = NULL, *cname, *uname, *s;
	struct json_object *ctx, *cl, *user;
	size_t i, ci, ui, xi;
	int rc = -1;

	memset(kc, 0, sizeof *kc);
	if (parse_files(kc, paths, &f, e) < 0)
		goto out;
	for (i = 0; i < f.n && ctxname == NULL; i++) {
		s = jsonfield_str(f.doc[i], "current-context");
		if (s && *s)
			ctxname = s;
	}
	if (ctxname == NULL) {
		err_set(e, SBX_EINVAL, "%s: no current-context is set", kc->source);
		goto out;
	}
	if ((ctx = find_named(f.doc, f.n, "contexts", "context", ctxname, &xi)) == NULL) {
		err_set(e, SBX_EINVAL, "%s: context \"%s\" is not defined", kc->source, ctxname);
		goto out;
	}
	kc->context = xstrdup(ctxname);
	if ((s = jsonfield_str(ctx, "namespace")) && *s)
		kc->namespace = xstrdup(s);
	cname = jsonfield_str(ctx, "cluster");
	uname = jsonfield_str(ctx, "user");
	if (cname == NULL || (cl = find_named(f.doc, f.n, "clusters", "cluster", cname, &ci)) == NULL) {
		err_set(e, SBX_EINVAL, "%s: context \"%s\" names cluster \"%s\", which is not defined",
			kc->source, ctxname, cname ? cname : "");
		goto out;
	}
	if (take_cluster(kc, cl, cname, f.name[ci], e) < 0)
		goto out;
	user = uname ? find_named(f.doc, f.n, "users", "user", uname, &ui) : NULL;
	if (user != NULL && take_user(kc, user, uname, f.name[ui], e) < 0)
		goto out;
	rc = 0;
out:
	for (i = 0; i < f.n; i++) {
		json_object_put(f.doc[i]);
		free(f.name[i]);
	}
	if (rc < 0)
		kubeconfig_free(kc);
	return rc;
}

static const char *sa_dir(void)
{
	const char *d = getenv("SBX_KUBE_SA_DIR");

	return d && *d ? d : KUBECONFIG_SA_DIR;
}

int kubeconfig_load_incluster(struct kubeconfig *kc, struct sbx_err *e)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	struct kube_blob ns = {0};
	char *p;
	int rc;

	memset(kc, 0, sizeof *kc);
	if (host == NULL || *host == '\0' || port == NULL || *port == '\0')
		return 0;
	p = xasprintf("%s/token", sa_dir());
	rc = access(p, R_OK);
	if (rc < 0) {
		err_sys(e, errno, "in-cluster configuration: cannot read the service-account token %s", p);
		free(p);
		return -1;
	}
	kc->token_file = p;
	kc->source = xstrdup("in-cluster");
	kc->context = xstrdup("");
	kc->server = strchr(host, ':') ? xasprintf("https://[%s]:%s", host, port)
				       : xasprintf("https://%s:%s", host, port);
	p = xasprintf("%s/ca.crt", sa_dir());
	rc = kubeconfig_read_file(p, &kc->ca, e);
	free(p);
	if (rc < 0) {
		err_prefix(e, "in-cluster configuration");
		kubeconfig_free(kc);
		return -1;
	}
	p = xasprintf("%s/namespace", sa_dir());
	if (kubeconfig_read_file(p, &ns, NULL) == 0) {
		ns.data[strcspn(ns.data, "\r\n")] = '\0';
		if (*ns.data)
			kc->namespace = xstrdup(ns.data);
		free(ns.data);
	}
	free(p);
	return 1;
}

int kubeconfig_load(struct kubeconfig *kc, struct sbx_err *e)
{
	int rc = kubeconfig_load_incluster(kc, e);

	if (rc != 0)
		return rc < 0 ? -1 : 0;
	return kubeconfig_load_files(kc, getenv("KUBECONFIG"), e);
}

void kubeconfig_free(struct kubeconfig *kc)
{
	if (kc == NULL)
		return;
	free(kc->source);
	free(kc->server);
	free(kc->context);
	free(kc->namespace);
	free(kc->ca.data);
	free(kc->cert.data);
	if (kc->key.data)
		OPENSSL_cleanse(kc->key.data, kc->key.len);
	free(kc->key.data);
	free(kc->token);
	free(kc->token_file);
	free(kc->exec_cmd);
	free_strv(kc->exec_args);
	free_strv(kc->exec_env);
	free(kc->exec_api);
	free(kc->cache_path);
	memset(kc, 0, sizeof *kc);
}
