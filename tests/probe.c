/* probe.c — sbx-probe, what tests/attacks.bats runs inside a sandbox to try what a hostile
 * command would (linked statically, so it runs in any root filesystem).
 *   sbx-probe reach PID...   tries to take hold of each process: pidfd_getfd of its first
 *                            descriptors, ptrace, process_vm_readv, its environ, mem and fds;
 *                            prints "reached PID HOW" for each success, "blocked PID" for a
 *                            process that resisted all; exits 1 if anything was reached.
 *   sbx-probe syscalls       makes each call the syscall filter refuses, in a way that would
 *                            succeed (or fail otherwise) without it, and prints "NAME ERRNO"
 *                            ("NAME ok" when it succeeded): the table tests/attacks.bats
 *                            asserts.
 *   sbx-probe swap A B TARGET  swaps the names A and B for ever (renameat2 RENAME_EXCHANGE),
 *                            A a directory and B a symlink to TARGET, remade when a restore
 *                            or a clearing removed them: the race tests/attacks-swap.bats
 *                            runs against every host-side walk of the home. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <termios.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <linux/kcmp.h>
#include <linux/io_uring.h>
#include <linux/mempolicy.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* Descriptors tried with pidfd_getfd: the service's listening socket was fd 3. */
#define GETFD_MAX 64

static int reached(pid_t pid, const char *how)
{
	printf("reached %ld %s\n", (long)pid, how);
	return 1;
}

static int try_getfd(pid_t pid)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), n = 0;

	if (pfd < 0)
		return 0;
	for (int fd = 0; fd < GETFD_MAX; fd++) {
		int got = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
		if (got >= 0) {
			close(got);
			n += reached(pid, "pidfd_getfd");
			break;
		}
	}
	close(pfd);
	return n;
}

static int try_ptrace(pid_t pid)
{
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) == 0) {
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return reached(pid, "ptrace");
	}
	return 0;
}

/* The permission check comes before the address is looked at: anything but EPERM, EACCES or
 * ESRCH means the check passed. */
static int try_vm_readv(pid_t pid)
{
	char b;
	struct iovec local = {&b, 1}, remote = {(void *)0x10000, 1};

	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) >= 0 ||
	    (errno != EPERM && errno != EACCES && errno != ESRCH))
		return reached(pid, "process_vm_readv");
	return 0;
}

static int try_open(pid_t pid, const char *what)
{
	char path[64];
	int fd;

	snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, what);
	if ((fd = open(path, O_RDONLY)) < 0)
		return 0;
	close(fd);
	return reached(pid, what);
}

static int reach(int argc, char **argv)
{
	int total = 0;

	for (int i = 0; i < argc; i++) {
		pid_t pid = (pid_t)atol(argv[i]);
		int n = try_getfd(pid) + try_ptrace(pid) + try_vm_readv(pid) +
			try_open(pid, "environ") + try_open(pid, "mem") + try_open(pid, "fd/0") +
			try_open(pid, "fd/3");
		if (n == 0)
			printf("blocked %ld\n", (long)pid);
		total += n;
	}
	return total ? 1 : 0;
}

/* Prints the outcome of one call: its errno's name, or "ok". */
static void row(const char *name, long rc)
{
	printf("%s %s\n", name, rc >= 0 ? "ok" : strerrorname_np(errno));
}

/* A terminal of our own for the ioctl rows: the slave of a new pty. */
static int pty_slave(void)
{
	int m = open("/dev/ptmx", O_RDWR | O_NOCTTY), s;
	char *name;

	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || (name = ptsname(m)) == NULL)
		return -1;
	s = open(name, O_RDWR | O_NOCTTY);
	return s;
}

static void namespaces(void)
{
	int uts = open("/proc/self/ns/uts", O_RDONLY);
	struct clone_args ca = {.exit_signal = SIGCHLD};
	long r;

	row("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER));
	row("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS));
	row("setns", setns(uts, 0));
	r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	row("clone(CLONE_NEWUSER)", r);
	r = syscall(SYS_clone3, &ca, sizeof ca);
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	row("clone3", r);
}

static void mounts(void)
{
	row("mount", mount("none", "/tmp", "tmpfs", 0, NULL));
	row("umount2", umount2("/tmp", MNT_DETACH));
	row("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/tmp", 0));
	row("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
	row("fsconfig", syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0));
	row("fsmount", syscall(SYS_fsmount, -1, 0, 0));
	row("fspick", syscall(SYS_fspick, AT_FDCWD, "/tmp", 0));
	row("move_mount", syscall(SYS_move_mount, -1, "", AT_FDCWD, "/tmp", 0));
	row("mount_setattr", syscall(SYS_mount_setattr, -1, "", 0, NULL, 0));
	row("pivot_root", syscall(SYS_pivot_root, ".", "."));
	row("chroot", chroot("/"));
}

static void processes(void)
{
	int self = (int)syscall(SYS_pidfd_open, getpid(), 0);
	char b;
	struct iovec l = {&b, 1}, rm = {&b, 1};

	row("pidfd_getfd", syscall(SYS_pidfd_getfd, self, 0, 0));
	row("kcmp", syscall(SYS_kcmp, getpid(), getpid(), KCMP_VM, 0, 0));
	row("process_vm_readv(self)", process_vm_readv(getpid(), &l, 1, &rm, 1, 0));
	row("process_vm_readv(init)", process_vm_readv(1, &l, 1, &rm, 1, 0));
	row("ptrace(init)", ptrace(PTRACE_SEIZE, 1, NULL, NULL));
	row("personality(PER_LINUX)", personality(PER_LINUX));
	row("personality(READ_IMPLIES_EXEC)", personality(READ_IMPLIES_EXEC));
	row("personality(ADDR_NO_RANDOMIZE)", personality(ADDR_NO_RANDOMIZE));
	personality(PER_LINUX);
}

static void kernel(void)
{
	struct perf_event_attr pa = {.type = PERF_TYPE_SOFTWARE, .size = sizeof pa,
				     .config = PERF_COUNT_SW_CPU_CLOCK, .exclude_kernel = 1};
	struct io_uring_params up;
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int node = 0;

	memset(&up, 0, sizeof up);
	row("keyctl", syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */, 1));
	row("add_key", syscall(SYS_add_key, "user", "sbx-probe", "x", 1, -2 /* process */));
	row("request_key", syscall(SYS_request_key, "user", "sbx-probe-none", NULL, 0));
	row("perf_event_open", syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
	row("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
	row("bpf", syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0));
	row("io_uring_setup", syscall(SYS_io_uring_setup, 1, &up));
	row("mbind", syscall(SYS_mbind, page, 4096, MPOL_DEFAULT, NULL, 0, 0));
	row("set_mempolicy", syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0));
	row("get_mempolicy", syscall(SYS_get_mempolicy, &node, NULL, 0, NULL, 0));
	row("move_pages", syscall(SYS_move_pages, 0, 0, NULL, NULL, NULL, 0));
	row("migrate_pages", syscall(SYS_migrate_pages, 0, 0, NULL, NULL));
}

static void devices(void)
{
	int tty = pty_slave();
	char c = 'x';

	row("socket(AF_VSOCK)", socket(AF_VSOCK, SOCK_STREAM, 0));
	row("socket(AF_PACKET)", socket(AF_PACKET, SOCK_RAW, 0));
	row("socket(AF_INET, SOCK_RAW)", socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
	row("socket(AF_INET6, SOCK_RAW)", socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6));
	row("socket(AF_NETLINK, SOCK_RAW)", socket(AF_NETLINK, SOCK_RAW, 0));
	row("socket(AF_INET, SOCK_STREAM)", socket(AF_INET, SOCK_STREAM, 0));
	row("ioctl(TIOCSTI)", ioctl(tty, TIOCSTI, &c));
	row("ioctl(TIOCSTI, high bits set)", syscall(SYS_ioctl, tty, (1UL << 32) | TIOCSTI, &c));
	row("ioctl(TIOCLINUX)", ioctl(tty, TIOCLINUX, &c));
	row("ioctl(TIOCGWINSZ)", ioctl(tty, TIOCGWINSZ, &(struct winsize){0}));
}

/* Swaps a and b as fast as it can; never returns. */
static _Noreturn void swap(const char *a, const char *b, const char *target)
{
	for (;;) {
		if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0)
			continue;
		mkdir(a, 0755);
		if (symlink(target, b) < 0 && errno == EEXIST)
			mkdir(a, 0755);
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && strcmp(argv[1], "reach") == 0)
		return reach(argc - 2, argv + 2);
	if (argc == 2 && strcmp(argv[1], "syscalls") == 0) {
		kernel();
		mounts();
		namespaces();
		processes();
		devices();
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "swap") == 0)
		swap(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: sbx-probe reach PID... | sbx-probe syscalls | sbx-probe swap A B TARGET\n");
	return 2;
}
