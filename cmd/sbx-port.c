/* sbx-port — open a local sandbox's port on the host's loopback (or a Unix socket). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cancel.h"
#include "portfwd.h"

static const char usage[] =
	"usage: sbx-port [-backend B] [-namespace NS] [-listen 127.0.0.1:HOSTPORT | -unix PATH] "
	"[-d] NAME PORT\n"
	"       sbx-port -list NAME\n"
	"       sbx-port -close NAME PORT\n"
	"Forwards connections from the host's loopback to PORT on the loopback of sandbox NAME\n"
	"(kubernetes: of its pod, over the portforward subresource),\n"
	"prints {\"name\",\"port\",\"url\",\"listen\"} once it accepts, and serves until interrupted or\n"
	"until the sandbox is gone (exit 101). Nothing runs in the sandbox; it gets no way out.\n"
	"\n"
	"  -listen A      HOST:PORT to listen on (default 127.0.0.1:0: a free port)\n"
	"  -unix PATH     listen on a new Unix socket of mode 0600 instead (a shared machine)\n"
	"  -d             detach: serve in the background until the sandbox ends or -close\n"
	"  -list          print NAME's detached forwards, one JSON line each\n"
	"  -close         stop NAME's detached forwards of PORT\n"
	CLI_SBX_USAGE
	"  -h             show this help\n";

static const char *listen_addr, *unix_path;
static bool detach, list, closing;

static const struct flag flags[] = {
	{"listen", FLAG_STRING, &listen_addr, NULL},
	{"unix", FLAG_STRING, &unix_path, NULL},
	{"d", FLAG_BOOL, &detach, NULL},
	{"list", FLAG_BOOL, &list, NULL},
	{"close", FLAG_BOOL, &closing, NULL},
	{NULL},
};

static void note(void *arg, const char *msg)
{
	(void)arg;
	cli_msg("%s", msg);
}

static int parse_port(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != 0 || errno != 0 || v < 1 || v > 65535)
		cli_usage_error(usage, "PORT must be a number from 1 to 65535");
	return (int)v;
}

static int print_rec(struct json_object *rec, void *arg)
{
	(void)arg;
	return cli_print_json(rec) < 0 ? -1 : 0;
}

/* -list and -close (of another backend's sandbox: its records on this host). */
static int manage(struct sbx_backend *b, const char *name, const char *port)
{
	struct sbx_info info;
	struct sbx_err e;
	char *dir = NULL;
	int n = 0, rc = 0;

	if (b->ops->port) {
		if (b->ops->get(b, name, &info, &e) < 0 ||
		    (dir = portfwd_remote_dir(b->ops->name, b->namespace, name, &e)) == NULL)
			rc = -1;
		else if (list)
			portfwd_list_in(dir, print_rec, NULL);
		else
			n = portfwd_stop_in(dir, parse_port(port));
		free(dir);
	} else if (list) {
		rc = portfwd_list(b->namespace, name, print_rec, NULL, &e);
	} else {
		rc = portfwd_stop(b->namespace, name, parse_port(port), &n, &e);
	}
	if (rc < 0 && list)
		cli_die(cli_status(e.code), "unable to list the ports of %s: %s", name, e.msg);
	if (rc < 0)
		cli_die(cli_status(e.code), "unable to close port %s of %s: %s", port, name, e.msg);
	if (list)
		return EXIT_OK;
	if (n == 0)
		cli_die(EXIT_NOTFOUND, "no detached forward of port %s of sandbox %s is open", port,
			name);
	return EXIT_OK;
}

/* Serves until the end; the status to exit with. ready: where a detached child says it runs.
 * b: the backend serving it when it has a port op, else NULL (portfwd_serve). */
static int serve(struct sbx_backend *b, struct portfwd *pf, int lfd, int cancel, int ready)
{
	char name[NAME_MAX_LEN + 1];
	struct sbx_err e;
	int rc;

	snprintf(name, sizeof name, "%s", pf->name);
	if (ready >= 0) {
		if (portfwd_record(pf, &e) < 0)
			cli_die_err("", &e);
		if (write(ready, "1", 1) != 1)
			return EXIT_FAIL;
		close(ready);
	}
	rc = b ? b->ops->port(b, pf, lfd, cancel, note, NULL, &e)
	       : portfwd_serve(pf, lfd, cancel, note, NULL, &e);
	close(lfd);
	portfwd_close(pf);
	if (b)
		backend_close(b);
	if (rc == PORTFWD_GONE)
		cli_die(EXIT_NOTFOUND, "sandbox %s is gone", name);
	if (rc == PORTFWD_CANCELED)
		return EXIT_SIGNAL_BASE + cancel_signal();
	cli_die_err("", &e);
}

/* Closes the descriptors this process inherited from its caller (ours are all close-on-exec):
 * a detached forward must not hold the caller's pipes open, or whoever reads them to the end
 * would wait for the sandbox's end. */
static void drop_inherited(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int fd;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		fd = atoi(de->d_name);
		if (fd > 2 && fd != dirfd(d) && fcntl(fd, F_GETFD) == 0)
			close(fd);
	}
	closedir(d);
}

/* -d: the forward runs on in a child of its own session; this process prints its document
 * once the child listens and has its record. */
static int detached(struct sbx_backend *b, struct portfwd *pf, int lfd, int cancel)
{
	int p[2], null;
	char c;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0)
		cli_die(EXIT_FAIL, "cannot detach: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		setsid();
		drop_inherited();
		if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		if (b == NULL) {
			struct sbx_err e;
			if (portfwd_start(pf, &e) < 0)
				cli_die_err("", &e);
		}
		if (null >= 0)
			dup2(null, 2);	/* from here on nobody reads its messages */
		exit(serve(b, pf, lfd, cancel, p[1]));
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		cli_die(EXIT_FAIL, "the detached forward did not start");
	close(p[0]);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct cli_sandbox sb = {.take = CLI_SBX_BACKEND};
	const struct cli c = {.usage = usage, .flags = flags, .sandbox = &sb, .min = 1, .max = 2,
			      .missing = "missing NAME"};
	struct portfwd pf;
	struct sbx_backend *b;
	struct sbx_info info;
	struct sbx_err e;
	struct json_object *o;
	bool remote;
	int i = cli_parse(&c, argc, argv), cancel, lfd, port, rc = EXIT_OK;

	if (list + closing + (listen_addr || unix_path || detach) > 1)
		cli_usage_error(usage, "-list, -close and a forward's flags do not go together");
	if (argc - i != (list ? 1 : 2))
		cli_usage_error(usage, argc - i < 2 && !list ? "missing PORT" : "too many arguments");
	port = list ? 0 : parse_port(argv[i + 1]);
	if (listen_addr && unix_path)
		cli_usage_error(usage, "-listen and -unix do not go together");
	if (listen_addr && portfwd_addr_check(listen_addr, &e) < 0)
		cli_usage_error(usage, e.msg);
	b = cli_backend_open(&sb);
	if (list || closing) {
		rc = manage(b, argv[i], list ? NULL : argv[i + 1]);
		backend_close(b);
		return cli_finish(rc);
	}
	if ((cancel = cancel_install(&e)) < 0)
		cli_die_err("", &e);
	if (b->ops->port ? portfwd_open_remote(&pf, b->ops->name, b->namespace, argv[i], port, &e) < 0 ||
			   b->ops->get(b, argv[i], &info, &e) < 0
			 : portfwd_open(&pf, b->namespace, argv[i], port, &e) < 0)
		cli_die(cli_status(e.code), "unable to open port %d of %s: %s", port, argv[i], e.msg);
	if (!(remote = b->ops->port != NULL) || detach) {
		/* A detached child opens its own: it closes the descriptors it inherits (the API
		 * connection's among them), and a client on a closed descriptor would later act on
		 * whatever socket got its number. */
		backend_close(b);
		b = remote ? cli_backend_open(&sb) : NULL;
	}
	if (!detach && b == NULL && portfwd_start(&pf, &e) < 0)
		cli_die(cli_status(e.code), "unable to open port %d of %s: %s", port, argv[i], e.msg);
	if ((lfd = portfwd_listen(&pf, listen_addr ? listen_addr : "127.0.0.1:0", unix_path, &e)) < 0)
		cli_die(cli_status(e.code), "unable to open port %d of %s: %s", port, argv[i], e.msg);
	if (detach)
		rc = detached(b, &pf, lfd, cancel);
	o = portfwd_doc(&pf);
	if (cli_print_json(o) < 0)
		rc = EXIT_FAIL;
	json_object_put(o);
	if (detach) {
		pf.unix_path[0] = 0;	/* the detached child's to remove */
		close(lfd);
		portfwd_close(&pf);
		if (b)
			backend_close(b);
		return cli_finish(rc);
	}
	return cli_finish(serve(b, &pf, lfd, cancel, -1));
}
