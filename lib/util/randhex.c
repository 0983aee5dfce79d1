/* randhex.c — random hex (lib/util/randhex.h). */
#include "randhex.h"

#include <stdio.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

int randhex(char *out, size_t nbytes, struct sbx_err *e)
{
	unsigned char rnd[64];
	size_t done = 0;

	/* In pieces of rnd's size, each cleansed once written out. */
	while (done < nbytes) {
		size_t n = nbytes - done < sizeof rnd ? nbytes - done : sizeof rnd;
		if (RAND_bytes(rnd, (int)n) != 1) {
			OPENSSL_cleanse(rnd, sizeof rnd);
			return err_set(e, SBX_EIO, "no random bytes (OpenSSL's generator failed)");
		}
		for (size_t i = 0; i < n; i++)
			snprintf(out + 2 * (done + i), 3, "%02x", rnd[i]);
		done += n;
	}
	out[2 * nbytes] = '\0';
	OPENSSL_cleanse(rnd, sizeof rnd);
	return 0;
}
