/* specflags.h — the flags that shape a new sandbox (its struct sbx_spec beyond name, image,
 * homedir and ttl), defined once for every program that creates sandboxes. sbx-create turns
 * them into the spec; agent-loop, acp-server and sbx-mcp take the same flags and hand what was
 * given to sbx-create unchanged, so a new sandbox flag is one row of SPECFLAGS_ROWS below
 * (and its apply_ function) and reaches every program, its -h included, without touching them. Each flag may have an environment variable
 * (SANDBOX_*) that sbx-create reads when the flag is not given; children inherit it.
 * Ownership: values point into argv (or the environment); specflags_argv's vector is newly
 * allocated and freed with specflags_argv_free. */
#ifndef SBX_SPECFLAGS_H
#define SBX_SPECFLAGS_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "err.h"
#include "flag.h"

/* The rows, one per flag, in the order help texts list them: everything a program knows of a
 * flag comes from here (its SPECF_* id, the parse table in specflags.c, -h's lines and synopsis),
 * so adding a row changes every program's -h. X(a, ID, apply, name, boolean, env, synopsis, at,
 * help): apply_<apply> in specflags.c sets the spec; at is where the synopsis fragment goes in
 * the wrapped synopsis (first, same line, next line); help is the row's lines of the usage
 * text; a is the caller's argument, passed through to X. */
#define SPECFLAGS_ROWS(X, a) \
	X(a, NETWORK, network, "network", true, "SANDBOX_NETWORK", "[-network]", first, \
	  "  -network              a network of its own with NAT to the outside; env\n" \
	  "                        SANDBOX_NETWORK=true, default: none\n") \
	X(a, ALLOW_HOSTS, allow_hosts, "allow-host", false, "SANDBOX_ALLOW_HOSTS", \
	  "[-allow-host LIST]", same, \
	  "  -allow-host LIST      reach only these hosts, through an HTTP/SOCKS5 proxy: NAME,\n" \
	  "                        *.DOMAIN, +NAME (may reach internal addresses), IP or CIDR,\n" \
	  "                        each with an optional :PORT, comma-separated; env\n" \
	  "                        SANDBOX_ALLOW_HOSTS\n") \
	X(a, SECRETS, secrets, "secret", false, "SANDBOX_SECRETS", "[-secret NAME@HOSTS]...", \
	  same, \
	  "  -secret NAME@HOSTS    a credential the sandbox can use but never see: NAME holds a\n" \
	  "                        placeholder inside, and sbx-proxy puts the caller's $NAME\n" \
	  "                        (or NAME=@FILE@HOSTS: FILE's contents) in its place in\n" \
	  "                        headers of requests to HOSTS (an -allow-host list, added to\n" \
	  "                        it); repeatable; env SANDBOX_SECRETS (space-separated)\n") \
	X(a, UPSTREAM_CA, upstream_ca, "upstream-ca", false, "SANDBOX_UPSTREAM_CA", \
	  "[-upstream-ca FILE]", next, \
	  "  -upstream-ca FILE     with -secret: also trust these CA certificates (PEM) for the\n" \
	  "                        secrets' HTTPS hosts; env SANDBOX_UPSTREAM_CA\n") \
	X(a, MEMORY, memory, "memory", false, "SANDBOX_MEMORY", "[-memory SIZE]", same, \
	  "  -memory SIZE          memory limit, swap included (512M, 2G); env SANDBOX_MEMORY,\n" \
	  "                        default 2G (local: half of the RAM if less)\n") \
	X(a, PIDS, pids, "pids", false, "SANDBOX_PIDS", "[-pids N]", same, \
	  "  -pids N               most processes and threads at once; env SANDBOX_PIDS,\n" \
	  "                        default 1024\n") \
	X(a, CPUS, cpus, "cpus", false, "SANDBOX_CPUS", "[-cpus N]", same, \
	  "  -cpus N               CPU time in CPUs (0.5, 2); env SANDBOX_CPUS, default unlimited\n") \
	X(a, DISK, disk, "disk", false, "SANDBOX_DISK", "[-disk SIZE]", next, \
	  "  -disk SIZE            most the home may hold (10G; 0: no cap); env SANDBOX_DISK,\n" \
	  "                        default 10G (a user's: where fuse2fs can mount it)\n") \
	X(a, LIMITS, limits, "limits", false, "SANDBOX_LIMITS", "[-limits on|none]", same, \
	  "  -limits on|none       none: no resource limit at all (shown in the handle);\n" \
	  "                        env SANDBOX_LIMITS, default on\n") \
	X(a, RUN_AS_ROOT, run_as_root, "run-as-root", true, "SANDBOX_RUN_AS_ROOT", \
	  "[-run-as-root]", same, \
	  "  -run-as-root          kubernetes: run the pod as root, Pod Security baseline\n" \
	  "                        (default: uid 1000, restricted; env SANDBOX_RUN_AS_ROOT)\n") \
	X(a, RUNTIME_CLASS, runtime_class, "runtime-class", false, "SANDBOX_RUNTIME_CLASS", \
	  "[-runtime-class NAME]", same, \
	  "  -runtime-class NAME   kubernetes: the pod's RuntimeClass, e.g. gvisor or kata\n" \
	  "                        (env SANDBOX_RUNTIME_CLASS)\n") \
	X(a, STORAGE_CLASS, storage_class, "storage-class", false, "SANDBOX_STORAGE_CLASS", \
	  "[-storage-class NAME]", next, \
	  "  -storage-class NAME   kubernetes: StorageClass of the home's volume claim (a\n" \
	  "                        sandbox that can be paused); env SANDBOX_STORAGE_CLASS\n") \
	X(a, IDLE, idle, "idle", false, "SANDBOX_IDLE", "[-idle pause|delete]", same, \
	  "  -idle pause|delete    at the shutdown time: pause the sandbox (processes and\n" \
	  "                        home kept, resumed by the next call) or delete it; env\n" \
	  "                        SANDBOX_IDLE, default delete\n") \
	X(a, PAUSED_TTL, paused_ttl, "paused-ttl", false, "SANDBOX_PAUSED_TTL", "[-paused-ttl D]", \
	  same, \
	  "  -paused-ttl D         with -idle pause: delete it D after the shutdown time\n" \
	  "                        (Go duration); env SANDBOX_PAUSED_TTL, default 24h\n") \
	X(a, WARM_POOL, warm_pool, "warm-pool", false, "SANDBOX_WARM_POOL", "[-warm-pool POOL]", \
	  next, \
	  "  -warm-pool POOL       kubernetes: claim a ready Sandbox of this SandboxWarmPool\n" \
	  "                        (a SandboxClaim) instead of making one; env SANDBOX_WARM_POOL\n") \
	X(a, ROOT_SIZE, root_size, "root-size", false, "SANDBOX_ROOT_SIZE", "[-root-size SIZE]", \
	  next, \
	  "  -root-size SIZE       local, as root: most the writable root (/usr, /etc, /var,\n" \
	  "                        /opt over the image) may hold; env SANDBOX_ROOT_SIZE,\n" \
	  "                        default 1G\n") \
	X(a, READONLY_ROOT, readonly_root, "readonly-root", true, "SANDBOX_READONLY_ROOT", \
	  "[-readonly-root]", same, \
	  "  -readonly-root        local: the image's root read-only, /var empty (env\n" \
	  "                        SANDBOX_READONLY_ROOT)\n")

#define SPECF_ID_(a, id, ...) SPECF_##id,
enum specflag_id { SPECFLAGS_ROWS(SPECF_ID_, ~) SPECF_COUNT };

#define SPECF_HELP_(a, id, apply, name, boolean, env, syn, at, help) help
/* Help lines for the flags, in the rows' order, for a program's usage constant. */
#define SPECFLAGS_USAGE SPECFLAGS_ROWS(SPECF_HELP_, ~)

#define SPECF_AT_first(indent) ""
#define SPECF_AT_same(indent) " "
#define SPECF_AT_next(indent) "\n" indent
#define SPECF_SYN_(indent, id, apply, name, boolean, env, syn, at, help) SPECF_AT_##at(indent) syn
/* The flags' synopsis for an 80-column usage text, each line but the first starting with
 * indent. */
#define SPECFLAGS_SYNOPSIS_WRAPPED(indent) SPECFLAGS_ROWS(SPECF_SYN_, indent)

struct specflags {
	const char *val[SPECF_COUNT];	/* text given for a value flag; NULL: not given */
	bool on[SPECF_COUNT];		/* a boolean flag's value */
	bool seen[SPECF_COUNT];		/* given on the command line */
	struct flag_list list[SPECF_COUNT];	/* a repeatable flag's values */
};

/* Writes the SPECF_COUNT flag entries bound to sf into tbl (which must have room for them);
 * returns the number written. sf must outlive the parse. */
size_t specflags_table(struct specflags *sf, struct flag *tbl);
/* Fills spec's fields from the flags given, else their environment variables, else the
 * defaults; a bad value is SBX_EINVAL naming the flag (or variable), and so is a limit flag
 * given with -limits none. */
int specflags_apply(const struct specflags *sf, struct sbx_spec *spec, struct sbx_err *e);
/* Checks the flags given (and their variables) as sbx-create would, so a program that hands
 * them on can refuse a bad value at start rather than at its first sandbox. */
int specflags_check(const struct specflags *sf, struct sbx_err *e);
/* The same, and what the backend named ("local", "kubernetes"; NULL: either) would refuse
 * at create (backend_spec_check): -allow-host on kubernetes, -runtime-class on local. */
int specflags_check_backend(const struct specflags *sf, const char *backend, struct sbx_err *e);
/* Whether flag id was given, on the command line or through its environment variable. */
bool specflags_given(const struct specflags *sf, enum specflag_id id);
/* Bounds of the limit flags, so a typo cannot make a sandbox that cannot start its own init
 * (below the minimums) or a quantity that overflows a kernel interface (above the maximums). */
#define SPECF_MEMORY_MIN (INT64_C(32) << 20)
#define SPECF_DISK_MIN (INT64_C(16) << 20)
#define SPECF_ROOT_MIN (INT64_C(16) << 20)
#define SPECF_SIZE_MAX (INT64_C(1) << 50)
/* -upstream-ca: a bundle of CA certificates (the system's whole is about 200 KiB); hex-coded
 * in the proxy's secrets feed (at most 1 MiB), so under half of that. */
#define SPECF_UPSTREAM_CA_MAX (384 << 10)
#define SPECF_PIDS_MIN 16
#define SPECF_PIDS_MAX 4194304		/* the kernel's PID_MAX_LIMIT */
#define SPECF_CPUS_MAX_MILLI 4096000	/* 4096 CPUs */
/* -paused-ttl: at least a second (a test's short wait); at most a year, past which a paused
 * sandbox is memory nobody will come back for. */
#define SPECF_PAUSED_TTL_MIN INT64_C(1000000000)
#define SPECF_PAUSED_TTL_MAX (INT64_C(8760) * 3600 * 1000000000)

/* The flags given, as "-name=value" words for sbx-create (NULL-terminated; never NULL). */
char **specflags_argv(const struct specflags *sf);
void specflags_argv_free(char **v);

#endif
