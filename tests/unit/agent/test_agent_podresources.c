/*
 * Unit tests of the agent's kubelet pod-resources client (agent/podresources.c) against our
 * fake kubelet (tests/fakes/kubelet/fake_kubelet.c) on a real unix socket under a fake host
 * root: the join of allocatable devices and holders, NUMA nodes, a missing socket, a stale
 * socket nobody serves, a file that is not a socket, a kubelet without
 * GetAllocatableResources, and a kubelet that never answers (bounded by the timeout); DRA
 * devices held through ResourceClaims (dynamic_resources): sorted, each once, entries that are
 * not devices skipped, malformed or oversized ones and those over the cap counted as dropped.
 */
#include "podresources.h"

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

#define FAKE_KUBELET TAU_BINARY_DIR "/fakes/bin/fake_kubelet"
#define SOCKET_REL   "var/lib/kubelet/pod-resources/kubelet.sock"

typedef struct fixture {
	char root[32];
	char socket[128];
	char config[64];
	pid_t pid;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	snprintf(f->root, sizeof(f->root), "/tmp/prs-XXXXXX");
	if (f == NULL || mkdtemp(f->root) == NULL)
		return -1;
	snprintf(f->socket, sizeof(f->socket), "%s/%s", f->root, SOCKET_REL);
	snprintf(f->config, sizeof(f->config), "%s/kubelet.json", f->root);
	make_dirs(f->root, "var/lib/kubelet/pod-resources");
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

static void serve(fixture *f, const char *config)
{
	char *argv[] = {(char *)FAKE_KUBELET, (char *)"--socket", f->socket,
	                (char *)"--config",   f->config,          NULL};

	write_file(f->root, "kubelet.json", config);
	f->pid = start_fake(argv);
}

/* 4 GPUs, 2 held by a pod; a third held although kubelet no longer lists it (unhealthy). */
static void test_join(void **state)
{
	fixture *f = *state;
	tau_agent_podres r, copy;
	const tau_agent_pod_device *d;

	serve(f,
	      "{\"allocatable\": ["
	      " {\"resource\": \"nvidia.com/gpu\", \"ids\": [\"GPU-d\", \"GPU-a\"], \"numa\": 0},"
	      " {\"resource\": \"nvidia.com/gpu\", \"ids\": [\"GPU-b\"], \"numa\": 1},"
	      " {\"resource\": \"rdma/ib\", \"ids\": [\"mlx5_0\"]}],"
	      " \"pods\": [{\"namespace\": \"ml\", \"name\": \"train-0\", \"containers\": ["
	      "  {\"name\": \"main\", \"devices\": ["
	      "   {\"resource\": \"nvidia.com/gpu\", \"ids\": [\"GPU-a\", \"GPU-c\"], \"numa\": "
	      "0}]}]}]}");
	tau_agent_podres_init(&r);
	tau_agent_podres_init(&copy);
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 2000), 0);
	assert_true(r.probed);
	assert_true(r.allocatable_known);
	assert_null(r.note);
	assert_int_equal(r.n_devices, 5);
	/* Sorted by resource, then ID. */
	d = &r.devices[0];
	assert_string_equal(d->resource, "nvidia.com/gpu");
	assert_string_equal(d->id, "GPU-a");
	assert_true(d->allocatable);
	assert_int_equal(d->numa_node, 0);
	assert_string_equal(d->pod_namespace, "ml");
	assert_string_equal(d->pod_name, "train-0");
	assert_string_equal(d->container, "main");
	d = &r.devices[1];
	assert_string_equal(d->id, "GPU-b");
	assert_true(d->allocatable);
	assert_int_equal(d->numa_node, 1);
	assert_null(d->pod_name);
	d = &r.devices[2];
	assert_string_equal(d->id, "GPU-c");
	assert_false(d->allocatable);
	assert_string_equal(d->pod_name, "train-0");
	d = &r.devices[3];
	assert_string_equal(d->id, "GPU-d");
	assert_null(d->pod_name);
	d = &r.devices[4];
	assert_string_equal(d->resource, "rdma/ib");
	assert_int_equal(d->numa_node, -1);
	assert_int_equal(tau_agent_podres_copy(&copy, &r), 0);
	tau_agent_podres_free(&r);
	assert_int_equal(copy.n_devices, 5);
	assert_string_equal(copy.devices[2].pod_name, "train-0");
	tau_agent_podres_free(&copy);
	tau_agent_podres_free(NULL);
}

/* Allocations are read afresh each probe: a pod taking a device shows in the next one. */
static void test_reprobe_sees_allocation(void **state)
{
	fixture *f = *state;
	tau_agent_podres r;

	serve(f, "{\"allocatable\": [{\"resource\": \"nvidia.com/gpu\", \"ids\": [\"GPU-a\"]}]}");
	tau_agent_podres_init(&r);
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 2000), 0);
	assert_int_equal(r.n_devices, 1);
	assert_null(r.devices[0].pod_name);
	write_file(
	        f->root, "kubelet.json.tmp",
	        "{\"allocatable\": [{\"resource\": \"nvidia.com/gpu\", \"ids\": [\"GPU-a\"]}],"
	        " \"pods\": [{\"namespace\": \"ml\", \"name\": \"p\", \"containers\": [{\"name\":"
	        " \"c\", \"devices\": [{\"resource\": \"nvidia.com/gpu\", \"ids\": "
	        "[\"GPU-a\"]}]}]}]}");
	{
		char from[96];

		snprintf(from, sizeof(from), "%s/kubelet.json.tmp", f->root);
		assert_int_equal(rename(from, f->config), 0);
	}
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 2000), 0);
	assert_string_equal(r.devices[0].pod_name, "p");
	tau_agent_podres_free(&r);
}

static void test_missing_socket(void **state)
{
	fixture *f = *state;
	tau_agent_podres r;
	char want[256];

	tau_agent_podres_init(&r);
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 500), 0);
	assert_false(r.probed);
	snprintf(want, sizeof(want), "kubelet pod-resources not reachable: %s does not exist",
	         TAU_AGENT_PODRESOURCES_SOCKET);
	assert_string_equal(r.note, want);
	assert_int_equal(r.n_devices, 0);
	tau_agent_podres_free(&r);
}

static void test_not_a_socket_and_stale_socket(void **state)
{
	fixture *f = *state;
	tau_agent_podres r;
	char want[256];

	tau_agent_podres_init(&r);
	write_file(f->root, SOCKET_REL, "");
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 500), 0);
	assert_false(r.probed);
	snprintf(want, sizeof(want), "kubelet pod-resources not reachable: %s is not a socket",
	         TAU_AGENT_PODRESOURCES_SOCKET);
	assert_string_equal(r.note, want);
	/* A socket file whose server is gone (kubelet restarting). */
	unlink(f->socket);
	make_socket(f->root, SOCKET_REL);
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 500), 0);
	assert_false(r.probed);
	assert_non_null(strstr(r.note, "kubelet pod-resources not answering: "
	                               "GetAllocatableResources: "));
	tau_agent_podres_free(&r);
}

/* A kubelet that never answers costs one timeout, not a stalled agent. */
static void test_hang_is_bounded(void **state)
{
	fixture *f = *state;
	tau_agent_podres r;
	int64_t t0, took;

	serve(f, "{\"hang\": true}");
	tau_agent_podres_init(&r);
	t0 = (int64_t)tau_clock_mono_ms();
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 300), 0);
	took = (int64_t)tau_clock_mono_ms() - t0;
	assert_false(r.probed);
	assert_string_equal(r.note, "kubelet pod-resources not answering: GetAllocatableResources: "
	                            "no answer within 300 ms (DEADLINE_EXCEEDED)");
	assert_true(took >= 250);
	assert_true(took < 1500);
	tau_agent_podres_free(&r);
}

/* A kubelet without GetAllocatableResources (feature gate off): holders only, said so. */
static void test_allocatable_unimplemented(void **state)
{
	fixture *f = *state;
	tau_agent_podres r;

	serve(f, "{\"allocatableStatus\": 12, \"pods\": [{\"namespace\": \"ml\", \"name\": \"p\","
	         " \"containers\": [{\"name\": \"c\", \"devices\": [{\"resource\":"
	         " \"nvidia.com/gpu\", \"ids\": [\"GPU-a\"]}]}]}]}");
	tau_agent_podres_init(&r);
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 2000), 0);
	assert_true(r.probed);
	assert_false(r.allocatable_known);
	assert_string_equal(r.note, "allocatable devices unknown: GetAllocatableResources: "
	                            "UNIMPLEMENTED: fake kubelet: allocatableStatus");
	assert_int_equal(r.n_devices, 1);
	assert_false(r.devices[0].allocatable);
	assert_string_equal(r.devices[0].pod_name, "p");
	tau_agent_podres_free(&r);
}

/* Claims of two pods: one device shared by two containers, another pool, a non-device entry. */
static void test_dra_devices(void **state)
{
	fixture *f = *state;
	tau_agent_podres r, copy;
	const tau_agent_dra_device *d;
	char long_pool[300];

	memset(long_pool, 'p', 254);
	long_pool[254] = '\0';
	{
		char cfg[2048];

		snprintf(cfg, sizeof(cfg),
		         "{\"pods\": ["
		         " {\"namespace\": \"ml\", \"name\": \"train-0\", \"containers\": ["
		         "  {\"name\": \"main\", \"dynamic\": [{\"claimNamespace\": \"ml\","
		         "   \"claimName\": \"gpus\", \"devices\": ["
		         "    {\"driver\": \"gpu.nvidia.com\", \"pool\": \"node-a\", \"device\": "
		         "\"gpu-1\"},"
		         "    {\"driver\": \"gpu.nvidia.com\", \"pool\": \"node-a\", \"device\": "
		         "\"gpu-0\"},"
		         "    {\"driver\": \"gpu.nvidia.com\", \"pool\": \"node-a\"}]}]},"
		         "  {\"name\": \"side\", \"dynamic\": [{\"claimNamespace\": \"ml\","
		         "   \"claimName\": \"gpus\", \"devices\": ["
		         "    {\"driver\": \"gpu.nvidia.com\", \"pool\": \"node-a\", \"device\": "
		         "\"gpu-0\"}]}]}]},"
		         " {\"namespace\": \"rl\", \"name\": \"act-0\", \"containers\": ["
		         "  {\"name\": \"c\", \"dynamic\": [{\"claimNamespace\": \"rl\","
		         "   \"claimName\": \"nic\", \"devices\": ["
		         "    {\"driver\": \"dra.net\", \"pool\": \"node-a\", \"device\": "
		         "\"eth1\"},"
		         "    {\"driver\": \"gpu.nvidia.com\", \"pool\": \"\", \"device\": "
		         "\"gpu-2\"},"
		         "    {\"driver\": \"gpu.nvidia.com\", \"pool\": \"%s\", \"device\": "
		         "\"gpu-3\"}]}]}]}]}",
		         long_pool);
		serve(f, cfg);
	}
	tau_agent_podres_init(&r);
	tau_agent_podres_init(&copy);
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 2000), 0);
	assert_true(r.probed);
	assert_int_equal(r.n_devices, 0);
	assert_int_equal(r.n_dra, 3);
	/* The empty pool and the 254-byte pool: dropped; the entry without a device: skipped. */
	assert_int_equal(r.n_dra_dropped, 2);
	d = &r.dra[0];
	assert_string_equal(d->driver, "dra.net");
	assert_string_equal(d->device, "eth1");
	assert_string_equal(d->claim_name, "nic");
	assert_string_equal(d->pod_namespace, "rl");
	d = &r.dra[1];
	assert_string_equal(d->driver, "gpu.nvidia.com");
	assert_string_equal(d->pool, "node-a");
	assert_string_equal(d->device, "gpu-0");
	assert_string_equal(d->claim_namespace, "ml");
	assert_string_equal(d->claim_name, "gpus");
	/* Shared by two containers: listed once, with the first. */
	assert_string_equal(d->pod_name, "train-0");
	assert_string_equal(d->container, "main");
	assert_string_equal(r.dra[2].device, "gpu-1");
	assert_int_equal(tau_agent_podres_copy(&copy, &r), 0);
	tau_agent_podres_free(&r);
	assert_int_equal(copy.n_dra, 3);
	assert_int_equal(copy.n_dra_dropped, 2);
	assert_string_equal(copy.dra[1].container, "main");
	tau_agent_podres_free(&copy);
}

/* More held DRA devices than the cap: the first 256 found are listed, the rest counted. */
static void test_dra_devices_cap(void **state)
{
	fixture *f = *state;
	size_t n = TAU_AGENT_PODRESOURCES_MAX_DRA_DEVICES + 3, len = 0, cap = n * 80 + 256;
	char *cfg = malloc(cap);
	tau_agent_podres r;

	assert_non_null(cfg);
	len += (size_t)snprintf(cfg + len, cap - len,
	                        "{\"pods\": [{\"namespace\": \"ml\", \"name\": \"p\","
	                        " \"containers\": [{\"name\": \"c\", \"dynamic\": ["
	                        "{\"claimNamespace\": \"ml\", \"claimName\": \"all\", "
	                        "\"devices\": [");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(cfg + len, cap - len,
		                        "%s{\"driver\": \"d.example.com\", \"pool\": \"p\", "
		                        "\"device\": \"dev-%04zu\"}",
		                        i > 0 ? "," : "", i);
	snprintf(cfg + len, cap - len, "]}]}]}]}");
	serve(f, cfg);
	free(cfg);
	tau_agent_podres_init(&r);
	assert_int_equal(tau_agent_podres_probe(&r, f->root, 2000), 0);
	assert_true(r.probed);
	assert_int_equal(r.n_dra, TAU_AGENT_PODRESOURCES_MAX_DRA_DEVICES);
	assert_int_equal(r.n_dra_dropped, 3);
	assert_string_equal(r.dra[0].device, "dev-0000");
	assert_string_equal(r.dra[TAU_AGENT_PODRESOURCES_MAX_DRA_DEVICES - 1].device, "dev-0255");
	tau_agent_podres_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_join, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_reprobe_sees_allocation, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_missing_socket, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_not_a_socket_and_stale_socket, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_hang_is_bounded, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_allocatable_unimplemented, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_dra_devices, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_dra_devices_cap, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
