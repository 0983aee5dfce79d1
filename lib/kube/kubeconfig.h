/* kubeconfig.h — where the Kubernetes API server is and how to authenticate to it, found as
 * client-go does: in-cluster service account first, else $KUBECONFIG (colon-separated list,
 * merged: the first file that sets a key wins) or ~/.kube/config, current context.
 * Ownership: a struct kubeconfig owns every string in it; kubeconfig_free releases them.
 * Strings returned through char ** are newly allocated, the caller frees them. */
#ifndef SBX_KUBECONFIG_H
#define SBX_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The service-account directory mounted into every pod; $SBX_KUBE_SA_DIR overrides it (tests). */
#define KUBECONFIG_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
/* A kubeconfig, certificate or token file larger than this is not plausible. */
#define KUBECONFIG_FILE_MAX (4 * 1024 * 1024)
/* Output of an exec credential plugin is one small JSON document. */
#define KUBECONFIG_PLUGIN_OUT_MAX (1024 * 1024)
/* How long an exec credential plugin may run before we give up on it. */
#define KUBECONFIG_PLUGIN_TIMEOUT_MS 60000
/* A plugin past its deadline gets this long after SIGTERM before SIGKILL. */
#define KUBECONFIG_PLUGIN_GRACE_NS (INT64_C(100) * 1000000)
/* A cached plugin token is refreshed this long before it expires. */
#define KUBECONFIG_EXPIRY_SLACK_NS (INT64_C(10) * 1000000000)

/* PEM bytes from a file or from a *-data field. */
struct kube_blob {
	char *data;
	size_t len;
};

struct kubeconfig {
	char *source;		/* "in-cluster" or the kubeconfig path(s), for messages */
	char *server;		/* https://host:port, no trailing slash */
	char *context;		/* current context name ("" in-cluster) */
	char *namespace;	/* context's or service account's namespace, or NULL */
	struct kube_blob ca, cert, key;
	bool insecure;		/* insecure-skip-tls-verify */
	char *token;		/* static bearer token, or the plugin's current one */
	char *token_file;	/* re-read on every kubeconfig_token call */
	/* exec credential plugin */
	char *exec_cmd;
	char **exec_args;	/* NULL-terminated, without the command */
	char **exec_env;	/* NULL-terminated NAME=VALUE */
	char *exec_api;		/* client.authentication.k8s.io/v1 or v1beta1 */
	int64_t token_expiry_ns;	/* plugin token expiry (0: none) */
	char *cache_path;	/* plugin token cache file, or NULL */
};

/* Finds and reads the configuration (in-cluster, else kubeconfig files). */
int kubeconfig_load(struct kubeconfig *kc, struct sbx_err *e);
/* Reads kubeconfig files only: paths is a colon-separated list (NULL: ~/.kube/config). */
int kubeconfig_load_files(struct kubeconfig *kc, const char *paths, struct sbx_err *e);
/* Reads the in-cluster configuration from the environment and the service-account dir.
 * Returns 1 if found, 0 if not running in a cluster, -1 on error. */
int kubeconfig_load_incluster(struct kubeconfig *kc, struct sbx_err *e);
/* The bearer token to send now (NULL in *token when the config has none), running the
 * exec plugin when its cached token is missing or expired. */
int kubeconfig_token(struct kubeconfig *kc, char **token, struct sbx_err *e);
/* Forgets a plugin token (after a 401) so the next kubeconfig_token runs the plugin again. */
void kubeconfig_forget_token(struct kubeconfig *kc);
void kubeconfig_free(struct kubeconfig *kc);

/* Decodes standard base64 (white space ignored). Returns 0 or -1 on bad input. */
int kubeconfig_base64(const char *in, struct kube_blob *out);
/* Reads a whole file (at most KUBECONFIG_FILE_MAX bytes) into out. */
int kubeconfig_read_file(const char *path, struct kube_blob *out, struct sbx_err *e);

#endif
