/* kubeapi.c — Kubernetes REST over libcurl (opened on the first request, lib/util/curlso.h): one reused handle, bearer or client-cert auth,
 * JSON in and out, newline-delimited watch streams, metav1.Status errors decoded. */
#include "kubeapi.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "curlso.h"
#include "timeutil.h"
#include "xalloc.h"

struct kubeapi {
	struct kubeconfig kc;
	CURL *curl;
	int64_t deadline_ns;	/* the operation's end (time_mono_ns), 0: none */
};

struct sink {
	struct buf body;
	bool overflow;
	/* watch mode */
	kubeapi_watch_fn fn;
	void *arg;
	bool stopped;
	bool bad_event;
	long http;
	CURL *curl;
};

struct kubeapi *kubeapi_new(struct kubeconfig *kc)
{
	struct kubeapi *api = xcalloc(1, sizeof *api);

	api->kc = *kc;
	memset(kc, 0, sizeof *kc);
	return api;
}

struct kubeapi *kubeapi_open(struct sbx_err *e)
{
	struct kubeconfig kc;

	if (kubeconfig_load(&kc, e) < 0)
		return NULL;
	return kubeapi_new(&kc);
}

void kubeapi_close(struct kubeapi *api)
{
	if (api == NULL)
		return;
	if (api->curl)
		curlso.easy_cleanup(api->curl);
	kubeconfig_free(&api->kc);
	free(api);
}

void kubeapi_set_deadline(struct kubeapi *api, int64_t deadline_ns)
{
	api->deadline_ns = deadline_ns;
}

struct kubeconfig *kubeapi_config(struct kubeapi *api)
{
	return &api->kc;
}

char *kubeapi_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct buf b = {0};

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			buf_append(&b, s, 1);
		} else {
			char t[3] = {'%', hex[c >> 4], hex[c & 15]};
			buf_append(&b, t, 3);
		}
	}
	if (b.data == NULL)
		buf_append(&b, "", 0);
	return buf_steal(&b);
}

void kubeapi_describe(const char *method, const char *path, char *verb, size_t verb_len,
		      char *resource, size_t res_len, char *ns, size_t ns_len)
{
	char *p = xstrdup(path), *q = strchr(p, '?'), *seg[16], *save = NULL, *t;
	const char *group = "", *res = "", *sub = NULL, *v;
	bool named = false, watch = false;
	size_t n = 0, i = 0;

	if (q) {
		watch = strstr(q, "watch=1") || strstr(q, "watch=true");
		*q = '\0';
	}
	for (t = strtok_r(p, "/", &save); t && n < 16; t = strtok_r(NULL, "/", &save))
		seg[n++] = t;
	ns[0] = '\0';
	if (n > 0 && strcmp(seg[0], "api") == 0)
		i = 2;			/* /api/v1/... */
	else if (n > 0 && strcmp(seg[0], "apis") == 0 && n >= 3)
		group = seg[1], i = 3;	/* /apis/group/version/... */
	if (i + 1 < n && strcmp(seg[i], "namespaces") == 0 && i + 2 < n) {
		snprintf(ns, ns_len, "%s", seg[i + 1]);
		i += 2;
	}
	if (i == 0) {
		/* A non-resource URL (discovery): RBAC names the path itself. */
		snprintf(verb, verb_len, "%s", strcmp(method, "GET") == 0 ? "get" : method);
		snprintf(resource, res_len, "%s", path);
		free(p);
		return;
	}
	if (i < n)
		res = seg[i];
	if (i + 1 < n)
		named = true;
	if (i + 2 < n)
		sub = seg[i + 2];
	if (strcmp(method, "GET") == 0)
		v = watch ? "watch" : named ? "get" : "list";
	else if (strcmp(method, "POST") == 0)
		v = "create";
	else if (strcmp(method, "PUT") == 0)
		v = "update";
	else if (strcmp(method, "PATCH") == 0)
		v = "patch";
	else if (strcmp(method, "DELETE") == 0)
		v = named ? "delete" : "deletecollection";
	else
		v = method;
	/* pods/exec: "create" for kubectl's old SPDY POST; a WebSocket exec (sbx's) is a GET, which
	 * API servers authorise as "get" and, from 1.35 (AuthorizePodWebsocketUpgradeCreate-
	 * Permission), as "create" too, so a Role needs both (the 403 message says so). */
	if (sub && strcmp(sub, "exec") == 0)
		v = "create";
	snprintf(verb, verb_len, "%s", v);
	if (sub)
		snprintf(resource, res_len, "%s/%s%s%s", res, sub, *group ? "." : "", group);
	else
		snprintf(resource, res_len, "%s%s%s", res, *group ? "." : "", group);
	free(p);
}

/* The message of a metav1.Status body, or NULL. */
static const char *status_message(struct json_object *st)
{
	struct json_object *m;

	if (st && json_object_object_get_ex(st, "message", &m) && json_object_is_type(m, json_type_string) &&
	    *json_object_get_string(m))
		return json_object_get_string(m);
	return NULL;
}

int kubeapi_status_error(long http, const char *body, size_t len, const char *method,
			 const char *path, struct sbx_err *e)
{
	struct json_object *st = NULL;
	char verb[32], res[128], ns[80], snippet[256];
	const char *msg = NULL;
	int rc;

	if (body && len > 0 && len < KUBEAPI_BODY_MAX) {
		char *b = xstrndup(body, len);
		st = json_tokener_parse(b);
		free(b);
		msg = status_message(st);
	}
	if (msg == NULL) {
		size_t i, n = body ? (len < sizeof snippet - 1 ? len : sizeof snippet - 1) : 0;
		for (i = 0; i < n; i++)
			snippet[i] = (body[i] >= 0x20 && body[i] < 0x7f) ? body[i] : ' ';
		while (n && snippet[n - 1] == ' ')
			n--;
		snippet[n] = '\0';
		msg = n ? snippet : "no details";
	}
	kubeapi_describe(method, path, verb, sizeof verb, res, sizeof res, ns, sizeof ns);
	switch (http) {
	case 401:
		rc = err_set(e, SBX_EPERM,
			     "the API server rejected our credentials (401 Unauthorized): %s", msg);
		break;
	case 403:
		if (strcmp(res, "pods/exec") == 0)	/* see kubeapi_describe */
			rc = err_set(e, SBX_EPERM,
				     "forbidden (403): the credentials may not exec into pods%s%s (RBAC "
				     "needs verbs \"get\" and \"create\" on \"pods/exec\"): %s",
				     *ns ? " in namespace " : "", ns, msg);
		else
			rc = err_set(e, SBX_EPERM,
				     "forbidden (403): the credentials may not %s %s%s%s (RBAC needs verb \"%s\" on \"%s\"): %s",
				     verb, res, *ns ? " in namespace " : "", ns, verb, res, msg);
		break;
	case 404:
		rc = err_set(e, SBX_ENOTFOUND, "%s", msg);
		break;
	case 409:
		rc = err_set(e, SBX_ECONFLICT, "conflict (409): %s", msg);
		break;
	case 400:
	case 422:
		rc = err_set(e, SBX_EINVAL, "the API server rejected the %s (%ld %s): %s",
			     strcmp(verb, "create") == 0 || strcmp(verb, "update") == 0 ? "object" : "request",
			     http, http == 422 ? "Unprocessable Entity" : "Bad Request", msg);
		break;
	case 429:
		rc = err_set(e, SBX_EUNAVAIL, "the API server is throttling us (429 Too Many Requests) and "
			     "refused to %s %s: %s", verb, res, msg);
		break;
	case 500:
	case 502:
	case 503:
	case 504:
		rc = err_set(e, SBX_EUNAVAIL, "the API server failed (%ld) to %s %s: %s", http, verb, res,
			     msg);
		break;
	default:
		rc = err_set(e, SBX_EIO, "the API server answered %ld to %s %s: %s", http, verb, res, msg);
		break;
	}
	json_object_put(st);
	return rc;
}

/* Turns a transport failure into a message about the server, not about curl. */
static int transport_error(struct kubeapi *api, CURLcode cc, const char *detail, struct sbx_err *e)
{
	const char *d = detail && *detail ? detail : curlso.easy_strerror(cc);

	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return err_set(e, SBX_EUNAVAIL, "cannot reach the Kubernetes API server at %s: %s",
			       api->kc.server, d);
	case CURLE_OPERATION_TIMEDOUT:
		return err_set(e, SBX_EUNAVAIL, "the Kubernetes API server at %s did not answer in time: %s",
			       api->kc.server, d);
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_USE_SSL_FAILED:
		return err_set(e, SBX_EUNAVAIL,
			       "TLS failure talking to the Kubernetes API server at %s (check the kubeconfig's certificate-authority and client certificate): %s",
			       api->kc.server, d);
	default:
		return err_set(e, SBX_EIO, "request to the Kubernetes API server at %s failed: %s",
			       api->kc.server, d);
	}
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;

	if (s->fn != NULL) {
		long http = 0;
		char *nl;
		if (s->http == 0) {
			curlso.easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &http);
			s->http = http;
		}
		if (s->http != 200) {
			if (s->body.len + len <= KUBEAPI_EVENT_MAX)
				buf_append(&s->body, p, len);
			return len;
		}
		if (s->body.len + len > KUBEAPI_EVENT_MAX) {
			s->bad_event = true;
			return 0;
		}
		buf_append(&s->body, p, len);
		while ((nl = memchr(s->body.data, '\n', s->body.len)) != NULL) {
			size_t l = (size_t)(nl - s->body.data);
			struct json_object *ev, *t, *o;
			*nl = '\0';
			ev = l ? json_tokener_parse(s->body.data) : NULL;
			memmove(s->body.data, nl + 1, s->body.len - l - 1);
			s->body.len -= l + 1;
			s->body.data[s->body.len] = '\0';
			if (l == 0)
				continue;
			if (ev == NULL || !json_object_object_get_ex(ev, "type", &t) ||
			    !json_object_object_get_ex(ev, "object", &o)) {
				json_object_put(ev);
				s->bad_event = true;
				return 0;
			}
			if (s->fn(json_object_get_string(t), o, s->arg)) {
				json_object_put(ev);
				s->stopped = true;
				return 0;
			}
			json_object_put(ev);
		}
		return len;
	}
	if (s->body.len + len > KUBEAPI_BODY_MAX) {
		s->overflow = true;
		return 0;
	}
	buf_append(&s->body, p, len);
	return len;
}

/* Sets up the reused handle for one request. */
static int prepare(struct kubeapi *api, const char *method, const char *path, const char *ctype,
		   const char *body, int64_t timeout_ms, struct curl_slist **hdrs, struct sink *s, char *errbuf,
		   struct sbx_err *e)
{
	struct kubeconfig *kc = &api->kc;
	char *url, *token = NULL;
	CURL *c;

	if (curlso_load(e) < 0)
		return -1;
	if (api->curl == NULL)
		api->curl = curlso.easy_init();
	else
		curlso.easy_reset(api->curl);
	c = api->curl;
	if (c == NULL)
		return err_set(e, SBX_EIO, "cannot initialise libcurl");
	if (kubeconfig_token(kc, &token, e) < 0)
		return -1;
	url = xasprintf("%s%s", kc->server, path);
	curlso.easy_setopt(c, CURLOPT_URL, url);
	free(url);
	curlso.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curlso.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curlso.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
	curlso.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)KUBEAPI_CONNECT_TIMEOUT_MS);
	if (timeout_ms > 0)
		curlso.easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curlso.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curlso.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curlso.easy_setopt(c, CURLOPT_WRITEDATA, s);
	curlso.easy_setopt(c, CURLOPT_USERAGENT, "sbx/1 (kubernetes backend)");
	if (kc->insecure) {
		curlso.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curlso.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (kc->ca.data) {
		struct curl_blob b = {kc->ca.data, kc->ca.len, CURL_BLOB_NOCOPY};
		curlso.easy_setopt(c, CURLOPT_CAINFO_BLOB, &b);
	}
	if (kc->cert.data) {
		struct curl_blob cb = {kc->cert.data, kc->cert.len, CURL_BLOB_NOCOPY};
		struct curl_blob kb = {kc->key.data, kc->key.len, CURL_BLOB_NOCOPY};
		curlso.easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cb);
		curlso.easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
		curlso.easy_setopt(c, CURLOPT_SSLKEY_BLOB, &kb);
		curlso.easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
	}
	*hdrs = curlso.slist_append(*hdrs, "Accept: application/json");
	if (token) {
		char *h = xasprintf("Authorization: Bearer %s", token);
		*hdrs = curlso.slist_append(*hdrs, h);
		OPENSSL_cleanse(h, strlen(h));
		free(h);
		free(token);
	}
	if (body) {
		char *h = xasprintf("Content-Type: %s", ctype);
		*hdrs = curlso.slist_append(*hdrs, h);
		free(h);
		curlso.easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curlso.easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	curlso.easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
	s->curl = c;
	return 0;
}

/* One try. *retry_after gets the seconds the server asked us to wait before trying again
 * (client-go's checkWait: a 429 or 5xx with Retry-After), or -1 when this answer is final. */
static int do_request(struct kubeapi *api, const char *method, const char *path,
		      const char *ctype, struct json_object *body, struct json_object **out, bool retried,
		      long *retry_after, struct sbx_err *e)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	struct sink s = {0};
	const char *text = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;
	long http = 0;
	CURLcode cc;
	int rc = -1;

	*retry_after = -1;
	if (out)
		*out = NULL;
	if (prepare(api, method, path, ctype, text, KUBEAPI_REQUEST_TIMEOUT_MS, &hdrs, &s, errbuf, e) < 0)
		goto out;
	cc = curlso.easy_perform(api->curl);
	if (s.overflow) {
		err_set(e, SBX_EIO, "%s %s: the response is larger than %d bytes", method, path,
			KUBEAPI_BODY_MAX);
		goto out;
	}
	if (cc != CURLE_OK) {
		transport_error(api, cc, errbuf, e);
		goto out;
	}
	curlso.easy_getinfo(api->curl, CURLINFO_RESPONSE_CODE, &http);
	if (http == 401 && !retried && api->kc.exec_cmd) {
		/* client-go runs the plugin again when the server refuses its token. */
		kubeconfig_forget_token(&api->kc);
		curlso.slist_free_all(hdrs);
		buf_free(&s.body);
		return do_request(api, method, path, ctype, body, out, true, retry_after, e);
	}
	if (http < 200 || http > 299) {
		curl_off_t ra = 0;
		if ((http == 429 || http >= 500) &&
		    curlso.easy_getinfo(api->curl, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
			*retry_after = ra > KUBEAPI_RETRY_WAIT_MAX_MS / 1000 ? KUBEAPI_RETRY_WAIT_MAX_MS / 1000
									      : (long)ra;
		kubeapi_status_error(http, s.body.data, s.body.len, method, path, e);
		goto out;
	}
	if (out && s.body.len > 0) {
		*out = json_tokener_parse(s.body.data);
		if (*out == NULL) {
			err_set(e, SBX_EIO, "%s %s: the API server sent a response that is not JSON", method, path);
			goto out;
		}
	}
	rc = 0;
out:
	curlso.slist_free_all(hdrs);
	buf_free(&s.body);
	return rc;
}

static void wait_ms(int64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A 429 means the server did not process the request, and a 5xx with Retry-After is the server
 * asking to be asked again: client-go tries both again for every verb, and so do we, a bounded
 * number of times, each wait as asked (capped), all waits within KUBEAPI_RETRY_TOTAL_MS and
 * none past the operation's deadline (kubeapi_set_deadline): a wait that would end after it
 * cannot help, so the answer is reported at once. */
static int request_retrying(struct kubeapi *api, const char *method, const char *path,
			    const char *ctype, struct json_object *body, struct json_object **out,
			    struct sbx_err *e)
{
	int64_t waited_ms = 0;
	long retry_after;
	int tries = 0, rc;
	bool late = false;

	for (;;) {
		int64_t ms;
		rc = do_request(api, method, path, ctype, body, out, false, &retry_after, e);
		tries++;
		if (rc == 0 || retry_after < 0)
			return rc;
		ms = (int64_t)retry_after * 1000;
		if (tries >= KUBEAPI_RETRY_TRIES || waited_ms + ms > KUBEAPI_RETRY_TOTAL_MS)
			break;
		if (api->deadline_ns > 0 && time_mono_ns() + ms * 1000000 > api->deadline_ns) {
			late = true;
			break;
		}
		wait_ms(ms);
		waited_ms += ms;
	}
	if (late)
		err_prefix(e, "gave up after %d %s in %lld s (waiting %ld s more, as asked, would pass "
			   "the operation's deadline)", tries, tries == 1 ? "try" : "tries",
			   (long long)(waited_ms / 1000), retry_after);
	else if (tries > 1)
		err_prefix(e, "gave up after %d tries in %lld s", tries, (long long)(waited_ms / 1000));
	return rc;
}

int kubeapi_request(struct kubeapi *api, const char *method, const char *path,
		    struct json_object *body, struct json_object **out, struct sbx_err *e)
{
	return request_retrying(api, method, path, "application/json", body, out, e);
}

int kubeapi_patch(struct kubeapi *api, const char *path, const char *ctype,
		  struct json_object *patch, struct json_object **out, struct sbx_err *e)
{
	return request_retrying(api, "PATCH", path, ctype, patch, out, e);
}

int kubeapi_watch(struct kubeapi *api, const char *path, int64_t timeout_ms, kubeapi_watch_fn fn,
		  void *arg, struct sbx_err *e)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	struct sink s = {0};
	CURLcode cc;
	int rc = -1;

	s.fn = fn;
	s.arg = arg;
	if (prepare(api, "GET", path, NULL, NULL, timeout_ms, &hdrs, &s, errbuf, e) < 0)
		goto out;
	cc = curlso.easy_perform(api->curl);
	if (s.stopped) {
		rc = 1;
		goto out;
	}
	if (s.bad_event) {
		err_set(e, SBX_EIO, "watch %s: the API server sent a malformed event", path);
		goto out;
	}
	if (s.http != 0 && s.http != 200) {
		kubeapi_status_error(s.http, s.body.data, s.body.len, "GET", path, e);
		goto out;
	}
	if (cc == CURLE_OK || cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_PARTIAL_FILE) {
		long http = 0;
		curlso.easy_getinfo(api->curl, CURLINFO_RESPONSE_CODE, &http);
		if (http != 200 && http != 0) {
			kubeapi_status_error(http, s.body.data, s.body.len, "GET", path, e);
			goto out;
		}
		if (http == 0 && cc == CURLE_OPERATION_TIMEDOUT) {
			transport_error(api, cc, errbuf, e);
			goto out;
		}
		rc = 0;
		goto out;
	}
	transport_error(api, cc, errbuf, e);
out:
	curlso.slist_free_all(hdrs);
	buf_free(&s.body);
	return rc;
}
