/* test_reslimit.c — lib/reslimit's pure parts: tmpfs sizes against the memory limit (each
 * below it, together at most 7/8 of it), the size text of messages, and the limits JSON of
 * the handle both ways (lib/backend.c). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../lib/backend.h"
#include "../../lib/reslimit.h"
#include "tap.h"

static void test_tmpfs(void)
{
	const int64_t mems[] = {INT64_C(32) << 20, INT64_C(128) << 20, INT64_C(2) << 30,
				INT64_C(64) << 30};
	const enum reslimit_tmpfs all[] = {RESLIMIT_TMP, RESLIMIT_VAR, RESLIMIT_RUN, RESLIMIT_SHM};

	for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++) {
		int64_t sum = 0, max = 0;
		for (size_t j = 0; j < sizeof all / sizeof all[0]; j++) {
			int64_t t = reslimit_tmpfs_size(mems[i], all[j]);
			sum += t;
			max = t > max ? t : max;
		}
		ok(max < mems[i] && sum <= mems[i] / 8 * 7,
		   "memory %lld: every tmpfs below it, together %lld <= 7/8", (long long)mems[i],
		   (long long)sum);
	}
	ok(reslimit_tmpfs_size(INT64_C(2) << 30, RESLIMIT_SHM) == INT64_C(64) << 20,
	   "/dev/shm is 64M by default");
	ok(reslimit_tmpfs_size(INT64_C(2) << 30, RESLIMIT_TMP) == INT64_C(512) << 20,
	   "/tmp is a quarter of the default limit");
	ok(reslimit_tmpfs_size(INT64_C(32) << 20, RESLIMIT_MASK) == 64 << 10,
	   "a masking tmpfs is 64K: five of them still fit in the last eighth of 32M");
}

static void test_text(void)
{
	char b[32];

	is_str(reslimit_size_text(INT64_C(128) << 20, b, sizeof b), "128M", "128M");
	is_str(reslimit_size_text(INT64_C(2) << 30, b, sizeof b), "2G", "2G");
	is_str(reslimit_size_text(INT64_C(1536) << 10, b, sizeof b), "1536K", "1536K");
	is_str(reslimit_size_text(1000, b, sizeof b), "1000", "plain bytes");
	is_str(reslimit_size_text(INT64_C(3) << 40, b, sizeof b), "3T", "3T");
}

static void test_json(void)
{
	struct sbx_limits in = {.enforced = true, .memory = INT64_C(128) << 20, .pids = 64,
				.cpus_milli = 1500, .disk = INT64_C(1) << 30, .cgroup = "v2"}, out;
	struct json_object *o = sbx_limits_json(&in);

	is_str(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	       "{\"enforced\":true,\"memory\":134217728,\"pids\":64,\"cpus\":1.5,\"disk\":1073741824,"
	       "\"cgroup\":\"v2\"}", "the handle's limits");
	ok(sbx_limits_from_json(o, &out) == 0 && out.enforced && out.memory == in.memory &&
		   out.pids == 64 && out.cpus_milli == 1500 && out.disk == in.disk &&
		   strcmp(out.cgroup, "v2") == 0, "read back as written");
	json_object_put(o);
	in.cpus_milli = 2000;
	o = sbx_limits_json(&in);
	ok(strstr(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "\"cpus\":2,") != NULL,
	   "whole CPUs are integers");
	json_object_put(o);
	memset(&in, 0, sizeof in);
	o = sbx_limits_json(&in);
	is_str(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{\"enforced\":false}",
	       "-limits none: enforced false only");
	json_object_put(o);
}

int main(void)
{
	test_tmpfs();
	test_text();
	test_json();
	return done_testing();
}
