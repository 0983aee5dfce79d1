/* portfwd.h — sbx-port's forwards from the host into a local sandbox's own loopback. Its parts:
 *   portfwd.c       finding the sandbox's network namespace from outside (a process of the
 *                   sandbox, checked against pid reuse), the helper that makes sockets there,
 *                   the host-side listener, and the records of detached forwards;
 *   portrelay.c     the relay: one poll loop, many connections, half-close, bounded buffers.
 * Nothing runs inside the sandbox and it gets no new way out: the helper enters its network
 * namespace from the host, makes a socket there and hands it back; the host side connects it to
 * 127.0.0.1:PORT of the sandbox's loopback and relays.
 * Ownership: struct portfwd is the caller's (portfwd_close frees what it holds); JSON objects
 * returned are new references. */
#ifndef SBX_PORTFWD_H
#define SBX_PORTFWD_H

#include <stddef.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "err.h"

/* Longest -listen text ("[v6]:port") and -unix path (sun_path). */
#define PORTFWD_ADDR_MAX 64
#define PORTFWD_UNIX_MAX 108

struct portfwd {
	char *name;		/* the sandbox */
	char *dir;		/* its state directory on the host (records go under dir/ports) */
	int port;		/* the port on the sandbox's loopback */
	int sup_fd;		/* pidfd of its supervisor: readable once the sandbox is gone; -1
				 * where pidfds are missing (valgrind, Linux < 5.3): then
				 * portfwd_serve looks at portfwd_alive every second */
	int userns, netns;	/* the sandbox's namespaces, for the helper */
	pid_t helper;		/* the helper in the sandbox's network namespace, or -1 */
	int helper_sock;	/* asks it for a socket; -1 before portfwd_start */
	int record;		/* the locked record of a detached forward, or -1 */
	char record_path[4096];
	char listen[PORTFWD_ADDR_MAX];	/* what the listener is bound to ("127.0.0.1:4242") */
	char unix_path[PORTFWD_UNIX_MAX];	/* or its Unix socket ("" when TCP) */
};

/* Finds live local sandbox name in namespace ns and opens its network namespace from
 * outside. SBX_ENOTFOUND when there is no such sandbox (or it is going away). */
int portfwd_open(struct portfwd *pf, const char *ns, const char *name, int port,
		 struct sbx_err *e);
/* A forward to a sandbox of another backend (its own port op serves it): only the name, port
 * and where its records go are filled. */
int portfwd_open_remote(struct portfwd *pf, const char *backend, const char *ns,
			const char *name, int port, struct sbx_err *e);
/* Where the records of backend's sandbox name in ns go (new string), or NULL. */
char *portfwd_remote_dir(const char *backend, const char *ns, const char *name,
			 struct sbx_err *e);
/* 1 while the sandbox lives (its supervisor holds its lock). */
int portfwd_alive(const struct portfwd *pf);
/* Starts the helper (a child of this process, ending with it). 0 or -1. */
int portfwd_start(struct portfwd *pf, struct sbx_err *e);
/* A new TCP socket of the sandbox's network namespace (non-blocking, close-on-exec), or -1. */
int portfwd_socket(struct portfwd *pf, struct sbx_err *e);
/* Listens on TCP addr ("HOST:PORT", a numeric address; port 0 picks a free one) or, when
 * unix_path is set, on a new Unix socket there of mode 0600 (an existing file is refused).
 * Fills pf->listen or pf->unix_path; returns the socket, or -1 (SBX_EINVAL for a bad addr). */
int portfwd_listen(struct portfwd *pf, const char *addr, const char *unix_path,
		   struct sbx_err *e);
/* Checks "HOST:PORT" without binding (usage errors come first). 0 or -1 with SBX_EINVAL. */
int portfwd_addr_check(const char *addr, struct sbx_err *e);
/* The forward's document: name, port, and url + listen, or unix (new reference). */
struct json_object *portfwd_doc(const struct portfwd *pf);
/* Removes the Unix socket (if any) and the record, stops the helper, closes everything. */
void portfwd_close(struct portfwd *pf);

/* How portfwd_serve ended. */
enum portfwd_end {
	PORTFWD_CANCELED = 1,	/* cancel_fd became readable */
	PORTFWD_GONE,		/* the sandbox is gone */
};
/* Something worth telling the person (a connection refused inside), never fatal. */
typedef void (*portfwd_note_fn)(void *arg, const char *msg);
/* Accepts on lfd and relays each connection to the sandbox's port until cancel_fd is readable
 * or the sandbox is gone. Returns an enum portfwd_end, or -1 with e. */
int portfwd_serve(struct portfwd *pf, int lfd, int cancel_fd, portfwd_note_fn note, void *arg,
		  struct sbx_err *e);

/* ---- detached forwards (sbx-port -d): records in the sandbox's directory/ports ---- */

/* Writes this process's record (doc plus its pid) and holds its lock while it lives. */
int portfwd_record(struct portfwd *pf, struct sbx_err *e);
/* Calls fn with each live detached forward of sandbox name in ns (its record, borrowed);
 * removes stale records. SBX_ENOTFOUND when the sandbox does not exist. */
int portfwd_list(const char *ns, const char *name,
		 int (*fn)(struct json_object *rec, void *arg), void *arg, struct sbx_err *e);
/* The live detached forwards of sandbox name in ns, as sbx-list shows them: an array of
 * {port, url, listen} or {port, unix} (new reference; empty when none or no such sandbox). */
struct json_object *portfwd_ports(const char *ns, const char *name);
/* The same for a sandbox of another backend (its records on this host, portfwd_remote_dir). */
struct json_object *portfwd_remote_ports(const char *backend, const char *ns, const char *name);
/* portfwd_list and portfwd_stop (which returns how many) over the records under dir. */
void portfwd_list_in(const char *dir, int (*fn)(struct json_object *rec, void *arg), void *arg);
int portfwd_stop_in(const char *dir, int port);
/* Stops every detached forward of port (SIGTERM) and waits for each to end; *n how many.
 * SBX_ENOTFOUND when the sandbox does not exist. */
int portfwd_stop(const char *ns, const char *name, int port, int *n, struct sbx_err *e);

#endif
