/*
 * test_kube_metrics.c - a Kubernetes client's request metrics (lib/kube_metrics.c): counts by
 * verb and HTTP code ("<error>" without an answer), a fixed table per verb whose overflow is
 * counted as "other", latency histograms per verb with watches counted but not timed, and the
 * text written for several clients.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../../lib/kube_internal.h"

static void contains(const char *text, const char *needle)
{
	if (strstr(text, needle) == NULL)
		fail_msg("metrics lack \"%s\":\n%s", needle, text);
}

static void test_verbs_codes_and_latency(void **state)
{
	tau_kube_request_metrics m, other;
	tau_kube_request_metrics *ms[2] = {&m, &other};
	const char *names[2] = {"main", "review"};
	tau_buf b = TAU_BUF_INIT(0);

	(void)state;
	tau_kube_request_metrics_init(&m);
	tau_kube_request_metrics_init(&other);
	assert_int_equal(tau_kube_verb_of("PUT"), TAU_KUBE_VERB_PUT);
	assert_int_equal(tau_kube_verb_of("DELETE"), TAU_KUBE_VERB_DELETE);
	tau_kube_request_metrics_record(&m, TAU_KUBE_VERB_GET, 200, 2000, true);
	tau_kube_request_metrics_record(&m, TAU_KUBE_VERB_GET, 200, 3000, true);
	tau_kube_request_metrics_record(&m, TAU_KUBE_VERB_GET, 404, 1000, true);
	tau_kube_request_metrics_record(&m, TAU_KUBE_VERB_PUT, 0, 5000000, true); /* no answer */
	tau_kube_request_metrics_record(&m, TAU_KUBE_VERB_WATCH, 200, 90000000, false);
	/* Nine distinct codes on POST: the ninth is "other". */
	for (long code = 400; code < 409; code++)
		tau_kube_request_metrics_record(&other, TAU_KUBE_VERB_POST, code, 100, true);
	tau_kube_request_metrics_record(&other, TAU_KUBE_VERB_POST, 408, 100, true);
	tau_kube_request_metrics_write(&b, "tau_x", ms, names, 2);
	assert_int_equal(tau_buf_error(&b), 0);
	contains(b.p, "# TYPE tau_x_kube_requests_total counter\n");
	contains(b.p, "tau_x_kube_requests_total{client=\"main\",verb=\"GET\",code=\"200\"} 2\n");
	contains(b.p, "tau_x_kube_requests_total{client=\"main\",verb=\"GET\",code=\"404\"} 1\n");
	contains(b.p,
	         "tau_x_kube_requests_total{client=\"main\",verb=\"PUT\",code=\"<error>\"} 1\n");
	contains(b.p, "tau_x_kube_requests_total{client=\"main\",verb=\"WATCH\",code=\"200\"} 1\n");
	contains(b.p,
	         "tau_x_kube_requests_total{client=\"review\",verb=\"POST\",code=\"407\"} 1\n");
	contains(b.p,
	         "tau_x_kube_requests_total{client=\"review\",verb=\"POST\",code=\"other\"} 2\n");
	if (strstr(b.p, "code=\"408\"") != NULL)
		fail_msg("a ninth code got its own series:\n%s", b.p);
	contains(b.p, "# TYPE tau_x_kube_request_duration_seconds histogram\n");
	contains(b.p, "tau_x_kube_request_duration_seconds_bucket{client=\"main\",verb=\"GET\","
	              "le=\"0.001\"} 1\n");
	contains(b.p, "tau_x_kube_request_duration_seconds_bucket{client=\"main\",verb=\"GET\","
	              "le=\"0.005\"} 3\n");
	contains(b.p,
	         "tau_x_kube_request_duration_seconds_count{client=\"main\",verb=\"GET\"} 3\n");
	contains(b.p, "tau_x_kube_request_duration_seconds_bucket{client=\"main\",verb=\"PUT\","
	              "le=\"2.5\"} 0\n");
	contains(b.p, "tau_x_kube_request_duration_seconds_sum{client=\"main\",verb=\"PUT\"} "
	              "5.000000\n");
	/* Watches are counted, never timed: no WATCH latency series. */
	if (strstr(b.p, "duration_seconds_bucket{client=\"main\",verb=\"WATCH\"") != NULL)
		fail_msg("a watch was timed:\n%s", b.p);
	tau_buf_free(&b);
	tau_kube_request_metrics_destroy(&m);
	tau_kube_request_metrics_destroy(&other);
}

/* Through the public call: each client's retries and limiter wait beside its requests. */
static void test_clients_written(void **state)
{
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;
	tau_buf b = TAU_BUF_INIT(0);

	(void)state;
	assert_int_equal(tau_kube_config_new(&cfg), 0);
	cfg->server = strdup("http://127.0.0.1:1");
	assert_int_equal(tau_kube_client_new(&c, cfg), 0);
	tau_kube_request_metrics_record(tau_kube_client_request_metrics(c), TAU_KUBE_VERB_LIST, 200,
	                                40000, true);
	tau_kube_client_metrics_write(&b, "tau_y", &c, (const char *const[]){"main"}, 1);
	assert_int_equal(tau_buf_error(&b), 0);
	contains(b.p, "tau_y_kube_requests_total{client=\"main\",verb=\"LIST\",code=\"200\"} 1\n");
	contains(b.p, "tau_y_kube_request_duration_seconds_bucket{client=\"main\",verb=\"LIST\","
	              "le=\"0.05\"} 1\n");
	contains(b.p, "# TYPE tau_y_kube_request_retries_total counter\n"
	              "tau_y_kube_request_retries_total{client=\"main\"} 0\n");
	contains(b.p, "# TYPE tau_y_kube_throttle_wait_seconds_total counter\n"
	              "tau_y_kube_throttle_wait_seconds_total{client=\"main\"} 0.000\n");
	tau_buf_free(&b);
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_verbs_codes_and_latency),
	        cmocka_unit_test(test_clients_written),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
