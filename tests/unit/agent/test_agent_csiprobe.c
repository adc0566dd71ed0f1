/*
 * Unit tests of the agent's live CSI check (agent/csiprobe.c) against our fake CSI driver
 * (tests/fakes/csi_driver/fake_csi_driver.c): registration GetInfo naming the driver's
 * socket, Identity GetPluginInfo and Probe (ready, not ready, unset), a missing registration
 * socket, a stale one, an endpoint outside /var/lib/kubelet/plugins/, a socket serving
 * another driver, a driver that hangs (bounded by the deadline) and the probe's time budget.
 */
#include "csiprobe.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fake_host.h"

#define FAKE_CSI TAU_BINARY_DIR "/fakes/bin/fake_csi_driver"
#define DRIVER   "disk.csi.azure.com"

typedef struct fixture {
	char root[32];
	char config[64];
	pid_t pid;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	snprintf(f->root, sizeof(f->root), "/tmp/csi-XXXXXX");
	if (mkdtemp(f->root) == NULL)
		return -1;
	snprintf(f->config, sizeof(f->config), "%s/csi.json", f->root);
	make_dirs(f->root, "var/lib/kubelet/plugins_registry");
	make_dirs(f->root, "var/lib/kubelet/plugins/" DRIVER);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	if (f->pid > 0)
		stop_fake(f->pid);
	nftw(f->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* The fake driver and registrar of DRIVER, advertising `advertise` as its endpoint. */
static void serve(fixture *f, const char *config, const char *advertise)
{
	char reg[128], ep[128];
	char *argv[] = {(char *)FAKE_CSI,
	                (char *)"--registration",
	                reg,
	                (char *)"--endpoint",
	                ep,
	                (char *)"--advertise",
	                (char *)advertise,
	                (char *)"--config",
	                f->config,
	                NULL};

	snprintf(reg, sizeof(reg), "%s/var/lib/kubelet/plugins_registry/" DRIVER "-reg.sock",
	         f->root);
	snprintf(ep, sizeof(ep), "%s/var/lib/kubelet/plugins/" DRIVER "/csi.sock", f->root);
	write_file(f->root, "csi.json", config);
	f->pid = start_fake(argv);
}

static const char *const drivers[] = {DRIVER};

static void test_ready(void **state)
{
	fixture *f = *state;
	tau_agent_csi_live *live = NULL, *copy = NULL;

	serve(f, "{\"name\": \"" DRIVER "\", \"vendorVersion\": \"v1.29.9\", \"ready\": true}",
	      "/var/lib/kubelet/plugins/" DRIVER "/csi.sock");
	assert_int_equal(tau_agent_csi_probe(&live, f->root, drivers, 1, 2000, 5000), 0);
	assert_string_equal(live[0].driver, DRIVER);
	assert_string_equal(live[0].endpoint, "/var/lib/kubelet/plugins/" DRIVER "/csi.sock");
	assert_int_equal(live[0].ready, 1);
	assert_string_equal(live[0].plugin_name, DRIVER);
	assert_string_equal(live[0].vendor_version, "v1.29.9");
	assert_null(live[0].error);
	assert_int_equal(tau_agent_csi_live_copy(&copy, live, 1), 0);
	tau_agent_csi_live_free(live, 1);
	assert_string_equal(copy[0].vendor_version, "v1.29.9");
	tau_agent_csi_live_free(copy, 1);
	tau_agent_csi_live_free(NULL, 0);
}

/* ready unset is ready (CSI spec); false is not; a failing Probe is unknown with why. */
static void test_probe_answers(void **state)
{
	fixture *f = *state;
	tau_agent_csi_live *live = NULL;

	serve(f, "{\"name\": \"" DRIVER "\"}", "/var/lib/kubelet/plugins/" DRIVER "/csi.sock");
	assert_int_equal(tau_agent_csi_probe(&live, f->root, drivers, 1, 2000, 5000), 0);
	assert_int_equal(live[0].ready, 1);
	tau_agent_csi_live_free(live, 1);

	write_file(f->root, "csi.json", "{\"name\": \"" DRIVER "\", \"ready\": false}");
	assert_int_equal(tau_agent_csi_probe(&live, f->root, drivers, 1, 2000, 5000), 0);
	assert_int_equal(live[0].ready, 0);
	assert_string_equal(live[0].error, "Probe answered ready=false");
	tau_agent_csi_live_free(live, 1);

	write_file(f->root, "csi.json", "{\"name\": \"" DRIVER "\", \"probeStatus\": 9}");
	assert_int_equal(tau_agent_csi_probe(&live, f->root, drivers, 1, 2000, 5000), 0);
	assert_int_equal(live[0].ready, -1);
	assert_string_equal(live[0].error, "Identity Probe: FAILED_PRECONDITION: fake CSI driver: "
	                                   "probeStatus");
	tau_agent_csi_live_free(live, 1);

	write_file(f->root, "csi.json", "{\"name\": \"file.csi.azure.com\"}");
	assert_int_equal(tau_agent_csi_probe(&live, f->root, drivers, 1, 2000, 5000), 0);
	assert_int_equal(live[0].ready, 1);
	assert_string_equal(live[0].error,
	                    "the socket serves driver \"file.csi.azure.com\", not " DRIVER);
	tau_agent_csi_live_free(live, 1);
}

static void test_registration_missing_or_stale(void **state)
{
	fixture *f = *state;
	tau_agent_csi_live *live = NULL;

	assert_int_equal(tau_agent_csi_probe(&live, f->root, drivers, 1, 500, 5000), 0);
	assert_int_equal(live[0].ready, -1);
	assert_null(live[0].endpoint);
	assert_string_equal(live[0].error, "registration: /var/lib/kubelet/plugins_registry/" DRIVER
	                                   "-reg.sock does not exist");
	tau_agent_csi_live_free(live, 1);

	/* The socket outlived its registrar. */
	make_socket(f->root, "var/lib/kubelet/plugins_registry/" DRIVER "-reg.sock");
	assert_int_equal(tau_agent_csi_probe(&live, f->root, drivers, 1, 500, 5000), 0);
	assert_int_equal(live[0].ready, -1);
	assert_string_equal(live[0].error,
	                    "registration GetInfo: UNAVAILABLE (nothing answers on the socket)");
	tau_agent_csi_live_free(live, 1);
}

/* A registration naming a socket elsewhere is not followed. */
static void test_endpoint_outside_plugins(void **state)
{
	fixture *f = *state;
	tau_agent_csi_live *live = NULL;

	serve(f, "{\"name\": \"" DRIVER "\"}",
	      "/var/lib/kubelet/plugins/../pod-resources/kubelet.sock");
	assert_int_equal(tau_agent_csi_probe(&live, f->root, drivers, 1, 2000, 5000), 0);
	assert_int_equal(live[0].ready, -1);
	assert_null(live[0].endpoint);
	assert_string_equal(live[0].error,
	                    "registration names endpoint "
	                    "\"/var/lib/kubelet/plugins/../pod-resources/kubelet.sock\", not a "
	                    "socket below /var/lib/kubelet/plugins/");
	tau_agent_csi_live_free(live, 1);
}

/* A driver that never answers costs one deadline; the budget stops the drivers after it. */
static void test_hang_bounded_and_budget(void **state)
{
	fixture *f = *state;
	tau_agent_csi_live *live = NULL;
	const char *const three[] = {DRIVER, DRIVER, "other.csi.example.com"};
	int64_t t0, took;
	int waited = 0;
	char close_paren = 0;

	serve(f, "{\"name\": \"" DRIVER "\", \"hang\": true}",
	      "/var/lib/kubelet/plugins/" DRIVER "/csi.sock");
	t0 = (int64_t)tau_clock_mono_ms();
	assert_int_equal(tau_agent_csi_probe(&live, f->root, three, 3, 300, 450), 0);
	took = (int64_t)tau_clock_mono_ms() - t0;
	assert_int_equal(live[0].ready, -1);
	/* 300 ms, or less when its registration call ate more than 150 ms of the 450 ms
	 * budget (180-280 ms seen under ASan on a loaded machine); never more. */
	assert_int_equal(
	        sscanf(live[0].error,
	               "Identity GetPluginInfo: no answer within %d ms (DEADLINE_EXCEEDED%c",
	               &waited, &close_paren),
	        2);
	assert_true(waited > 0 && waited <= 300);
	assert_int_equal(close_paren, ')');
	/* The second gets what is left of the budget, the third nothing.  On a loaded machine
	 * the first driver's own calls may spend it all, and the second is not probed either. */
	if (strcmp(live[1].error, "not probed: the CSI probe's 450 ms budget was spent") != 0) {
		assert_int_equal(waited, 300);
		assert_non_null(strstr(live[1].error, "DEADLINE_EXCEEDED"));
	}
	assert_string_equal(live[2].error, "not probed: the CSI probe's 450 ms budget was spent");
	assert_true(took >= 400);
	assert_true(took < 1500);
	tau_agent_csi_live_free(live, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_ready, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probe_answers, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_registration_missing_or_stale, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_endpoint_outside_plugins, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_hang_bounded_and_budget, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
