/*
 * Unit test of the agent's real NVML path (agent/hostprobe.c): probe this
 * machine's GPUs through libnvidia-ml.so.1 and compare the count with what is
 * expected.  Its own program (ctest unit/test_agent_nvml) so that the other
 * host-probe tests report Passed everywhere, and this one shows Skipped only
 * where it truly cannot run.
 *
 *   TAU_AGENT_TEST_NVML=<N>  expect N GPUs, all healthy; NVML must load (fails, never skips)
 *   unset                    where libnvidia-ml.so.1 loads: expect as many GPUs as
 *                            /dev/nvidia<N> device nodes (at least one), all healthy;
 *                            where it does not load (no NVIDIA driver): skipped
 */
#include "hostprobe.h"

#include "tau/error.h"
#include "tau/parse.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

static void test_nvml_live(void **state)
{
	const char *want = getenv("TAU_AGENT_TEST_NVML");
	tau_agent_host_probe probe;
	int64_t expected = -1;

	(void)state;
	if (want != NULL && want[0] != '\0') {
		if (tau_parse_int64(&expected, "TAU_AGENT_TEST_NVML", want, 0, 1024) < 0) {
			fail_msg("%s", tau_error_last()->msg);
			return;
		}
	} else {
		void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);

		if (lib == NULL) {
			print_message("no NVIDIA driver here (%s); set TAU_AGENT_TEST_NVML=<GPU "
			              "count> on a GPU machine\n",
			              dlerror());
			skip();
			return;
		}
		dlclose(lib);
	}
	assert_int_equal(unsetenv(TAU_AGENT_NVML_ENV), 0);
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, "/", NULL, 0), 0);
	if (!probe.nvml_probed)
		print_error("NVML note: %s\n", probe.nvml_note ? probe.nvml_note : "(none)");
	assert_true(probe.nvml_probed);
	assert_null(probe.nvml_note);
	if (expected < 0) {
		/* No count given: the device nodes are the independent witness. */
		assert_true(probe.gpu_device_nodes > 0);
		expected = probe.gpu_device_nodes;
	}
	print_message("NVML: %lld GPUs, %lld healthy, %lld /dev nodes\n",
	              (long long)probe.nvml_gpus, (long long)probe.nvml_healthy,
	              (long long)probe.gpu_device_nodes);
	assert_int_equal(probe.nvml_gpus, expected);
	assert_int_equal(probe.nvml_healthy, expected);
	tau_agent_host_probe_free(&probe);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_nvml_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
