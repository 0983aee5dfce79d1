/* test_archive.c — round trips of a home tree, GNU tar archives, hostile archives refused. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "xalloc.h"
#include "tap.h"

static char base[256];

static void put(const char *path, const char *data, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	size_t n = strlen(data);

	if (fd < 0 || write(fd, data, n) != (ssize_t)n)
		abort();
	close(fd);
	chmod(path, mode);
}

static int file_tap(const void *p, size_t n, void *arg, struct sbx_err *e)
{
	(void)e;
	return fwrite(p, 1, n, arg) == n ? 0 : -1;
}

/* Packs dir into path with codec; returns pack's status. */
static int pack(const char *dir, const char *path, enum archive_codec c, struct archive_stats *st,
		struct sbx_err *e)
{
	FILE *f = fopen(path, "wb");
	int rc = archive_pack_dir(dir, c, file_tap, f, st, e);

	fclose(f);
	return rc;
}

/* The names of the links the last check or unpack left out, joined by spaces. */
static char links_out[1024];

static void keep_links(struct archive_stats *st)
{
	links_out[0] = '\0';
	for (size_t i = 0; i < st->nlink_names; i++)
		snprintf(links_out + strlen(links_out), sizeof links_out - strlen(links_out), "%s%s",
			 i ? " " : "", st->link_names[i]);
	archive_stats_free(st);
}

static int check(const char *path, uint64_t max, struct archive_stats *st, struct sbx_err *e)
{
	int fd = open(path, O_RDONLY);
	int rc = archive_check_fd(fd, -1, max, ARCHIVE_LINKS_SKIP, NULL, NULL, st, e);

	keep_links(st);
	close(fd);
	return rc;
}

static int unpack(const char *path, const char *dir, uint64_t max, struct archive_stats *st,
		  struct sbx_err *e)
{
	int fd = open(path, O_RDONLY), rc = archive_unpack_fd(fd, dir, max, st, e);

	keep_links(st);
	close(fd);
	return rc;
}

/* Compares two trees with `diff -r` plus a listing of types, modes, mtimes and link targets. */
static int same_tree(const char *a, const char *b)
{
	char *cmd = xasprintf(
		"cd '%s' && find . -mindepth 1 ! -type l -printf '%%p %%y %%m %%s %%Ts\\n' | sort > ../la && "
		"find . -type l -printf '%%p %%l\\n' | sort >> ../la && "
		"cd '%s' && find . -mindepth 1 ! -type l -printf '%%p %%y %%m %%s %%Ts\\n' | sort > ../lb && "
		"find . -type l -printf '%%p %%l\\n' | sort >> ../lb && "
		"diff ../la ../lb && diff -r --no-dereference '%s' '%s' >/dev/null", a, b, a, b);
	int rc = system(cmd);

	free(cmd);
	return rc == 0;
}

static void make_home(const char *h)
{
	char *p;
	struct timespec ts[2] = {{1700000000, 0}, {1700000000, 0}};

	mkdir(h, 0755);
	p = xasprintf("%s/a", h), mkdir(p, 0750), free(p);
	p = xasprintf("%s/a/b", h), mkdir(p, 0700), free(p);
	p = xasprintf("%s/a/b/c", h), mkdir(p, 0755), free(p);
	p = xasprintf("%s/a/b/c/deep.txt", h), put(p, "deep\n", 0640), free(p);
	p = xasprintf("%s/empty", h), put(p, "", 0600), free(p);
	p = xasprintf("%s/run.sh", h), put(p, "#!/bin/sh\necho hi\n", 0755), free(p);
	p = xasprintf("%s/with space", h), put(p, "s", 0644), free(p);
	p = xasprintf("%s/new\nline", h), put(p, "n", 0644), free(p);
	p = xasprintf("%s/\xc3\xa9t\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97", h), put(p, "u", 0644), free(p);
	p = xasprintf("%s/link", h), symlink("a/b", p), free(p);
	p = xasprintf("%s/a/b/up", h), symlink("../../run.sh", p), free(p);
	p = xasprintf("%s/dangling", h), symlink("nowhere", p), free(p);
	p = xasprintf("%s/hard1", h), put(p, "same inode\n", 0644), free(p);
	{
		char *q = xasprintf("%s/a/hard2", h);
		p = xasprintf("%s/hard1", h);
		link(p, q);
		free(p), free(q);
	}
	p = xasprintf("%s/run.sh", h), utimensat(AT_FDCWD, p, ts, 0), free(p);
	p = xasprintf("%s/a/b/c", h), utimensat(AT_FDCWD, p, ts, 0), free(p);
}

static void round_trip(enum archive_codec c, const char *tag)
{
	char *src = xasprintf("%s/src", base), *dst = xasprintf("%s/dst-%s", base, tag);
	char *ar = xasprintf("%s/home%s", base, archive_codec_ext(c)), *p;
	struct archive_stats ps, cs, us;
	struct sbx_err e = {0};
	struct stat s1, s2;

	ok(pack(src, ar, c, &ps, &e) == 0, "%s: pack (%s)", tag, e.msg);
	ok(ps.files == 14 && ps.skipped == 1, "%s: 14 entries packed, the fifo left out (%llu, %llu)",
	   tag, (unsigned long long)ps.files, (unsigned long long)ps.skipped);
	ok(check(ar, ARCHIVE_MAX_EXPANDED, &cs, &e) == 0, "%s: check (%s)", tag, e.msg);
	ok(cs.files == ps.files && cs.bytes == ps.bytes, "%s: check counts what pack wrote", tag);
	mkdir(dst, 0755);
	ok(unpack(ar, dst, ARCHIVE_MAX_EXPANDED, &us, &e) == 0, "%s: unpack (%s)", tag, e.msg);
	p = xasprintf("%s/fifo", src), unlink(p), free(p);
	ok(same_tree(src, dst), "%s: same names, types, modes, sizes, mtimes, contents, links", tag);
	p = xasprintf("%s/fifo", src), mkfifo(p, 0600), free(p);
	{
		char *h1 = xasprintf("%s/hard1", dst), *h2 = xasprintf("%s/a/hard2", dst);
		ok(stat(h1, &s1) == 0 && stat(h2, &s2) == 0 && s1.st_ino == s2.st_ino,
		   "%s: hard links stay one inode", tag);
		free(h1), free(h2);
	}
	free(src), free(dst), free(ar);
}

static void gnu_tar(void)
{
	char *cmd = xasprintf("tar -zcf '%s/gnu.tar.gz' -C '%s/src' --exclude=./fifo .", base, base);
	char *ar = xasprintf("%s/gnu.tar.gz", base), *dst = xasprintf("%s/dst-gnu", base), *p;
	struct archive_stats st;
	struct sbx_err e = {0};

	ok(system(cmd) == 0, "GNU tar made an archive");
	ok(check(ar, ARCHIVE_MAX_EXPANDED, &st, &e) == 0, "a GNU tar archive passes (%s)", e.msg);
	mkdir(dst, 0755);
	ok(unpack(ar, dst, ARCHIVE_MAX_EXPANDED, &st, &e) == 0, "a GNU tar archive unpacks (%s)",
	   e.msg);
	p = xasprintf("%s/src/fifo", base), unlink(p);
	{
		char *src = xasprintf("%s/src", base);
		ok(same_tree(src, dst), "and matches the tree");
		free(src);
	}
	mkfifo(p, 0600), free(p);
	free(cmd), free(ar), free(dst);
}

/* A hostile entry: name, type, link target (symlink or hard link), size. */
struct hent {
	const char *name;
	mode_t type;
	const char *target;
	int64_t size;
	bool hard;
};

static void write_archive(const char *path, const struct hent *ents, size_t n)
{
	struct archive *a = archive_write_new();
	struct archive_entry *ae = archive_entry_new();
	static char zeros[65536];

	archive_write_set_format_pax_restricted(a);
	archive_write_add_filter_gzip(a);
	archive_write_open_filename(a, path);
	for (size_t i = 0; i < n; i++) {
		archive_entry_clear(ae);
		archive_entry_set_pathname(ae, ents[i].name);
		archive_entry_set_filetype(ae, ents[i].type);
		archive_entry_set_perm(ae, 0644);
		archive_entry_set_mtime(ae, 1700000000, 0);
		if (ents[i].hard)
			archive_entry_set_hardlink(ae, ents[i].target);
		else if (ents[i].target)
			archive_entry_set_symlink(ae, ents[i].target);
		if (ents[i].type == AE_IFREG)
			archive_entry_set_size(ae, ents[i].size);
		archive_write_header(a, ae);
		for (int64_t left = ents[i].type == AE_IFREG && !ents[i].hard ? ents[i].size : 0;
		     left > 0; left -= (int64_t)sizeof zeros)
			archive_write_data(a, zeros, left > (int64_t)sizeof zeros ? sizeof zeros : (size_t)left);
	}
	archive_write_close(a);
	archive_write_free(a);
	archive_entry_free(ae);
}

/* The standard output of a shell command, newly allocated. */
static char *run_capture(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	struct buf b = {0};
	char chunk[4096];
	size_t k;

	while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_append(&b, chunk, k);
	pclose(f);
	buf_append(&b, "", 0);
	return buf_steal(&b);
}

static void hostile(void)
{
	char out[512];
	static const struct {
		const char *what, *expect;
		struct hent e[3];
	} cases[] = {
		{"path traversal", "\"..\" path component",
		 {{"./ok", AE_IFREG, NULL, 1, 0}, {"./a/../../outside/evil", AE_IFREG, NULL, 1, 0}}},
		{"absolute path", "absolute path", {{"./ok", AE_IFREG, NULL, 1, 0}, {"@OUT@/evil", AE_IFREG, NULL, 1, 0}}},
		{"symlink then write", "goes through the symlink",
		 {{"./d", AE_IFDIR, NULL, 0, 0}, {"./ln", AE_IFLNK, "d", 0, 0}, {"./ln/evil", AE_IFREG, NULL, 1, 0}}},
		{"name/.. in a symlink", "after a name", {{"./ln", AE_IFLNK, "d/../..", 0, 0}}},
		{"write through a link out", "goes through the symlink",
		 {{"./ln", AE_IFLNK, "/etc", 0, 0}, {"./ln/evil", AE_IFREG, NULL, 1, 0}}},
		{"hard link out", "hard link target", {{"./hl", AE_IFREG, "../outside/secret", 0, 1}}},
		{"absolute hard link", "hard link target", {{"./hl", AE_IFREG, "@OUT@/secret", 0, 1}}},
		{"device node", "device node", {{"./dev", AE_IFCHR, NULL, 0, 0}}},
		{"fifo", "fifo", {{"./p", AE_IFIFO, NULL, 0, 0}}},
		{"gzip bomb", "expands beyond the limit", {{"./z1", AE_IFREG, NULL, 700000, 0}, {"./z2", AE_IFREG, NULL, 700000, 0}}},
		{"root not a directory", "must be a directory", {{".", AE_IFREG, NULL, 0, 0}}},
	};
	char *home = xasprintf("%s/victim", base), *outside = xasprintf("%s/outside", base);

	mkdir(home, 0755);
	mkdir(outside, 0755);
	snprintf(out, sizeof out, "%s/secret", outside);
	put(out, "secret", 0600);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct hent ents[3];
		size_t n = 0;
		char *ar = xasprintf("%s/hostile%zu.tar.gz", base, i), *listing;
		struct archive_stats st;
		struct sbx_err e = {0};
		char *before, *after;

		char *owned[6] = {0};
		size_t no = 0;

		for (; n < 3 && cases[i].e[n].name; n++) {
			ents[n] = cases[i].e[n];
			if (strncmp(ents[n].name, "@OUT@", 5) == 0)
				ents[n].name = owned[no++] = xasprintf("%s%s", outside, ents[n].name + 5);
			if (ents[n].target && strncmp(ents[n].target, "@OUT@", 5) == 0)
				ents[n].target = owned[no++] = xasprintf("%s%s", outside, ents[n].target + 5);
		}
		write_archive(ar, ents, n);
		listing = xasprintf("find '%s' -maxdepth 1 -printf '%%p\\n' | sort && "
				    "find '%s' -printf '%%p %%s %%m %%T@\\n' | sort", base, outside);
		before = run_capture(listing);
		ok(check(ar, 1000000, &st, &e) < 0 && strstr(e.msg, cases[i].expect) &&
		   e.code == SBX_EPERM, "%s: check refuses it (%s)", cases[i].what, e.msg);
		e.msg[0] = '\0';
		ok(unpack(ar, home, 1000000, &st, &e) < 0 && strstr(e.msg, cases[i].expect),
		   "%s: unpack refuses it too (%s)", cases[i].what, e.msg);
		after = run_capture(listing);
		/* unpack alone may have written entries before the bad one, inside the home only. */
		ok(strcmp(before, after) == 0 && strstr(before, "secret"),
		   "%s: nothing outside the home changed", cases[i].what);
		{
			char *cmd = xasprintf("rm -rf '%s' && mkdir '%s'", home, home);
			if (system(cmd) != 0)
				abort();
			free(cmd);
		}
		free(before), free(after), free(listing), free(ar);
		while (no > 0)
			free(owned[--no]);
	}
	free(home), free(outside);
}

static void corrupt(void)
{
	char *ar = xasprintf("%s/home.tar.gz", base), *bad = xasprintf("%s/cut.tar.gz", base);
	char *cmd = xasprintf("head -c 300 '%s' > '%s'", ar, bad);
	struct archive_stats st;
	struct sbx_err e = {0};

	ok(system(cmd) == 0, "cut an archive short");
	ok(check(bad, ARCHIVE_MAX_EXPANDED, &st, &e) < 0 && strstr(e.msg, "corrupt archive"),
	   "a truncated archive is corrupt (%s)", e.msg);
	free(cmd);
	cmd = xasprintf("printf 'not an archive' > '%s'", bad);
	ok(system(cmd) == 0 && check(bad, ARCHIVE_MAX_EXPANDED, &st, &e) < 0,
	   "garbage is refused (%s)", e.msg);
	free(cmd), free(ar), free(bad);
}

/* Links out of the home (a venv's bin/python -> /usr/bin/python3): a snapshot keeps them,
 * a restore leaves them out and names them, and everything else is restored. */
static void links_leaving(void)
{
	char *h = xasprintf("%s/h3", base), *p, *ar = xasprintf("%s/h3.tar.gz", base);
	char *dst = xasprintf("%s/h3-restored", base), target[64];
	struct archive_stats st;
	struct sbx_err e = {0};
	struct stat sb;
	ssize_t n;

	mkdir(h, 0755);
	p = xasprintf("%s/bin", h), mkdir(p, 0755), free(p);
	p = xasprintf("%s/bin/python", h), symlink("/usr/bin/python3", p), free(p);
	p = xasprintf("%s/bin/up", h), symlink("../../outside", p), free(p);
	p = xasprintf("%s/bin/py", h), symlink("python", p), free(p);
	p = xasprintf("%s/f", h), put(p, "data", 0644), free(p);
	ok(pack(h, ar, ARCHIVE_CODEC_GZIP, &st, &e) == 0, "a home with symlinks out of it is packed (%s)", e.msg);
	ok(check(ar, ARCHIVE_MAX_EXPANDED, &st, &e) == 0 && st.files == 3,
	   "check accepts it: bin, bin/py and f kept (%s)", e.msg);
	ok(!strcmp(links_out, "./bin/python ./bin/up") || !strcmp(links_out, "./bin/up ./bin/python"),
	   "check names the two links out (%s)", links_out);
	mkdir(dst, 0755);
	ok(unpack(ar, dst, ARCHIVE_MAX_EXPANDED, &st, &e) == 0, "unpack accepts it (%s)", e.msg);
	ok(!strcmp(links_out, "./bin/python ./bin/up") || !strcmp(links_out, "./bin/up ./bin/python"),
	   "unpack names the two links it left out (%s)", links_out);
	p = xasprintf("%s/bin/python", dst);
	ok(lstat(p, &sb) < 0 && errno == ENOENT, "the absolute link is not created");
	free(p);
	p = xasprintf("%s/bin/up", dst);
	ok(lstat(p, &sb) < 0 && errno == ENOENT, "the climbing link is not created");
	free(p);
	p = xasprintf("%s/bin/py", dst);
	n = readlink(p, target, sizeof target - 1);
	ok(n == 6 && memcmp(target, "python", 6) == 0, "a link inside the tree is restored");
	free(p);
	p = xasprintf("%s/f", dst);
	ok(stat(p, &sb) == 0 && sb.st_size == 4, "files beside them are restored");
	free(p), free(h), free(ar), free(dst);
}

static void no_follow(void)
{
	char *h = xasprintf("%s/h2", base), *p, *ar = xasprintf("%s/h2.tar.gz", base);
	struct archive_stats st;
	struct sbx_err e = {0};

	mkdir(h, 0755);
	p = xasprintf("%s/notadir", base), put(p, "x", 0644);
	ok(pack(p, ar, ARCHIVE_CODEC_GZIP, &st, &e) < 0 && strstr(e.msg, "not a directory"),
	   "packing a file is refused (%s)", e.msg);
	free(p);
	p = xasprintf("%s/ln", h), symlink("..", p);
	ok(pack(p, ar, ARCHIVE_CODEC_GZIP, &st, &e) < 0, "a symlink as the top is not followed");
	free(p), free(h), free(ar);
}

int main(void)
{
	char *p;
	enum archive_codec c;

	snprintf(base, sizeof base, "%s/test_archive.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(base) == NULL)
		return 1;
	p = xasprintf("%s/src", base);
	make_home(p);
	free(p);
	p = xasprintf("%s/src/fifo", base), mkfifo(p, 0600), free(p);
	is_str(archive_codec_ext(ARCHIVE_CODEC_ZSTD), ".tar.zst", "zstd extension");
	ok(archive_codec_parse("zstd", &c) == 0 && c == ARCHIVE_CODEC_ZSTD &&
	   archive_codec_parse("lz4", &c) < 0, "codec names");
	round_trip(ARCHIVE_CODEC_GZIP, "gzip");
	round_trip(ARCHIVE_CODEC_ZSTD, "zstd");
	gnu_tar();
	hostile();
	corrupt();
	no_follow();
	links_leaving();
	p = xasprintf("rm -rf '%s'", base);
	if (system(p) != 0)
		ok(0, "cleanup");
	free(p);
	return done_testing();
}
