/* sbx-resume — thaw a paused sandbox: its processes run on where they stopped. */
#include "cli.h"

static const char usage[] =
	"usage: sbx-resume [-backend local|kubernetes] [-namespace NS] NAME\n"
	"Thaws every process of sandbox NAME, paused by sbx-pause, and prints its handle with\n"
	"\"state\":\"running\". Resuming a running sandbox is fine. Exits 101 when the sandbox\n"
	"does not exist. On kubernetes: sets the Sandbox Running and waits until it is ready;\n"
	"its home comes back from its volume claim.\n"
	"\n"
	CLI_SBX_USAGE
	"  -h             show this help\n";

int main(int argc, char **argv)
{
	return cli_pause_main(usage, false, argc, argv);
}
