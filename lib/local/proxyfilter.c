/* proxyfilter.c — sbx-proxy's seccomp allowlist (see proxyfilter.h), built with libseccomp. */
#include "proxyfilter.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Calls allowed whatever their arguments: I/O on descriptors it holds, memory, threads'
 * housekeeping, time, and what libc's resolver and the sanitizers' runtimes make. */
static const char *const allowed[] = {
	"read", "write", "readv", "writev", "pread64", "close", "fstat", "newfstatat", "statx",
	"lseek", "fcntl", "pipe2", "splice", "poll", "ppoll", "accept4", "connect", "bind",
	"getsockname", "getpeername", "setsockopt", "getsockopt", "shutdown", "sendto",
	"recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "mmap", "munmap", "mprotect",
	"mremap", "madvise", "brk", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn",
	"sigaltstack", "futex", "set_robust_list", "get_robust_list", "rseq", "set_tid_address",
	"exit", "exit_group", "gettid", "getpid", "getuid", "geteuid", "getgid", "getegid",
	"clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday",
	"getrandom", "uname", "sched_yield", "sched_getaffinity", "prlimit64", "getrlimit",
	"readlink", "readlinkat",
};

static int allow_when(scmp_filter_ctx ctx, const char *name, unsigned n,
		      const struct scmp_arg_cmp *c)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR || nr < 0)
		return 0;	/* not a call of this architecture */
	return seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n, c) < 0 ? -1 : 0;
}

/* The calls allowed only with some arguments. */
static int add_conditional(scmp_filter_ctx ctx)
{
	/* Files: read only (resolv.conf, hosts, nsswitch and its modules). */
	const struct scmp_arg_cmp ro = {2, SCMP_CMP_MASKED_EQ,
					O_ACCMODE | O_CREAT | O_TRUNC | (O_TMPFILE & ~O_DIRECTORY), 0};
	/* Threads, never another process: clone must share the address space as a thread. */
	const struct scmp_arg_cmp thread = {0, SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_VM,
					    CLONE_THREAD | CLONE_VM};
	/* Signals to itself only (abort, a sanitizer's report). */
	const struct scmp_arg_cmp self = {0, SCMP_CMP_EQ, (scmp_datum_t)getpid(), 0};
	/* The resolver asks how much a datagram holds; nothing else of ioctl. */
	const struct scmp_arg_cmp fionread = {1, SCMP_CMP_MASKED_EQ, 0xffffffffu, FIONREAD};
	static const int families[] = {AF_INET, AF_INET6, AF_NETLINK};

	if (allow_when(ctx, "openat", 1, &ro) < 0 || allow_when(ctx, "clone", 1, &thread) < 0 ||
	    allow_when(ctx, "tgkill", 1, &self) < 0 || allow_when(ctx, "ioctl", 1, &fionread) < 0)
		return -1;
	/* Sockets: IP for upstream and DNS, netlink for the host's own addresses. */
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
		const struct scmp_arg_cmp fam = {0, SCMP_CMP_EQ, (scmp_datum_t)families[i], 0};
		if (allow_when(ctx, "socket", 1, &fam) < 0)
			return -1;
	}
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) < 0 ? -1 : 0;
}

int proxyfilter_apply(struct sbx_err *e)
{
	scmp_filter_ctx ctx;
	int ok, rc;

	/* No exec could gain privileges anyway: the filter forbids exec, this says so twice. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return err_sys(e, errno, "no_new_privs");
	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (ctx == NULL)
		return err_set(e, SBX_EIO, "cannot make a seccomp filter");
	ok = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) == 0 &&
	     seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) == 0;
	for (size_t i = 0; ok && i < sizeof allowed / sizeof allowed[0]; i++)
		ok = allow_when(ctx, allowed[i], 0, NULL) == 0;
	if (ok)
		ok = add_conditional(ctx) == 0;
	rc = ok ? seccomp_load(ctx) : -EINVAL;
	seccomp_release(ctx);
	if (rc < 0)
		return err_sys(e, -rc, "loading the seccomp filter");
	return 0;
}
