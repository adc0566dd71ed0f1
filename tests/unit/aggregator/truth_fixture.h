/*
 * truth_fixture.h - NodeInventory messages with node-local facts, built in place for the
 * aggregator's unit tests (node truth, free-now capacity, fit), and nodes to store them under.
 */
#ifndef TAU_TEST_TRUTH_FIXTURE_H
#define TAU_TEST_TRUTH_FIXTURE_H

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/nodefacts.h"

#include <stdbool.h>
#include <stddef.h>

#define TRUTH_FIXTURE_MAX_DEV 300
#define TRUTH_FIXTURE_MAX_GPU 16
#define TRUTH_FIXTURE_MAX_DRA 300

/* protobuf-c strings are char *; the fixture's are literals it never writes to */
#define TRUTH_S(lit) ((char *)(lit))

/* One inventory: every message and string lives in the fixture (free() it). */
typedef struct truth_fixture {
	Tau__Inventory__V1__NodeInventory inv;
	Tau__Inventory__V1__LocalDevices ld;
	Tau__Inventory__V1__PodDevice dev[TRUTH_FIXTURE_MAX_DEV];
	Tau__Inventory__V1__PodDevice *devp[TRUTH_FIXTURE_MAX_DEV];
	char ids[TRUTH_FIXTURE_MAX_DEV][16];
	char name[64];
	Tau__Inventory__V1__Gpu gpu[TRUTH_FIXTURE_MAX_GPU];
	Tau__Inventory__V1__Gpu *gpup[TRUTH_FIXTURE_MAX_GPU];
	Tau__Inventory__V1__RdmaPort port[2];
	Tau__Inventory__V1__RdmaPort *portp[2];
	Tau__Inventory__V1__CsiDriver csi[2];
	Tau__Inventory__V1__CsiDriver *csip[2];
	Tau__Inventory__V1__DraDevice dra[TRUTH_FIXTURE_MAX_DRA];
	Tau__Inventory__V1__DraDevice *drap[TRUTH_FIXTURE_MAX_DRA];
	char dra_names[TRUTH_FIXTURE_MAX_DRA][24];
} truth_fixture;

/*
 * A node named `name` with `gpus` nvidia.com/gpu devices GPU-0.. (all allocatable, NVML sees
 * each healthy), the first `held` held by ml/train, then two rdma/ib devices, two ACTIVE
 * ports and one CSI driver answering ready.  Aborts on out of memory.
 */
truth_fixture *truth_fixture_node(const char *name, size_t gpus, size_t held);

/*
 * The agent read DRA devices (dra_devices_read), and a claim ml/claim of pod ml/infer holds
 * one more: `device` of `driver` and `pool` (literals kept as given; `device` copied).  The
 * caller adds them in the protocol's order.  Aborts beyond TRUTH_FIXTURE_MAX_DRA.
 */
void truth_fixture_dra_held(truth_fixture *f, const char *driver, const char *pool,
                            const char *device);

/* Mark NVML GPU `i` unhealthy with `reason`. */
void truth_fixture_gpu_unhealthy(truth_fixture *f, size_t i, const char *reason);

/* Take every RDMA port down. */
void truth_fixture_ports_down(truth_fixture *f);

/* Facts of a Ready Linux Node `name` of GPU class `cls` advertising `gpus` nvidia.com/gpu. */
tau_node_facts truth_fixture_facts(const char *name, const char *cls, int gpus);

#endif /* TAU_TEST_TRUTH_FIXTURE_H */
