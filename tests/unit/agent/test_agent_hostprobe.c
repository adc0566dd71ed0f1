/*
 * Unit tests of the agent's host probes (plugin registry sockets, /dev/nvidia*,
 * InfiniBand port states, NVML switch) and the registry inotify watch, run
 * over fake host trees made with mkdtemp.  The real NVML path is its own
 * program (test_agent_nvml.c), so that this one passes on machines without GPUs.
 */
#include "hostprobe.h"

#include "tau/error.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

/* ---------------------------------------------------------- fake trees */

#include "fake_host.h"

static char *make_root(void)
{
	char *root = strdup("/tmp/tau-hostprobe-XXXXXX");

	assert_non_null(root);
	assert_non_null(mkdtemp(root));
	return root;
}

static void remove_root(char *root)
{
	nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(root);
}

static bool has_problem(const tau_agent_problem_list *list, const char *text)
{
	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->items[i], text) == 0)
			return true;
	return false;
}

static int setup_nvml_off(void **state)
{
	(void)state;
	return setenv(TAU_AGENT_NVML_ENV, "off", 1);
}

/* ------------------------------------------------------------- problems */

static void test_problem_list_caps_and_dedupes(void **state)
{
	tau_agent_problem_list list = {0};

	(void)state;
	for (int i = 0; i < 70; i++)
		assert_int_equal(tau_agent_problem_add(&list, "problem %d", i), 0);
	assert_int_equal(tau_agent_problem_add(&list, "problem %d", 0), 0); /* duplicate */
	assert_int_equal(list.n, TAU_AGENT_MAX_PROBLEMS);
	assert_string_equal(list.items[0], "problem 0");
	assert_string_equal(list.items[62], "problem 62");
	/* 63 shown + 7 summarised = 70 distinct problems. */
	assert_string_equal(list.items[63], "7 more problems not shown");
	assert_int_equal(list.not_shown, 7);
	tau_agent_problem_list_free(&list);
	assert_int_equal(list.n, 0);
	tau_agent_problem_list_free(NULL);
}

static void test_problem_list_has_and_copy(void **state)
{
	tau_agent_problem_list a = {0}, b = {0};

	(void)state;
	assert_int_equal(tau_agent_problem_add_text(&a, "CSINode n does not exist"), 0);
	assert_int_equal(tau_agent_problem_add_text(&a, "65 CSI drivers, only 64 kept"), 0);
	assert_true(tau_agent_problem_list_has(&a, "65 CSI drivers, only 64 kept"));
	assert_false(tau_agent_problem_list_has(&a, "65 CSI drivers"));
	assert_false(tau_agent_problem_list_has(&b, "CSINode n does not exist"));
	assert_int_equal(tau_agent_problem_add_text(&b, "stale"), 0);
	assert_int_equal(tau_agent_problem_list_copy(&b, &a), 0); /* replaces what b held */
	assert_int_equal(b.n, 2);
	assert_false(tau_agent_problem_list_has(&b, "stale"));
	assert_true(tau_agent_problem_list_has(&b, "CSINode n does not exist"));
	assert_ptr_not_equal(b.items[0], a.items[0]); /* a copy, not shared */
	tau_agent_problem_list_free(&a);
	assert_true(tau_agent_problem_list_has(&b, "65 CSI drivers, only 64 kept"));
	assert_int_equal(tau_agent_problem_list_copy(&b, &a), 0);
	assert_int_equal(b.n, 0);
	tau_agent_problem_list_free(&b);
}

static void test_problem_text_is_truncated(void **state)
{
	tau_agent_problem_list list = {0};
	char big[2000];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(tau_agent_problem_add_text(&list, big), 0);
	assert_int_equal(strlen(list.items[0]), TAU_AGENT_PROBLEM_MAX - 1);
	tau_agent_problem_list_free(&list);
}

/* ------------------------------------------------------------ registry */

static void test_registry_sockets(void **state)
{
	static const char *const names[] = {
	        "disk.csi.azure.com", "file.csi.azure.com", "blob.csi.azure.com", "../evil",
	        "disk.csi.azure.com", "nfs.csi.k8s.io",
	};
	char *root = make_root();
	tau_agent_host_probe probe;
	char expect[4200];

	(void)state;
	make_dirs(root, "var/lib/kubelet/plugins_registry");
	make_socket(root, "var/lib/kubelet/plugins_registry/disk.csi.azure.com-reg.sock");
	make_socket(root, "var/lib/kubelet/plugins_registry/nfs.csi.k8s.io-reg.sock");
	/* A regular file with a socket's name does not count. */
	write_file(root, "var/lib/kubelet/plugins_registry/file.csi.azure.com-reg.sock", "");

	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, names, 6), 0);
	assert_int_equal(probe.n_sockets, 5); /* the duplicate is answered once */
	assert_string_equal(probe.sockets[0].driver, "disk.csi.azure.com");
	assert_int_equal(probe.sockets[0].state, TAU_AGENT_SOCKET_PRESENT);
	assert_string_equal(probe.sockets[1].driver, "file.csi.azure.com");
	assert_int_equal(probe.sockets[1].state, TAU_AGENT_SOCKET_ABSENT);
	assert_string_equal(probe.sockets[2].driver, "blob.csi.azure.com");
	assert_int_equal(probe.sockets[2].state, TAU_AGENT_SOCKET_ABSENT);
	assert_string_equal(probe.sockets[3].driver, "../evil");
	assert_int_equal(probe.sockets[3].state, TAU_AGENT_SOCKET_UNKNOWN);
	assert_string_equal(probe.sockets[4].driver, "nfs.csi.k8s.io");
	assert_int_equal(probe.sockets[4].state, TAU_AGENT_SOCKET_PRESENT);

	snprintf(expect, sizeof(expect),
	         "%s/var/lib/kubelet/plugins_registry/file.csi.azure.com-reg.sock exists but is "
	         "not a socket",
	         root);
	assert_true(has_problem(&probe.problems, expect));
	assert_true(has_problem(&probe.problems, "CSI driver name \"../evil\" cannot name a "
	                                         "registration socket; not probed"));
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

static void test_registry_missing_means_absent(void **state)
{
	static const char *const names[] = {"disk.csi.azure.com"};
	char *root = make_root();
	tau_agent_host_probe probe;
	char expect[4200];

	(void)state;
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, names, 1), 0);
	assert_int_equal(probe.n_sockets, 1);
	assert_int_equal(probe.sockets[0].state, TAU_AGENT_SOCKET_ABSENT);
	snprintf(expect, sizeof(expect),
	         "plugin registry %s/var/lib/kubelet/plugins_registry does not exist", root);
	assert_true(has_problem(&probe.problems, expect));
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

static void test_registry_unreadable_means_unknown(void **state)
{
	static const char *const names[] = {"disk.csi.azure.com"};
	char *root = make_root();
	tau_agent_host_probe probe;
	char expect[4200];

	(void)state;
	/* A file where the directory should be: open(O_DIRECTORY) fails with ENOTDIR. */
	make_dirs(root, "var/lib/kubelet");
	write_file(root, "var/lib/kubelet/plugins_registry", "not a directory");
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, names, 1), 0);
	assert_int_equal(probe.sockets[0].state, TAU_AGENT_SOCKET_UNKNOWN);
	snprintf(expect, sizeof(expect),
	         "cannot open plugin registry %s/var/lib/kubelet/plugins_registry: Not a "
	         "directory",
	         root);
	assert_true(has_problem(&probe.problems, expect));
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

static void test_driver_cap(void **state)
{
	char *root = make_root();
	const char *names[TAU_AGENT_PROBE_MAX_DRIVERS + 2];
	char storage[TAU_AGENT_PROBE_MAX_DRIVERS + 2][32];
	tau_agent_host_probe probe;

	(void)state;
	for (size_t i = 0; i < TAU_AGENT_PROBE_MAX_DRIVERS + 2; i++) {
		snprintf(storage[i], sizeof(storage[i]), "d%zu.example.com", i);
		names[i] = storage[i];
	}
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, names, TAU_AGENT_PROBE_MAX_DRIVERS + 2),
	                 0);
	assert_int_equal(probe.n_sockets, TAU_AGENT_PROBE_MAX_DRIVERS);
	assert_true(has_problem(&probe.problems,
	                        "more than 64 CSI drivers to probe; d64.example.com and later "
	                        "ones not probed"));
	assert_int_equal(tau_agent_probe_host(NULL, root, names, 1), -TAU_EINVAL);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 1), -TAU_EINVAL);
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

/* ----------------------------------------------------------------- GPUs */

static void test_gpu_device_nodes(void **state)
{
	char *root = make_root();
	tau_agent_host_probe probe;
	char name[64];

	(void)state;
	make_dirs(root, "dev/nvidia-caps");
	make_dirs(root, "dev/nvidia9"); /* a directory is not a device node */
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "dev/nvidia%d", i);
		write_file(root, name, "");
	}
	write_file(root, "dev/nvidiactl", "");
	write_file(root, "dev/nvidia-uvm", "");
	write_file(root, "dev/nvidia-uvm-tools", "");
	write_file(root, "dev/nvidia0x", "");
	write_file(root, "dev/nvidia", "");
	write_file(root, "dev/null", "");

	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_int_equal(probe.gpu_device_nodes, 8);
	assert_int_equal(probe.problems.n, 0);
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

static void test_missing_dev_is_unknown_not_zero(void **state)
{
	char *root = make_root();
	tau_agent_host_probe probe;
	char expect[4200];

	(void)state;
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_int_equal(probe.gpu_device_nodes, -1);
	snprintf(expect, sizeof(expect), "cannot list %s/dev: No such file or directory", root);
	assert_true(has_problem(&probe.problems, expect));
	/* No InfiniBand class directory: no RDMA hardware, which is known. */
	assert_int_equal(probe.rdma_ports_total, 0);
	assert_int_equal(probe.rdma_ports_up, 0);
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

static void test_nvml_switch(void **state)
{
	char *root = make_root();
	tau_agent_host_probe probe;

	(void)state;
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_false(probe.nvml_probed);
	assert_int_equal(probe.nvml_gpus, -1);
	assert_int_equal(probe.nvml_healthy, -1);
	assert_string_equal(probe.nvml_note, "NVML disabled by TAU_AGENT_NVML=off");

	assert_int_equal(setenv(TAU_AGENT_NVML_ENV, "/nonexistent/libnvidia-ml.so.1", 1), 0);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_false(probe.nvml_probed);
	assert_int_equal(probe.nvml_gpus, -1);
	assert_non_null(probe.nvml_note);
	assert_non_null(strstr(probe.nvml_note, "NVML not loaded: "));
	assert_non_null(strstr(probe.nvml_note, "/nonexistent/libnvidia-ml.so.1"));

	/* A library that loads but is not NVML. */
	assert_int_equal(setenv(TAU_AGENT_NVML_ENV, "libc.so.6", 1), 0);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_false(probe.nvml_probed);
	assert_string_equal(probe.nvml_note, "NVML in libc.so.6 lacks the v2 entry points");

	assert_int_equal(setenv(TAU_AGENT_NVML_ENV, "off", 1), 0);
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

/* ----------------------------------------------------------------- RDMA */

static void test_rdma_state_parse(void **state)
{
	static const struct {
		const char *text;
		int want;
	} cases[] = {
	        {"4: ACTIVE\n", 1},         {"4: ACTIVE", 1},          {"1: DOWN\n", 0},
	        {"2: INIT\n", 0},           {"3: ARMED\n", 0},         {"5: ACTIVE_DEFER\n", 0},
	        {"", -TAU_EINVAL},          {"ACTIVE", -TAU_EINVAL},   {"4 ACTIVE", -TAU_EINVAL},
	        {"4:", -TAU_EINVAL},        {"9: WEIRD", -TAU_EINVAL}, {"4: ACTIVE x", -TAU_EINVAL},
	        {"4: active", -TAU_EINVAL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = tau_agent_rdma_state_is_up(cases[i].text, strlen(cases[i].text));

		if (got != cases[i].want)
			fail_msg("\"%s\": got %d, want %d", cases[i].text, got, cases[i].want);
	}
	assert_int_equal(tau_agent_rdma_state_is_up(NULL, 0), -TAU_EINVAL);
}

static void test_rdma_ports(void **state)
{
	char *root = make_root();
	tau_agent_host_probe probe;
	char expect[4200];

	(void)state;
	make_dirs(root, "sys/class/infiniband/mlx5_0/ports/1");
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	make_dirs(root, "sys/class/infiniband/mlx5_1/ports/1");
	write_file(root, "sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
	make_dirs(root, "sys/class/infiniband/mlx5_1/ports/2");
	write_file(root, "sys/class/infiniband/mlx5_1/ports/2/state", "4: ACTIVE\n");
	/* Unreadable (a directory where the file should be; works even as root). */
	make_dirs(root, "sys/class/infiniband/mlx5_2/ports/1/state");
	/* Garbage. */
	make_dirs(root, "sys/class/infiniband/mlx5_3/ports/1");
	write_file(root, "sys/class/infiniband/mlx5_3/ports/1/state", "bogus\n");
	/* A device without ports. */
	make_dirs(root, "sys/class/infiniband/mlx5_4");
	make_dirs(root, "dev");

	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_int_equal(probe.rdma_ports_total, 5);
	assert_int_equal(probe.rdma_ports_up, 2);
	assert_int_equal(probe.problems.n, 3);
	snprintf(expect, sizeof(expect),
	         "cannot read %s/sys/class/infiniband/mlx5_2/ports/1/state: Is a directory", root);
	assert_true(has_problem(&probe.problems, expect));
	snprintf(expect, sizeof(expect),
	         "%s/sys/class/infiniband/mlx5_3/ports/1/state: port state \"bogus\" is not "
	         "\"<number>: <NAME>\"",
	         root);
	assert_true(has_problem(&probe.problems, expect));
	snprintf(expect, sizeof(expect),
	         "cannot list %s/sys/class/infiniband/mlx5_4/ports: No such file or directory",
	         root);
	assert_true(has_problem(&probe.problems, expect));
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

static void test_sysfs_numbered_and_rate(void **state)
{
	int64_t mbps = 0;

	(void)state;
	assert_int_equal(tau_agent_sysfs_numbered("5: LinkUp\n", 10), 5);
	assert_int_equal(tau_agent_sysfs_numbered("3: Disabled", 11), 3);
	assert_int_equal(tau_agent_sysfs_numbered("4: ACTIVE\n", 10), 4);
	assert_int_equal(tau_agent_sysfs_numbered("LinkUp", 6), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "\"LinkUp\" is not \"<number>: <Name>\"");
	assert_int_equal(tau_agent_sysfs_numbered("5: Link Up", 10), -TAU_EINVAL);
	assert_int_equal(tau_agent_sysfs_numbered(NULL, 0), -TAU_EINVAL);

	assert_int_equal(tau_agent_rdma_rate_mbps(&mbps, "400 Gb/sec (4X NDR)\n", 20), 0);
	assert_int_equal(mbps, 400000);
	assert_int_equal(tau_agent_rdma_rate_mbps(&mbps, "2.5 Gb/sec (1X SDR)", 19), 0);
	assert_int_equal(mbps, 2500);
	assert_int_equal(tau_agent_rdma_rate_mbps(&mbps, "Gb/sec", 6), -TAU_EINVAL);
	assert_int_equal(tau_agent_rdma_rate_mbps(&mbps, "100 Mb/sec", 10), -TAU_EINVAL);
	assert_int_equal(tau_agent_rdma_rate_mbps(&mbps, "1.2345 Gb/sec", 13), -TAU_EINVAL);
	assert_int_equal(mbps, 2500); /* untouched on failure */
}

/* A real ND H100 v5 port (all files) next to a RoCE port that is down and a bare fake port. */
static void test_rdma_port_details(void **state)
{
	char *root = make_root();
	tau_agent_host_probe probe;
	const tau_agent_rdma_port *p;
	char expect[4200];

	(void)state;
	make_dirs(root, "dev");
	make_dirs(root, "sys/class/infiniband/mlx5_0/ports/1/counters");
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n");
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "2\n");
	make_dirs(root, "sys/class/infiniband/mlx5_1/ports/10/counters");
	make_dirs(root, "sys/class/infiniband/mlx5_1/ports/2");
	write_file(root, "sys/class/infiniband/mlx5_1/ports/2/state", "1: DOWN\n");
	write_file(root, "sys/class/infiniband/mlx5_1/ports/10/state", "1: DOWN\n");
	write_file(root, "sys/class/infiniband/mlx5_1/ports/10/phys_state", "3: Disabled\n");
	write_file(root, "sys/class/infiniband/mlx5_1/ports/10/rate", "fast\n");
	write_file(root, "sys/class/infiniband/mlx5_1/ports/10/link_layer", "Ethernet\n");
	write_file(root, "sys/class/infiniband/mlx5_1/ports/10/counters/link_downed", "-3\n");

	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_int_equal(probe.rdma_ports_total, 3);
	assert_int_equal(probe.rdma_ports_up, 1);
	assert_int_equal(probe.n_rdma_ports, 3);
	p = &probe.rdma_ports[0];
	assert_string_equal(p->device, "mlx5_0");
	assert_string_equal(p->port, "1");
	assert_int_equal(p->state, 4);
	assert_int_equal(p->phys_state, 5);
	assert_string_equal(p->rate, "400 Gb/sec (4X NDR)");
	assert_int_equal(p->rate_mbps, 400000);
	assert_string_equal(p->link_layer, "InfiniBand");
	assert_int_equal(p->link_downed, 2);
	/* Sorted by port number: 2 before 10.  Missing files: unknown, no problem. */
	p = &probe.rdma_ports[1];
	assert_string_equal(p->port, "2");
	assert_int_equal(p->state, 1);
	assert_int_equal(p->phys_state, -1);
	assert_null(p->rate);
	assert_int_equal(p->rate_mbps, -1);
	assert_null(p->link_layer);
	assert_int_equal(p->link_downed, -1);
	/* Garbage: the text is kept where it is text, numbers stay unknown, problems say why. */
	p = &probe.rdma_ports[2];
	assert_string_equal(p->port, "10");
	assert_int_equal(p->phys_state, 3);
	assert_string_equal(p->rate, "fast");
	assert_int_equal(p->rate_mbps, -1);
	assert_string_equal(p->link_layer, "Ethernet");
	assert_int_equal(p->link_downed, -1);
	assert_int_equal(probe.problems.n, 2);
	snprintf(expect, sizeof(expect),
	         "%s/sys/class/infiniband/mlx5_1/ports/10/rate: rate \"fast\" is not \"<number> "
	         "Gb/sec ...\"",
	         root);
	assert_true(has_problem(&probe.problems, expect));
	snprintf(expect, sizeof(expect),
	         "%s/sys/class/infiniband/mlx5_1/ports/10/counters/link_downed: \"-3\" is not a "
	         "count",
	         root);
	assert_true(has_problem(&probe.problems, expect));
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

static void test_rdma_class_unreadable(void **state)
{
	char *root = make_root();
	tau_agent_host_probe probe;
	char expect[4200];

	(void)state;
	make_dirs(root, "sys/class");
	write_file(root, "sys/class/infiniband", "not a directory");
	make_dirs(root, "dev");
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_int_equal(probe.rdma_ports_total, -1);
	assert_int_equal(probe.rdma_ports_up, -1);
	snprintf(expect, sizeof(expect), "cannot list %s/sys/class/infiniband: Not a directory",
	         root);
	assert_true(has_problem(&probe.problems, expect));
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

/* -------------------------------------------------------- registry watch */

/* Wait (bounded) for the watch fd to become readable, then drain it. */
static int wait_and_drain(tau_agent_registry_watch *w)
{
	struct pollfd pfd = {.fd = tau_agent_registry_watch_fd(w), .events = POLLIN};

	(void)poll(&pfd, 1, 2000);
	return tau_agent_registry_watch_drain(w);
}

static void test_registry_watch(void **state)
{
	char *root = make_root();
	tau_agent_registry_watch *w = NULL;
	char path[4200];

	(void)state;
	assert_int_equal(tau_agent_registry_watch_open(&w, root), 0);
	assert_true(tau_agent_registry_watch_on_parent(w));
	assert_string_equal(tau_agent_registry_watch_path(w), root);
	assert_int_equal(tau_agent_registry_watch_drain(w), 0);

	/* A component on the way appears: the watch moves down, nothing to rescan yet. */
	make_dirs(root, "var/lib");
	assert_int_equal(wait_and_drain(w), 0);
	snprintf(path, sizeof(path), "%s/var/lib", root);
	assert_string_equal(tau_agent_registry_watch_path(w), path);
	assert_true(tau_agent_registry_watch_on_parent(w));

	/* An unrelated sibling: no change. */
	make_dirs(root, "var/lib/containerd");
	assert_int_equal(wait_and_drain(w), 0);

	/* The registry appears: changed, and now watched itself. */
	make_dirs(root, "var/lib/kubelet/plugins_registry");
	assert_int_equal(wait_and_drain(w), 1);
	assert_false(tau_agent_registry_watch_on_parent(w));
	snprintf(path, sizeof(path), "%s/var/lib/kubelet/plugins_registry", root);
	assert_string_equal(tau_agent_registry_watch_path(w), path);
	assert_int_equal(tau_agent_registry_watch_drain(w), 0);

	/* A socket comes and goes. */
	make_socket(root, "var/lib/kubelet/plugins_registry/disk.csi.azure.com-reg.sock");
	assert_int_equal(wait_and_drain(w), 1);
	assert_int_equal(tau_agent_registry_watch_drain(w), 0);
	snprintf(path, sizeof(path),
	         "%s/var/lib/kubelet/plugins_registry/disk.csi.azure.com-reg.sock", root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(wait_and_drain(w), 1);

	/* The registry is removed: changed, and the watch moves back up. */
	snprintf(path, sizeof(path), "%s/var/lib/kubelet/plugins_registry", root);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(wait_and_drain(w), 1);
	assert_true(tau_agent_registry_watch_on_parent(w));
	snprintf(path, sizeof(path), "%s/var/lib/kubelet", root);
	assert_string_equal(tau_agent_registry_watch_path(w), path);

	tau_agent_registry_watch_free(w);
	tau_agent_registry_watch_free(NULL);
	remove_root(root);
}

static void test_registry_watch_existing(void **state)
{
	char *root = make_root();
	tau_agent_registry_watch *w = NULL;
	int flags;

	(void)state;
	make_dirs(root, "var/lib/kubelet/plugins_registry");
	assert_int_equal(tau_agent_registry_watch_open(&w, root), 0);
	assert_false(tau_agent_registry_watch_on_parent(w));
	flags = fcntl(tau_agent_registry_watch_fd(w), F_GETFD);
	assert_true(flags >= 0 && (flags & FD_CLOEXEC));
	flags = fcntl(tau_agent_registry_watch_fd(w), F_GETFL);
	assert_true(flags >= 0 && (flags & O_NONBLOCK));
	assert_int_equal(tau_agent_registry_watch_drain(w), 0);
	write_file(root, "var/lib/kubelet/plugins_registry/x-reg.sock", "");
	assert_int_equal(wait_and_drain(w), 1);
	tau_agent_registry_watch_free(w);
	assert_int_equal(tau_agent_registry_watch_open(NULL, root), -TAU_EINVAL);
	remove_root(root);
}

static void test_registry_watch_file_in_the_way(void **state)
{
	char *root = make_root();
	tau_agent_registry_watch *w = NULL;
	char path[4200];

	(void)state;
	/* A file where the registry directory should be: watch its parent. */
	make_dirs(root, "var/lib/kubelet");
	write_file(root, "var/lib/kubelet/plugins_registry", "");
	assert_int_equal(tau_agent_registry_watch_open(&w, root), 0);
	assert_true(tau_agent_registry_watch_on_parent(w));
	snprintf(path, sizeof(path), "%s/var/lib/kubelet", root);
	assert_string_equal(tau_agent_registry_watch_path(w), path);

	/* Replaced by the directory: the watch moves onto it. */
	snprintf(path, sizeof(path), "%s/var/lib/kubelet/plugins_registry", root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(wait_and_drain(w), 1);
	assert_false(tau_agent_registry_watch_on_parent(w));
	assert_string_equal(tau_agent_registry_watch_path(w), path);
	tau_agent_registry_watch_free(w);
	remove_root(root);
}

static void test_rdma_state_fifo_does_not_hang(void **state)
{
	char *root = make_root();
	tau_agent_host_probe probe;
	char path[4200];

	(void)state;
	make_dirs(root, "dev");
	make_dirs(root, "sys/class/infiniband/mlx5_0/ports/1");
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/state", root);
	assert_int_equal(mkfifo(path, 0644), 0);
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_int_equal(probe.rdma_ports_total, 1);
	assert_int_equal(probe.rdma_ports_up, 0);
	assert_int_equal(probe.problems.n, 1);
	tau_agent_host_probe_free(&probe);
	remove_root(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_problem_list_caps_and_dedupes),
	        cmocka_unit_test(test_problem_text_is_truncated),
	        cmocka_unit_test(test_problem_list_has_and_copy),
	        cmocka_unit_test(test_registry_sockets),
	        cmocka_unit_test(test_registry_missing_means_absent),
	        cmocka_unit_test(test_registry_unreadable_means_unknown),
	        cmocka_unit_test(test_driver_cap),
	        cmocka_unit_test(test_gpu_device_nodes),
	        cmocka_unit_test(test_missing_dev_is_unknown_not_zero),
	        cmocka_unit_test(test_nvml_switch),
	        cmocka_unit_test(test_rdma_state_parse),
	        cmocka_unit_test(test_rdma_ports),
	        cmocka_unit_test(test_sysfs_numbered_and_rate),
	        cmocka_unit_test(test_rdma_port_details),
	        cmocka_unit_test(test_rdma_class_unreadable),
	        cmocka_unit_test(test_registry_watch),
	        cmocka_unit_test(test_registry_watch_existing),
	        cmocka_unit_test(test_registry_watch_file_in_the_way),
	        cmocka_unit_test(test_rdma_state_fifo_does_not_hang),
	};

	return cmocka_run_group_tests(tests, setup_nvml_off, NULL);
}
