/* history.c — the session's JSONL chat history: one holder at a time, load (tolerating a torn
 * last line), append. */
#include "history.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gojson.h"
#include "name.h"
#include "paths.h"
#include "xalloc.h"

/* Shown part of a torn line in the warning: enough to recognise it. */
#define TORN_SHOWN 60
/* The holder's record in the lock file: "PID PROGRAM\n"; more is not read. */
#define HOLDER_MAX 128

struct history {
	int lock_fd;			/* the session's lock, held until history_close */
	char *path;
	struct json_object *msgs;	/* array */
	off_t good_len;			/* bytes up to the end of the last good line */
	bool torn;			/* bytes after good_len are a torn line to cut */
	bool need_nl;			/* the last good line has no newline yet */
	char *warning;
};

static int read_all(const char *path, struct buf *b, struct sbx_err *e)
{
	char chunk[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return err_sys(e, errno, "failed to open session file %s", path);
	}
	for (;;) {
		n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_sys(e, errno, "failed to read session file %s", path);
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		if (b->len + (size_t)n > HISTORY_MAX) {
			close(fd);
			return err_set(e, SBX_EIO, "session file %s is larger than %zu bytes", path,
				       HISTORY_MAX);
		}
		buf_append(b, chunk, (size_t)n);
	}
	close(fd);
	return 0;
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/* Parses one line into a message object; NULL with a reason. */
static struct json_object *parse_line(const char *s, size_t n, const char **why)
{
	struct json_object *o = gojson_parse(s, n, why), *role;

	if (o == NULL)
		return NULL;
	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "role", &role) || !json_object_is_type(role, json_type_string)) {
		*why = "a message must be an object with a string \"role\"";
		json_object_put(o);
		return NULL;
	}
	return o;
}

static int load(struct history *h, struct sbx_err *e)
{
	struct buf b = {0};
	size_t pos = 0;
	int rc = -1;

	if (read_all(h->path, &b, e) < 0)
		goto out;
	while (pos < b.len) {
		char *nl = memchr(b.data + pos, '\n', b.len - pos);
		size_t end = nl ? (size_t)(nl - b.data) : b.len;
		const char *why = NULL;
		struct json_object *m;

		if (blank(b.data + pos, end - pos)) {
			pos = end + (nl != NULL);
			if (nl)
				h->good_len = (off_t)pos;
			continue;
		}
		m = parse_line(b.data + pos, end - pos, &why);
		if (m == NULL && nl == NULL) {
			/* The last line, never finished: a crash during an append. */
			size_t shown = end - pos < TORN_SHOWN ? end - pos : TORN_SHOWN;
			struct buf w = {0};
			buf_printf(&w, "skipping a torn last line in %s (%zu bytes, %s): ", h->path,
				   end - pos, why);
			gojson_append_string(&w, b.data + pos, shown);
			h->warning = buf_steal(&w);
			h->torn = true;
			break;
		}
		if (m == NULL) {
			err_set(e, SBX_EINVAL, "failed to decode message from session file: line %zu: %s",
				(size_t)json_object_array_length(h->msgs) + 1, why);
			goto out;
		}
		json_object_array_add(h->msgs, m);
		pos = end + (nl != NULL);
		h->good_len = (off_t)pos;
		h->need_nl = nl == NULL;
	}
	rc = 0;
out:
	buf_free(&b);
	return rc;
}

/* "agent-loop (pid 123)" from a lock file's record, or "another process" while the holder has
 * not written it yet. Newly allocated. */
static char *holder_of(int fd)
{
	char rec[HOLDER_MAX + 1], *prog;
	ssize_t n = pread(fd, rec, HOLDER_MAX, 0);
	long pid;

	rec[n > 0 ? n : 0] = '\0';
	rec[strcspn(rec, "\n")] = '\0';
	pid = strtol(rec, &prog, 10);
	if (pid <= 0 || *prog != ' ' || prog[1] == '\0')
		return xstrdup("another process");
	for (char *c = ++prog; *c; c++)
		if (!isprint((unsigned char)*c))
			*c = '?';	/* it ends up in a message for people */
	return xasprintf("%s (pid %ld)", prog, pid);
}

/* Takes the lock in the session's sessions directory dir. */
static int lock_in(const char *dir, const char *session, struct sbx_err *e)
{
	char *p = xasprintf("%s/%s", dir, HISTORY_LOCK), rec[HOLDER_MAX];
	int fd, n;

	/* O_CLOEXEC: the programs a holder runs must not keep the session after it dies. */
	if ((fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
		err_sys(e, errno, "cannot open %s", p);
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK) {
			char *who = holder_of(fd);
			err_set(e, SBX_EBUSY, "session \"%s\" is in use by %s: a session is used by one "
				"process at a time", session, who);
			free(who);
		} else {
			err_sys(e, errno, "cannot lock %s", p);
		}
		close(fd);
		fd = -1;
		goto out;
	}
	/* The record is for messages only: the lock is the flock, gone with its holder. */
	n = snprintf(rec, sizeof rec, "%ld %s\n", (long)getpid(), program_invocation_short_name);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, rec, (size_t)n, 0) != n) {
		/* a holder without a record is still the holder */
	}
out:
	free(p);
	return fd;
}

char *history_holder(const char *session)
{
	char *root = paths_session_root(NULL), *p, *who = NULL;
	int fd;

	if (root == NULL || name_check(session, NULL) < 0) {
		free(root);
		return NULL;
	}
	p = xasprintf("%s/%s/sessions/%s", root, session, HISTORY_LOCK);
	free(root);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0) {
		if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK)
			who = holder_of(fd);
		close(fd);
	}
	free(p);
	return who;
}

int history_lock(const char *session, struct sbx_err *e)
{
	char *dir = paths_session_dir(session, "sessions", e);
	int fd = dir ? lock_in(dir, session, e) : -1;

	free(dir);
	return fd;
}

struct history *history_open(const char *session, struct sbx_err *e)
{
	struct history *h;
	char *dir;
	int lock;

	if (name_check(session, e) < 0)
		return NULL;
	if ((dir = paths_session_dir(session, "sessions", e)) == NULL)
		return NULL;
	if ((lock = lock_in(dir, session, e)) < 0) {
		free(dir);
		return NULL;
	}
	h = xcalloc(1, sizeof *h);
	h->lock_fd = lock;
	h->path = xasprintf("%s/latest.jsonl", dir);
	free(dir);
	h->msgs = json_object_new_array();
	if (load(h, e) < 0) {
		history_close(h);
		return NULL;
	}
	return h;
}

struct json_object *history_messages(struct history *h)
{
	return h->msgs;
}

const char *history_path(const struct history *h)
{
	return h->path;
}

const char *history_warning(const struct history *h)
{
	return h->warning;
}

static void copy_field(struct json_object *dst, struct json_object *src, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(src, key, &v) || v == NULL)
		return;
	if (json_object_is_type(v, json_type_string) && json_object_get_string_len(v) == 0)
		return;
	json_object_object_add(dst, key, json_object_get(v));
}

static void copy_rest(struct json_object *dst, struct json_object *src, const char *const *known)
{
	json_object_object_foreach(src, key, val) {
		size_t i;
		for (i = 0; known[i]; i++)
			if (strcmp(known[i], key) == 0)
				break;
		if (known[i] == NULL && val != NULL)
			json_object_object_add(dst, key, json_object_get(val));
	}
}

static const char *const call_keys[] = {"id", "type", "function", "thought_signature",
					"extra_content", "index", NULL};
static const char *const fn_keys[] = {"name", "arguments", "thought_signature", NULL};
static const char *const msg_keys[] = {"role", "content", "tool_calls", "tool_call_id",
				       "thought_signature", "extra_content", NULL};

/* Copies a field Go always writes (no omitempty) when the source has it. */
static void copy_always(struct json_object *dst, struct json_object *src, const char *key)
{
	struct json_object *v;

	if (json_object_object_get_ex(src, key, &v) && v != NULL)
		json_object_object_add(dst, key, json_object_get(v));
}

static struct json_object *normalize_call(struct json_object *c)
{
	struct json_object *o, *fn, *f, *a;

	if (!json_object_is_type(c, json_type_object))
		return json_object_get(c);
	o = json_object_new_object();
	copy_always(o, c, "id");
	copy_always(o, c, "type");
	if (json_object_object_get_ex(c, "function", &fn) && json_object_is_type(fn, json_type_object)) {
		f = json_object_new_object();
		copy_always(f, fn, "name");
		/* arguments is a plain string in Go: always written, "" when absent */
		json_object_object_add(f, "arguments",
				       json_object_object_get_ex(fn, "arguments", &a) &&
				       json_object_is_type(a, json_type_string)
				       ? json_object_get(a) : json_object_new_string(""));
		copy_field(f, fn, "thought_signature");
		copy_rest(f, fn, fn_keys);
		json_object_object_add(o, "function", f);
	}
	copy_field(o, c, "thought_signature");
	copy_field(o, c, "extra_content");
	copy_rest(o, c, call_keys);
	return o;
}

struct json_object *history_normalize(struct json_object *msg)
{
	struct json_object *o = json_object_new_object(), *v;

	copy_always(o, msg, "role");
	copy_always(o, msg, "content");
	if (json_object_object_get_ex(msg, "tool_calls", &v) && json_object_is_type(v, json_type_array) &&
	    json_object_array_length(v) > 0) {
		struct json_object *arr = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(v); i++)
			json_object_array_add(arr, normalize_call(json_object_array_get_idx(v, i)));
		json_object_object_add(o, "tool_calls", arr);
	}
	copy_field(o, msg, "tool_call_id");
	copy_field(o, msg, "thought_signature");
	copy_field(o, msg, "extra_content");
	copy_rest(o, msg, msg_keys);
	return o;
}

int history_append(struct history *h, struct json_object *const *msgs, size_t n,
		   struct sbx_err *e)
{
	struct json_object **norm = xcalloc(n ? n : 1, sizeof *norm);
	struct buf b = {0};
	size_t done = 0, i;
	int fd = -1, rc = -1;
	char *dir;

	/* the directory is (re)created on every access, as upstream does */
	if ((dir = xstrdup(h->path)) && strrchr(dir, '/'))
		*strrchr(dir, '/') = '\0';
	if (paths_mkdirs(dir, 0700, e) < 0)
		goto out;
	if (h->need_nl)
		buf_append(&b, "\n", 1);
	for (i = 0; i < n; i++) {
		norm[i] = history_normalize(msgs[i]);
		gojson_append(&b, norm[i]);
		buf_append(&b, "\n", 1);
	}
	fd = open(h->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		err_sys(e, errno, "failed to open session file %s", h->path);
		goto out;
	}
	if (h->torn && ftruncate(fd, h->good_len) < 0) {
		err_sys(e, errno, "failed to cut the torn last line of %s", h->path);
		goto out;
	}
	while (done < b.len) {
		ssize_t w = write(fd, b.data + done, b.len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			err_sys(e, errno, "failed to write session file %s", h->path);
			goto out;
		}
		done += (size_t)w;
	}
	if (close(fd) < 0) {
		fd = -1;
		err_sys(e, errno, "failed to write session file %s", h->path);
		goto out;
	}
	fd = -1;
	h->torn = false;
	h->need_nl = false;
	h->good_len += (off_t)b.len;
	for (i = 0; i < n; i++) {
		json_object_array_add(h->msgs, norm[i]);
		norm[i] = NULL;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	for (i = 0; i < n; i++)
		json_object_put(norm[i]);
	free(norm);
	free(dir);
	buf_free(&b);
	return rc;
}

void history_close(struct history *h)
{
	if (h == NULL)
		return;
	if (h->lock_fd >= 0)
		close(h->lock_fd);
	json_object_put(h->msgs);
	free(h->path);
	free(h->warning);
	free(h);
}
