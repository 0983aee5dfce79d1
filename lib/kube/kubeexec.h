/* kubeexec.h — one command in a pod over the Kubernetes WebSocket exec protocol
 * (libwebsockets): subprotocol v5.channel.k8s.io preferred, v4.channel.k8s.io accepted.
 * Every message starts with a channel byte: 0 stdin, 1 stdout, 2 stderr, 3 status (a
 * metav1.Status as JSON), 255 close (v5 only: [255, 0] half-closes stdin).
 * Ownership: requests and their strings stay the caller's; nothing is returned allocated. */
#ifndef SBX_KUBEEXEC_H
#define SBX_KUBEEXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "kubeconfig.h"

#define KUBEEXEC_V5 "v5.channel.k8s.io"
#define KUBEEXEC_V4 "v4.channel.k8s.io"
/* Bytes of stdin per WebSocket message: large enough to stream hundreds of MB quickly,
 * small enough that one message never holds much memory. */
#define KUBEEXEC_STDIN_CHUNK (128 * 1024)
/* The status channel carries one small metav1.Status. */
#define KUBEEXEC_STATUS_MAX (64 * 1024)
/* The request path with its query (one command= per argv element): libwebsockets 4.1 formats
 * the request line into 2048 bytes, so longer command lines go on stdin (see kube_wrapexec.c). */
#define KUBEEXEC_QUERY_MAX 1900

enum { KUBEEXEC_CH_STDIN = 0, KUBEEXEC_CH_STDOUT = 1, KUBEEXEC_CH_STDERR = 2,
       KUBEEXEC_CH_STATUS = 3, KUBEEXEC_CH_RESIZE = 4, KUBEEXEC_CH_CLOSE = 255 };

struct kubeexec_req {
	struct kubeconfig *kc;		/* server, TLS and token */
	const char *namespace, *pod, *container;
	char *const *argv;		/* sent as is (wrapping is the caller's choice) */
	int in_fd;			/* -1: no stdin */
	const char *in_prefix;		/* sent on stdin before in_fd's bytes (or alone), or NULL */
	size_t in_prefix_len;
	int out_fd, err_fd;
	int64_t deadline_ns;		/* monotonic; 0: none */
	int cancel_fd;			/* -1 or readable to stop */
	const char *protocols;		/* offered, comma-separated; NULL: v5 then v4 */
	bool require_v5;		/* stdin must be half-closed: on v4 send nothing, report */
};

struct kubeexec_result {
	int exit_code;			/* from the status channel */
	bool got_status;		/* the status channel said how it ended */
	bool failure;			/* Status Failure without an exit code (message in msg) */
	char msg[512];			/* the Status message on failure */
	bool timed_out, canceled;	/* the connection was dropped for these reasons */
	char protocol[32];		/* negotiated subprotocol */
	bool established;		/* the command was started (the upgrade succeeded) */
	bool wrong_protocol;		/* require_v5 but the server chose v4: nothing was sent */
	uint64_t stdin_sent;		/* bytes of stdin delivered */
};

/* Runs the request until the status arrives, the connection ends, the deadline passes or
 * cancel_fd fires. Returns 0 when the exec took place (see result), -1 with e otherwise. */
int kubeexec_run(const struct kubeexec_req *req, struct kubeexec_result *res, struct sbx_err *e);

/* The request path with its query ("/api/v1/namespaces/…/exec?…"); NULL if too long.
 * Caller frees. */
char *kubeexec_path(const char *ns, const char *pod, const char *container, char *const *argv,
		    bool in);
/* Decodes a status-channel document: 0 with *exit_code set (Success 0, NonZeroExitCode n),
 * 1 for a Failure without exit code (its message in msg), -1 if not a Status. */
int kubeexec_decode_status(const char *json, size_t len, int *exit_code, char *msg, size_t msg_len);
/* Splits one received message into channel and payload. Returns -1 on an empty message. */
int kubeexec_frame_channel(const unsigned char *msg, size_t len, const unsigned char **payload,
			   size_t *payload_len);
/* Encodes [channel][payload] into out (which has room for len + 1). Returns the size. */
size_t kubeexec_frame_encode(int channel, const void *payload, size_t len, unsigned char *out);

#endif
