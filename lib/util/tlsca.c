/* tlsca.c — a sandbox's own CA and the leaves it issues (see tlsca.h). */
#include "tlsca.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "xalloc.h"

EVP_PKEY *tlsca_key(void)
{
	return EVP_EC_gen("P-256");
}

/* A random positive 128-bit serial, as CAs give (RFC 5280 4.1.2.2). */
static int set_serial(X509 *x)
{
	unsigned char r[16];
	BIGNUM *bn;
	int ok;

	if (RAND_bytes(r, sizeof r) != 1)
		return -1;
	r[0] &= 0x7f;
	bn = BN_bin2bn(r, sizeof r, NULL);
	ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (ext == NULL)
		return -1;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* A certificate for key with subject cn, valid from an hour ago for days. */
static X509 *new_cert(EVP_PKEY *key, const char *cn, int days)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	char cn64[65];	/* X.509's upper bound on a CN: a longer host is named by its SAN only */

	snprintf(cn64, sizeof cn64, "%s", cn);

	if (x == NULL || name == NULL || X509_set_version(x, 2) != 1 || set_serial(x) < 0 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) == NULL ||
	    X509_set_pubkey(x, key) != 1 ||
	    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"sbx",
				       -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn64,
				       -1, -1, 0) != 1 ||
	    X509_set_subject_name(x, name) != 1) {
		X509_free(x);
		x = NULL;
	}
	X509_NAME_free(name);
	return x;
}

static char *pem_of(int (*write)(BIO *, void *), void *obj)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out = NULL;
	long n;

	if (b && write(b, obj) == 1 && (n = BIO_get_mem_data(b, &data)) > 0)
		out = xstrndup(data, (size_t)n);
	BIO_free(b);
	return out;
}

static int write_cert(BIO *b, void *x)
{
	return PEM_write_bio_X509(b, x);
}

static int write_key(BIO *b, void *k)
{
	return PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
}

int tlsca_make(const char *cn, char **cert_pem, char **key_pem, struct sbx_err *e)
{
	EVP_PKEY *key = tlsca_key();
	X509 *x = key ? new_cert(key, cn, TLSCA_CA_DAYS) : NULL;
	int rc = -1;

	*cert_pem = *key_pem = NULL;
	if (x == NULL || X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
	    add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
	    X509_sign(x, key, EVP_sha256()) <= 0 ||
	    (*cert_pem = pem_of(write_cert, x)) == NULL || (*key_pem = pem_of(write_key, key)) == NULL) {
		free(*cert_pem);
		*cert_pem = NULL;
		err_set(e, SBX_EIO, "cannot make the sandbox's certificate authority");
		goto out;
	}
	rc = 0;
out:
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

X509 *tlsca_issue(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *key, const char *host,
		  struct sbx_err *e)
{
	unsigned char bin[16];
	int ip = inet_pton(AF_INET, host, bin) == 1 || inet_pton(AF_INET6, host, bin) == 1;
	char *san = xasprintf("%s:%s", ip ? "IP" : "DNS", host);
	X509 *x = new_cert(key, host, TLSCA_LEAF_DAYS);

	if (x == NULL || X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 ||
	    add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, ca, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, ca, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(x, ca, NID_subject_alt_name, san) < 0 ||
	    add_ext(x, ca, NID_authority_key_identifier, "keyid:always") < 0 ||
	    X509_sign(x, ca_key, EVP_sha256()) <= 0) {
		X509_free(x);
		x = NULL;
		err_set(e, SBX_EIO, "cannot issue a certificate for %s", host);
	}
	free(san);
	return x;
}
