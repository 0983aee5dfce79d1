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

#include "fsutil.h"
#include "gojson.h"
#include "name.h"
#include "paths.h"
#include "toolmsg.h"
#include "utf8.h"
#include "xalloc.h"

/* Bad lines named in the warning (all of them go to the .corrupt file). */
#define BAD_NAMED 3
/* The holder's record in the lock file: "PID PROGRAM\n"; more is not read. */
#define HOLDER_MAX 128

struct history {
	int lock_fd;			/* the session's lock, held until history_close */
	char *path;
	struct json_object *msgs;	/* array */
	off_t good_len;			/* bytes up to the end of the last good line */
	bool torn;			/* bytes after good_len are a torn line to cut */
	bool need_nl;			/* the last good line has no newline yet */
	char *corrupt;			/* where bad lines are moved aside: PATH.corrupt */
	char *warning;
	struct json_object *open;	/* the last assistant's calls with no tool message yet */
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

/* fsyncs the directory holding path (its entry for a new file). */
static int sync_dir_of(const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	int fd, rc = -1;

	if (slash)
		*slash = '\0';
	if ((fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		rc = fsync(fd);
		close(fd);
	}
	free(dir);
	return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Appends data to the file as one write, then fsyncs it (and, when this made the file, its
 * directory). A write that fails half-way is cut off again, so the next append never glues
 * onto a torn line; when even the cut fails, the next append makes it first (h->torn). */
static int write_tail(struct history *h, const char *data, size_t len, struct sbx_err *e)
{
	struct stat st;
	bool made = false;
	int fd = open(h->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0 && errno == ENOENT) {
		fd = open(h->path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		made = fd >= 0;
	}
	if (fd < 0)
		return err_sys(e, errno, "failed to open session file %s", h->path);
	if (h->torn && ftruncate(fd, h->good_len) < 0) {
		err_sys(e, errno, "failed to cut the torn last line of %s", h->path);
		close(fd);
		return -1;
	}
	h->torn = false;
	/* where this append starts: what a failed one is cut back to */
	if (fstat(fd, &st) < 0) {
		err_sys(e, errno, "failed to open session file %s", h->path);
		close(fd);
		return -1;
	}
	h->good_len = st.st_size;
	if (write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		err_sys(e, errno, "failed to write session file %s", h->path);
		h->torn = ftruncate(fd, h->good_len) < 0 || fsync(fd) < 0;
		close(fd);
		return -1;
	}
	if (close(fd) < 0 || (made && sync_dir_of(h->path) < 0))
		return err_sys(e, errno, "failed to write session file %s", h->path);
	h->good_len += (off_t)len;
	return 0;
}

/* What loading found to set right, gathered line by line. */
struct repair {
	struct buf keep;		/* the file as it should be: good lines, added messages */
	struct buf bad;			/* the bad lines, each with a newline, for the .corrupt file */
	struct buf why;			/* "line 4: boolean expected" for the first few */
	size_t nbad, nadded;
	size_t keep_file;		/* keep's bytes that are the file's own (a clean prefix) */
	bool rewrite;			/* a good line follows a bad one or an added message */
};

/* The repair notes a bad line; the first few are named in the warning. */
static void note_bad(struct repair *r, size_t lineno, const char *s, size_t n, const char *why,
		     bool torn)
{
	buf_append(&r->bad, s, n);
	buf_append(&r->bad, "\n", 1);
	if (r->nbad < BAD_NAMED)
		buf_printf(&r->why, "%sline %zu: %s%s", r->nbad ? "; " : "", lineno,
			   torn ? "torn, " : "", why);
	r->nbad++;
}

/* The tool message answering call c, which was cut short (the process running the turn died,
 * or its result could not be saved) and is never run again. New reference. */
static struct json_object *interrupted(struct json_object *c)
{
	struct json_object *fn = NULL, *m = json_object_new_object(), *v = NULL;
	const char *name = "";
	char *text;

	if (json_object_object_get_ex(c, "function", &fn) &&
	    json_object_object_get_ex(fn, "name", &v) && json_object_is_type(v, json_type_string))
		name = json_object_get_string(v);
	json_object_object_get_ex(c, "id", &v);
	text = toolmsg_interrupted(name);
	json_object_object_add(m, "role", json_object_new_string("tool"));
	json_object_object_add(m, "content", json_object_new_string(text));
	json_object_object_add(m, "tool_call_id", json_object_get(v));
	free(text);
	return m;
}

/* Whether tool call ids a and b are the same once written: a line kept in its own bytes may hold
 * invalid UTF-8 that the tool message answering it was written with as U+FFFD (as Go does). */
static bool same_id(struct json_object *a, struct json_object *b)
{
	size_t an = (size_t)json_object_get_string_len(a), bn = (size_t)json_object_get_string_len(b);
	const char *as = json_object_get_string(a), *bs = json_object_get_string(b);
	char *ar, *br;
	bool same;

	if (an == bn && memcmp(as, bs, an) == 0)
		return true;
	if (utf8_valid(as, an) && utf8_valid(bs, bn))
		return false;
	ar = xmalloc(utf8_repair_room(as, an) + 1);
	br = xmalloc(utf8_repair_room(bs, bn) + 1);
	an = utf8_repair(as, an, ar);
	bn = utf8_repair(bs, bn, br);
	same = an == bn && memcmp(ar, br, an) == 0;
	free(ar);
	free(br);
	return same;
}

/* Follows tool calls through the messages: an assistant's calls are open until a tool message
 * answers each (by tool_call_id); any other message (m NULL: the end of the file) first needs
 * a tool message for each call still open, added to `before`. open (borrowed, may be NULL):
 * the calls open before m. Returns those open after it: a new array, or NULL. */
static struct json_object *calls_after(struct json_object *open, struct json_object *m,
				       struct json_object *before)
{
	struct json_object *v, *calls, *next = NULL;
	size_t n = open ? json_object_array_length(open) : 0, i;
	const char *role = m ? json_object_get_string(json_object_object_get(m, "role")) : "";

	if (strcmp(role, "tool") == 0) {
		struct json_object *id = json_object_object_get_ex(m, "tool_call_id", &v) &&
					 json_object_is_type(v, json_type_string) ? v : NULL;
		bool answered = false;
		if (n == 0)
			return NULL;
		next = json_object_new_array();
		for (i = 0; i < n; i++) {
			struct json_object *c = json_object_array_get_idx(open, i);
			if (!answered && id && same_id(json_object_object_get(c, "id"), id))
				answered = true;
			else
				json_object_array_add(next, json_object_get(c));
		}
		return next;
	}
	for (i = 0; i < n; i++)
		json_object_array_add(before, interrupted(json_object_array_get_idx(open, i)));
	if (strcmp(role, "assistant") != 0 || !json_object_object_get_ex(m, "tool_calls", &calls) ||
	    !json_object_is_type(calls, json_type_array))
		return NULL;
	next = json_object_new_array();
	for (i = 0; i < json_object_array_length(calls); i++) {
		struct json_object *c = json_object_array_get_idx(calls, i), *id;
		/* a call with no id cannot be answered (nor would a model take it) */
		if (json_object_object_get_ex(c, "id", &id) && json_object_is_type(id, json_type_string) &&
		    json_object_get_string_len(id) > 0)
			json_object_array_add(next, json_object_get(c));
	}
	return next;
}

/* Before good message m (NULL: the end), the tool messages calls still open need: added to
 * the history and to what the file should hold. */
static void track_calls(struct history *h, struct repair *r, struct json_object *m)
{
	struct json_object *before = json_object_new_array();
	struct json_object *next = calls_after(h->open, m, before);

	for (size_t i = 0; i < json_object_array_length(before); i++) {
		struct json_object *t = json_object_get(json_object_array_get_idx(before, i));
		gojson_append(&r->keep, t);
		buf_append(&r->keep, "\n", 1);
		json_object_array_add(h->msgs, t);
		r->nadded++;
		if (m)
			r->rewrite = true;	/* added before a good line */
	}
	json_object_put(before);
	json_object_put(h->open);
	h->open = next;
}

/* Reads the file into h->msgs, gathering in r what must be set right. */
static int parse_file(struct history *h, struct repair *r, struct sbx_err *e)
{
	struct buf b = {0};
	size_t pos = 0, lineno = 0;

	if (read_all(h->path, &b, e) < 0) {
		buf_free(&b);
		return -1;
	}
	while (pos < b.len) {
		char *nl = memchr(b.data + pos, '\n', b.len - pos);
		size_t end = nl ? (size_t)(nl - b.data) : b.len;
		const char *why = NULL;
		struct json_object *m;

		lineno++;
		if (blank(b.data + pos, end - pos)) {
			pos = end + (nl != NULL);
			continue;
		}
		if ((m = parse_line(b.data + pos, end - pos, &why)) == NULL) {
			note_bad(r, lineno, b.data + pos, end - pos, why, nl == NULL);
			pos = end + (nl != NULL);
			continue;
		}
		if (r->nbad > 0)
			r->rewrite = true;	/* a good line after a bad one */
		track_calls(h, r, m);
		json_object_array_add(h->msgs, m);
		buf_append(&r->keep, b.data + pos, end - pos);
		buf_append(&r->keep, "\n", 1);
		pos = end + (nl != NULL);
		if (!r->rewrite) {
			r->keep_file = r->keep.len;
			h->good_len = (off_t)pos;
			h->need_nl = nl == NULL;
		}
	}
	track_calls(h, r, NULL);	/* calls still open at the end: the turn was cut short */
	buf_free(&b);
	return 0;
}

/* Appends the bad lines to PATH.corrupt (fsynced), where a person can look at them. */
static int save_bad(struct history *h, const struct repair *r, struct sbx_err *e)
{
	int fd = open(h->corrupt, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return err_sys(e, errno, "cannot move the bad lines of %s aside to %s", h->path,
			       h->corrupt);
	if (write_all(fd, r->bad.data, r->bad.len) < 0 || fsync(fd) < 0 || close(fd) < 0 ||
	    sync_dir_of(h->corrupt) < 0) {
		err_sys(e, errno, "cannot move the bad lines of %s aside to %s", h->path, h->corrupt);
		close(fd);
		return -1;
	}
	return 0;
}

/* Sets the file right as r says: bad lines moved aside to the .corrupt file, then the file
 * cut after its last good line (bad lines only at the end) or replaced atomically by the good
 * lines (bad ones in the middle), and tool messages added for calls cut short. */
static int apply_repair(struct history *h, struct repair *r, struct sbx_err *e)
{
	struct buf w = {0};
	int fd, rc;

	if (r->nbad == 0 && r->nadded == 0)
		return 0;
	if (r->nbad > 0 && save_bad(h, r, e) < 0)
		return -1;
	if (r->rewrite) {
		if (fs_write_atomic(h->path, r->keep.data ? r->keep.data : "", r->keep.len, 0600) < 0)
			return err_sys(e, errno, "cannot rewrite %s without its bad lines", h->path);
		h->good_len = (off_t)r->keep.len;
		h->need_nl = false;
		return 0;
	}
	if (r->nbad > 0) {	/* all at the end, after the last good line */
		if ((fd = open(h->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) < 0 ||
		    ftruncate(fd, h->good_len) < 0 || fsync(fd) < 0) {
			err_sys(e, errno, "cannot cut the bad lines off %s", h->path);
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
	}
	if (r->keep.len == r->keep_file)
		return 0;
	if (h->need_nl)
		buf_append(&w, "\n", 1);
	buf_append(&w, r->keep.data + r->keep_file, r->keep.len - r->keep_file);
	rc = write_tail(h, w.data, w.len, e);
	buf_free(&w);
	if (rc < 0)
		return err_prefix(e, "completing the interrupted tool calls");
	h->need_nl = false;
	return 0;
}

/* The warning for what apply_repair did. */
static void repair_warning(struct history *h, const struct repair *r)
{
	struct buf w = {0};

	if (r->nbad > 0)
		buf_printf(&w, "moved %zu bad line%s of %s aside to %s (%s%s); the session goes on "
			   "from the good ones", r->nbad, r->nbad == 1 ? "" : "s", h->path, h->corrupt,
			   r->why.data, r->nbad > BAD_NAMED ? "; …" : "");
	if (r->nadded > 0)
		buf_printf(&w, "%s%zu tool call%s in %s had no result (the turn was cut short): each "
			   "now has a tool message saying it was interrupted; none is run again",
			   w.len ? "; " : "", r->nadded, r->nadded == 1 ? "" : "s", h->path);
	h->warning = w.len ? buf_steal(&w) : NULL;
	buf_free(&w);
}

static int load(struct history *h, struct sbx_err *e)
{
	struct repair r = {0};
	int rc = -1;

	if (parse_file(h, &r, e) == 0 && apply_repair(h, &r, e) == 0) {
		repair_warning(h, &r);
		rc = 0;
	}
	buf_free(&r.keep);
	buf_free(&r.bad);
	buf_free(&r.why);
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
	h->corrupt = xasprintf("%s.corrupt", h->path);
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

size_t history_size(const struct history *h)
{
	return (size_t)h->good_len;
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
	struct json_object *add = json_object_new_array(), *open = json_object_get(h->open);
	struct buf b = {0};
	size_t i;
	int rc = -1;
	char *dir;

	/* the directory is (re)created on every access, as upstream does */
	if ((dir = xstrdup(h->path)) && strrchr(dir, '/'))
		*strrchr(dir, '/') = '\0';
	if (paths_mkdirs(dir, 0700, e) < 0)
		goto out;
	/* A call left open (its tool message could not be saved) is answered before the next
	 * message, so no model ever gets it unanswered. */
	for (i = 0; i < n; i++) {
		struct json_object *norm = history_normalize(msgs[i]);
		struct json_object *next = calls_after(open, norm, add);
		json_object_put(open);
		open = next;
		json_object_array_add(add, norm);
	}
	if (h->need_nl)
		buf_append(&b, "\n", 1);
	for (i = 0; i < json_object_array_length(add); i++) {
		gojson_append(&b, json_object_array_get_idx(add, i));
		buf_append(&b, "\n", 1);
	}
	if (write_tail(h, b.data, b.len, e) < 0)
		goto out;
	h->need_nl = false;
	for (i = 0; i < json_object_array_length(add); i++)
		json_object_array_add(h->msgs, json_object_get(json_object_array_get_idx(add, i)));
	json_object_put(h->open);
	h->open = json_object_get(open);
	rc = 0;
out:
	json_object_put(open);
	json_object_put(add);
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
	json_object_put(h->open);
	free(h->path);
	free(h->corrupt);
	free(h->warning);
	free(h);
}
