/* sbx-pause — freeze every process of a sandbox; it keeps its memory and uses no CPU. */
#include "cli.h"

static const char usage[] =
	"usage: sbx-pause [-backend local|kubernetes] [-namespace NS] NAME\n"
	"Freezes every process of sandbox NAME through its cgroup, waits until the kernel has\n"
	"frozen them all and prints its handle with \"state\":\"paused\". Processes and memory are\n"
	"kept; no CPU is used. sbx-resume, or any sbx-exec, sbx-tool, sbx-touch or sbx-cp on it,\n"
	"thaws it. Pausing a paused sandbox is fine. A sandbox made with -limits none has no\n"
	"cgroup and cannot be paused. On kubernetes: suspends the Sandbox (operatingMode\n"
	"Suspended): the pod goes, the home stays on its volume claim (-idle pause), processes\n"
	"end. Exits 101 when the sandbox does not exist.\n"
	"\n"
	CLI_SBX_USAGE
	"  -h             show this help\n";

int main(int argc, char **argv)
{
	return cli_pause_main(usage, true, argc, argv);
}
