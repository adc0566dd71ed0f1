/* Unit tests of the daemons' HTTP server: paths, probes, metrics, methods, listen errors. */
#include "tau/error.h"
#include "tau/http.h"

#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static bool healthy = true, ready = false, metrics_fail = false;

static bool healthz(void *ud, char *reason, size_t cap)
{
	(void)ud;
	if (!healthy)
		snprintf(reason, cap, "informer not synced");
	return healthy;
}

static bool readyz(void *ud, char *reason, size_t cap)
{
	(void)ud;
	snprintf(reason, cap, "%s", ready ? "leader" : "waiting for the sync gate");
	return ready;
}

static int metrics(void *ud, char **out)
{
	(void)ud;
	if (metrics_fail)
		return tau_error_set(TAU_EIO, "no");
	*out = strdup("x_total 1\n");
	return *out == NULL ? -TAU_ENOMEM : 0;
}

struct body {
	char text[512];
	size_t len;
};

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
	struct body *b = ud;
	size_t k = size * n;

	if (k > sizeof(b->text) - 1 - b->len)
		k = sizeof(b->text) - 1 - b->len;
	memcpy(b->text + b->len, p, k);
	b->len += k;
	b->text[b->len] = '\0';
	return size * n;
}

/* Request `path` with `method`; returns the status, body into b, content type into type. */
static long request(int port, const char *method, const char *path, struct body *b, char *type,
                    size_t type_cap)
{
	CURL *h = curl_easy_init();
	char url[128];
	long code = 0;
	char *ct = NULL;

	assert_non_null(h);
	memset(b, 0, sizeof(*b));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
	if (type != NULL)
		snprintf(type, type_cap, "%s", ct != NULL ? ct : "");
	curl_easy_cleanup(h);
	return code;
}

static void test_endpoints(void **state)
{
	tau_http_server_opts o = {
	        .listen = "127.0.0.1:0", .healthz = healthz, .readyz = readyz, .metrics = metrics};
	tau_http_server *s = NULL;
	struct body b;
	char type[128];
	int port = 0;

	(void)state;
	assert_int_equal(tau_http_server_start(&s, &o, &port), 0);
	assert_true(port > 0);
	assert_int_equal(request(port, "GET", "/healthz", &b, NULL, 0), 200);
	assert_string_equal(b.text, "ok\n");
	assert_int_equal(request(port, "GET", "/livez", &b, NULL, 0), 200);
	healthy = false;
	assert_int_equal(request(port, "GET", "/healthz", &b, NULL, 0), 503);
	assert_string_equal(b.text, "informer not synced\n");
	healthy = true;
	assert_int_equal(request(port, "GET", "/readyz", &b, NULL, 0), 503);
	assert_string_equal(b.text, "not ready: waiting for the sync gate\n");
	ready = true;
	assert_int_equal(request(port, "GET", "/readyz", &b, NULL, 0), 200);
	assert_string_equal(b.text, "ready: leader\n");
	assert_int_equal(request(port, "GET", "/metrics", &b, type, sizeof(type)), 200);
	assert_string_equal(b.text, "x_total 1\n");
	assert_string_equal(type, "text/plain; version=0.0.4; charset=utf-8");
	metrics_fail = true;
	assert_int_equal(request(port, "GET", "/metrics", &b, NULL, 0), 500);
	assert_string_equal(b.text, "metrics unavailable\n");
	metrics_fail = false;
	assert_int_equal(request(port, "POST", "/healthz", &b, NULL, 0), 405);
	assert_int_equal(request(port, "GET", "/nope", &b, NULL, 0), 404);
	assert_string_equal(b.text, "not found\n");
	tau_http_server_stop(s);
	tau_http_server_stop(NULL);
}

static void test_optional_endpoints(void **state)
{
	tau_http_server_opts o = {.listen = "localhost:0"};
	tau_http_server *s = NULL;
	struct body b;
	int port = 0;

	(void)state;
	/* "localhost" binds 127.0.0.1; no callbacks: healthy, no /readyz, no /metrics. */
	assert_int_equal(tau_http_server_start(&s, &o, &port), 0);
	assert_int_equal(request(port, "GET", "/healthz", &b, NULL, 0), 200);
	assert_int_equal(request(port, "GET", "/readyz", &b, NULL, 0), 404);
	assert_int_equal(request(port, "GET", "/metrics", &b, NULL, 0), 404);
	tau_http_server_stop(s);
}

static void test_listen_errors(void **state)
{
	tau_http_server_opts o = {.listen = "127.0.0.1:0"};
	tau_http_server *s = NULL, *again = NULL;
	char addr[64];
	int port = 0;

	(void)state;
	o.listen = "9102";
	assert_int_equal(tau_http_server_start(&s, &o, NULL), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg,
	                    "listen address 9102: expected HOST:PORT or :PORT");
	o.listen = "no-such-host.invalid:0";
	assert_int_equal(tau_http_server_start(&s, &o, NULL), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "listen address no-such-host.invalid:0: cannot "
	                                           "resolve host no-such-host.invalid");
	o.listen = NULL;
	assert_int_equal(tau_http_server_start(&s, &o, NULL), -TAU_EINVAL);
	assert_null(s);
	/* A port in use. */
	o.listen = "127.0.0.1:0";
	assert_int_equal(tau_http_server_start(&s, &o, &port), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	o.listen = addr;
	assert_int_equal(tau_http_server_start(&again, &o, NULL), -TAU_EIO);
	assert_non_null(strstr(tau_error_last()->msg, "cannot serve HTTP on 127.0.0.1:"));
	assert_null(again);
	tau_http_server_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_endpoints),
	        cmocka_unit_test(test_optional_endpoints),
	        cmocka_unit_test(test_listen_errors),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
