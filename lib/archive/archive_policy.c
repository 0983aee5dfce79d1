/* archive_policy.c — the entry policy of every archive sbx reads or writes: nothing escapes
 * the tree, nothing extraction would fail on halfway, links out left out or kept. */
#include "archive_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xalloc.h"

/* Longest entry name we accept (PATH_MAX, what the kernel accepts for a path). */
#define ENTRY_PATH_MAX PATH_MAX
#define SBX_STR2(x) #x
#define SBX_STR(x) SBX_STR2(x)

const char *archive_policy_quote(const char *s, char *out, size_t cap)
{
	size_t o = 0;

	for (; s && *s && o + 8 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (s && *s)
		o += (size_t)snprintf(out + o, cap - o, "...");
	out[o] = '\0';
	return out;
}

/* ---- the restore policy ---- */


/* The kinds of entries the policy remembers, to refuse what extraction would trip over. */
enum {
	ENT_NONE = 0,
	ENT_DIR = 'd',
	ENT_FILE = 'f',		/* a regular file, or a hard link to one */
	ENT_LINK = 'l',		/* a symlink that is created */
	ENT_LINK_OUT = 'o',	/* a symlink (or a hard link to one) left out: it leads outside */
};

/* Normalizes an entry path into out ("a/b", "" for the root); why says what is wrong. */
/* The next path component of *p other than "" and "."; its length (0 at the end). */
static size_t next_part(const char **p, const char **part)
{
	for (;;) {
		const char *q = strchr(*p, '/');
		size_t n = q ? (size_t)(q - *p) : strlen(*p);
		*part = *p;
		*p += n + (q != NULL);
		if (n == 0 && q == NULL)
			return 0;
		if (n > 1 || (n == 1 && **part != '.'))
			return n;
	}
}

static int normalize(const char *in, char *out, size_t cap, const char **why)
{
	size_t o = 0, n;
	const char *p = in, *part;

	if (in == NULL || *in == '\0')
		return *why = "empty name", -1;
	if (*in == '/')
		return *why = "absolute path", -1;
	if (strlen(in) >= ENTRY_PATH_MAX)
		return *why = "name too long", -1;
	while ((n = next_part(&p, &part)) > 0) {
		if (n == 2 && part[0] == '.' && part[1] == '.')
			return *why = "\"..\" path component", -1;
		if (n > NAME_MAX)
			return *why = "a name component longer than " SBX_STR(NAME_MAX) " bytes", -1;
		if (o + n + 2 > cap)
			return *why = "name too long", -1;
		if (o)
			out[o++] = '/';
		memcpy(out + o, part, n);
		o += n;
	}
	out[o] = '\0';
	return 0;
}

/* The first proper prefix of path that the archive made a symlink (or, with files, a file):
 * nothing may be reached through one. *kind gets what it is. */
static const char *through(const struct archive_policy *pol, char *path, bool files, int *kind)
{
	char *s;

	for (s = path; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		*kind = strset_get(&pol->seen, path);
		if (*kind == ENT_LINK || *kind == ENT_LINK_OUT || (files && *kind == ENT_FILE))
			return path;
		*s = '/';
	}
	return NULL;
}

/* A symlink target that stays in the tree is relative, with only leading ".." (no more of
 * them than the link's depth). One that leaves it (absolute, or climbing out: a python venv's
 * bin/python -> /usr/bin/python3) sets *outside. Any other ".." after a name (a name may
 * itself be a link, making "name/.." land anywhere) and an empty target are problems. */
static const char *link_target_problem(const char *target, int parent_depth, bool *outside)
{
	const char *p = target, *part;
	bool named = false;
	size_t n;

	*outside = false;
	if (*target == '\0')
		return "empty symlink target";
	if (parent_depth < 0) {
		/* the link is the top of a copy: whatever it names is outside what was copied */
		*outside = true;
		return "symlink at the top of the copy leads outside it";
	}
	if (*target == '/') {
		*outside = true;
		return "symlink target is an absolute path outside the home directory";
	}
	while ((n = next_part(&p, &part)) > 0) {
		if (n == 2 && part[0] == '.' && part[1] == '.') {
			if (named)
				return "symlink target has \"..\" after a name";
			if (--parent_depth < 0) {
				*outside = true;
				return "symlink target climbs out of the home directory";
			}
		} else {
			named = true;
		}
	}
	return NULL;
}

/* The number of components of a normalized path ("" has none). */
static int components(const char *norm)
{
	int n = *norm != '\0';

	for (; *norm; norm++)
		n += *norm == '/';
	return n;
}

void archive_policy_init(struct archive_policy *pol, uint64_t max_bytes,
			 enum archive_links outside, const struct archive_tree *tree,
			 struct archive_stats *st)
{
	char norm[ENTRY_PATH_MAX];
	const char *why;

	memset(pol, 0, sizeof *pol);
	pol->max_bytes = max_bytes;
	pol->outside = outside;
	pol->st = st;
	if (tree && tree->top && normalize(tree->top, norm, sizeof norm, &why) == 0)
		pol->top = xstrdup(norm);
	else
		pol->top = xstrdup("");
	pol->top_len = strlen(pol->top);
	pol->top_depth = components(pol->top);
	pol->as = tree && tree->as && pol->top_len ? xstrdup(tree->as) : NULL;
}

void archive_policy_free(struct archive_policy *pol)
{
	strset_clear(&pol->seen);
	free(pol->top);
	free(pol->as);
}

/* Whether norm is the tree's top or below it. */
static bool in_tree(const struct archive_policy *pol, const char *norm)
{
	return pol->top_len == 0 || (strncmp(norm, pol->top, pol->top_len) == 0 &&
				     (norm[pol->top_len] == '\0' || norm[pol->top_len] == '/'));
}

/* name with the tree's top replaced by as, newly allocated, or NULL to keep it. */
static char *renamed(const struct archive_policy *pol, const char *name)
{
	char norm[ENTRY_PATH_MAX];
	const char *why;

	if (pol->as == NULL || name == NULL || normalize(name, norm, sizeof norm, &why) < 0 ||
	    !in_tree(pol, norm))
		return NULL;
	return xasprintf("%s%s", pol->as, norm + pol->top_len);
}

void archive_policy_rename(const struct archive_policy *pol, struct archive_entry *ent)
{
	char *p = renamed(pol, archive_entry_pathname(ent));
	char *h = renamed(pol, archive_entry_hardlink(ent));

	if (p)
		archive_entry_copy_pathname(ent, p);
	if (h)
		archive_entry_copy_hardlink(ent, h);
	free(p);
	free(h);
}

/* Records a symlink left out under its name in the archive (see archive_stats). */
static void note_link_out(struct archive_stats *st, const char *name)
{
	st->link_names = xrealloc(st->link_names, (st->nlink_names + 1) * sizeof *st->link_names);
	st->link_names[st->nlink_names++] = xstrdup(name);
}

void archive_stats_take_names(struct archive_stats *st, char ***names, size_t *n)
{
	*names = st->link_names;
	*n = st->nlink_names;
	st->link_names = NULL;
	st->nlink_names = 0;
}

void archive_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

void archive_stats_free(struct archive_stats *st)
{
	archive_names_free(st->link_names, st->nlink_names);
	st->link_names = NULL;
	st->nlink_names = 0;
}

/* Whether an entry name is the archive's top ("./", ".", "./."). */
bool archive_policy_is_root(const char *name)
{
	for (const char *p = name; *p; p++) {
		if (*p == '.' && (p[1] == '/' || p[1] == '\0') && (p == name || p[-1] == '/'))
			continue;
		if (*p != '/')
			return false;
	}
	return true;
}

static int refuse(struct sbx_err *e, const char *name, const char *why)
{
	char q[ARCHIVE_QUOTE_MAX + 16];

	return err_set(e, SBX_EPERM, "refusing entry \"%s\": %s", archive_policy_quote(name, q, sizeof q), why);
}

/* What a hard link to hl makes (the kind of its target: a file, or a symlink kept or left
 * out with it), or -1 refused: extraction could not make it (a target that is not an earlier
 * entry, a directory) or it would leave the tree. */
static int hardlink_kind(const struct archive_policy *pol, const char *name, const char *hl,
			 struct sbx_err *e)
{
	char tnorm[ENTRY_PATH_MAX], q[ARCHIVE_QUOTE_MAX + 16], why[ARCHIVE_QUOTE_MAX + 64];
	const char *bad;
	int kind;

	if (normalize(hl, tnorm, sizeof tnorm, &bad) < 0 || tnorm[0] == '\0' ||
	    through(pol, tnorm, false, &kind))
		return refuse(e, name, "hard link target is outside the home directory");
	kind = strset_get(&pol->seen, tnorm);
	if (kind == ENT_DIR)
		return refuse(e, name, "hard link to a directory");
	if (kind == ENT_NONE) {
		snprintf(why, sizeof why, "hard link target \"./%s\" is not an earlier file of the archive",
			 archive_policy_quote(tnorm, q, sizeof q));
		return refuse(e, name, why);
	}
	return kind;
}

/* What an entry other than a hard link makes, or -1 refused. */
static int entry_kind(const struct archive_policy *pol, struct archive_entry *ent, const char *name,
		      const char *norm, struct sbx_err *e)
{
	const char *why, *target = archive_entry_symlink(ent);
	bool outside;
	int depth = 0;

	switch (archive_entry_filetype(ent)) {
	case AE_IFREG:
		return ENT_FILE;
	case AE_IFDIR:
		return ENT_DIR;
	case AE_IFLNK:
		/* how deep its directory is in the tree: how many ".." it may climb */
		depth = components(norm) - 1 - pol->top_depth;
		if ((why = link_target_problem(target ? target : "", depth, &outside)) == NULL)
			return ENT_LINK;
		if (!outside)
			return refuse(e, name, why);
		return pol->outside == ARCHIVE_LINKS_SKIP ? ENT_LINK_OUT : ENT_LINK;
	case AE_IFCHR:
	case AE_IFBLK:
		return refuse(e, name, "device node");
	case AE_IFIFO:
		return refuse(e, name, "fifo");
	case AE_IFSOCK:
		return refuse(e, name, "socket");
	default:
		return refuse(e, name, "unsupported file type");
	}
}

/* Checks one entry against the policy and records what later entries must be checked with.
 * 0: take it; 1: leave it out (a symlink out of the tree, or a hard link to one, with
 * ARCHIVE_LINKS_SKIP); -1: refused. Besides escaping the tree, it refuses what extraction
 * would fail on halfway (a backup sbx cannot restore must be refused before anything is
 * written): hard links to nothing earlier or to a directory, a non-directory over a
 * directory, entries under a file, over-long name components. */
int archive_policy_check(struct archive_policy *pol, struct archive_entry *ent,
			 struct sbx_err *e)
{
	const char *name = archive_entry_pathname(ent), *why = NULL, *hl = archive_entry_hardlink(ent);
	const char *bad;
	char norm[ENTRY_PATH_MAX], q[ARCHIVE_QUOTE_MAX + 16], why2[ARCHIVE_QUOTE_MAX + 64];
	int before, kind;

	if (++pol->entries > ARCHIVE_MAX_ENTRIES)
		return err_set(e, SBX_EPERM, "archive has more than %d entries", ARCHIVE_MAX_ENTRIES);
	if (normalize(name, norm, sizeof norm, &why) < 0)
		return refuse(e, name, why);
	if (!in_tree(pol, norm)) {
		snprintf(why2, sizeof why2, "it is not in what was copied (\"./%s\")",
			 archive_policy_quote(pol->top, q, sizeof q));
		return refuse(e, name, why2);
	}
	if ((bad = through(pol, norm, true, &kind)) != NULL) {
		snprintf(why2, sizeof why2, "it goes through the %s \"./%s\" of the archive",
			 kind == ENT_FILE ? "file" : "symlink", archive_policy_quote(bad, q, sizeof q));
		return refuse(e, name, why2);
	}
	before = strset_get(&pol->seen, norm);
	if (before == ENT_LINK || before == ENT_LINK_OUT)
		return refuse(e, name, "it replaces a symlink of the archive");
	if (pol->top_len == 0 && norm[0] == '\0' && (archive_entry_filetype(ent) != AE_IFDIR || hl))
		return refuse(e, name, "the top of the archive must be a directory");
	kind = hl ? hardlink_kind(pol, name, hl, e) : entry_kind(pol, ent, name, norm, e);
	if (kind < 0)
		return -1;
	if (before == ENT_DIR && kind != ENT_DIR)
		return refuse(e, name, "it replaces a directory of the archive");
	if (norm[0] != '\0')
		strset_put(&pol->seen, norm, kind);	/* nothing is reached through a link either way */
	if (archive_entry_size_is_set(ent) && archive_entry_size(ent) > 0) {
		pol->total += (uint64_t)archive_entry_size(ent);
		if (pol->total > pol->max_bytes)
			return err_set(e, SBX_EPERM,
				       "refusing archive: it expands beyond the limit of %llu bytes "
				       "(at entry \"%s\")", (unsigned long long)pol->max_bytes,
				       archive_policy_quote(name, norm, ARCHIVE_QUOTE_MAX + 16));
	}
	if (kind != ENT_LINK_OUT)
		return 0;
	if (pol->st)
		note_link_out(pol->st, name);
	return 1;
}

