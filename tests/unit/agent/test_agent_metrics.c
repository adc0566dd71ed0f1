/*
 * Unit tests of the agent's /metrics text (agent/metrics.c): every family, its TYPE, HELP,
 * labels and values exactly as Prometheus scrapes them, and a buffer too small.
 */
#include "metrics.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

/* The whole exposition, byte for byte: a renamed family, a changed HELP or TYPE, a lost
 * label or a reordered sample fails here before a dashboard or an alert notices. */
static const char EXPECTED[] =
        "# HELP tau_agent_reports_sent_total Reports sent to the aggregator, by kind.\n"
        "# TYPE tau_agent_reports_sent_total counter\n"
        "tau_agent_reports_sent_total{kind=\"inventory\"} 3\n"
        "tau_agent_reports_sent_total{kind=\"heartbeat\"} 10\n"
        "tau_agent_reports_sent_total{kind=\"stopping\"} 1\n"
        "# HELP tau_agent_connects_total Report streams that came up.\n"
        "# TYPE tau_agent_connects_total counter\n"
        "tau_agent_connects_total 4\n"
        "# HELP tau_agent_reconnects_total Report streams that came up again after the "
        "first.\n"
        "# TYPE tau_agent_reconnects_total counter\n"
        "tau_agent_reconnects_total 2\n"
        "# HELP tau_agent_last_report_timestamp_seconds When the last report was sent (0: "
        "never).\n"
        "# TYPE tau_agent_last_report_timestamp_seconds gauge\n"
        "tau_agent_last_report_timestamp_seconds 1767225600.023\n"
        "# HELP tau_agent_problems Problems listed in the current inventory.\n"
        "# TYPE tau_agent_problems gauge\n"
        "tau_agent_problems 5\n"
        "# HELP tau_agent_connected 1 while a report stream to the aggregator is up.\n"
        "# TYPE tau_agent_connected gauge\n"
        "tau_agent_connected 1\n"
        "# HELP tau_agent_node_synced 1 once the Node informer has listed.\n"
        "# TYPE tau_agent_node_synced gauge\n"
        "tau_agent_node_synced 1\n"
        "# HELP tau_agent_inventory_builds_total Inventories rebuilt after a change signal.\n"
        "# TYPE tau_agent_inventory_builds_total counter\n"
        "tau_agent_inventory_builds_total 7\n"
        "# HELP tau_agent_host_probes_total Host probes run.\n"
        "# TYPE tau_agent_host_probes_total counter\n"
        "tau_agent_host_probes_total 6\n"
        "# HELP tau_agent_node_condition_patches_total Patches of this node's "
        "status.conditions (--node-conditions), by result.\n"
        "# TYPE tau_agent_node_condition_patches_total counter\n"
        "tau_agent_node_condition_patches_total{result=\"ok\"} 8\n"
        "tau_agent_node_condition_patches_total{result=\"error\"} 9\n";

static void test_every_family_exactly(void **state)
{
	tau_agent_metrics m;
	char buf[4096];

	(void)state;
	memset(&m, 0, sizeof(m));
	atomic_store(&m.inventories_sent, 3);
	atomic_store(&m.heartbeats_sent, 10);
	atomic_store(&m.stopping_sent, 1);
	atomic_store(&m.connects, 4);
	atomic_store(&m.reconnects, 2);
	atomic_store(&m.last_report_ms, 1767225600023);
	atomic_store(&m.problems, 5);
	atomic_store(&m.connected, true);
	atomic_store(&m.node_synced, true);
	atomic_store(&m.inventory_builds, 7);
	atomic_store(&m.host_probes, 6);
	atomic_store(&m.condition_patches_ok, 8);
	atomic_store(&m.condition_patches_failed, 9);
	assert_int_equal(tau_agent_metrics_format(buf, sizeof(buf), &m), (int)strlen(EXPECTED));
	assert_string_equal(buf, EXPECTED);
}

/* The samples a scraper looks for, each with its value. */
static void test_metrics_text(void **state)
{
	tau_agent_metrics m;
	char buf[4096];
	char tiny[16];

	(void)state;
	memset(&m, 0, sizeof(m));
	atomic_store(&m.inventories_sent, 3);
	atomic_store(&m.heartbeats_sent, 10);
	atomic_store(&m.reconnects, 2);
	atomic_store(&m.last_report_ms, 1767225600123);
	atomic_store(&m.problems, 4);
	atomic_store(&m.connected, true);
	assert_true(tau_agent_metrics_format(buf, sizeof(buf), &m) > 0);
	assert_non_null(strstr(buf, "tau_agent_reports_sent_total{kind=\"inventory\"} 3\n"));
	assert_non_null(strstr(buf, "tau_agent_reports_sent_total{kind=\"heartbeat\"} 10\n"));
	assert_non_null(strstr(buf, "tau_agent_reconnects_total 2\n"));
	assert_non_null(strstr(buf, "tau_agent_last_report_timestamp_seconds 1767225600.123\n"));
	assert_non_null(strstr(buf, "tau_agent_problems 4\n"));
	assert_non_null(strstr(buf, "tau_agent_connected 1\n"));
	assert_non_null(strstr(buf, "tau_agent_node_synced 0\n"));
	assert_non_null(strstr(buf, "# TYPE tau_agent_connected gauge\n"));
	atomic_store(&m.condition_patches_ok, 2);
	atomic_store(&m.condition_patches_failed, 1);
	assert_true(tau_agent_metrics_format(buf, sizeof(buf), &m) > 0);
	assert_non_null(strstr(buf, "tau_agent_node_condition_patches_total{result=\"ok\"} 2\n"));
	assert_non_null(
	        strstr(buf, "tau_agent_node_condition_patches_total{result=\"error\"} 1\n"));
	assert_int_equal(tau_agent_metrics_format(tiny, sizeof(tiny), &m), -TAU_ETOOBIG);
}

/* Nothing happened yet: every sample is there with 0 (a never-sent report is 0, not absent). */
static void test_zero(void **state)
{
	tau_agent_metrics m;
	char buf[4096];

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_true(tau_agent_metrics_format(buf, sizeof(buf), &m) > 0);
	assert_non_null(strstr(buf, "\ntau_agent_last_report_timestamp_seconds 0.000\n"));
	assert_non_null(strstr(buf, "\ntau_agent_connected 0\n"));
	assert_non_null(strstr(buf, "\ntau_agent_node_synced 0\n"));
	assert_non_null(strstr(buf, "tau_agent_reports_sent_total{kind=\"stopping\"} 0\n"));
	assert_non_null(
	        strstr(buf, "tau_agent_node_condition_patches_total{result=\"error\"} 0\n"));
}

/* A buffer one byte short of the text is refused, never cut. */
static void test_too_small(void **state)
{
	tau_agent_metrics m;
	char buf[4096];
	int n;

	(void)state;
	memset(&m, 0, sizeof(m));
	n = tau_agent_metrics_format(buf, sizeof(buf), &m);
	assert_true(n > 0);
	assert_int_equal(tau_agent_metrics_format(buf, (size_t)n, &m), -TAU_ETOOBIG);
	assert_int_equal(tau_agent_metrics_format(buf, (size_t)n + 1, &m), n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_every_family_exactly),
	        cmocka_unit_test(test_metrics_text),
	        cmocka_unit_test(test_zero),
	        cmocka_unit_test(test_too_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
