/*
 * kube_e2e_common.c - helpers for the kube-sim driven C tests.
 */
#define _POSIX_C_SOURCE 200809L
#include "kube_e2e.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/json.h"

tau_kube_client *e2e_client(double qps, int max_retries)
{
	const char *path = getenv("KUBE_SIM_KUBECONFIG");
	tau_kube_config_options opts = {.kubeconfig = path};
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;

	if (path == NULL) {
		fprintf(stderr, "KUBE_SIM_KUBECONFIG is not set\n");
		exit(2);
	}
	if (tau_kube_config_load(&cfg, &opts) < 0) {
		fprintf(stderr, "loading %s: %s\n", path, tau_error_last()->msg);
		exit(2);
	}
	cfg->qps = qps;
	cfg->burst = 10;
	cfg->max_retries = max_retries;
	cfg->retry_initial_ms = 50;
	cfg->retry_cap_ms = 1000;
	if (tau_kube_client_new(&c, cfg) < 0) {
		fprintf(stderr, "client: %s\n", tau_error_last()->msg);
		exit(2);
	}
	tau_kube_config_free(cfg);
	return c;
}

int e2e_faults(tau_kube_client *c, const char *method, const char *json)
{
	tau_kube_request req = {.method = method,
	                        .path = "/sim/faults",
	                        .body = json,
	                        .body_len = json ? strlen(json) : 0,
	                        .max_retries = 0};

	int rc = tau_kube_client_request(NULL, c, &req);

	if (rc < 0)
		fprintf(stderr, "e2e: %s /sim/faults: %s\n", method, tau_error_last()->msg);
	return rc;
}

cJSON *e2e_json(const char *fmt, ...)
{
	char buf[8192];
	cJSON *doc = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf) || tau_json_parse(&doc, buf, (size_t)n, 0) < 0) {
		fprintf(stderr, "bad test JSON: %s\n", buf);
		abort();
	}
	return doc;
}

int e2e_namespace(tau_kube_client *c, const char *name)
{
	cJSON *ns = e2e_json("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
	                     "\"metadata\":{\"name\":\"%s\"}}",
	                     name);
	int rc = tau_kube_create(NULL, c, &tau_kube_res_namespaces, NULL, ns);

	cJSON_Delete(ns);
	if (rc == -TAU_ECONFLICT &&
	    tau_kube_api_error_is(tau_kube_api_error_last(), "AlreadyExists"))
		rc = 0;
	return rc;
}

bool e2e_wait(bool (*cond)(void *arg), void *arg, uint64_t timeout_ms)
{
	uint64_t end = tau_clock_mono_ms() + timeout_ms;

	for (;;) {
		if (cond(arg))
			return true;
		if (tau_clock_mono_ms() >= end)
			return cond(arg);
		tau_clock_sleep_ms(20);
	}
}
