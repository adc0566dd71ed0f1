/*
 * Unit tests of the agent's NVML probe (agent/nvml.c) against our fake libnvidia-ml.so.1
 * (tests/fakes/nvml/fake_nvml.c, built by cmake/agent-probes.cmake): devices and their health
 * signals, versions, MIG mode, a library that is absent, one lacking the required entry points,
 * one lacking optional ones (an "old driver"), init failing, a GPU whose handle fails, and a
 * driver that hangs in nvmlInit (bounded by the timeout).
 */
#include "nvml.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_host.h"

#define FAKE_FULL TAU_BINARY_DIR "/fakes/nvml-full/libnvidia-ml.so.1"
#define FAKE_OLD  TAU_BINARY_DIR "/fakes/nvml-old/libnvidia-ml.so.1"

static char config_path[64];

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(config_path, sizeof(config_path), "/tmp/fake-nvml-XXXXXX");
	fd = mkstemp(config_path);
	if (fd < 0)
		return -1;
	close(fd);
	return setenv("TAU_FAKE_NVML_CONFIG", config_path, 1);
}

static int teardown(void **state)
{
	(void)state;
	tau_agent_nvml_events_reset(); /* close the XID session: nothing left open */
	unlink(config_path);
	return 0;
}

static void write_config(const char *text)
{
	FILE *f = fopen(config_path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* An ND H100 v5 node: 8 GPUs, one with rows waiting to be remapped, one lost, one RMA. */
static void test_health_signals(void **state)
{
	tau_agent_nvml n;

	(void)state;
	write_config("driver 550.54.15\n"
	             "cuda 12040\n"
	             "gpu uuid=GPU-aaaa model=NVIDIA_H100_80GB_HBM3 corr=1 sbe=2\n"
	             "gpu uuid=GPU-bbbb remap_pending=1 unc=1\n"
	             "gpu uuid=GPU-cccc lost=1\n"
	             "gpu uuid=GPU-dddd remap_failure=1\n"
	             "gpu uuid=GPU-eeee retire_pending=1 dbe=1\n"
	             "gpu uuid=GPU-ffff mig=1\n"
	             "gpu uuid=GPU-gggg mig=-1\n"
	             "gpu uuid=GPU-hhhh\n");
	tau_agent_nvml_init(&n);
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_true(n.probed);
	assert_null(n.note);
	assert_string_equal(n.driver_version, "550.54.15");
	assert_int_equal(n.cuda_version, 12040);
	assert_int_equal(n.n_missing, 0);
	assert_int_equal(n.count, 8);
	assert_int_equal(n.n_gpus, 8);
	assert_int_equal(tau_agent_nvml_healthy(&n), 4);

	assert_string_equal(n.gpus[0].uuid, "GPU-aaaa");
	assert_string_equal(n.gpus[0].name, "NVIDIA H100 80GB HBM3");
	assert_true(n.gpus[0].healthy);
	assert_null(n.gpus[0].reason);
	assert_int_equal(n.gpus[0].lost, 0);
	assert_int_equal(n.gpus[0].remap_pending, 0);
	assert_int_equal(n.gpus[0].remapped_correctable, 1);
	assert_int_equal(n.gpus[0].remapped_uncorrectable, 0);
	assert_int_equal(n.gpus[0].retired_pages_sbe, 2);
	assert_int_equal(n.gpus[0].retired_pages_dbe, 0);
	assert_int_equal(n.gpus[0].mig_mode, 0);

	assert_false(n.gpus[1].healthy);
	assert_int_equal(n.gpus[1].remap_pending, 1);
	assert_string_equal(n.gpus[1].reason, "row remap pending: the GPU needs a reset");

	/* Fell off the bus: the handle comes back, every query says GPU_IS_LOST. */
	assert_false(n.gpus[2].healthy);
	assert_int_equal(n.gpus[2].lost, 1);
	assert_null(n.gpus[2].uuid);
	assert_int_equal(n.gpus[2].remap_pending, -1);
	assert_string_equal(n.gpus[2].reason, "fell off the bus (NVML: GPU is lost)");

	assert_false(n.gpus[3].healthy);
	assert_string_equal(n.gpus[3].reason, "row remapping failed: the GPU needs service");
	assert_false(n.gpus[4].healthy);
	assert_int_equal(n.gpus[4].retired_pages_dbe, 1);
	assert_string_equal(n.gpus[4].reason, "page retirement pending: the GPU needs a reset");

	assert_true(n.gpus[5].healthy);
	assert_int_equal(n.gpus[5].mig_mode, 1);
	/* A GPU without MIG (NOT_SUPPORTED): mode unknown, still healthy. */
	assert_true(n.gpus[6].healthy);
	assert_int_equal(n.gpus[6].mig_mode, -1);
	assert_true(n.gpus[7].healthy);
	tau_agent_nvml_free(&n);
	tau_agent_nvml_free(NULL);
}

/* Health is read afresh on every probe: a GPU turning unhealthy shows in the next one. */
static void test_reprobe_sees_change(void **state)
{
	tau_agent_nvml n, copy;

	(void)state;
	write_config("gpu uuid=GPU-1\n");
	tau_agent_nvml_init(&n);
	tau_agent_nvml_init(&copy);
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_int_equal(tau_agent_nvml_healthy(&n), 1);
	assert_int_equal(tau_agent_nvml_copy(&copy, &n), 0);
	write_config("gpu uuid=GPU-1 remap_pending=1\n");
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_int_equal(tau_agent_nvml_healthy(&n), 0);
	/* The copy is deep: it kept the earlier answer. */
	assert_int_equal(tau_agent_nvml_healthy(&copy), 1);
	assert_string_equal(copy.gpus[0].uuid, "GPU-1");
	tau_agent_nvml_free(&n);
	tau_agent_nvml_free(&copy);
}

/* No library: not probed, with dlopen's reason. */
static void test_library_absent(void **state)
{
	tau_agent_nvml n;

	(void)state;
	tau_agent_nvml_init(&n);
	assert_int_equal(tau_agent_nvml_probe(&n, "/nonexistent/libnvidia-ml.so.1"), 0);
	assert_false(n.probed);
	assert_non_null(n.note);
	assert_non_null(strstr(n.note, "NVML not loaded: "));
	assert_non_null(strstr(n.note, "/nonexistent/libnvidia-ml.so.1"));
	assert_int_equal(n.n_gpus, 0);
	tau_agent_nvml_free(&n);
}

/* A library without NVML's required entry points (libc): not probed, reported, no crash. */
static void test_library_lacks_required(void **state)
{
	tau_agent_nvml n;

	(void)state;
	tau_agent_nvml_init(&n);
	assert_int_equal(tau_agent_nvml_probe(&n, "libc.so.6"), 0);
	assert_false(n.probed);
	assert_string_equal(n.note, "NVML in libc.so.6 lacks the v2 entry points");
	tau_agent_nvml_free(&n);
}

/* An old driver without remapped rows, MIG mode and the CUDA version: those are unknown. */
static void test_library_lacks_optional(void **state)
{
	tau_agent_nvml n;

	(void)state;
	write_config("gpu uuid=GPU-old remap_pending=1 sbe=3\n");
	tau_agent_nvml_init(&n);
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_OLD), 0);
	assert_true(n.probed);
	assert_int_equal(n.n_missing, 10);
	assert_string_equal(n.missing_symbols[0], "nvmlSystemGetCudaDriverVersion_v2");
	assert_string_equal(n.missing_symbols[1], "nvmlDeviceGetRemappedRows");
	assert_string_equal(n.missing_symbols[2], "nvmlDeviceGetMigMode");
	assert_string_equal(n.missing_symbols[3], "nvmlDeviceGetMaxMigDeviceCount");
	assert_string_equal(n.missing_symbols[4], "nvmlDeviceGetMigDeviceHandleByIndex");
	assert_string_equal(n.missing_symbols[5], "nvmlDeviceGetNvLinkState");
	assert_string_equal(n.missing_symbols[6], "nvmlEventSetCreate");
	assert_string_equal(n.missing_symbols[7], "nvmlDeviceRegisterEvents");
	assert_string_equal(n.missing_symbols[8], "nvmlEventSetWait_v2");
	assert_string_equal(n.missing_symbols[9], "nvmlEventSetFree");
	assert_int_equal(n.gpus[0].mig_devices, -1);
	assert_null(n.gpus[0].mig_profiles);
	/* Without them NVLink and XIDs stay unknown, never "none". */
	assert_int_equal(n.gpus[0].nvlink_active, -1);
	assert_int_equal(n.gpus[0].nvlink_down, -1);
	assert_int_equal(n.gpus[0].xid_critical, -1);
	assert_int_equal(n.cuda_version, -1);
	assert_string_equal(n.driver_version, "550.54.15");
	assert_int_equal(n.n_gpus, 1);
	/* Not judged healthy or sick on what cannot be read: remap state unknown. */
	assert_int_equal(n.gpus[0].remap_pending, -1);
	assert_int_equal(n.gpus[0].remapped_correctable, -1);
	assert_int_equal(n.gpus[0].mig_mode, -1);
	assert_int_equal(n.gpus[0].retired_pages_sbe, 3);
	assert_true(n.gpus[0].healthy);
	tau_agent_nvml_free(&n);
}

static void test_init_fails_and_handle_fails(void **state)
{
	tau_agent_nvml n;

	(void)state;
	write_config("init_error 9\ngpu\n");
	tau_agent_nvml_init(&n);
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_false(n.probed);
	assert_string_equal(n.note, "nvmlInit_v2 failed with NVML error 9");

	write_config("gpu\ngpu handle_error=999\n");
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_true(n.probed);
	assert_int_equal(n.n_gpus, 2);
	assert_string_equal(n.gpus[0].uuid, "GPU-fake-0");
	assert_true(n.gpus[0].healthy);
	assert_false(n.gpus[1].healthy);
	assert_string_equal(n.gpus[1].reason, "NVML gives no handle (NVML error 999)");
	tau_agent_nvml_free(&n);
}

/* A hung driver costs one timeout; the next probes say so at once until NVML returns. */
static void test_hang_is_bounded(void **state)
{
	tau_agent_nvml n;
	int64_t t0, took;
	bool back = false;

	(void)state;
	write_config("init_delay_ms 1500\ngpu uuid=GPU-slow\n");
	tau_agent_nvml_init(&n);
	t0 = (int64_t)tau_clock_mono_ms();
	assert_int_equal(tau_agent_nvml_probe_bounded(&n, FAKE_FULL, 200), 0);
	took = (int64_t)tau_clock_mono_ms() - t0;
	assert_false(n.probed);
	assert_string_equal(n.note, "NVML did not answer within 200 ms (driver hung?); not probed "
	                            "until it does");
	assert_true(took >= 150 && took < 1000);
	t0 = (int64_t)tau_clock_mono_ms();
	assert_int_equal(tau_agent_nvml_probe_bounded(&n, FAKE_FULL, 200), 0);
	assert_true((int64_t)tau_clock_mono_ms() - t0 < 100);
	assert_string_equal(n.note, "NVML not probed: an earlier probe is still inside NVML");
	/* Once the hung call returns (1.5 s), probes work again: wait for that, bounded. */
	write_config("gpu uuid=GPU-back\n");
	for (int i = 0; i < 100 && !back; i++) {
		struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000000L};

		assert_int_equal(tau_agent_nvml_probe_bounded(&n, FAKE_FULL, 2000), 0);
		back = n.probed;
		if (!back)
			nanosleep(&ts, NULL);
	}
	assert_true(back);
	assert_string_equal(n.gpus[0].uuid, "GPU-back");
	tau_agent_nvml_free(&n);
}

/* NVLink: every link active is healthy; some down is not; a GPU without NVLink is unknown. */
static void test_nvlink_links(void **state)
{
	tau_agent_nvml n;

	(void)state;
	write_config("gpu uuid=GPU-a nvlink=18\ngpu uuid=GPU-b nvlink=18 nvlink_down=2\n"
	             "gpu uuid=GPU-c\n");
	tau_agent_nvml_init(&n);
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_int_equal(n.n_missing, 0);
	assert_int_equal(n.gpus[0].nvlink_active, 18);
	assert_int_equal(n.gpus[0].nvlink_down, 0);
	assert_true(n.gpus[0].healthy);
	assert_int_equal(n.gpus[1].nvlink_active, 16);
	assert_int_equal(n.gpus[1].nvlink_down, 2);
	assert_false(n.gpus[1].healthy);
	assert_string_equal(n.gpus[1].reason, "NVLink: 2 of 18 links down");
	assert_int_equal(n.gpus[2].nvlink_active, -1);
	assert_int_equal(n.gpus[2].nvlink_down, -1);
	assert_true(n.gpus[2].healthy);
	assert_int_equal(tau_agent_nvml_healthy(&n), 2);
	tau_agent_nvml_free(&n);
}

/*
 * Critical XIDs: the event set outlives each probe, so an XID raised between two probes is
 * seen by the second; the GPU stays unhealthy after it (until the session is reset); an
 * application XID (13) is recorded as the last one but does not make a GPU unhealthy.
 */
static void test_xid_events(void **state)
{
	static const char base[] = "gpu uuid=GPU-0\ngpu uuid=GPU-1\n";
	tau_agent_nvml n;
	char cfg[256];

	(void)state;
	tau_agent_nvml_events_reset(); /* no session or history from the tests before */
	write_config(base);
	tau_agent_nvml_init(&n);
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_int_equal(n.gpus[0].xid_critical, 0);
	assert_int_equal(n.gpus[1].xid_critical, 0);
	assert_int_equal(tau_agent_nvml_healthy(&n), 2);

	snprintf(cfg, sizeof(cfg), "%sxid 1 79\nxid 0 13\n", base);
	write_config(cfg);
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_int_equal(n.gpus[1].xid_critical, 1);
	assert_int_equal(n.gpus[1].last_xid, 79);
	assert_false(n.gpus[1].healthy);
	assert_string_equal(n.gpus[1].reason, "critical XID 79 (1 since the agent's NVML session "
	                                      "began): the GPU needs a reset");
	assert_int_equal(n.gpus[0].xid_critical, 0);
	assert_int_equal(n.gpus[0].last_xid, 13);
	assert_true(n.gpus[0].healthy);

	/* No new event: still unhealthy (sticky, as NVIDIA's device plugin keeps it). */
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_false(n.gpus[1].healthy);
	assert_int_equal(n.gpus[1].xid_critical, 1);

	/* A second critical XID counts on; then a reset of the session forgets them. */
	snprintf(cfg, sizeof(cfg), "%sxid 1 79\nxid 0 13\nxid 1 48\n", base);
	write_config(cfg);
	assert_int_equal(tau_agent_nvml_probe_bounded(&n, FAKE_FULL, 5000), 0);
	assert_int_equal(n.gpus[1].xid_critical, 2);
	assert_int_equal(n.gpus[1].last_xid, 48);
	tau_agent_nvml_events_reset();
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_int_equal(n.gpus[1].xid_critical, 0);
	assert_true(n.gpus[1].healthy);
	tau_agent_nvml_free(&n);
}

/* MIG geometry: the MIG devices that exist and their profiles, only with MIG enabled. */
static void test_mig_geometry(void **state)
{
	tau_agent_nvml n, copy;

	(void)state;
	write_config("gpu uuid=GPU-m mig=1 mig_profiles=3g.40gb,2g.20gb,1g.10gb\n"
	             "gpu uuid=GPU-e mig=1\ngpu uuid=GPU-x mig_profiles=1g.10gb\n");
	tau_agent_nvml_init(&n);
	tau_agent_nvml_init(&copy);
	assert_int_equal(tau_agent_nvml_probe(&n, FAKE_FULL), 0);
	assert_int_equal(n.gpus[0].mig_mode, 1);
	assert_int_equal(n.gpus[0].mig_devices, 3);
	assert_string_equal(n.gpus[0].mig_profiles, "3g.40gb,2g.20gb,1g.10gb");
	/* MIG enabled, no instance made yet: 0 devices, no profiles. */
	assert_int_equal(n.gpus[1].mig_devices, 0);
	assert_null(n.gpus[1].mig_profiles);
	/* MIG disabled: not asked. */
	assert_int_equal(n.gpus[2].mig_mode, 0);
	assert_int_equal(n.gpus[2].mig_devices, -1);
	assert_int_equal(tau_agent_nvml_copy(&copy, &n), 0);
	assert_string_equal(copy.gpus[0].mig_profiles, "3g.40gb,2g.20gb,1g.10gb");
	tau_agent_nvml_free(&copy);
	tau_agent_nvml_free(&n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_health_signals),
	        cmocka_unit_test(test_reprobe_sees_change),
	        cmocka_unit_test(test_library_absent),
	        cmocka_unit_test(test_library_lacks_required),
	        cmocka_unit_test(test_library_lacks_optional),
	        cmocka_unit_test(test_init_fails_and_handle_fails),
	        cmocka_unit_test(test_hang_is_bounded),
	        cmocka_unit_test(test_nvlink_links),
	        cmocka_unit_test(test_xid_events),
	        cmocka_unit_test(test_mig_geometry),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
