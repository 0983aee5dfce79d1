/* copy.h — files between the host and a sandbox (sbx-cp), as tar streams through the
 * backend's exec, so both backends work alike and need only sh and tar inside. Into the
 * sandbox: the host file or directory packed with libarchive, extracted by tar inside. Out of
 * it: tar inside, and on the host restore's rules (archive.h): the stream is checked whole
 * into a spool file first, then extracted, so a refused or broken archive leaves the
 * destination untouched; symlinks leading out of what is copied are left out and named.
 * Paths inside the sandbox are relative to its home; a symlink named as the source is
 * followed; a source ending in "/." copies a directory's contents. The placement follows
 * docker cp: into an existing directory under the source's name, else as the destination.
 * Ownership: a result's strings are freed with copy_result_free. */
#ifndef SBX_COPY_H
#define SBX_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

struct json_object;

struct copy_opts {
	uint64_t max_bytes;	/* cap on what comes out to the host (ARCHIVE_MAX_EXPANDED) */
	int cancel_fd;		/* -1, or readable when the copy must stop */
};

struct copy_result {
	char *to;		/* where the copy is (a path in the sandbox or on the host) */
	uint64_t files, bytes;	/* entries and file contents copied (not for a stream in) */
	char **links_out;	/* symlinks left out on the way to the host (their archive names) */
	size_t nlinks_out;
};

/* Host src → sandbox:dst. */
int copy_to_sandbox(struct sbx_backend *b, const char *sandbox, const char *src, const char *dst,
		    const struct copy_opts *o, struct copy_result *r, struct sbx_err *e);
/* sandbox:src → host dst. */
int copy_from_sandbox(struct sbx_backend *b, const char *sandbox, const char *src,
		      const char *dst, const struct copy_opts *o, struct copy_result *r,
		      struct sbx_err *e);
/* A tar stream read from in_fd → extracted by tar into the directory sandbox:dst. */
int copy_stream_in(struct sbx_backend *b, const char *sandbox, int in_fd, const char *dst,
		   const struct copy_opts *o, struct copy_result *r, struct sbx_err *e);
/* sandbox:src as a plain tar stream to out_fd, through restore's rules (links out left out,
 * a refused entry an error). */
int copy_stream_out(struct sbx_backend *b, const char *sandbox, const char *src, int out_fd,
		    const struct copy_opts *o, struct copy_result *r, struct sbx_err *e);
void copy_result_free(struct copy_result *r);

/* An operand "NAME:PATH" of sbx-cp: the sandbox name (newly allocated) and *path into arg;
 * NULL for a host path (no ':' after a valid sandbox name: ./NAME:PATH is one). */
char *copy_operand(const char *arg, const char **path);
/* The document sbx-cp prints for r: {"from","to","files","bytes","skipped_links"}, "to" as
 * NAME:PATH unless out (a copy to the host). New reference. */
struct json_object *copy_result_json(const char *from, const char *sandbox,
				     const struct copy_result *r, bool out);

#endif
