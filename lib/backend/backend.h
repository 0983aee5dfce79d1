/* backend.h — one interface for every place a sandbox lives (local bubblewrap namespaces,
 * Kubernetes Agent Sandbox resources). Tools talk only to this; each backend is an ops table.
 * Ownership: structs passed in stay the caller's; backend_open's result is freed with
 * backend_close; strings returned by ops (home_path) are newly allocated, caller frees. */
#ifndef SBX_BACKEND_H
#define SBX_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "err.h"
#include "name.h"

#define SBX_DEFAULT_HOMEDIR "/home/clawtainer"
#define SBX_DEFAULT_IMAGE "debian:bookworm-slim"
#define SBX_DEFAULT_NAMESPACE "default"
/* Upstream's inactivity lifetime: a sandbox nobody touches for 5 minutes goes away. */
#define SBX_DEFAULT_TTL_NS (INT64_C(300) * 1000000000)
/* -idle pause: how long a sandbox stays paused after its shutdown time before it is deleted. */
#define SBX_DEFAULT_PAUSED_TTL_NS (INT64_C(24) * 3600 * 1000000000)
/* Limits on spec strings: an image reference or a path longer than this is not plausible. */
#define SBX_IMAGE_MAX 1024
#define SBX_PATH_MAX 1024
#define SBX_NAMESPACE_MAX 64
/* -allow-host: the normalised list (see lib/backend/netpolicy.h, whose NETPOLICY_TEXT_MAX it holds). */
#define SBX_ALLOW_HOSTS_MAX 4097
/* -secret declarations: 16 of them with their host lists and file names. */
#define SBX_SECRETS_MAX 8193
/* A RuntimeClass name: a DNS-1123 subdomain. */
#define SBX_RUNTIME_CLASS_MAX 254
/* A StorageClass name: a DNS-1123 subdomain. */
#define SBX_STORAGE_CLASS_MAX 254
/* kubernetes: a SandboxWarmPool's name, and a Sandbox's (DNS-1123 subdomains) */
#define SBX_OBJECT_NAME_MAX 254
/* Why a sandbox is broken: a path and a parser's reason. */
#define SBX_BROKEN_MAX 1024

/* Resource limits (issue 14): set by sbx-create -memory -pids -cpus -disk -limits. In a spec
 * they are what is asked for; in an sbx_info what is in force. A quantity of 0 means no limit
 * of that kind; enforced false (-limits none, or nothing in force) means none at all. */
struct sbx_limits {
	bool enforced;
	int64_t memory;			/* bytes of memory + swap */
	int64_t pids;			/* processes and threads */
	int64_t cpus_milli;		/* thousandths of a CPU; 0: unlimited (the default) */
	int64_t disk;			/* bytes the home may hold */
	bool disk_asked;		/* spec only: -disk or SANDBOX_DISK was given */
	char cgroup[8];			/* info only: "v1" or "v2" (local backend), else "" */
};

/* What happens to a sandbox at its shutdown time (sbx-create -idle, issue 34). */
enum sbx_idle {
	SBX_IDLE_DELETE,	/* deleted with its home (the default, as upstream) */
	/* paused with its processes and home (local: its cgroup frozen; kubernetes: the
	 * Sandbox suspended, its home on a volume) and deleted paused_ttl after its shutdown
	 * time; the next call on it resumes it */
	SBX_IDLE_PAUSE,
};

/* The documented defaults: a laptop survives a runaway command in a sandbox made with them.
 * Memory is this or half of the machine's RAM, whichever is less. */
#define SBX_DEFAULT_MEMORY (INT64_C(2) << 30)
#define SBX_DEFAULT_PIDS 1024
#define SBX_DEFAULT_DISK (INT64_C(10) << 30)
#define SBX_DEFAULT_ROOT_SIZE (INT64_C(1) << 30)

struct sbx_spec {
	char name[NAME_MAX_LEN + 1];
	char image[SBX_IMAGE_MAX];	/* "" = the backend's default */
	char homedir[SBX_PATH_MAX];	/* absolute path inside the sandbox */
	int64_t ttl_ns;			/* shutdown_time = now + ttl */
	bool network;			/* a network of its own with NAT to the outside */
	/* -allow-host: "" or the normalised list; when set the only way out is the egress proxy,
	 * for those hosts only (local: lib/local/localnet.c; kubernetes decides for itself). */
	char allow_hosts[SBX_ALLOW_HOSTS_MAX];
	/* -secret: "" or the normalised declarations (lib/backend/secretdecl.h): names, files
	 * and hosts, never a value; their hosts are in allow_hosts. */
	char secrets[SBX_SECRETS_MAX];
	char upstream_ca[SBX_PATH_MAX];	/* -upstream-ca: "" or a PEM file sbx-proxy trusts too */
	struct sbx_limits limits;	/* defaults from backend_spec_init */
	/* kubernetes: the pod runs as root with the baseline capabilities and a writable root
	 * filesystem (Pod Security "baseline") instead of the default "restricted" one. */
	bool run_as_root;
	char runtime_class[SBX_RUNTIME_CLASS_MAX];	/* kubernetes: runtimeClassName; "" none */
	/* kubernetes: storageClassName of the home's PersistentVolumeClaim; "" the default */
	char storage_class[SBX_STORAGE_CLASS_MAX];
	enum sbx_idle idle;		/* -idle: delete (default) or pause at shutdown time */
	int64_t paused_ttl;		/* -paused-ttl in ns (as ttl_ns): with idle pause, how long
					 * after shutdown time the paused sandbox is deleted */
	/* kubernetes: -warm-pool: claim a Sandbox of this SandboxWarmPool (a SandboxClaim named
	 * as the sandbox) instead of making one; "" none */
	char warm_pool[SBX_OBJECT_NAME_MAX];
	/* local: the root's writable layer (an overlay over the image, thrown away with the
	 * sandbox) holds at most root_size bytes; -readonly-root: none, the root read-only. */
	bool readonly_root;
	int64_t root_size;
};

struct sbx_info {
	char name[NAME_MAX_LEN + 1];
	char namespace[SBX_NAMESPACE_MAX];
	const char *backend;		/* static: "local" or "kubernetes" */
	char image[SBX_IMAGE_MAX];
	char homedir[SBX_PATH_MAX];
	char shutdown_policy[16];	/* "Delete" or "Retain" */
	int64_t shutdown_ns;		/* wall clock, ns since the epoch; 0 if unset */
	int64_t created_ns;
	bool network;
	char allow_hosts[SBX_ALLOW_HOSTS_MAX];	/* "" or the list in force */
	/* local: the -secret declarations it was made with (names, files, hosts; never a value),
	 * which a reusing create must ask for again; not shown in a handle. */
	char secrets[SBX_SECRETS_MAX];
	struct sbx_limits limits;	/* in force */
	/* kubernetes: the Pod Security level the pod template meets ("restricted", or "baseline"
	 * with -run-as-root) and its RuntimeClass ("" none); empty on other backends. */
	char pod_security[16];
	char runtime_class[SBX_RUNTIME_CLASS_MAX];
	bool ready;
	bool reused;			/* create found a ready sandbox with this spec */
	bool pooled;			/* local: create took it from a warm pool (sbx-pool) */
	/* local: -readonly-root as asked, and the writable root's cap in force (0: the root is
	 * read-only, as it is asked or for a sandbox without a range of ids) */
	bool readonly_root;
	int64_t root_size;
	/* local: list: why this live sandbox is broken (its spec.json cannot be read), "" when
	 * it is not; create: why the broken one of this name was replaced, "" when none was. */
	char broken[SBX_BROKEN_MAX];
	/* create: what the person making it should be told, "" nothing (local: a user without
	 * subordinate ids, once; a user's sandbox sharing a range of them). */
	char notice[320];
	/* "running" or "paused" where the backend tells (local: get, list, pause); "" not known.
	 * A handle shows it when set. */
	char state[16];
	/* kubernetes: the PersistentVolumeClaim the home lives on, "" when it is an emptyDir
	 * (such a sandbox cannot be paused). Pausing it ends its processes: the pod goes. A
	 * handle shows it with "keeps_processes":false. */
	char home_volume[NAME_MAX_LEN + 8];
	enum sbx_idle idle;		/* the policy in force; a handle shows it when pause */
	int64_t paused_ttl;		/* ns; with idle pause: deleted this long after shutdown */
	int64_t delete_ns;		/* when set: when a paused sandbox is deleted, if not at
					 * shutdown + paused_ttl (kubernetes: sbx-pause sets it) */
	/* kubernetes, a sandbox claimed from a warm pool: the pool (not known to list), and the
	 * Sandbox bound to the claim (whose pod runs the commands); "" otherwise. A handle shows
	 * those that are set. */
	char warm_pool[SBX_OBJECT_NAME_MAX];
	char claimed_sandbox[SBX_OBJECT_NAME_MAX];
};

/* One command to run in a sandbox. File descriptors stay the caller's. */
struct sbx_exec {
	char *const *argv;		/* NULL-terminated; argv[0] looked up on the sandbox PATH */
	const char *workdir;		/* NULL: the backend's default working directory */
	char *const *env;		/* extra NAME=VALUE strings (NULL-terminated) or NULL */
	int in_fd;			/* -1: the command reads EOF at once */
	int out_fd, err_fd;		/* where stdout/stderr go */
	int64_t timeout_ns;		/* 0: no deadline */
	int cancel_fd;			/* -1, or becomes readable when the caller wants it stopped */
};

struct sbx_exec_result {
	int exit_code;			/* shell convention: 0-255, 128+n for signal n, 124 timeout */
	int signal;			/* the signal that ended it, or 0 */
	bool timed_out;			/* deadline hit; every process it started was killed */
	bool canceled;			/* cancel_fd fired; every process it started was killed */
	bool oom_killed;		/* the memory limit killed it (exit_code 137) */
	int64_t memory_limit;		/* with oom_killed: the limit in bytes, else 0 */
};

struct sbx_backend;
struct portfwd;

struct backend_ops {
	const char *name;
	/* The backend hands exec's descriptors into the sandbox (local): lib/backend/relay.c then passes
	 * pipes of its own instead of the caller's. */
	bool passes_fds;
	/* Creates the sandbox or reuses a ready one with the same spec; waits until ready. */
	int (*create)(struct sbx_backend *, const struct sbx_spec *, struct sbx_info *,
		      struct sbx_err *);
	/* Runs one command; a non-zero exit is a result, not an error. */
	int (*exec)(struct sbx_backend *, const char *name, const struct sbx_exec *,
		    struct sbx_exec_result *, struct sbx_err *);
	/* Moves shutdown time to now + ttl. SBX_ENOTFOUND when the sandbox is gone. */
	int (*touch)(struct sbx_backend *, const char *name, int64_t ttl_ns, struct sbx_info *,
		     struct sbx_err *);
	/* Removes it; a missing sandbox is success. */
	int (*remove)(struct sbx_backend *, const char *name, struct sbx_err *);
	/* Reads its state. SBX_ENOTFOUND when it does not exist. */
	int (*get)(struct sbx_backend *, const char *name, struct sbx_info *, struct sbx_err *);
	/* Calls fn for every sandbox in the namespace; fn returning non-zero stops the walk. */
	int (*list)(struct sbx_backend *, int (*fn)(const struct sbx_info *, void *), void *arg,
		    struct sbx_err *);
	/* Optional (NULL if not possible): freezes (paused true) or thaws every process of the
	 * sandbox, waits until done and fills its handle. Both are idempotent. */
	int (*pause)(struct sbx_backend *, const char *name, bool paused, struct sbx_info *,
		     struct sbx_err *);
	/* Optional (NULL if not possible): a host path where the home directory can be read and
	 * written directly (the local backend), so archives need not go through exec. */
	char *(*home_path)(struct sbx_backend *, const char *name, struct sbx_err *);
	/* Optional: moves the calling process (single-threaded: a freshly forked child) into the
	 * cgroup of sandbox name, so work done for it on the host (a snapshot's compression) is
	 * charged to its limits. 0, also when it has none; -1 with errno. */
	int (*charge)(struct sbx_backend *, const char *name);
	/* Optional (NULL: the local backend's forwards go through portfwd_serve): serves sbx-port's
	 * forward pf (portfwd.h) from its listener lfd until cancel_fd is readable or the sandbox is
	 * gone; note tells the person what failed for one connection. An enum portfwd_end, or -1. */
	int (*port)(struct sbx_backend *, struct portfwd *pf, int lfd, int cancel_fd,
		    void (*note)(void *, const char *), void *arg, struct sbx_err *);
	void (*close)(struct sbx_backend *);
};

struct sbx_backend {
	const struct backend_ops *ops;
	char namespace[SBX_NAMESPACE_MAX];
	void *priv;
};

/* The backend names, in the order help texts list them. */
extern const char *const backend_names[];

/* The environment's defaults, read in this one place (static or environment strings):
 * $SANDBOX_HOME_DIR or SBX_DEFAULT_HOMEDIR; $SANDBOX_NAMESPACE or SBX_DEFAULT_NAMESPACE;
 * $SANDBOX_IMAGE or NULL (the backend's default). */
const char *backend_env_homedir(void);
const char *backend_env_namespace(void);
const char *backend_env_image(void);
/* $SANDBOX_BACKUP_BUDGET, the default of sbx-snapshot's -backup-budget, into *bytes (untouched
 * when unset); -1 when it is not a size such as 30G. */
int backend_env_backup_budget(long long *bytes);
/* Whether a Kubernetes configuration exists: in a pod ($KUBERNETES_SERVICE_HOST), a file
 * $KUBECONFIG names, else ~/.kube/config. *why (may be NULL) gets a static explanation. */
bool backend_kube_config(const char **why);
/* The backend the agent programs use when none is named: $SANDBOX_BACKEND if set, else
 * "kubernetes" when backend_kube_config, else "local". A static string; *why (may be NULL)
 * gets a static explanation. */
const char *backend_default(const char **why);

/* Opens a backend by name ("local", "kubernetes"); NULL kind means $SANDBOX_BACKEND, else
 * "local". NULL namespace means backend_env_namespace(). */
struct sbx_backend *backend_open(const char *kind, const char *namespace, struct sbx_err *e);
void backend_close(struct sbx_backend *b);
/* Fills spec defaults: homedir backend_env_homedir(), ttl 5 min, the
 * default limits (backend_default_memory, SBX_DEFAULT_PIDS, SBX_DEFAULT_DISK). */
void backend_spec_init(struct sbx_spec *spec);
/* SBX_DEFAULT_MEMORY, or half of this machine's RAM when that is less. */
int64_t backend_default_memory(void);
/* The default memory limit of a sandbox on b: backend_default_memory() on the local backend;
 * SBX_DEFAULT_MEMORY on kubernetes, whose pods run on nodes this machine knows nothing of. */
int64_t backend_default_memory_of(const struct sbx_backend *b);
/* Refuses what backend KIND ("local", "kubernetes"; any other: nothing) cannot honour rather
 * than ignore it:
 * -allow-host on kubernetes (its proxy runs on the sandbox's host), -runtime-class on local
 * (no runtime to choose). SBX_EINVAL naming what to use instead; sbx_create checks it too. */
int backend_spec_check(const char *kind, const struct sbx_spec *spec, struct sbx_err *e);

/* Convenience wrappers that validate the name first. */
int sbx_create(struct sbx_backend *b, const struct sbx_spec *spec, struct sbx_info *out,
	       struct sbx_err *e);
int sbx_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
	     struct sbx_exec_result *r, struct sbx_err *e);
int sbx_touch(struct sbx_backend *b, const char *name, int64_t ttl_ns, struct sbx_info *out,
	      struct sbx_err *e);
int sbx_remove(struct sbx_backend *b, const char *name, struct sbx_err *e);
int sbx_get(struct sbx_backend *b, const char *name, struct sbx_info *out, struct sbx_err *e);
/* Pauses (paused true) or resumes the sandbox: SBX_EUNAVAIL where the backend cannot. */
int sbx_pause(struct sbx_backend *b, const char *name, bool paused, struct sbx_info *out,
	      struct sbx_err *e);

/* The handle sbx-create prints: name, namespace, backend, image, homedir, shutdown_time,
 * limits, reused (new reference). */
struct json_object *sbx_info_json(const struct sbx_info *in);
/* With -idle pause, adds to handle o: idle "pause", paused_ttl (Go duration) and delete_time
 * (shutdown_time + paused_ttl: when a paused sandbox is deleted); nothing otherwise. */
void sbx_idle_json(struct json_object *o, const struct sbx_info *in);
/* The handle's "network" object: mode "none", "nat" or "proxy", and allow_hosts when set
 * (new reference). */
struct json_object *sbx_network_json(const struct sbx_info *in);
/* The "limits" object of a handle: {"enforced":false}, or enforced with memory, pids, cpus,
 * disk (0: none of that kind) and the cgroup version when known (new reference). */
struct json_object *sbx_limits_json(const struct sbx_limits *l);
/* Reads what sbx_limits_json wrote (missing keys stay 0); -1 if o is not such an object. */
int sbx_limits_from_json(struct json_object *o, struct sbx_limits *l);

/* The ops tables, defined by each backend's module. */
extern const struct backend_ops local_backend_ops;
extern const struct backend_ops kube_backend_ops;

#endif
