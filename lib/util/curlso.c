/* curlso.c — libcurl through dlopen (see curlso.h). */
#include "curlso.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* The soname of libcurl 7.x and 8.x. */
#define CURLSO_SONAME "libcurl.so.4"

struct curlso_api curlso;
static bool loaded;
/* Threads of one server (sbx-mcp's sessions, each with its own backend) may make their first
 * API request at once; curl_global_init must run once, before any other call. */
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

static int load(struct sbx_err *e);

int curlso_load(struct sbx_err *e)
{
	int rc;

	pthread_mutex_lock(&load_mu);
	rc = load(e);
	pthread_mutex_unlock(&load_mu);
	return rc;
}

static int load(struct sbx_err *e)
{
	static const char *const names[] = {
		"curl_easy_init", "curl_easy_setopt", "curl_easy_perform", "curl_easy_getinfo",
		"curl_easy_reset", "curl_easy_cleanup", "curl_easy_strerror", "curl_slist_append",
		"curl_slist_free_all",
	};
	void **slots[] = {
		(void **)&curlso.easy_init, (void **)&curlso.easy_setopt,
		(void **)&curlso.easy_perform, (void **)&curlso.easy_getinfo,
		(void **)&curlso.easy_reset, (void **)&curlso.easy_cleanup,
		(void **)&curlso.easy_strerror, (void **)&curlso.slist_append,
		(void **)&curlso.slist_free_all,
	};
	CURLcode (*global_init)(long);
	void *lib;
	size_t i;

	if (loaded)
		return 0;
	if ((lib = dlopen(CURLSO_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL)
		return err_set(e, SBX_EUNAVAIL, "cannot load libcurl: %s", dlerror());
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if ((*slots[i] = dlsym(lib, names[i])) == NULL)
			return err_set(e, SBX_EUNAVAIL, "libcurl lacks %s", names[i]);
	*(void **)&global_init = dlsym(lib, "curl_global_init");
	if (global_init == NULL)
		return err_set(e, SBX_EUNAVAIL, "libcurl lacks curl_global_init");
	if (global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return err_set(e, SBX_EIO, "libcurl failed to initialise");
	loaded = true;
	return 0;
}
