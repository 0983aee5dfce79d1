/* test_proxyfilter.c — lib/local/proxyfilter.c: once confined, sbx-proxy keeps what it serves with
 * (IP sockets, threads, reading a file) and is refused the rest (exec, writing files, other
 * socket families, fork, signalling or tracing another process). Each check runs in a child,
 * which the filter confines for good. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proxyfilter.h"
#include "tap.h"

static void *nothing(void *arg)
{
	return arg;
}

/* 1 when /proc/self/status has the line. */
static int status_says(const char *line)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, line) != NULL;
}

/* 1 when call failed with EPERM. */
static char refused(long rc)
{
	return rc < 0 && errno == EPERM ? '1' : '0';
}

int main(void)
{
	static const char *const names[] = {
		"no_new_privs and a seccomp filter (/proc/self/status)", "execve is refused", "opening a file to write is refused",
		"a Unix socket is refused", "fork is refused", "signalling the parent is refused",
		"ptrace is refused", "a TCP socket is allowed", "reading a file is allowed",
		"a thread starts", "a netlink socket is allowed (the host's addresses)",
		"libc's resolver still answers (getaddrinfo of localhost)",
	};
	char got[16] = "", tmp[] = "/tmp/sbx-proxyfilter.XXXXXX";
	int p[2], st, fd;
	pid_t c;

	fd = mkstemp(tmp);
	ok(fd >= 0 && pipe(p) == 0, "setup");
	close(fd);
	c = fork();
	if (c == 0) {
		char r[16];
		struct sbx_err e;
		pthread_t t;
		struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
		int n = 0, s;
		char *const av[] = {"true", NULL};
		if (proxyfilter_apply(&e) < 0)
			_exit(3);
		r[n++] = status_says("NoNewPrivs:\t1\n") && status_says("Seccomp:\t2\n") ? '1' : '0';
		r[n++] = refused(execv("/bin/true", av));
		r[n++] = refused(open(tmp, O_WRONLY | O_CLOEXEC));
		r[n++] = refused(socket(AF_UNIX, SOCK_STREAM, 0));
		r[n++] = refused(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
		r[n++] = refused(kill(getppid(), 0));
		r[n++] = refused(ptrace(PTRACE_ATTACH, getppid(), 0, 0));
		r[n++] = (s = socket(AF_INET, SOCK_STREAM, 0)) >= 0 ? '1' : '0';
		close(s);
		r[n++] = (s = open("/etc/hosts", O_RDONLY | O_CLOEXEC)) >= 0 ? '1' : '0';
		close(s);
		r[n++] = pthread_create(&t, NULL, nothing, NULL) == 0 && pthread_join(t, NULL) == 0
			 ? '1' : '0';
		r[n++] = (s = socket(AF_NETLINK, SOCK_RAW, 0)) >= 0 ? '1' : '0';
		close(s);
		r[n++] = getaddrinfo("localhost", "80", &hints, &ai) == 0 ? '1' : '0';
		_exit(write(p[1], r, (size_t)n) == n ? 0 : 4);
	}
	close(p[1]);
	ok(read(p[0], got, sizeof got - 1) == (ssize_t)(sizeof names / sizeof names[0]),
	   "the confined child reports");
	ok(waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0, "and exits 0");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		ok(got[i] == '1', "%s", names[i]);
	is_str(got, "111111111111", "every check as expected");
	unlink(tmp);
	return done_testing();
}
