/* localnet.c — the create side of a local sandbox's network: which helper, with what
 * arguments, and what bubblewrap adds inside (resolver, proxy environment). See localnet.h. */
#include "localnet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "fsutil.h"
#include "paths.h"
#include "secretdecl.h"
#include "specflags.h"

/* resolv.conf files are a few lines; anything larger is not one. */
#define RESOLV_MAX 65536
/* glibc's resolver uses at most three nameservers (MAXNS). */
#define NAMESERVERS_MAX 3

/* Why pasta: it maps the sandbox's connections onto host sockets without a TCP/IP stack of
 * its own in between (slirp4netns runs libslirp's); it is what rootless podman uses by
 * default; and the Debian 12 snapshot (2023-03) has
 * every switch the isolation needs: --no-map-gw (the gateway address does not lead to the
 * host's loopback), -t/-u none (nothing on the host leads into the sandbox, so no sandbox
 * can reach another through a forwarded port) and -T/-U none (no port of the sandbox's
 * loopback leads to the host's). It copies the host's addresses and routes, so the host's
 * own address is the sandbox's own inside. */
static const char *const pasta_args[] = {
	"-f", "-q", "--config-net", "--no-map-gw", "-t", "none", "-u", "none", "-T", "none",
	"-U", "none", NULL,
};
/* The fallback where pasta is missing: slirp4netns 1.2 (libslirp's stack, slower), with the
 * same isolation: --disable-host-loopback (10.0.2.2 does not lead to the host's loopback),
 * no port forwarding (it forwards nothing unless asked through its API socket, which is not
 * opened), its seccomp filter, and its DNS forwarder off (the sandbox's resolv.conf names the
 * host's resolver, reached through the NAT as with pasta). Its --enable-sandbox (a mount
 * namespace of its own) fails once it has joined the sandbox's user namespace as the
 * sandbox's host user, so it is not used: the helper is only that unprivileged user. */
static const char *const slirp_args[] = {
	"--configure", "--mtu=65520", "--disable-host-loopback", "--disable-dns",
	"--enable-seccomp", NULL,
};

/* Fills ns with the non-loopback nameservers of the resolv.conf at path (a loopback one,
 * such as systemd-resolved's stub, is the sandbox's own loopback inside) and appends the
 * file's other resolver lines (search, options) to extra. Returns how many were found. */
static int read_nameservers(const char *path, char ns[][INET6_ADDRSTRLEN], struct buf *extra)
{
	char *text = fs_read_small(path, RESOLV_MAX, NULL), *line, *save = NULL;
	int n = 0;

	if (text == NULL)
		return 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char addr[64];
		unsigned char bin[16];
		if (sscanf(line, "nameserver %63s", addr) == 1) {
			char *pct = strchr(addr, '%');
			if (pct)
				*pct = '\0';
			if (n < NAMESERVERS_MAX && strlen(addr) < INET6_ADDRSTRLEN &&
			    ((inet_pton(AF_INET, addr, bin) == 1 && bin[0] != 127) ||
			     (inet_pton(AF_INET6, addr, bin) == 1 &&
			      memcmp(bin, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) != 0)))
				memcpy(ns[n++], addr, strlen(addr) + 1);
		} else if (extra && (strncmp(line, "search ", 7) == 0 ||
				     strncmp(line, "domain ", 7) == 0 ||
				     strncmp(line, "options ", 8) == 0)) {
			buf_printf(extra, "%s\n", line);
		}
	}
	free(text);
	return n;
}

/* The resolver the sandbox's names go to: $SBX_RESOLV_CONF (a resolv.conf, for tests and for
 * hosts whose resolver is elsewhere), else the host's /etc/resolv.conf, else, when that names
 * only a loopback stub, systemd-resolved's list of the servers behind it. */
static int resolver(char ns[][INET6_ADDRSTRLEN], struct buf *extra)
{
	const char *env = getenv("SBX_RESOLV_CONF");
	int n;

	if (env && *env)
		return read_nameservers(env, ns, extra);	/* none: no DNS, never the host's */
	n = read_nameservers("/etc/resolv.conf", ns, extra);
	if (n == 0) {
		buf_free(extra);
		n = read_nameservers("/run/systemd/resolve/resolv.conf", ns, extra);
	}
	return n;
}

static int write_file(const char *dir, const char *name, const char *text, struct sbx_err *e)
{
	char *path = xasprintf("%s/%s", dir, name);
	int rc = 0;

	if (fs_write_atomic(path, text, strlen(text), 0600) < 0)
		rc = err_sys(e, errno, "cannot write %s", path);
	free(path);
	return rc;
}

/* -network: pasta, and the host's resolver as the sandbox's. */
static int prepare_nat(const char *dir, const char *root, struct buf *plan, struct strvec *bw,
		       struct sbx_err *e)
{
	const char *env_pasta = getenv("SBX_PASTA"), *env_slirp = getenv("SBX_SLIRP4NETNS");
	const char *const *args = pasta_args;
	char ns[NAMESERVERS_MAX][INET6_ADDRSTRLEN], *helper, *etc;
	struct buf resolv = {0}, extra = {0};
	struct stat st;
	int n, rc = 0;

	helper = paths_which(env_pasta && *env_pasta ? env_pasta : "pasta");
	if (helper == NULL) {
		helper = paths_which(env_slirp && *env_slirp ? env_slirp : "slirp4netns");
		args = slirp_args;
	}
	if (helper == NULL)
		return err_set(e, SBX_EUNAVAIL, "-network needs pasta, which is not installed: "
			       "install the Debian package \"passt\" (or \"slirp4netns\")");
	/* Root's helpers get a usable device of their own (cmd/sbx-init/net.c); anyone else's
	 * need the host's. */
	if (geteuid() != 0 && access("/dev/net/tun", R_OK | W_OK) != 0) {
		free(helper);
		return err_sys(e, errno, "-network needs /dev/net/tun, which this user may not open "
			       "(Debian makes it mode 0666)");
	}
	buf_printf(plan, "mode %s\nhelper %s\n", args == pasta_args ? "nat" : "slirp", helper);
	free(helper);
	for (size_t i = 0; args[i]; i++)
		buf_printf(plan, "arg %s\n", args[i]);
	n = resolver(ns, &extra);
	buf_puts(&resolv, "# written by sbx: the host's resolver, reached through the sandbox's NAT\n");
	for (int i = 0; i < n; i++)
		buf_printf(&resolv, "nameserver %s\n", ns[i]);
	if (extra.len)
		buf_append(&resolv, extra.data, extra.len);
	buf_append(&resolv, "", 1);
	/* A root filesystem without /etc/resolv.conf keeps its own arrangement: bubblewrap
	 * cannot make a mount point in a read-only root. */
	etc = xasprintf("%s/etc/resolv.conf", strcmp(root, "/") == 0 ? "" : root);
	if (stat(etc, &st) == 0 && S_ISREG(st.st_mode)) {
		rc = write_file(dir, "resolv.conf", resolv.data, e);
		buf_puts(plan, "resolv 1\n");
		strvec_push(bw, "--ro-bind-data");
		strvec_pushf(bw, "%d", LOCALNET_RESOLV_FD);
		strvec_push(bw, "/etc/resolv.conf");
	}
	free(etc);
	buf_free(&resolv);
	buf_free(&extra);
	return rc;
}

/* n random bytes (the kernel's, getrandom: no OpenSSL here) as 2n hex digits at out. */
static int entropy_hex(char *out, size_t n, struct sbx_err *e)
{
	unsigned char r[LOCALNET_PLACEHOLDER_BYTES];

	if (n > sizeof r || getentropy(r, n) < 0)
		return err_sys(e, errno, "getentropy");
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	explicit_bzero(r, sizeof r);
	return 0;
}

/* -secret: each NAME becomes a placeholder in the sandbox's environment, and a line
 * "NAME PLACEHOLDER HOSTS HEXVALUE" for sbx-proxy in feed (the value leaves this process
 * only through the descriptor the supervisor hands the proxy). */
static int prepare_secrets(const struct sbx_spec *spec, struct strvec *bw, struct buf *feed,
			   struct sbx_err *e)
{
	struct secretdecls d;
	int rc = -1;

	if (secretdecls_parse(spec->secrets, &d, e) < 0)
		return -1;
	for (size_t i = 0; i < d.n; i++) {
		char rnd[2 * LOCALNET_PLACEHOLDER_BYTES + 1];
		unsigned char *v;
		size_t len;
		if (entropy_hex(rnd, LOCALNET_PLACEHOLDER_BYTES, e) < 0)
			goto out;
		if ((v = secretdecl_value(&d.v[i], &len, e)) == NULL)
			goto out;
		strvec_push(bw, "--setenv");
		strvec_push(bw, d.v[i].name);
		strvec_pushf(bw, "%s%s", LOCALNET_PLACEHOLDER_PREFIX, rnd);
		buf_printf(feed, "%s %s%s %s ", d.v[i].name, LOCALNET_PLACEHOLDER_PREFIX, rnd,
			   d.v[i].hosts);
		for (size_t k = 0; k < len; k++)
			buf_printf(feed, "%02x", v[k]);
		buf_puts(feed, "\n");
		explicit_bzero(v, len);
		free(v);
	}
	rc = 0;
out:
	secretdecls_free(&d);
	return rc;
}

/* Appends " HEX" of len bytes at p to feed. */
static void feed_hex(struct buf *feed, const void *p, size_t len)
{
	const unsigned char *b = p;

	buf_puts(feed, " ");
	for (size_t k = 0; k < len; k++)
		buf_printf(feed, "%02x", b[k]);
}

/* The sandbox's CA, made by `sbx-proxy -make-ca CN` (the program that uses it): OpenSSL is
 * loaded there, never by sbx-create or any other program of the local backend, whose start
 * would pay for it on every call. Its certificate and key (PEM, in that order) as two strings. */
static int make_ca(const char *cn, char **cert, char **key, struct sbx_err *e)
{
	static const char end[] = "-----END CERTIFICATE-----\n";
	char *proxy = paths_helper("SBX_PROXY", "sbx-proxy"), *cut;
	char *argv[] = {"sbx-proxy", "-make-ca", (char *)cn, NULL};
	struct child_result res;
	int rc = -1;

	*cert = *key = NULL;
	if (proxy == NULL)
		return err_set(e, SBX_EUNAVAIL, "cannot find sbx-proxy next to this program or in "
			       "../libexec/sbx (set SBX_PROXY)");
	struct child_req rq = CHILD_REQ_INIT(.path = proxy, .argv = argv,
					     .timeout_ns = INT64_C(30000000000));
	if (child_run(&rq, &res, e) < 0) {
		free(proxy);
		return -1;
	}
	free(proxy);
	if (res.status != 0 || (cut = strstr(res.out, end)) == NULL ||
	    strstr(cut, "PRIVATE KEY-----") == NULL) {
		char *why = child_err_message(&res, "sbx-proxy");
		err_set(e, SBX_EIO, "cannot make the sandbox's CA: %s",
			*why ? why : "sbx-proxy -make-ca gave no certificate and key");
		free(why);
	} else {
		cut += sizeof end - 1;
		*key = xstrdup(cut);
		*cut = '\0';
		*cert = xstrdup(res.out);
		rc = 0;
	}
	explicit_bzero(res.out, res.out_len);
	child_result_free(&res);
	return rc;
}

/* The sandbox's own CA for the secrets' HTTPS hosts: its key only in feed (for sbx-proxy),
 * its certificate added to the host's bundle as DIR/ca-bundle.crt, which bubblewrap puts at
 * LOCALNET_CA_BUNDLE (and over the root's own bundle, when it has one), named by the
 * variables TLS clients read. -upstream-ca's certificates go to the proxy in feed too. */
static int prepare_ca(const struct sbx_spec *spec, const char *dir, const char *root,
		      struct buf *plan, struct strvec *bw, struct buf *feed, struct sbx_err *e)
{
	static const char *const vars[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
					   "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"};
	char *cert = NULL, *key = NULL, *cn, *sys, *own, *extra = NULL;
	struct buf bundle = {0};
	struct stat st;
	size_t n = 0;
	int rc = -1;

	cn = xasprintf("sbx sandbox %s (-secret)", spec->name);
	if (make_ca(cn, &cert, &key, e) < 0)
		goto out;
	buf_puts(feed, "ca");
	feed_hex(feed, cert, strlen(cert));
	feed_hex(feed, key, strlen(key));
	buf_puts(feed, "\n");
	if (spec->upstream_ca[0]) {
		if ((extra = fs_read_small(spec->upstream_ca, SPECF_UPSTREAM_CA_MAX, &n)) == NULL) {
			err_sys(e, errno, "cannot read %s", spec->upstream_ca);
			goto out;
		}
		buf_puts(feed, "upstream-ca");
		feed_hex(feed, extra, n);
		buf_puts(feed, "\n");
	}
	if ((sys = fs_read_small(LOCALNET_SYSTEM_BUNDLE, LOCALNET_BUNDLE_MAX, &n)) != NULL) {
		buf_append(&bundle, sys, n);
		if (n && sys[n - 1] != '\n')
			buf_puts(&bundle, "\n");
		free(sys);
	}
	buf_printf(&bundle, "# %s\n%s", cn, cert);
	buf_append(&bundle, "", 1);
	if (write_file(dir, LOCALNET_CA_FILE, bundle.data, e) < 0)
		goto out;
	strvec_push(bw, "--ro-bind-data");
	strvec_pushf(bw, "%d", LOCALNET_CA_FD);
	strvec_push(bw, LOCALNET_CA_BUNDLE);
	own = xasprintf("%s%s", strcmp(root, "/") == 0 ? "" : root, LOCALNET_SYSTEM_BUNDLE);
	if (stat(own, &st) == 0 && S_ISREG(st.st_mode)) {
		buf_puts(plan, "cabundle 2\n");
		strvec_push(bw, "--ro-bind-data");
		strvec_pushf(bw, "%d", LOCALNET_CA_FD + 1);
		strvec_push(bw, LOCALNET_SYSTEM_BUNDLE);
	} else {
		buf_puts(plan, "cabundle 1\n");
	}
	free(own);
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		strvec_push(bw, "--setenv");
		strvec_push(bw, vars[i]);
		strvec_push(bw, LOCALNET_CA_BUNDLE);
	}
	rc = 0;
out:
	if (key)
		explicit_bzero(key, strlen(key));
	free(key);
	free(cert);
	free(cn);
	free(extra);
	buf_free(&bundle);
	return rc;
}

/* -allow-host: sbx-proxy, and the proxy environment commands see. */
static int prepare_proxy(const struct sbx_spec *spec, const char *dir, const char *root,
			 struct buf *plan, struct strvec *bw, struct buf *feed, struct sbx_err *e)
{
	static const char *const vars[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
					   "https_proxy"};
	char ns[NAMESERVERS_MAX][INET6_ADDRSTRLEN], *proxy;
	const char *env = getenv("SBX_RESOLV_CONF");
	int n = 0;

	proxy = paths_helper("SBX_PROXY", "sbx-proxy");
	if (proxy == NULL)
		return err_set(e, SBX_EUNAVAIL, "cannot find sbx-proxy next to this program or in "
			       "../libexec/sbx (set SBX_PROXY)");
	buf_printf(plan, "mode proxy\nhelper %s\n", proxy);
	free(proxy);
	buf_printf(plan, "arg -sandbox\narg %s\narg -allow\narg %s\n", spec->name,
		   spec->allow_hosts);
	/* Only a resolver given on purpose is passed on; otherwise the proxy resolves as the
	 * host does (getaddrinfo: /etc/hosts, nsswitch, the host's DNS). */
	if (env && *env && (n = read_nameservers(env, ns, NULL)) == 0)
		return err_set(e, SBX_EINVAL, "SBX_RESOLV_CONF=%s names no usable nameserver "
			       "(unreadable, or only loopback ones)", env);
	if (n > 0)
		buf_puts(plan, "arg -nameservers\narg ");
	for (int i = 0; i < n; i++)
		buf_printf(plan, "%s%s", ns[i], i + 1 < n ? "," : "\n");
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		strvec_push(bw, "--setenv");
		strvec_push(bw, vars[i]);
		strvec_pushf(bw, "http://127.0.0.1:%d", LOCALNET_PROXY_PORT);
	}
	strvec_push(bw, "--setenv");
	strvec_push(bw, "ALL_PROXY");
	strvec_pushf(bw, "socks5h://127.0.0.1:%d", LOCALNET_PROXY_PORT);
	strvec_push(bw, "--setenv");
	strvec_push(bw, "all_proxy");
	strvec_pushf(bw, "socks5h://127.0.0.1:%d", LOCALNET_PROXY_PORT);
	strvec_push(bw, "--setenv");
	strvec_push(bw, "NO_PROXY");
	strvec_push(bw, "localhost,127.0.0.1,::1");
	strvec_push(bw, "--setenv");
	strvec_push(bw, "no_proxy");
	strvec_push(bw, "localhost,127.0.0.1,::1");
	/* Node's built-in fetch uses the variables above only where it is told to (newer
	 * releases read this; Node 20 does not, a proxy agent does there). */
	strvec_push(bw, "--setenv");
	strvec_push(bw, "NODE_USE_ENV_PROXY");
	strvec_push(bw, "1");
	if (!spec->secrets[0])
		return 0;
	if (prepare_secrets(spec, bw, feed, e) < 0)
		return -1;
	return prepare_ca(spec, dir, root, plan, bw, feed, e);
}

int localnet_prepare(const struct sbx_spec *spec, const char *dir, const char *root,
		     struct strvec *bwrap, struct buf *feed, struct sbx_err *e)
{
	struct buf plan = {0};
	int rc;

	if (spec->allow_hosts[0])
		rc = prepare_proxy(spec, dir, root, &plan, bwrap, feed, e);
	else if (spec->network)
		rc = prepare_nat(dir, root, &plan, bwrap, e);
	else
		return 0;
	buf_append(&plan, "", 1);
	if (rc == 0)
		rc = write_file(dir, LOCALNET_PLAN, plan.data, e);
	buf_free(&plan);
	return rc;
}

int localnet_failure(const char *dir, struct sbx_err *e)
{
	char *path = xasprintf("%s/%s", dir, LOCALNET_HELPER_LOG), *log, *line, *save = NULL;
	struct buf why = {0};
	int found = 0;

	log = fs_read_small(path, 4096, NULL);
	free(path);
	if (log == NULL)
		return 0;
	/* pasta also tries syslog, and says so on every line when there is none. */
	for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "to syslog") || *line == '\0')
			continue;
		buf_printf(&why, "%s%s", why.len ? "; " : "", line);
	}
	if (why.len) {
		buf_append(&why, "", 1);
		err_set(e, SBX_EIO, "the network helper failed: %s", why.data);
		found = 1;
	}
	buf_free(&why);
	free(log);
	return found;
}
