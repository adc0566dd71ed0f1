/* truth_fixture.c - inventories with node-local facts for unit tests (truth_fixture.h). */
#include "truth_fixture.h"

#include "tau/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

truth_fixture *truth_fixture_node(const char *name, size_t gpus, size_t held)
{
	truth_fixture *f = calloc(1, sizeof(*f));
	size_t n = 0;

	if (f == NULL || gpus > TRUTH_FIXTURE_MAX_GPU)
		abort();
	snprintf(f->name, sizeof(f->name), "%s", name);
	tau__inventory__v1__node_inventory__init(&f->inv);
	tau__inventory__v1__local_devices__init(&f->ld);
	f->inv.node_name = f->name;
	f->inv.devices = &f->ld;
	f->ld.pod_resources_probed = true;
	f->ld.pod_resources_allocatable_known = true;
	f->ld.gpus_probed = true;
	f->ld.gpus_present = (uint32_t)gpus;
	f->ld.gpus_healthy = (uint32_t)gpus;
	f->ld.driver_version = TRUTH_S("550.54.15");
	for (size_t i = 0; i < gpus; i++, n++) {
		Tau__Inventory__V1__PodDevice *d = &f->dev[n];

		tau__inventory__v1__pod_device__init(d);
		snprintf(f->ids[n], sizeof(f->ids[n]), "GPU-%zu", i);
		d->resource_name = TRUTH_S("nvidia.com/gpu");
		d->device_id = f->ids[n];
		d->numa_node = i < gpus / 2 ? 0 : 1;
		d->allocatable = true;
		if (i < held) {
			d->pod_namespace = TRUTH_S("ml");
			d->pod_name = TRUTH_S("train");
			d->container_name = TRUTH_S("main");
		}
		f->devp[n] = d;
		tau__inventory__v1__gpu__init(&f->gpu[i]);
		f->gpu[i].index = (uint32_t)i;
		f->gpu[i].uuid = f->ids[n];
		f->gpu[i].name = TRUTH_S("NVIDIA H100 80GB HBM3");
		f->gpu[i].healthy = true;
		f->gpup[i] = &f->gpu[i];
	}
	for (size_t i = 0; i < 2; i++, n++) {
		Tau__Inventory__V1__PodDevice *d = &f->dev[n];

		tau__inventory__v1__pod_device__init(d);
		snprintf(f->ids[n], sizeof(f->ids[n]), "ib%zu", i);
		d->resource_name = TRUTH_S("rdma/ib");
		d->device_id = f->ids[n];
		d->numa_node = -1;
		d->allocatable = true;
		f->devp[n] = d;
		tau__inventory__v1__rdma_port__init(&f->port[i]);
		f->port[i].device = TRUTH_S(i == 0 ? "mlx5_0" : "mlx5_1");
		f->port[i].port = TRUTH_S("1");
		f->port[i].state = 4;
		f->port[i].phys_state = 5;
		f->port[i].rate_mbps = 400000;
		f->portp[i] = &f->port[i];
	}
	f->ld.n_pod_devices = n;
	f->ld.pod_devices = f->devp;
	f->ld.n_gpus = gpus;
	f->ld.gpus = f->gpup;
	f->ld.n_rdma_ports = 2;
	f->ld.rdma_ports = f->portp;
	f->ld.rdma_ports_total = 2;
	f->ld.rdma_ports_up = 2;
	tau__inventory__v1__csi_driver__init(&f->csi[0]);
	f->csi[0].name = TRUTH_S("disk.csi.azure.com");
	f->csi[0].probed = true;
	f->csi[0].probe_ready = TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE;
	f->csip[0] = &f->csi[0];
	f->inv.n_csi_drivers = 1;
	f->inv.csi_drivers = f->csip;
	return f;
}

void truth_fixture_dra_held(truth_fixture *f, const char *driver, const char *pool,
                            const char *device)
{
	size_t n = f->ld.n_dra_devices;
	Tau__Inventory__V1__DraDevice *d = &f->dra[n];

	if (n == TRUTH_FIXTURE_MAX_DRA)
		abort();
	tau__inventory__v1__dra_device__init(d);
	snprintf(f->dra_names[n], sizeof(f->dra_names[n]), "%s", device);
	d->driver_name = (char *)driver;
	d->pool_name = (char *)pool;
	d->device_name = f->dra_names[n];
	d->claim_namespace = TRUTH_S("ml");
	d->claim_name = TRUTH_S("claim");
	d->pod_namespace = TRUTH_S("ml");
	d->pod_name = TRUTH_S("infer");
	d->container_name = TRUTH_S("main");
	f->drap[n] = d;
	f->ld.dra_devices = f->drap;
	f->ld.n_dra_devices = n + 1;
	f->ld.dra_devices_read = true;
}

void truth_fixture_gpu_unhealthy(truth_fixture *f, size_t i, const char *reason)
{
	f->gpu[i].healthy = false;
	f->gpu[i].reason = (char *)reason;
	f->ld.gpus_healthy--;
}

void truth_fixture_ports_down(truth_fixture *f)
{
	for (size_t i = 0; i < f->ld.n_rdma_ports; i++)
		f->port[i].state = 1;
	f->ld.rdma_ports_up = 0;
}

tau_node_facts truth_fixture_facts(const char *name, const char *cls, int gpus)
{
	char json[512];
	cJSON *root = NULL;
	tau_node_facts f = {0};

	snprintf(json, sizeof(json),
	         "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/os\":\"linux\","
	         "\"tau.azure.com/gpu-class\":\"%s\"}},"
	         "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"%d\"},"
	         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	         name, cls, gpus);
	if (tau_json_parse(&root, json, strlen(json), 0) < 0 ||
	    tau_node_facts_from_json(&f, root) < 0)
		abort();
	cJSON_Delete(root);
	return f;
}
