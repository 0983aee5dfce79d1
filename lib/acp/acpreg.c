/* acpreg.c — the issued-sessions file: read at open, tail re-read on a miss, one line per put. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acpreg.h"
#include "gojson.h"
#include "paths.h"
#include "xalloc.h"

struct acpreg {
	pthread_mutex_t mu;
	char *path;
	int fd;				/* O_APPEND, for puts */
	off_t off;			/* bytes of complete lines read so far */
	struct json_object *recs;	/* id → record */
};

static void merge(struct acpreg *r, struct json_object *line)
{
	struct json_object *id, *rec;

	if (!json_object_is_type(line, json_type_object) ||
	    !json_object_object_get_ex(line, "id", &id) || !json_object_is_type(id, json_type_string))
		return;
	if (!json_object_object_get_ex(r->recs, json_object_get_string(id), &rec)) {
		rec = json_object_new_object();
		json_object_object_add(r->recs, json_object_get_string(id), rec);
	}
	json_object_object_foreach(line, k, v) {
		if (json_object_is_type(v, json_type_string))
			json_object_object_add(rec, k, json_object_get(v));
	}
}

/* Reads the lines appended since the last read (all of them when the file shrank). */
static int refresh(struct acpreg *r, struct sbx_err *e)
{
	struct stat st;
	struct buf b = {0};
	char chunk[65536];
	ssize_t n;
	int fd = open(r->path, O_RDONLY | O_CLOEXEC), rc = -1;
	size_t at = 0;

	if (fd < 0)
		return err_sys(e, errno, "cannot open %s", r->path);
	if (fstat(fd, &st) < 0) {
		err_sys(e, errno, "cannot stat %s", r->path);
		goto out;
	}
	if ((size_t)st.st_size > ACPREG_FILE_MAX) {
		err_set(e, SBX_EINVAL, "%s is larger than %zu bytes: prune it", r->path,
			ACPREG_FILE_MAX);
		goto out;
	}
	if (st.st_size < r->off) {
		json_object_put(r->recs);
		r->recs = json_object_new_object();
		r->off = 0;
	}
	if (lseek(fd, r->off, SEEK_SET) < 0) {
		err_sys(e, errno, "cannot seek %s", r->path);
		goto out;
	}
	while (b.len < ACPREG_FILE_MAX && (n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_sys(e, errno, "cannot read %s", r->path);
			goto out;
		}
		buf_append(&b, chunk, (size_t)n);
	}
	while (at < b.len) {
		char *nl = memchr(b.data + at, '\n', b.len - at);
		struct json_object *line;
		const char *why;
		if (nl == NULL)
			break;	/* a line still being written (or torn): read it next time */
		if ((size_t)(nl - (b.data + at)) <= ACPREG_LINE_MAX &&
		    (line = gojson_parse(b.data + at, (size_t)(nl - (b.data + at)), &why)) != NULL) {
			merge(r, line);
			json_object_put(line);
		}
		at = (size_t)(nl - b.data) + 1;
	}
	r->off += (off_t)at;
	rc = 0;
out:
	buf_free(&b);
	close(fd);
	return rc;
}

struct acpreg *acpreg_open(const char *path, struct sbx_err *e)
{
	struct acpreg *r = xcalloc(1, sizeof *r);
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');

	pthread_mutex_init(&r->mu, NULL);
	r->path = xstrdup(path);
	r->recs = json_object_new_object();
	r->fd = -1;
	if (slash && slash != dir) {
		*slash = '\0';
		if (paths_mkdirs(dir, 0700, e) < 0)
			goto bad;
	}
	r->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (r->fd < 0) {
		err_sys(e, errno, "cannot open %s", path);
		goto bad;
	}
	if (refresh(r, e) < 0)
		goto bad;
	free(dir);
	return r;
bad:
	free(dir);
	acpreg_free(r);
	return NULL;
}

void acpreg_free(struct acpreg *r)
{
	if (r == NULL)
		return;
	if (r->fd >= 0)
		close(r->fd);
	json_object_put(r->recs);
	free(r->path);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* id's record (borrowed), re-reading the file's tail once when it is not known yet. */
static struct json_object *find(struct acpreg *r, const char *id)
{
	struct json_object *rec;

	if (json_object_object_get_ex(r->recs, id, &rec))
		return rec;
	if (refresh(r, NULL) == 0 && json_object_object_get_ex(r->recs, id, &rec))
		return rec;
	return NULL;
}

char *acpreg_owner(struct acpreg *r, const char *id)
{
	struct json_object *rec, *v;
	char *who = NULL;

	pthread_mutex_lock(&r->mu);
	if ((rec = find(r, id)) != NULL && json_object_object_get_ex(rec, "principal", &v))
		who = xstrdup(json_object_get_string(v));
	pthread_mutex_unlock(&r->mu);
	return who;
}

static struct json_object *copy(struct json_object *o)
{
	struct json_object *c = NULL;

	json_object_deep_copy(o, &c, NULL);
	return c;
}

struct json_object *acpreg_get(struct acpreg *r, const char *id)
{
	struct json_object *rec, *c = NULL;

	pthread_mutex_lock(&r->mu);
	if ((rec = find(r, id)) != NULL)
		c = copy(rec);
	pthread_mutex_unlock(&r->mu);
	return c;
}

int acpreg_put(struct acpreg *r, const char *id, struct json_object *fields, struct sbx_err *e)
{
	struct json_object *line = json_object_new_object();
	struct buf b = {0};
	int rc = -1;

	json_object_object_add(line, "id", json_object_new_string(id));
	json_object_object_foreach(fields, k, v) {
		if (strcmp(k, "id") != 0 && json_object_is_type(v, json_type_string))
			json_object_object_add(line, k, json_object_get(v));
	}
	gojson_append(&b, line);
	buf_puts(&b, "\n");
	if (b.len > ACPREG_LINE_MAX) {
		err_set(e, SBX_EINVAL, "session record longer than %d bytes", ACPREG_LINE_MAX);
		goto out;
	}
	pthread_mutex_lock(&r->mu);
	{
		/* A torn last line (a crash mid-append) is ended first, so this one stays whole. */
		struct stat st;
		char last = '\n';
		if (fstat(r->fd, &st) == 0 && st.st_size > 0 &&
		    pread(r->fd, &last, 1, st.st_size - 1) == 1 && last != '\n' &&
		    write(r->fd, "\n", 1) != 1)
			last = '\n';	/* the write below reports the trouble */
	}
	/* One write per line: appends from several servers never interleave within a line. */
	if (write(r->fd, b.data, b.len) != (ssize_t)b.len || fdatasync(r->fd) < 0) {
		err_sys(e, errno, "cannot append to %s", r->path);
	} else {
		merge(r, line);
		rc = 0;
	}
	pthread_mutex_unlock(&r->mu);
out:
	buf_free(&b);
	json_object_put(line);
	return rc;
}

struct ranked {
	const char *updated;
	size_t seq;			/* the record's place in the file */
	struct json_object *rec;
};

static int by_update(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	/* RFC 3339 UTC text sorts as time does; newest first, and within one second the one
	 * recorded later. */
	int c = strcmp(y->updated, x->updated);

	return c ? c : (y->seq > x->seq) - (y->seq < x->seq);
}

struct json_object *acpreg_list(struct acpreg *r, const char *principal)
{
	struct json_object *arr = json_object_new_array(), *v, *u;
	struct ranked *rk;
	size_t n = 0, i;

	pthread_mutex_lock(&r->mu);
	refresh(r, NULL);
	rk = xcalloc((size_t)json_object_object_length(r->recs) + 1, sizeof *rk);
	json_object_object_foreach(r->recs, id, rec) {
		(void)id;
		if (json_object_object_get_ex(rec, "principal", &v) &&
		    strcmp(json_object_get_string(v), principal) == 0) {
			rk[n].updated = json_object_object_get_ex(rec, "updated_at", &u)
					? json_object_get_string(u) : "";
			rk[n].seq = n;
			rk[n++].rec = rec;
		}
	}
	qsort(rk, n, sizeof *rk, by_update);
	for (i = 0; i < n; i++)
		json_object_array_add(arr, copy(rk[i].rec));
	pthread_mutex_unlock(&r->mu);
	free(rk);
	return arr;
}
