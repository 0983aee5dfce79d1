/* oci_helper.c — the light half of lib/oci: what the local backend links to run OCI images
 * without loading libarchive or OpenSSL. It runs sbx-image and reads its one JSON line. */
#include "oci.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gojson.h"
#include "xalloc.h"

/* sbx-image prints one line with the image's Env: a few KiB; 1 MiB is not ours. */
#define HELPER_OUT_MAX (1024 * 1024)
/* Its error message: one line. */
#define HELPER_ERR_MAX 4096
/* Exit statuses of sbx-image (cmd/cli.h's table). */
#define HELPER_USAGE 100
#define HELPER_NOTFOUND 101

int oci_is_ref(const char *image)
{
	return strncmp(image, "oci:", 4) == 0 || strncmp(image, "oci-archive:", 12) == 0;
}

void oci_image_free(struct oci_image *img)
{
	if (img == NULL)
		return;
	for (size_t i = 0; img->env && img->env[i]; i++)
		free(img->env[i]);
	free(img->env);
	free(img->rootfs);
	free(img->workdir);
	free(img->user);
	free(img);
}

struct json_object *oci_image_json(const struct oci_image *img, const char *ref)
{
	struct json_object *o = json_object_new_object(), *env = json_object_new_array();

	for (size_t i = 0; img->env[i]; i++)
		json_object_array_add(env, json_object_new_string(img->env[i]));
	json_object_object_add(o, "image", json_object_new_string(ref));
	json_object_object_add(o, "digest", json_object_new_string(img->digest));
	json_object_object_add(o, "rootfs", json_object_new_string(img->rootfs));
	json_object_object_add(o, "env", env);
	json_object_object_add(o, "workdir", json_object_new_string(img->workdir));
	json_object_object_add(o, "user", json_object_new_string(img->user));
	json_object_object_add(o, "uid", json_object_new_int64(img->uid));
	json_object_object_add(o, "gid", json_object_new_int64(img->gid));
	json_object_object_add(o, "unpacked", json_object_new_boolean(img->unpacked));
	return o;
}

static const char *str_field(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct oci_image *from_json(const char *text, size_t len, struct sbx_err *e)
{
	struct oci_image *img = xcalloc(1, sizeof *img);
	const char *why;
	struct json_object *o = gojson_parse(text, len, &why), *env, *v;
	const char *rootfs, *workdir, *user, *digest;
	size_t i, n;

	rootfs = o ? str_field(o, "rootfs") : NULL;
	workdir = o ? str_field(o, "workdir") : NULL;
	user = o ? str_field(o, "user") : NULL;
	digest = o ? str_field(o, "digest") : NULL;
	if (!rootfs || rootfs[0] != '/' || !workdir || !user || !digest ||
	    !json_object_object_get_ex(o, "env", &env) || !json_object_is_type(env, json_type_array)) {
		err_set(e, SBX_EIO, "sbx-image printed an unexpected document");
		json_object_put(o);
		oci_image_free(img);
		return NULL;
	}
	img->rootfs = xstrdup(rootfs);
	img->workdir = xstrdup(workdir);
	img->user = xstrdup(user);
	snprintf(img->digest, sizeof img->digest, "%s", digest);
	n = json_object_array_length(env);
	img->env = xcalloc(n + 1, sizeof(char *));
	for (i = 0; i < n; i++)
		img->env[i] = xstrdup(json_object_get_string(json_object_array_get_idx(env, i)));
	if (json_object_object_get_ex(o, "uid", &v))
		img->uid = (uid_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "gid", &v))
		img->gid = (gid_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "unpacked", &v))
		img->unpacked = json_object_get_boolean(v);
	json_object_put(o);
	return img;
}

/* Reads both pipes to EOF, each up to its cap (the rest is drained and dropped). */
static void read_both(int fds[2], struct buf out[2], const size_t max[2])
{
	char chunk[8192];
	int open_n = 2;

	while (open_n > 0) {
		struct pollfd p[2] = {{.fd = fds[0], .events = POLLIN}, {.fd = fds[1], .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t r;
			if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(fds[i], chunk, sizeof chunk);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				close(fds[i]);
				fds[i] = -1;
				p[i].fd = -1;
				open_n--;
				continue;
			}
			if (out[i].len + (size_t)r <= max[i])
				buf_append(&out[i], chunk, (size_t)r);
		}
		for (int i = 0; i < 2; i++)
			if (fds[i] < 0)
				p[i].fd = -1;
	}
}

struct oci_image *oci_helper_run(const char *helper, const char *ref, const char *homedir,
				 struct sbx_err *e)
{
	char *const argv[] = {(char *)helper, "-homedir", (char *)homedir, "--", (char *)ref, NULL};
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, fds[2], st = 0;
	const size_t max[2] = {HELPER_OUT_MAX, HELPER_ERR_MAX};
	struct buf out[2] = {{0}, {0}};
	struct oci_image *img = NULL;
	pid_t pid;

	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		err_sys(e, errno, "pipe");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		err_sys(e, errno, "fork");
		goto out;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(111);
		signal(SIGPIPE, SIG_DFL);
		execv(helper, argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	fds[0] = po[0];
	fds[1] = pe[0];
	po[0] = pe[0] = -1;
	read_both(fds, out, max);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		img = from_json(out[0].data ? out[0].data : "", out[0].len, e);
	} else {
		char *msg = out[1].data ? out[1].data : NULL;
		size_t n = out[1].len;
		int code = !WIFEXITED(st) ? SBX_EIO
			 : WEXITSTATUS(st) == HELPER_USAGE ? SBX_EINVAL
			 : WEXITSTATUS(st) == HELPER_NOTFOUND ? SBX_ENOTFOUND : SBX_EIO;
		while (msg && n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
			n--;
		/* "sbx-image: what: why" — keep what follows the program name. */
		if (msg && n > 11 && strncmp(msg, "sbx-image: ", 11) == 0) {
			msg += 11;
			n -= 11;
		}
		if (msg && n > 0)
			err_set(e, code, "%.*s", (int)n, msg);
		else
			err_set(e, code, "%s failed (status %d)", helper, st);
	}
out:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	buf_free(&out[0]);
	buf_free(&out[1]);
	return img;
}
