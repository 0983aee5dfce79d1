/* curlso.h — libcurl, opened with dlopen on first use.
 *
 * Linking libcurl costs every start of a program several milliseconds (it pulls in TLS, LDAP,
 * SSH, RTMP, Kerberos and more, with their constructors), which is most of a fake-eliza call
 * and a good part of a kubernetes exec, neither of which needs HTTP. The programs call libcurl
 * through the table `curlso`, filled by curlso_load() the first time a request is made.
 * The table is process-global and never unloaded; curlso_load() is not thread-safe (call it
 * from the thread that makes requests, before starting others that use it). */
#ifndef SBX_CURLSO_H
#define SBX_CURLSO_H

#include <curl/curl.h>

#include "err.h"

struct curlso_api {
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_reset)(CURL *);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
};

extern struct curlso_api curlso;

/* Opens libcurl and fills `curlso` (once; later calls return 0 at once). -1 with *e when the
 * library or one of its functions is missing, or its global initialisation fails. */
int curlso_load(struct sbx_err *e);

#endif
