/* sbx-proxy — the egress proxy of a -allow-host sandbox (libexec; the supervisor starts it). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "proxy.h"
#include "proxyfilter.h"
#include "tlsca.h"
#include "xalloc.h"
#include "cli.h"

static const char usage[] =
	"usage: sbx-proxy -sandbox NAME -allow LIST -listen-fd N -log-fd N [-ready-fd N]\n"
	"                 [-nameservers ADDR,...] [-secrets-fd N]\n"
	"       sbx-proxy -make-ca CN\n"
	"The egress proxy of a sandbox made with sbx-create -allow-host: HTTP (CONNECT and\n"
	"plain http://) and SOCKS5 on the listening socket N, only to the hosts LIST allows,\n"
	"one JSON line per decision on the log descriptor. It serves under no_new_privs and a\n"
	"seccomp filter of its own. The supervisor starts it; it is not meant to be run by hand.\n"
	"\n"
	"  -sandbox NAME         the sandbox's name, for the log\n"
	"  -allow LIST           the -allow-host list\n"
	"  -listen-fd N          a listening TCP socket to accept on\n"
	"  -log-fd N             where the decision log goes (appended)\n"
	"  -ready-fd N           written to and closed once serving\n"
	"  -nameservers A,B      resolve with these IPv4 nameservers (default: as the host does)\n"
	"  -secrets-fd N         read the sandbox's -secret values from N (then closed); they\n"
	"                        stay in this process's memory only\n"
	"  -make-ca CN           make a sandbox's CA (its subject naming CN) and print its\n"
	"                        certificate and then its key as PEM on stdout, for\n"
	"                        sbx-create's -secret: OpenSSL is loaded by this program only\n"
	"  -h                    show this help\n";

/* Parses "a,b,c" into cfg's nameservers. */
static int nameservers(struct proxy_config *cfg, const char *list)
{
	char *copy = xstrdup(list), *tok, *save = NULL;
	int rc = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct sockaddr_in *sa = &cfg->nameservers[cfg->nnameservers];
		if (cfg->nnameservers == PROXY_NAMESERVERS_MAX ||
		    inet_pton(AF_INET, tok, &sa->sin_addr) != 1) {
			rc = -1;
			break;
		}
		sa->sin_family = AF_INET;
		sa->sin_port = htons(53);
		cfg->nnameservers++;
	}
	free(copy);
	return rc;
}

/* -make-ca: the CA's certificate, then its key, on stdout (a pipe to sbx-create). */
static void make_ca(const char *cn)
{
	char *cert, *key;
	struct sbx_err e;
	int rc;

	if (tlsca_make(cn, &cert, &key, &e) < 0)
		cli_die(EXIT_FAIL, "cannot make the sandbox's CA: %s", e.msg);
	rc = fputs(cert, stdout) < 0 || fputs(key, stdout) < 0 || fflush(stdout) != 0;
	explicit_bzero(key, strlen(key));
	free(key);
	free(cert);
	if (rc)
		cli_die(EXIT_FAIL, "cannot write the CA");
	exit(0);
}

int main(int argc, char **argv)
{
	const char *sandbox = NULL, *allow = NULL, *ns = NULL, *ca = NULL;
	long long lfd = -1, logfd = -1, ready = -1, sfd = -1;
	struct proxy_config cfg = {0};
	struct sbx_err e;
	const struct flag flags[] = {
		{"sandbox", FLAG_STRING, &sandbox, NULL},
		{"allow", FLAG_STRING, &allow, NULL},
		{"listen-fd", FLAG_INT, &lfd, NULL},
		{"log-fd", FLAG_INT, &logfd, NULL},
		{"ready-fd", FLAG_INT, &ready, NULL},
		{"nameservers", FLAG_STRING, &ns, NULL},
		{"secrets-fd", FLAG_INT, &sfd, NULL},
		{"make-ca", FLAG_STRING, &ca, NULL},
		{NULL, 0, NULL, NULL},
	};
	const struct cli c = {.usage = usage, .flags = flags, .max = -1};
	int i = cli_parse(&c, argc, argv);

	if (ca && i == argc)
		make_ca(ca);
	if (i != argc || sandbox == NULL || allow == NULL || lfd < 0 || logfd < 0)
		cli_usage_error(usage, "-sandbox, -allow, -listen-fd and -log-fd are required");
	if (netpolicy_parse(allow, &cfg.policy, &e) < 0)
		cli_die(EXIT_USAGE, "invalid -allow: %s", e.msg);
	if (ns && nameservers(&cfg, ns) < 0)
		cli_die(EXIT_USAGE, "invalid -nameservers \"%s\": at most %d IPv4 addresses", ns,
			PROXY_NAMESERVERS_MAX);
	/* The values: never in a core dump, and no process of the same user may read this
	 * one's memory (ptrace, /proc/PID/mem). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		cli_die(EXIT_FAIL, "cannot make itself undumpable");
	if (sfd >= 0 && proxysecrets_read((int)sfd, &cfg.secrets, &e) < 0)
		cli_die(EXIT_FAIL, "cannot read the secrets: %s", e.msg);
	/* The trust store and OpenSSL's configuration are read now, before the filter. */
	if (cfg.secrets.ca_cert && (cfg.tls = proxytls_new(&cfg.secrets, &e)) == NULL)
		cli_die(EXIT_FAIL, "cannot set up TLS for the secrets' hosts: %s", e.msg);
	cfg.sandbox = sandbox;
	cfg.policy_text = allow;
	cfg.listen_fd = (int)lfd;
	cfg.log_fd = (int)logfd;
	/* From here on it reads what a sandbox sends: confined before the first byte. */
	if (proxyfilter_apply(&e) < 0)
		cli_die(EXIT_FAIL, "cannot confine itself: %s", e.msg);
	if (ready >= 0) {
		if (write((int)ready, "ready\n", 6) != 6)
			cli_die(EXIT_FAIL, "cannot signal readiness");
		close((int)ready);
	}
	proxy_serve(&cfg, &e);
	netpolicy_free(&cfg.policy);
	proxytls_free(cfg.tls);
	proxysecrets_free(&cfg.secrets);
	cli_die(EXIT_FAIL, "serving failed: %s", e.msg);
}
