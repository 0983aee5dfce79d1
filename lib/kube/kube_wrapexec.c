/* kube_wrapexec.c — how the kubernetes backend runs a command in a Sandbox's pod over
 * WebSocket exec (lib/kube/kubeexec.c): wrapped or plain, stdin streamed (v5) or counted (v4),
 * stopped for good on a timeout, a cancel or a broken stream.
 * Wrapped execs. libwebsockets 4.1 formats the upgrade request line into 2 KiB, too little
 * for long command lines, and Kubernetes neither stops a process when its exec stream closes
 * nor (on v4.channel.k8s.io) lets a client close stdin. So unless the command is short and
 * needs nothing else, sbx runs a script holding the real command line (shell-quoted),
 * environment and working directory. A script that fits in the URL is passed as an argument
 * of `sh -c 's=$0; eval "$s"'` (url_boot). A longer one, or one whose command streams stdin,
 * travels ahead of stdin: sbx runs boot_script (`s=$(head -c N)`, then eval) and sends the
 * script, ending in KB_SCRIPT_END, as the first N bytes; the rest of stdin belongs to the
 * command. `head -c N` reads exactly N bytes, so nothing of the command's input is consumed,
 * and a script without its end marker (a stream cut short) is refused. The script then:
 *  - with a deadline or cancel_fd: writes the shell's pid to /tmp/.sbx-exec-<random>, runs
 *    the command under `setsid` (when setsid exists) so that it leads a new session, waits
 *    for it and removes the file. On timeout, cancel or a broken stream a second exec stops
 *    and kills every descendant of that shell (read from /proc/<pid>/stat) and every process
 *    in a session or process group one of them leads, and removes the file: the command and
 *    everything it started die, as on the local backend.
 *  - on v4 with stdin: feeds the command through `head -c M`, M being the exact stdin size (a
 *    regular file's remaining bytes, or the size of a temporary copy of piped input), so the
 *    command sees EOF after M bytes. A server known (from an earlier exec, remembered per
 *    server in the state dir) to choose v5 gets piped stdin streamed and half-closed instead.
 * Standard input that is /dev/null or a regular file already at its end is no input at all:
 * the exec asks for no stdin stream.
 * Wrapped execs need /bin/sh and head in the image (every Debian-based image has them). */
#include "kube_int.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exitcode.h"
#include "fsutil.h"
#include "kubeexec.h"
#include "paths.h"
#include "timeutil.h"
#include "xalloc.h"

/* The kill exec after a timeout is small; it must not hang the caller for long. */
#define KB_KILL_TIMEOUT_NS (INT64_C(30) * 1000000000)
/* Piped stdin copied for a v4 exec may be this large; beyond it, ask for v5. */
#define KB_SPOOL_MAX (INT64_C(16) * 1024 * 1024 * 1024)
/* The script sent ahead of stdin carries the command line and environment: bounded like a
 * kernel's argument space. */
#define KB_SCRIPT_MAX (2 * 1024 * 1024)

/* The command that starts every wrapped exec: it reads a script of exactly $0 bytes from
 * stdin and runs it; the rest of stdin stays for the command. The script ends with the
 * comment KB_SCRIPT_END: a script cut short (a broken stream) is refused, never half run. */
#define KB_SCRIPT_END "#sbx-end"
static const char boot_script[] =
	"s=$(head -c \"$0\"); case $s in *'" KB_SCRIPT_END "') eval \"$s\";; "
	"*) echo 'sbx: the command script arrived incomplete' >&2; exit 126;; esac";

/* The command that starts a wrapped exec whose script fits in the URL: the script is $0. */
static const char url_boot[] = "s=$0; eval \"$s\"";

/* Kills the shell recorded in the pid file $f and everything it started: every descendant
 * (found through the parent pids) and every process in a session or process group one of
 * them leads (so daemons that left the tree die too). The processes are collected, stopped
 * so they cannot fork, collected again and killed. Waits briefly for the file when the
 * command has only just started. */
static const char kill_body[] =
	"i=0\n"
	"while [ ! -s \"$f\" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done\n"
	"p=$(cat \"$f\" 2>/dev/null) || exit 0\n"
	"[ -n \"$p\" ] || exit 0\n"
	"k=\" $p \"\n"
	"collect() {\n"
	"  c=1\n"
	"  while [ $c = 1 ]; do\n"
	"    c=0\n"
	"    for d in /proc/[0-9]*; do\n"
	"      q=${d#/proc/}\n"
	"      case $k in *\" $q \"*) continue;; esac\n"
	"      read -r l <\"$d/stat\" 2>/dev/null || continue\n"
	"      set -- ${l##*) }\n"
	"      case $k in *\" $2 \"*|*\" $3 \"*|*\" $4 \"*) k=\"$k$q \"; c=1;; esac\n"
	"    done\n"
	"  done\n"
	"}\n"
	"collect; kill -STOP $k 2>/dev/null; collect; kill -KILL $k 2>/dev/null\n"
	"rm -f \"$f\"\n";

/* Appends s as one single-quoted sh word. */
static void sh_quote(struct buf *b, const char *s)
{
	buf_puts(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			buf_puts(b, "'\\''");
		else
			buf_append(b, s, 1);
	}
	buf_puts(b, "'");
}

/* How the wrapped command gets its stdin. */
enum in_mode { IN_NONE, IN_STREAM, IN_COUNTED };

/* The script of a wrapped exec (see the top of this file): optional pid file, environment,
 * working directory, then the command with its stdin. */
static char *exec_script(const struct sbx_exec *x, const char *pidfile, enum in_mode in,
			 int64_t count)
{
	struct buf b = {0};
	size_t i;

	buf_puts(&b, "unset s\n");
	if (pidfile) {
		buf_puts(&b, "f=");
		sh_quote(&b, pidfile);
		buf_puts(&b, "; echo $$ >\"$f\"\n");
		/* The command leads a new session the kill script can find; setsid does not fork,
		 * as a child of a shell without job control is no process group leader. */
		buf_puts(&b, "S=; command -v setsid >/dev/null 2>&1 && S=setsid\n");
	}
	for (i = 0; x->env && x->env[i]; i++) {
		buf_puts(&b, "export ");
		sh_quote(&b, x->env[i]);
		buf_puts(&b, "\n");
	}
	if (x->workdir) {
		buf_puts(&b, "cd ");
		sh_quote(&b, x->workdir);
		buf_puts(&b, " || exit 1\n");
	}
	buf_puts(&b, "set --");
	for (i = 0; x->argv[i]; i++) {
		buf_puts(&b, " ");
		sh_quote(&b, x->argv[i]);
	}
	buf_puts(&b, "\n");
	if (in == IN_COUNTED)
		buf_printf(&b, "head -c %lld | %s\"$@\"\n", (long long)count, pidfile ? "$S " : "");
	else if (pidfile)
		buf_printf(&b, "$S \"$@\"%s\n", in == IN_NONE ? " </dev/null" : "");
	else
		buf_printf(&b, "exec \"$@\"%s\n", in == IN_NONE ? " </dev/null" : "");
	if (pidfile)
		buf_puts(&b, "r=$?; rm -f \"$f\"; exit $r\n");
	else if (in == IN_COUNTED)
		buf_puts(&b, "exit $?\n");
	buf_puts(&b, KB_SCRIPT_END);
	return buf_steal(&b);
}

/* True when fd gives no input at all: /dev/null, or a regular file already at its end. */
static bool input_empty(int fd)
{
	struct stat st, null;
	off_t pos;

	if (fstat(fd, &st) < 0)
		return false;
	if (S_ISCHR(st.st_mode))
		return stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) && st.st_rdev == null.st_rdev;
	if (S_ISREG(st.st_mode))
		return (pos = lseek(fd, 0, SEEK_CUR)) >= 0 && pos >= st.st_size;
	return false;
}

/* The per-server file remembering which subprotocol the server chose last time. It lives in
 * <state root>/.kube/: a dot name can never be a namespace of the local backend. */
static char *proto_cache(const char *server)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	char hex[33], *root, *p;
	int i;

	SHA256((const unsigned char *)server, strlen(server), md);
	for (i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	if ((root = paths_state_root(NULL)) == NULL)
		return NULL;
	p = xasprintf("%s/.kube", root);
	free(root);
	if (paths_mkdirs(p, 0700, NULL) < 0) {
		free(p);
		return NULL;
	}
	root = p;
	p = xasprintf("%s/%s.protocol", root, hex);
	free(root);
	return p;
}

static bool proto_known_v5(const char *cache)
{
	char buf[64] = "";
	FILE *f = cache ? fopen(cache, "re") : NULL;

	if (f == NULL)
		return false;
	if (fgets(buf, sizeof buf, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	return strncmp(buf, KUBEEXEC_V5, strlen(KUBEEXEC_V5)) == 0;
}

/* Failures only lose the cache. */
static void proto_remember(const char *cache, const char *proto)
{
	char *line;

	if (cache == NULL || proto[0] == '\0' || proto_known_v5(cache) == (strcmp(proto, KUBEEXEC_V5) == 0))
		return;
	line = xasprintf("%s\n", proto);
	fs_write_atomic(cache, line, strlen(line), 0644);
	free(line);
}

/* Copies piped stdin into an unlinked temporary file; returns its fd (at offset 0). */
static int spool(int in_fd, int64_t *size, struct sbx_err *e)
{
	const char *td = getenv("TMPDIR");
	char *tmpl = xasprintf("%s/sbx-stdin.XXXXXX", td && *td ? td : "/tmp");
	char chunk[65536];
	int fd = mkostemp(tmpl, O_CLOEXEC);
	int64_t total = 0;

	if (fd < 0) {
		err_sys(e, errno, "cannot create a temporary file for stdin in %s", td && *td ? td : "/tmp");
		free(tmpl);
		return -1;
	}
	unlink(tmpl);
	free(tmpl);
	for (;;) {
		ssize_t n = read(in_fd, chunk, sizeof chunk), w = 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_sys(e, errno, "cannot read stdin");
			goto fail;
		}
		if (n == 0)
			break;
		total += n;
		if (total > KB_SPOOL_MAX) {
			err_set(e, SBX_EINVAL, "stdin is larger than %lld bytes, too large to copy for a v4.channel.k8s.io exec",
				(long long)KB_SPOOL_MAX);
			goto fail;
		}
		while (w < n) {
			ssize_t k = write(fd, chunk + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				err_sys(e, errno, "cannot copy stdin to a temporary file");
				goto fail;
			}
			w += k;
		}
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		err_sys(e, errno, "cannot rewind the stdin copy");
		goto fail;
	}
	*size = total;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Runs the kill script in the sandbox for pid file f (best effort). */
static void kill_remote(struct kubeconfig *kc, const struct sbx_backend *b, const char *pod,
			const char *f, const char *protos)
{
	struct buf script = {0};
	char count[32];
	char *argv[] = {"sh", "-c", (char *)boot_script, count, NULL};
	struct kubeexec_req req = {
		.kc = kc, .namespace = b->namespace, .pod = pod, .container = KB_CONTAINER,
		.argv = argv, .in_fd = -1, .out_fd = -1, .err_fd = -1, .cancel_fd = -1,
		.deadline_ns = time_mono_ns() + KB_KILL_TIMEOUT_NS, .protocols = protos,
	};
	struct kubeexec_result res;
	struct sbx_err ignored;

	buf_puts(&script, "exec </dev/null\nf=");
	sh_quote(&script, f);
	buf_printf(&script, "\n%s%s", kill_body, KB_SCRIPT_END);
	snprintf(count, sizeof count, "%zu", script.len);
	req.in_prefix = script.data;
	req.in_prefix_len = script.len;
	kubeexec_run(&req, &res, &ignored);
	buf_free(&script);
}

/* One exec attempt's plan: how stdin goes, whether the command is wrapped, its script. */
struct plan {
	const char *protos;		/* the subprotocols offered */
	char *cache;			/* the server's protocol memory (proto_cache) */
	bool need_kill;			/* a deadline or cancel: the command must be killable */
	char pidfile[64];		/* then: where its shell's pid is kept in the pod */
	int in_fd, spooled;		/* stdin sent (-1: none); a spooled copy of it to close */
	enum in_mode in;
	int64_t size;			/* IN_COUNTED: the bytes of stdin */
	char *script, count[32];	/* a wrapped command's script; its length as $0 */
	char *boot[5], *url_argv[5];
};

/* The subprotocols to offer: both, or the one $SBX_KUBE_EXEC_PROTOCOL names (tests). */
static const char *exec_protocols(void)
{
	const char *env = getenv("SBX_KUBE_EXEC_PROTOCOL");

	if (env && strcmp(env, "v4") == 0)
		return KUBEEXEC_V4;
	if (env && strcmp(env, "v5") == 0)
		return KUBEEXEC_V5;
	return KUBEEXEC_V5 "," KUBEEXEC_V4;
}

/* Without stdin half-close (v4) the remote side must know the byte count: a regular file's
 * remaining bytes, or those of a copy of piped input. */
static int count_stdin(struct plan *p, struct sbx_err *e)
{
	struct stat sb;
	off_t pos = lseek(p->in_fd, 0, SEEK_CUR);

	if (fstat(p->in_fd, &sb) == 0 && S_ISREG(sb.st_mode) && pos >= 0) {
		p->size = (int64_t)sb.st_size - (int64_t)pos;
		if (p->size < 0)
			p->size = 0;
	} else {
		if ((p->spooled = spool(p->in_fd, &p->size, e)) < 0)
			return -1;
		p->in_fd = p->spooled;
	}
	p->in = IN_COUNTED;
	return 0;
}

/* A pid file of a random name in the pod's /tmp, for the kill script to find the command. */
static int make_pidfile(struct plan *p, struct sbx_err *e)
{
	unsigned char rnd[12];

	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		return err_sys(e, errno, "getrandom");
	strcpy(p->pidfile, "/tmp/.sbx-exec-");
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(p->pidfile + strlen(p->pidfile), 3, "%02x", rnd[i]);
	return 0;
}

/* The wrapped command of req: the script in the URL when it fits (sparing a process), else
 * the boot script with the script ahead of stdin. Never in the URL for streamed stdin, so
 * that a server choosing v4 after all finds nothing started when it is dropped. */
static int wrap(struct plan *p, struct kubeexec_req *req, const struct sbx_exec *x,
		struct sbx_err *e)
{
	char *urlpath = NULL;

	p->script = exec_script(x, p->need_kill ? p->pidfile : NULL, p->in, p->size);
	if (strlen(p->script) > KB_SCRIPT_MAX)
		return err_set(e, SBX_EINVAL, "the command line and environment are larger than %d "
			       "bytes", KB_SCRIPT_MAX);
	p->url_argv[3] = p->script;
	if (p->in != IN_STREAM && (urlpath = kubeexec_path(req->namespace, req->pod, KB_CONTAINER,
							   p->url_argv, p->in_fd >= 0))) {
		req->argv = p->url_argv;
	} else {
		snprintf(p->count, sizeof p->count, "%zu", strlen(p->script));
		req->argv = p->boot;
		req->in_prefix = p->script;
		req->in_prefix_len = strlen(p->script);
	}
	free(urlpath);
	return 0;
}

/* Plans the exec: protocols, stdin, pid file, wrapping; fills req. */
static int plan_exec(struct plan *p, struct sbx_backend *b, const char *name,
		     const struct sbx_exec *x, bool counted_only, struct kubeapi *api,
		     struct kubeexec_req *req, struct sbx_err *e)
{
	char *rawpath;
	bool v4_possible, wrapped;
	int rc = 0;

	p->protos = exec_protocols();
	p->cache = proto_cache(kubeapi_config(api)->server);
	p->need_kill = x->timeout_ns > 0 || x->cancel_fd >= 0;
	p->in_fd = x->in_fd >= 0 && !input_empty(x->in_fd) ? x->in_fd : -1;
	p->in = p->in_fd >= 0 ? IN_STREAM : IN_NONE;
	v4_possible = counted_only || (strstr(p->protos, KUBEEXEC_V4) &&
				       !(strstr(p->protos, KUBEEXEC_V5) && proto_known_v5(p->cache)));
	if (p->in_fd >= 0 && v4_possible && count_stdin(p, e) < 0)
		return -1;
	if (p->need_kill && make_pidfile(p, e) < 0)
		return -1;
	memset(req, 0, sizeof *req);
	req->kc = kubeapi_config(api);
	req->namespace = b->namespace;
	req->pod = name;
	req->container = KB_CONTAINER;
	req->argv = x->argv;
	/* Streamed stdin is always wrapped: should the server choose v4 after all, the command
	 * has not started when the connection is dropped before its script. */
	rawpath = kubeexec_path(b->namespace, name, KB_CONTAINER, x->argv, p->in_fd >= 0);
	wrapped = p->need_kill || p->in != IN_NONE || x->workdir || (x->env && x->env[0]) ||
		  rawpath == NULL;
	free(rawpath);
	if (wrapped)
		rc = wrap(p, req, x, e);
	req->in_fd = p->in_fd;
	req->out_fd = x->out_fd;
	req->err_fd = x->err_fd;
	req->deadline_ns = x->timeout_ns > 0 ? time_mono_ns() + x->timeout_ns : 0;
	req->cancel_fd = x->cancel_fd;
	req->protocols = p->protos;
	req->require_v5 = p->in == IN_STREAM;
	return rc;
}

/* A finished exec as r: stopped (a deadline or cancel: the command is killed for good), a
 * command the runtime could not start (126/127, said where its errors go), or its status. */
static void exec_outcome(struct plan *p, struct sbx_backend *b, const char *name,
			 const struct sbx_exec *x, const struct kubeexec_req *req,
			 const struct kubeexec_result *res, struct sbx_exec_result *r)
{
	if (res->timed_out || res->canceled) {
		if (p->need_kill)
			kill_remote(req->kc, b, name, p->pidfile, p->protos);
		r->timed_out = res->timed_out;
		r->canceled = res->canceled;
		r->exit_code = res->timed_out ? EXIT_TIMEOUT : EXIT_SIGNAL_BASE + SIGINT;
	} else if (res->failure) {
		bool nf = strstr(res->msg, "not found") || strstr(res->msg, "no such file");
		if (x->err_fd >= 0) {
			char *m = xasprintf("%s\n", res->msg);
			ssize_t w = write(x->err_fd, m, strlen(m));
			(void)w;
			free(m);
		}
		r->exit_code = nf ? EXIT_CMD_NOT_FOUND : EXIT_CANNOT_EXEC;
	} else {
		r->exit_code = res->exit_code;
	}
}

/* kubeexec_run; when there is no pod, a suspended Sandbox is resumed and the command run
 * again (nothing was sent: the upgrade was refused). Otherwise no API request is made on the
 * way to an exec. */
static int run_waking(struct sbx_backend *b, const char *name, const struct kubeexec_req *req,
		      struct kubeexec_result *res, struct sbx_err *e)
{
	struct sbx_err we;
	int woke;

	if (kubeexec_run(req, res, e) == 0)
		return 0;
	if (e->code != SBX_ENOTFOUND || res->established)
		return -1;
	if ((woke = kb_wake(b, name, &we)) < 0)
		*e = we;
	return woke > 0 ? kubeexec_run(req, res, e) : -1;
}

/* One exec attempt. Returns 0 or -1, or 2 when the server chose v4 for a stream that needs
 * v5: nothing ran, and the caller tries again with counted stdin (counted_only). */
static int exec_once(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
		     struct sbx_exec_result *r, bool counted_only, struct sbx_err *e)
{
	struct kubeapi *api = kb_api(b, e);
	struct plan p = {.spooled = -1, .boot = {"sh", "-c", (char *)boot_script, NULL, NULL},
			 .url_argv = {"sh", "-c", (char *)url_boot, NULL, NULL}};
	struct kubeexec_req req;
	struct kubeexec_result res;
	int rc = -1;

	p.boot[3] = p.count;
	if (api == NULL || plan_exec(&p, b, name, x, counted_only, api, &req, e) < 0)
		goto out;
	if (run_waking(b, name, &req, &res, e) < 0) {
		/* A broken stream leaves the command running: stop it like a timeout would. */
		if (res.established && p.need_kill)
			kill_remote(req.kc, b, name, p.pidfile, p.protos);
		if (e->code == SBX_ENOTFOUND)
			err_set(e, SBX_ENOTFOUND, "sandbox %s not found in namespace %s (no pod %s)", name,
				b->namespace, name);
		else
			err_prefix(e, "kubernetes exec failed");
		goto out;
	}
	proto_remember(p.cache, res.protocol);
	if (res.wrong_protocol) {
		rc = 2;
		goto out;
	}
	exec_outcome(&p, b, name, x, &req, &res, r);
	rc = 0;
out:
	if (p.spooled >= 0)
		close(p.spooled);
	free(p.script);
	free(p.cache);
	return rc;
}

int kb_exec(struct sbx_backend *b, const char *name, const struct sbx_exec *x,
		  struct sbx_exec_result *r, struct sbx_err *e)
{
	int rc;

	if (x->timeout_ns > 0)	/* -timeout bounds the API requests' retries too */
		kb_deadline(b, time_mono_ns() + x->timeout_ns);
	char pod[SBX_OBJECT_NAME_MAX];
	const char *target = name;

	rc = exec_once(b, target, x, r, false, e);
	if (rc < 0 && e->code == SBX_ENOTFOUND &&
	    kb_claim_pod(b, name, pod, sizeof pod) == 1) {
		/* no pod of that name: a claimed sandbox runs in its bound Sandbox's pod (the
		 * upgrade was refused, nothing was sent) */
		target = pod;
		rc = exec_once(b, target, x, r, false, e);
	}
	if (rc == 2)
		rc = exec_once(b, target, x, r, true, e);
	if (rc == 2)
		rc = err_set(e, SBX_EIO, "kubernetes exec failed: the server keeps choosing %s for a stream that needs %s",
			     KUBEEXEC_V4, KUBEEXEC_V5);
	kb_deadline(b, 0);
	return rc;
}
