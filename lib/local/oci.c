/* oci.c — OCI image layouts and archives unpacked into a shared, read-only rootfs cache: the
 * manifest picked (by tag), the config read (Env, WorkingDir, User resolved against the image's
 * /etc/passwd), the cache entry made once.
 *
 * The cache: cache/<hex>/rootfs, where <hex> is the manifest's SHA-256. Under cache/<hex>.lock
 * the layers go into cache/.tmp-<hex>.<pid>/rootfs and the directory is renamed into place
 * only when every layer matched its digest, so a cache entry is always whole. Where blobs come
 * from and how they are verified: oci_blob.c; what a layer may write: oci_layer.c. */
#include "oci.h"
#include "oci_int.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <json-c/json.h>
#include <openssl/evp.h>

#include "fsutil.h"
#include "paths.h"
#include "strset.h"
#include "xalloc.h"

/* index.json and manifests are a few KiB; these caps only stop a hostile source. */
#define INDEX_MAX (1024 * 1024)
#define MANIFEST_MAX (4 * 1024 * 1024)
/* Configs carry the build history and can reach hundreds of KiB. */
#define CONFIG_MAX (16 * 1024 * 1024)
/* Docker caps images at 127 layers; twice that is already not an image we expect. */
#define LAYERS_MAX 256
/* Env entries in a config; real images have a handful. */
#define ENV_MAX 4096
/* /etc/passwd and /etc/group of an image, read to resolve User. */
#define PASSWD_MAX (4 * 1024 * 1024)

#define REF_NAME_KEY "org.opencontainers.image.ref.name"

/* Directories bubblewrap mounts over in every sandbox: they must exist in the image. */
static const char *const mount_points[] = {"/proc", "/dev", "/tmp", "/run", "/var", "/home"};

static const char *const manifest_types[] = {
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
};
static const char *const layer_types[] = {
	"application/vnd.oci.image.layer.v1.tar",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.oci.image.layer.v1.tar+zstd",
	"application/vnd.docker.image.rootfs.diff.tar.gzip",
	"application/vnd.docker.image.rootfs.diff.tar",
};

/* Picks the manifest descriptor from index.json: by tag, or the only one. */
static int pick_manifest(const struct source *s, struct descriptor *d, struct sbx_err *e)
{
	struct json_object *idx = oci_read_json(s, NULL, INDEX_MAX, "index.json", e), *arr, *m, *v, *ann;
	size_t i, n, found = 0;
	int rc = -1;

	if (idx == NULL)
		return -1;
	if (!json_object_object_get_ex(idx, "manifests", &arr) ||
	    !json_object_is_type(arr, json_type_array) || (n = json_object_array_length(arr)) == 0) {
		err_set(e, SBX_EINVAL, "%s: index.json lists no manifests", s->path);
		goto out;
	}
	for (i = 0; i < n; i++) {
		const char *name = NULL;
		m = json_object_array_get_idx(arr, i);
		if (json_object_object_get_ex(m, "annotations", &ann) &&
		    json_object_object_get_ex(ann, REF_NAME_KEY, &v))
			name = json_object_get_string(v);
		if (s->tag ? (name && strcmp(name, s->tag) == 0) : n == 1) {
			if (oci_parse_descriptor(m, "index.json", d, e) < 0)
				goto out;
			found = 1;
			break;
		}
	}
	if (!found) {
		if (s->tag)
			err_set(e, SBX_ENOTFOUND, "%s: no image tagged \"%s\"", s->path, s->tag);
		else
			err_set(e, SBX_EINVAL, "%s holds %zu images: name one with :TAG", s->path, n);
		goto out;
	}
	if (d->media_type && !oci_in_list(d->media_type, manifest_types,
				      sizeof manifest_types / sizeof *manifest_types)) {
		err_set(e, SBX_EINVAL, "%s: unsupported manifest type %s (nested indexes are not "
			"supported)", s->path, d->media_type);
		goto out;
	}
	rc = 0;
out:
	json_object_put(idx);
	return rc;
}

/* Opens dir/rel (relative, no ".."), refusing any symbolic link on the way. */
static int open_in_root(const char *root, const char *rel, int flags)
{
	char buf[ENTRY_PATH_MAX], *save = NULL, *comp, *next;
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), nfd;

	if (fd < 0 || oci_clean_path(rel, buf, sizeof buf) < 0) {
		if (fd >= 0)
			close(fd);
		errno = EINVAL;
		return -1;
	}
	for (comp = strtok_r(buf, "/", &save); comp; comp = next) {
		next = strtok_r(NULL, "/", &save);
		nfd = openat(fd, comp, next ? O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
					 : flags | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (nfd < 0)
			return -1;
		fd = nfd;
	}
	return fd;
}

/* Looks name up in an /etc/passwd or /etc/group text: field 0 or (numeric) field 2. Returns
 * the line's id (field 2) and its field 3 in *extra, or -1. */
static long lookup_id(const char *text, const char *name, long *extra)
{
	const char *line = text;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		char buf[1024], *f[4] = {0};
		size_t n = end ? (size_t)(end - line) : strlen(line);
		int i = 0;
		if (n < sizeof buf) {
			memcpy(buf, line, n);
			buf[n] = '\0';
			for (char *t = buf; i < 4 && t; i++)
				f[i] = strsep(&t, ":");
			if (i == 4 && f[0] && f[2] && strcmp(f[0], name) == 0) {
				if (extra)
					*extra = f[3] ? strtol(f[3], NULL, 10) : -1;
				return strtol(f[2], NULL, 10);
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

static char *read_image_file(const char *rootfs, const char *rel)
{
	int fd = open_in_root(rootfs, rel, O_RDONLY);
	char path[64], *s;

	if (fd < 0)
		return NULL;
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	s = fs_read_small(path, PASSWD_MAX, NULL);
	close(fd);
	return s;
}

static bool all_digits(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Resolves User ("", "uid", "name", "uid:gid", "name:group") like a container runtime. */
static int resolve_user(struct oci_image *img, struct sbx_err *e)
{
	char *u = xstrdup(img->user), *g = strchr(u, ':'), *passwd = NULL, *group = NULL;
	long uid = 0, gid = -1, pgid = -1;
	int rc = -1;

	if (g)
		*g++ = '\0';
	if (u[0] == '\0') {
		uid = 0;
	} else if (all_digits(u)) {
		uid = strtol(u, NULL, 10);
	} else {
		passwd = read_image_file(img->rootfs, "etc/passwd");
		if (passwd == NULL || (uid = lookup_id(passwd, u, &pgid)) < 0) {
			err_set(e, SBX_EINVAL, "image user \"%s\" is not in the image's /etc/passwd", u);
			goto out;
		}
		gid = pgid;
	}
	if (g && *g) {
		if (all_digits(g)) {
			gid = strtol(g, NULL, 10);
		} else {
			group = read_image_file(img->rootfs, "etc/group");
			if (group == NULL || (gid = lookup_id(group, g, NULL)) < 0) {
				err_set(e, SBX_EINVAL, "image group \"%s\" is not in the image's "
					"/etc/group", g);
				goto out;
			}
		}
	}
	if (gid < 0)
		gid = 0;
	if (uid > 0x7fffffff || gid > 0x7fffffff) {
		err_set(e, SBX_EINVAL, "image user \"%s\": id out of range", img->user);
		goto out;
	}
	img->uid = (uid_t)uid;
	img->gid = (gid_t)gid;
	rc = 0;
out:
	free(u);
	free(passwd);
	free(group);
	return rc;
}

static int read_config(struct oci_image *img, struct json_object *cfg, struct sbx_err *e)
{
	struct json_object *c, *v;
	size_t i, n = 0;

	img->env = xcalloc(1, sizeof(char *));
	img->workdir = xstrdup("");
	img->user = xstrdup("");
	if (!json_object_object_get_ex(cfg, "config", &c) || !json_object_is_type(c, json_type_object))
		return 0;
	if (json_object_object_get_ex(c, "Env", &v) && json_object_is_type(v, json_type_array)) {
		n = json_object_array_length(v);
		if (n > ENV_MAX)
			return err_set(e, SBX_EINVAL, "image config: %zu Env entries, at most %d",
				       n, ENV_MAX);
		free(img->env);
		img->env = xcalloc(n + 1, sizeof(char *));
		for (i = 0; i < n; i++) {
			const char *s = json_object_get_string(json_object_array_get_idx(v, i));
			if (s == NULL || strchr(s, '=') == NULL || s[0] == '=')
				return err_set(e, SBX_EINVAL, "image config: Env entry %zu is not "
					       "NAME=VALUE", i);
			img->env[i] = xstrdup(s);
		}
	}
	if (json_object_object_get_ex(c, "WorkingDir", &v) && json_object_is_type(v, json_type_string)) {
		const char *w = json_object_get_string(v);
		if (w[0] != '\0' && (w[0] != '/' || strlen(w) >= ENTRY_PATH_MAX))
			return err_set(e, SBX_EINVAL, "image config: WorkingDir \"%.200s\" is not an "
				       "absolute path", w);
		free(img->workdir);
		img->workdir = xstrdup(w);
	}
	if (json_object_object_get_ex(c, "User", &v) && json_object_is_type(v, json_type_string)) {
		free(img->user);
		img->user = xstrdup(json_object_get_string(v));
	}
	return 0;
}

/* Creates the absolute path's missing directories below root, never following links. */
static int mkdirs_in_root(const char *root, const char *abs, struct sbx_err *e)
{
	char buf[ENTRY_PATH_MAX], *save = NULL, *comp;
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), nfd, rc = 0;
	struct stat st;

	if (fd < 0)
		return err_sys(e, errno, "cannot open %s", root);
	if (abs[0] != '/' || oci_clean_path(abs + 1, buf, sizeof buf) < 0) {
		close(fd);
		return err_set(e, SBX_EINVAL, "mount point %s is not a clean absolute path", abs);
	}
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			break;	/* resolved inside the sandbox */
		if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
			rc = err_sys(e, errno, "cannot create %s in the image", abs);
			break;
		}
		nfd = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = nfd;
		if (fd < 0) {
			rc = err_sys(e, errno, "cannot create %s in the image", abs);
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

int oci_mountpoint(const struct oci_image *img, const char *path, struct sbx_err *e)
{
	return mkdirs_in_root(img->rootfs, path, e);
}

/* Removes leftovers of unpacks that died (we hold the digest's lock: nobody else is at it). */
static void remove_stale_tmp(const char *cache, const char *hex)
{
	DIR *d = opendir(cache);
	struct dirent *de;
	char prefix[96];

	if (d == NULL)
		return;
	snprintf(prefix, sizeof prefix, ".tmp-%s.", hex);
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
			char *p = xasprintf("%s/%s", cache, de->d_name);
			fs_remove_tree(p);
			free(p);
		}
	}
	closedir(d);
}

/* Unpacks every layer into tmp/rootfs, then renames tmp to final. */
static int unpack_all(const struct source *s, struct json_object *manifest, const char *tmp,
		      const char *final, const char *workdir, struct sbx_err *e)
{
	struct json_object *layers;
	struct descriptor d = {0};
	struct unpack u = {0};
	char *root = xasprintf("%s/rootfs", tmp);
	int cwd = -1, rc = -1;
	size_t i, n;

	if (!json_object_object_get_ex(manifest, "layers", &layers) ||
	    !json_object_is_type(layers, json_type_array)) {
		err_set(e, SBX_EINVAL, "%s: the manifest lists no layers", s->path);
		goto out;
	}
	n = json_object_array_length(layers);
	if (n > LAYERS_MAX) {
		err_set(e, SBX_EINVAL, "%s: %zu layers, at most %d", s->path, n, LAYERS_MAX);
		goto out;
	}
	if (mkdir(tmp, 0755) < 0 || mkdir(root, 0755) < 0) {
		err_sys(e, errno, "cannot create %s", root);
		goto out;
	}
	cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || chdir(root) < 0) {
		err_sys(e, errno, "cannot enter %s", root);
		goto out;
	}
	for (i = 0; i < n; i++) {
		free(d.media_type);
		snprintf(u.what, sizeof u.what, "layer %zu", i + 1);
		if (oci_parse_descriptor(json_object_array_get_idx(layers, i), u.what, &d, e) < 0)
			goto out;
		if (d.media_type && !oci_in_list(d.media_type, layer_types,
					     sizeof layer_types / sizeof *layer_types)) {
			err_set(e, SBX_EINVAL, "%s: unsupported layer type %s", u.what, d.media_type);
			goto out;
		}
		snprintf(u.what, sizeof u.what, "layer %zu (sha256:%.12s)", i + 1, d.hex);
		if (oci_unpack_layer(&u, s, &d, e) < 0)
			goto out;
	}
	if (fchdir(cwd) < 0) {
		err_sys(e, errno, "cannot return to the working directory");
		goto out;
	}
	close(cwd);
	cwd = -1;
	for (i = 0; i < sizeof mount_points / sizeof *mount_points; i++)
		if (mkdirs_in_root(root, mount_points[i], e) < 0)
			goto out;
	if (workdir[0] && mkdirs_in_root(root, workdir, e) < 0)
		goto out;
	if (chmod(root, 0755) < 0 || rename(tmp, final) < 0) {
		err_sys(e, errno, "cannot move the unpacked image to %s", final);
		goto out;
	}
	rc = 0;
out:
	if (cwd >= 0) {
		if (fchdir(cwd) < 0) {
			/* the caller's relative paths break; nothing better to do */
		}
		close(cwd);
	}
	strset_clear(&u.written);
	strset_clear(&u.dirs);
	free(d.media_type);
	free(root);
	return rc;
}

/* The source ref names, checked to be there and of its kind, its path made absolute (the
 * unpack runs in another working directory). */
static int open_source(const char *ref, struct source *s, struct sbx_err *e)
{
	struct stat st;
	char *abs;

	if (oci_parse_ref(ref, s, e) < 0)
		return -1;
	if (stat(s->path, &st) < 0) {
		err_sys(e, errno, "image %s", s->path);
		if (errno == ENOENT)
			e->code = SBX_ENOTFOUND;
		return -1;
	}
	if (s->archive ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode))
		return err_set(e, SBX_EINVAL, "image %s is not an OCI %s", s->path,
			       s->archive ? "archive (a file)" : "layout (a directory)");
	if ((abs = realpath(s->path, NULL)) == NULL)
		return err_sys(e, errno, "image %s", s->path);
	free(s->path);
	s->path = abs;
	return 0;
}

/* The manifest md describes, of a supported type, and its config read into img. New
 * reference, or NULL with e. */
static struct json_object *read_manifest(const struct source *s, const struct descriptor *md,
					 struct oci_image *img, struct sbx_err *e)
{
	struct json_object *manifest, *cfg = NULL, *v;
	struct descriptor cd = {0};
	const char *mt;
	int rc = -1;

	if ((manifest = oci_read_json(s, md, MANIFEST_MAX, "the manifest", e)) == NULL)
		return NULL;
	mt = json_object_object_get_ex(manifest, "mediaType", &v) ? json_object_get_string(v) : NULL;
	if (mt && !oci_in_list(mt, manifest_types, sizeof manifest_types / sizeof *manifest_types))
		err_set(e, SBX_EINVAL, "unsupported manifest type %s", mt);
	else if (!json_object_object_get_ex(manifest, "config", &v))
		err_set(e, SBX_EINVAL, "the manifest has no config");
	else if (oci_parse_descriptor(v, "the manifest's config", &cd, e) == 0 &&
		 (cfg = oci_read_json(s, &cd, CONFIG_MAX, "the image config", e)) != NULL &&
		 read_config(img, cfg, e) == 0)
		rc = 0;
	json_object_put(cfg);
	free(cd.media_type);
	if (rc < 0) {
		json_object_put(manifest);
		return NULL;
	}
	return manifest;
}

/* Takes cache_dir/hex.lock (held until lock is closed). */
static int lock_entry(const char *cache_dir, const char *hex, int *lock, struct sbx_err *e)
{
	char *lockp = xasprintf("%s/%s.lock", cache_dir, hex);
	int rc = 0;

	if ((*lock = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		rc = err_sys(e, errno, "cannot open %s", lockp);
	while (rc == 0 && flock(*lock, LOCK_EX) < 0)
		if (errno != EINTR)
			rc = err_sys(e, errno, "cannot lock %s", lockp);
	free(lockp);
	return rc;
}

struct oci_image *oci_prepare(const char *ref, const char *cache_dir, struct sbx_err *e)
{
	struct source s = {0};
	struct descriptor md = {0};
	struct json_object *manifest = NULL;
	struct oci_image *img = xcalloc(1, sizeof *img);
	char *final = NULL, *tmp = NULL;
	int lock = -1, ok = 0;
	struct stat st;

	if (open_source(ref, &s, e) < 0 || pick_manifest(&s, &md, e) < 0 ||
	    (manifest = read_manifest(&s, &md, img, e)) == NULL)
		goto out;
	snprintf(img->digest, sizeof img->digest, SHA256_PREFIX "%s", md.hex);
	if (paths_mkdirs(cache_dir, 0700, e) < 0)
		goto out;
	final = xasprintf("%s/%s", cache_dir, md.hex);
	img->rootfs = xasprintf("%s/rootfs", final);
	if (lock_entry(cache_dir, md.hex, &lock, e) < 0)
		goto out;
	if (lstat(img->rootfs, &st) < 0 || !S_ISDIR(st.st_mode)) {
		remove_stale_tmp(cache_dir, md.hex);
		fs_remove_tree(final);	/* an entry without its rootfs is debris */
		tmp = xasprintf("%s/.tmp-%s.%ld", cache_dir, md.hex, (long)getpid());
		if (unpack_all(&s, manifest, tmp, final, img->workdir, e) < 0) {
			fs_remove_tree(tmp);
			goto out;
		}
		img->unpacked = true;
	}
	if (resolve_user(img, e) < 0)
		goto out;
	ok = 1;
out:
	if (lock >= 0)
		close(lock);
	json_object_put(manifest);
	free(md.media_type);
	free(s.path);
	free(s.tag);
	free(final);
	free(tmp);
	if (!ok) {
		oci_image_free(img);
		img = NULL;
	}
	return img;
}
