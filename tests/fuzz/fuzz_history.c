/* fuzz_history.c — loading a session's history file (JSONL, possibly torn by a crash, with
 * garbage and unanswered tool calls): the input is written as the session's latest.jsonl,
 * then opened (which sets it right). When it loads, one more message is appended and the file
 * must load again with exactly one more message and nothing left to set right. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "history.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static char home[64], file[160], corrupt[176];

static void cleanup(void)
{
	fs_remove_tree(home);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct history *h;
	struct json_object *msg;
	struct sbx_err e;
	size_t n;
	FILE *f;

	if (home[0] == '\0') {
		char d[128];

		snprintf(home, sizeof home, "/tmp/fuzz_history.XXXXXX");
		if (mkdtemp(home) == NULL)
			abort();
		setenv("HOME", home, 1);
		snprintf(d, sizeof d, "%s/.local", home);
		mkdir(d, 0700);
		snprintf(d, sizeof d, "%s/.local/sandboxed-tools", home);
		mkdir(d, 0700);
		snprintf(d, sizeof d, "%s/.local/sandboxed-tools/fz", home);
		mkdir(d, 0700);
		snprintf(d, sizeof d, "%s/.local/sandboxed-tools/fz/sessions", home);
		mkdir(d, 0700);
		snprintf(file, sizeof file, "%s/latest.jsonl", d);
		snprintf(corrupt, sizeof corrupt, "%s.corrupt", file);
		atexit(cleanup);
	}
	unlink(corrupt);	/* bad lines moved aside by the last input */
	f = fopen(file, "w");
	if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	h = history_open("fz", &e);
	if (h == NULL)
		return 0;
	if (strcmp(history_path(h), file) != 0)
		abort();
	n = json_object_array_length(history_messages(h));
	msg = json_tokener_parse("{\"role\":\"user\",\"content\":\"again\"}");
	if (history_append(h, &msg, 1, &e) < 0)
		abort();	/* a loadable file must stay appendable */
	json_object_put(msg);
	history_close(h);
	h = history_open("fz", &e);
	if (h == NULL || json_object_array_length(history_messages(h)) != n + 1)
		abort();	/* the append lost a line or left the file unloadable */
	if (history_warning(h) != NULL)
		abort();	/* the first load left something to set right */
	history_close(h);
	return 0;
}
