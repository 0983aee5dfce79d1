/* fuzz_kubeexec.c — what the kubernetes API server (or anything posing as it) sends back on an
 * exec channel: the frame splitter, the status-channel metav1.Status decoder and the error
 * decoder for non-2xx answers. The first byte picks the decoder. */
#include <stdlib.h>
#include <string.h>

#include "kubeapi.h"
#include "kubeexec.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const unsigned char *payload;
	size_t plen;
	char msg[256], *copy;
	struct sbx_err e;
	int code = -7, rc;

	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case 0:
		if (kubeexec_frame_channel(data + 1, size - 1, &payload, &plen) >= 0 &&
		    (payload < data + 1 || payload + plen > data + size))
			abort();
		break;
	case 1:
		msg[0] = '\0';
		rc = kubeexec_decode_status((const char *)data + 1, size - 1, &code, msg, sizeof msg);
		if (rc < -1 || rc > 1 || strnlen(msg, sizeof msg) == sizeof msg)
			abort();
		break;
	default:
		copy = malloc(size);
		memcpy(copy, data + 1, size - 1);
		copy[size - 1] = '\0';
		if (kubeapi_status_error(400 + data[0] % 200, copy, size - 1, "POST",
					 "/api/v1/namespaces/default/pods/x/exec", &e) != -1 ||
		    strnlen(e.msg, sizeof e.msg) == sizeof e.msg)
			abort();
		free(copy);
		break;
	}
	return 0;
}
