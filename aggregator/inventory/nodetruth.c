/*
 * nodetruth.c - decode an inventory's node-local facts into one compact block.
 *
 * The block is built twice by the same code: once to measure, once to fill
 * the single allocation that holds the struct, its arrays and every string
 * (so it is freed with free() alone and costs one malloc header per node).
 * A device's resource name is shared by the devices of that resource, and
 * empty strings are stored as NULL.  An inventory without node-local facts
 * gets no block of its own: every such node lends the one empty block.  Everything a reader asks
 * often (the GPU figures, the health verdict, the problem count) is derived here, once per
 * inventory, not per query.
 */
#include "nodetruth.h"

#include "tau/error.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Measure (base NULL) or fill a block. */
typedef struct packer {
	char *base;
	size_t used;
} packer;

static void *pk_alloc(packer *p, size_t n)
{
	size_t a = alignof(max_align_t), at = (p->used + a - 1) / a * a;

	p->used = at + n;
	return p->base != NULL ? p->base + at : NULL;
}

static const char *pk_str(packer *p, const char *s)
{
	size_t n;
	char *dst;

	if (s == NULL || s[0] == '\0')
		return NULL;
	n = strlen(s) + 1;
	dst = p->base != NULL ? p->base + p->used : NULL;
	p->used += n;
	if (dst != NULL)
		memcpy(dst, s, n);
	return dst;
}

static const char *str_or_empty(const char *s)
{
	return s != NULL ? s : "";
}

static int check_text(const char *s, size_t max, const char *field, size_t i)
{
	size_t n = s != NULL ? strlen(s) : 0;

	if (n > max)
		return tau_error_set(TAU_ETOOBIG, "%s[%zu]: %zu bytes over the limit of %zu", field,
		                     i, n, max);
	return 0;
}

static int check_count(size_t n, size_t max, const char *field)
{
	if (n > max)
		return tau_error_set(TAU_ETOOBIG, "%s: %zu entries over the limit of %zu", field, n,
		                     max);
	return 0;
}

static int check_device(const Tau__Inventory__V1__PodDevice *d,
                        const Tau__Inventory__V1__PodDevice *prev, size_t i)
{
	int rc;
	bool held = str_or_empty(d->pod_name)[0] != '\0';

	if ((rc = check_text(d->resource_name, TAU_NODETRUTH_MAX_ID, "pod_devices.resource_name",
	                     i)) < 0 ||
	    (rc = check_text(d->device_id, TAU_NODETRUTH_MAX_ID, "pod_devices.device_id", i)) < 0 ||
	    (rc = check_text(d->pod_namespace, TAU_NODETRUTH_MAX_ID, "pod_devices.pod_namespace",
	                     i)) < 0 ||
	    (rc = check_text(d->pod_name, TAU_NODETRUTH_MAX_ID, "pod_devices.pod_name", i)) < 0 ||
	    (rc = check_text(d->container_name, TAU_NODETRUTH_MAX_ID, "pod_devices.container_name",
	                     i)) < 0)
		return rc;
	if (str_or_empty(d->resource_name)[0] == '\0' || str_or_empty(d->device_id)[0] == '\0')
		return tau_error_set(TAU_EINVAL,
		                     "pod_devices[%zu]: resource_name and device_id are "
		                     "required",
		                     i);
	if (held && str_or_empty(d->pod_namespace)[0] == '\0')
		return tau_error_set(TAU_EINVAL, "pod_devices[%zu]: pod %s has no namespace", i,
		                     d->pod_name);
	if (d->numa_node < -1 || d->numa_node > 1023)
		return tau_error_set(TAU_EINVAL, "pod_devices[%zu]: numa_node %lld out of -1..1023",
		                     i, (long long)d->numa_node);
	if (prev != NULL) {
		int c = strcmp(str_or_empty(prev->resource_name), d->resource_name);

		if (c == 0)
			c = strcmp(str_or_empty(prev->device_id), d->device_id);
		if (c >= 0)
			return tau_error_set(TAU_EINVAL,
			                     "pod_devices[%zu]: %s %s is %s (the list is sorted by "
			                     "resource, then ID, each device once)",
			                     i, d->resource_name, d->device_id,
			                     c == 0 ? "listed twice" : "out of order");
	}
	return 0;
}

static int dra_key_cmp(const Tau__Inventory__V1__DraDevice *a,
                       const Tau__Inventory__V1__DraDevice *b)
{
	int c = strcmp(str_or_empty(a->driver_name), str_or_empty(b->driver_name));

	if (c == 0)
		c = strcmp(str_or_empty(a->pool_name), str_or_empty(b->pool_name));
	return c != 0 ? c : strcmp(str_or_empty(a->device_name), str_or_empty(b->device_name));
}

static int check_dra(const Tau__Inventory__V1__DraDevice *d,
                     const Tau__Inventory__V1__DraDevice *prev, size_t i)
{
	int rc;

	if ((rc = check_text(d->driver_name, TAU_NODETRUTH_MAX_ID, "dra_devices.driver_name", i)) <
	            0 ||
	    (rc = check_text(d->pool_name, TAU_NODETRUTH_MAX_ID, "dra_devices.pool_name", i)) < 0 ||
	    (rc = check_text(d->device_name, TAU_NODETRUTH_MAX_ID, "dra_devices.device_name", i)) <
	            0 ||
	    (rc = check_text(d->claim_namespace, TAU_NODETRUTH_MAX_ID,
	                     "dra_devices.claim_namespace", i)) < 0 ||
	    (rc = check_text(d->claim_name, TAU_NODETRUTH_MAX_ID, "dra_devices.claim_name", i)) <
	            0 ||
	    (rc = check_text(d->pod_namespace, TAU_NODETRUTH_MAX_ID, "dra_devices.pod_namespace",
	                     i)) < 0 ||
	    (rc = check_text(d->pod_name, TAU_NODETRUTH_MAX_ID, "dra_devices.pod_name", i)) < 0 ||
	    (rc = check_text(d->container_name, TAU_NODETRUTH_MAX_ID, "dra_devices.container_name",
	                     i)) < 0)
		return rc;
	if (str_or_empty(d->driver_name)[0] == '\0' || str_or_empty(d->pool_name)[0] == '\0' ||
	    str_or_empty(d->device_name)[0] == '\0')
		return tau_error_set(TAU_EINVAL,
		                     "dra_devices[%zu]: driver_name, pool_name and device_name are "
		                     "required",
		                     i);
	if (prev != NULL) {
		int c = dra_key_cmp(prev, d);

		if (c >= 0)
			return tau_error_set(
			        TAU_EINVAL,
			        "dra_devices[%zu]: %s/%s/%s is %s (the list is sorted by "
			        "driver, pool, then device, each device once)",
			        i, d->driver_name, d->pool_name, d->device_name,
			        c == 0 ? "listed twice" : "out of order");
	}
	return 0;
}

static int check_inventory(const Tau__Inventory__V1__NodeInventory *inv)
{
	const Tau__Inventory__V1__LocalDevices *ld = inv->devices;
	int rc;

	if ((rc = check_count(inv->n_csi_drivers, TAU_NODETRUTH_MAX_CSI, "csi_drivers")) < 0)
		return rc;
	for (size_t i = 0; i < inv->n_csi_drivers; i++) {
		const Tau__Inventory__V1__CsiDriver *c = inv->csi_drivers[i];

		if ((rc = check_text(c->name, TAU_NODETRUTH_MAX_ID, "csi_drivers.name", i)) < 0 ||
		    (rc = check_text(c->probe_error, TAU_NODETRUTH_MAX_TEXT,
		                     "csi_drivers.probe_error", i)) < 0)
			return rc;
	}
	if (ld == NULL)
		return 0;
	if ((rc = check_count(ld->n_pod_devices, TAU_NODETRUTH_MAX_DEVICES, "pod_devices")) < 0 ||
	    (rc = check_count(ld->n_dra_devices, TAU_NODETRUTH_MAX_DRA, "dra_devices")) < 0 ||
	    (rc = check_count(ld->n_gpus, TAU_NODETRUTH_MAX_GPUS, "gpus")) < 0 ||
	    (rc = check_count(ld->n_rdma_ports, TAU_NODETRUTH_MAX_PORTS, "rdma_ports")) < 0 ||
	    (rc = check_text(ld->pod_resources_note, TAU_NODETRUTH_MAX_TEXT, "pod_resources_note",
	                     0)) < 0 ||
	    (rc = check_text(ld->gpus_not_probed_reason, TAU_NODETRUTH_MAX_TEXT,
	                     "gpus_not_probed_reason", 0)) < 0 ||
	    (rc = check_text(ld->driver_version, TAU_NODETRUTH_MAX_ID, "driver_version", 0)) < 0 ||
	    (rc = check_text(ld->cuda_version, TAU_NODETRUTH_MAX_ID, "cuda_version", 0)) < 0)
		return rc;
	for (size_t i = 0; i < ld->n_pod_devices; i++) {
		if ((rc = check_device(ld->pod_devices[i], i > 0 ? ld->pod_devices[i - 1] : NULL,
		                       i)) < 0)
			return rc;
	}
	for (size_t i = 0; i < ld->n_dra_devices; i++) {
		if ((rc = check_dra(ld->dra_devices[i], i > 0 ? ld->dra_devices[i - 1] : NULL, i)) <
		    0)
			return rc;
	}
	for (size_t i = 0; i < ld->n_gpus; i++) {
		const Tau__Inventory__V1__Gpu *g = ld->gpus[i];

		if ((rc = check_text(g->uuid, TAU_NODETRUTH_MAX_ID, "gpus.uuid", i)) < 0 ||
		    (rc = check_text(g->name, TAU_NODETRUTH_MAX_ID, "gpus.name", i)) < 0 ||
		    (rc = check_text(g->reason, TAU_NODETRUTH_MAX_TEXT, "gpus.reason", i)) < 0)
			return rc;
	}
	for (size_t i = 0; i < ld->n_rdma_ports; i++) {
		const Tau__Inventory__V1__RdmaPort *p = ld->rdma_ports[i];

		if ((rc = check_text(p->device, TAU_NODETRUTH_MAX_ID, "rdma_ports.device", i)) <
		            0 ||
		    (rc = check_text(p->port, TAU_NODETRUTH_MAX_ID, "rdma_ports.port", i)) < 0 ||
		    (rc = check_text(p->link_layer, TAU_NODETRUTH_MAX_ID, "rdma_ports.link_layer",
		                     i)) < 0)
			return rc;
		if (p->state > 5 || p->phys_state > 7)
			return tau_error_set(
			        TAU_EINVAL,
			        "rdma_ports[%zu]: state %u / phys_state %u out of range "
			        "(0..5 / 0..7)",
			        i, p->state, p->phys_state);
	}
	return 0;
}

static tau_truth_tri tri(Tau__Inventory__V1__TriState s)
{
	return s == TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE    ? TAU_TRUTH_TRUE
	       : s == TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_FALSE ? TAU_TRUTH_FALSE
	                                                             : TAU_TRUTH_UNKNOWN;
}

/* The NVML GPU whose UUID is `id`, or NULL. */
static const tau_truth_gpu *gpu_by_uuid(const tau_nodetruth *t, const char *id)
{
	for (size_t i = 0; i < t->n_gpus; i++) {
		if (t->gpus[i].uuid != NULL && strcmp(t->gpus[i].uuid, id) == 0)
			return &t->gpus[i];
	}
	return NULL;
}

static bool is_gpu_resource(const char *r)
{
	return r != NULL && strcmp(r, TAU_NODETRUTH_GPU_RESOURCE) == 0;
}

/* Lay out (and when p->base is set, fill) the block for `inv`. */
static tau_nodetruth *build(packer *p, const Tau__Inventory__V1__NodeInventory *inv)
{
	const Tau__Inventory__V1__LocalDevices *ld = inv->devices;
	tau_nodetruth *t = pk_alloc(p, sizeof(*t));
	tau_truth_device *dev;
	tau_truth_dra_device *dra;
	tau_truth_gpu *gpus;
	tau_truth_port *ports;
	tau_truth_csi *csi;
	size_t nd = ld != NULL ? ld->n_pod_devices : 0, ng = ld != NULL ? ld->n_gpus : 0;
	size_t np = ld != NULL ? ld->n_rdma_ports : 0, nc = inv->n_csi_drivers;
	size_t nr = ld != NULL ? ld->n_dra_devices : 0;

	dev = nd > 0 ? pk_alloc(p, nd * sizeof(*dev)) : NULL;
	dra = nr > 0 ? pk_alloc(p, nr * sizeof(*dra)) : NULL;
	gpus = ng > 0 ? pk_alloc(p, ng * sizeof(*gpus)) : NULL;
	ports = np > 0 ? pk_alloc(p, np * sizeof(*ports)) : NULL;
	csi = nc > 0 ? pk_alloc(p, nc * sizeof(*csi)) : NULL;
	if (t != NULL) {
		memset(t, 0, sizeof(*t));
		t->n_devices = nd;
		t->devices = dev;
		t->n_dra = nr;
		t->dra = dra;
		t->n_gpus = ng;
		t->gpus = gpus;
		t->n_ports = np;
		t->ports = ports;
		t->n_csi = nc;
		t->csi = csi;
	}
	for (size_t i = 0; i < ng; i++) {
		const Tau__Inventory__V1__Gpu *g = ld->gpus[i];
		const char *uuid = pk_str(p, g->uuid), *model = pk_str(p, g->name);
		const char *reason = pk_str(p, g->healthy ? NULL : g->reason);

		if (gpus != NULL)
			gpus[i] = (tau_truth_gpu){.index = g->index,
			                          .uuid = uuid,
			                          .model = model,
			                          .healthy = g->healthy,
			                          .reason = reason};
	}
	for (size_t i = 0; i < nd; i++) {
		const Tau__Inventory__V1__PodDevice *d = ld->pod_devices[i];
		bool same = i > 0 && strcmp(str_or_empty(ld->pod_devices[i - 1]->resource_name),
		                            str_or_empty(d->resource_name)) == 0;
		const char *res = same ? (dev != NULL ? dev[i - 1].resource : NULL)
		                       : pk_str(p, d->resource_name);
		const char *id = pk_str(p, d->device_id);
		bool held = str_or_empty(d->pod_name)[0] != '\0';
		const char *ns = held ? pk_str(p, d->pod_namespace) : NULL;
		const char *pod = held ? pk_str(p, d->pod_name) : NULL;
		const char *ctr = held ? pk_str(p, d->container_name) : NULL;

		if (dev != NULL)
			dev[i] = (tau_truth_device){.resource = res,
			                            .id = id,
			                            .pod_namespace = ns,
			                            .pod_name = pod,
			                            .container = ctr,
			                            .numa_node = (int32_t)d->numa_node,
			                            .allocatable = d->allocatable};
	}
	for (size_t i = 0; i < nr; i++) {
		const Tau__Inventory__V1__DraDevice *d = ld->dra_devices[i];
		bool same =
		        i > 0 && strcmp(ld->dra_devices[i - 1]->driver_name, d->driver_name) == 0;
		const char *drv =
		        same ? (dra != NULL ? dra[i - 1].driver : NULL) : pk_str(p, d->driver_name);
		const char *pool = pk_str(p, d->pool_name), *name = pk_str(p, d->device_name);
		const char *cns = pk_str(p, d->claim_namespace), *cn = pk_str(p, d->claim_name);
		const char *pns = pk_str(p, d->pod_namespace), *pod = pk_str(p, d->pod_name);
		const char *ctr = pk_str(p, d->container_name);

		if (dra != NULL)
			dra[i] = (tau_truth_dra_device){.driver = drv,
			                                .pool = pool,
			                                .device = name,
			                                .claim_namespace = cns,
			                                .claim_name = cn,
			                                .pod_namespace = pns,
			                                .pod_name = pod,
			                                .container = ctr};
	}
	for (size_t i = 0; i < np; i++) {
		const Tau__Inventory__V1__RdmaPort *r = ld->rdma_ports[i];
		const char *devname = pk_str(p, r->device), *port = pk_str(p, r->port);
		const char *ll = pk_str(p, r->link_layer);

		if (ports != NULL)
			ports[i] = (tau_truth_port){.device = devname,
			                            .port = port,
			                            .link_layer = ll,
			                            .rate_mbps = r->rate_mbps,
			                            .link_downed = r->link_downed,
			                            .state = (uint8_t)r->state,
			                            .phys_state = (uint8_t)r->phys_state,
			                            .active = r->state == 4 || r->state == 5};
	}
	for (size_t i = 0; i < nc; i++) {
		const Tau__Inventory__V1__CsiDriver *c = inv->csi_drivers[i];
		const char *name = pk_str(p, c->name);
		tau_truth_tri ready = c->probed ? tri(c->probe_ready) : TAU_TRUTH_UNKNOWN;
		const char *err = pk_str(p, ready == TAU_TRUTH_TRUE ? NULL : c->probe_error);

		if (csi != NULL)
			csi[i] = (tau_truth_csi){.name = name,
			                         .in_csi_node = c->in_csi_node,
			                         .socket_present = c->socket_present,
			                         .probed = c->probed,
			                         .ready = ready,
			                         .error = err};
	}
	if (ld != NULL) {
		const char *note = pk_str(p, ld->pod_resources_note);
		const char *why = pk_str(p, ld->gpus_probed ? NULL : ld->gpus_not_probed_reason);
		const char *drv = pk_str(p, ld->driver_version),
		           *cuda = pk_str(p, ld->cuda_version);

		if (t != NULL) {
			t->pod_resources_known = ld->pod_resources_probed;
			t->dra_known = ld->pod_resources_probed && ld->dra_devices_read &&
			               ld->dra_devices_dropped == 0;
			t->dra_dropped = ld->dra_devices_dropped;
			t->allocatable_known = ld->pod_resources_allocatable_known;
			t->pod_resources_note = note;
			t->gpus_probed = ld->gpus_probed;
			t->gpus_not_probed_reason = why;
			t->gpus_present = ld->gpus_present;
			t->gpus_healthy = ld->gpus_healthy;
			t->driver_version = drv;
			t->cuda_version = cuda;
			t->rdma_ports_total = ld->rdma_ports_total;
			t->rdma_ports_up = ld->rdma_ports_up;
		}
	}
	return t;
}

/* Device health from NVML, the GPU figures, the problems and the verdict. */
static void derive(tau_nodetruth *t)
{
	tau_truth_device *dev = (tau_truth_device *)t->devices;
	size_t problems = 0;

	t->gpu.known = t->pod_resources_known && t->allocatable_known;
	for (size_t i = 0; i < t->n_devices; i++) {
		tau_truth_device *d = &dev[i];
		const tau_truth_gpu *g = is_gpu_resource(d->resource) && t->gpus_probed
		                                 ? gpu_by_uuid(t, d->id)
		                                 : NULL;

		d->healthy = d->allocatable && (g == NULL || g->healthy);
		d->reason = !d->allocatable ? "kubelet no longer lists it as allocatable"
		            : !d->healthy   ? (g->reason != NULL ? g->reason : "NVML: unhealthy")
		                            : NULL;
		if (!is_gpu_resource(d->resource))
			continue;
		t->gpu.devices++;
		t->gpu.healthy += d->healthy ? 1 : 0;
		t->gpu.in_use += d->pod_name != NULL ? 1 : 0;
		t->gpu.free += d->healthy && d->pod_name == NULL ? 1 : 0;
		problems += d->allocatable ? 0 : 1;
	}
	for (size_t i = 0; i < t->n_gpus; i++)
		problems += t->gpus[i].healthy ? 0 : 1;
	for (size_t i = 0; i < t->n_ports; i++)
		problems += t->ports[i].active ? 0 : 1;
	for (size_t i = 0; i < t->n_csi; i++)
		problems += t->csi[i].probed && t->csi[i].ready != TAU_TRUTH_TRUE ? 1 : 0;
	t->n_problems = problems;
	t->health = problems > 0                               ? TAU_TRUTH_HEALTH_DEGRADED
	            : t->gpus_probed || t->pod_resources_known ? TAU_TRUTH_HEALTH_OK
	                                                       : TAU_TRUTH_HEALTH_UNKNOWN;
}

/*
 * The block of an inventory without node-local facts: every figure unknown, no list.  One
 * for the process, lent to every such node (tau_nodetruth_free leaves it), so an agent that
 * reports no devices costs no block of its own.  Never written.
 */
static const tau_nodetruth empty_block = {.health = TAU_TRUTH_HEALTH_UNKNOWN};

/* `t` (built and derived, with no list or string) says nothing empty_block does not. */
static bool says_nothing(const tau_nodetruth *t)
{
	return !t->pod_resources_known && !t->allocatable_known && !t->dra_known &&
	       t->dra_dropped == 0 && !t->gpus_probed && t->gpus_present == 0 &&
	       t->gpus_healthy == 0 && t->rdma_ports_total == 0 && t->rdma_ports_up == 0 &&
	       !t->gpu.known && t->gpu.devices == 0 && t->gpu.healthy == 0 && t->gpu.in_use == 0 &&
	       t->gpu.free == 0 && t->health == empty_block.health && t->n_problems == 0;
}

int tau_nodetruth_decode(tau_nodetruth **out, const Tau__Inventory__V1__NodeInventory *inv)
{
	packer p = {0};
	tau_nodetruth *t;
	int rc = check_inventory(inv);

	if (rc < 0)
		return rc;
	(void)build(&p, inv);
	if (p.used == sizeof(*t)) {
		/* No list and no string: built on the stack, it is kept only if it says more. */
		tau_nodetruth scalars;

		p = (packer){.base = (char *)&scalars};
		(void)build(&p, inv);
		derive(&scalars);
		if (says_nothing(&scalars)) {
			*out = (tau_nodetruth *)(void *)&empty_block;
			return 0;
		}
		p = (packer){.used = sizeof(*t)};
	}
	p.base = malloc(p.used);
	if (p.base == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory decoding node %s's devices",
		                     str_or_empty(inv->node_name));
	t = (tau_nodetruth *)(void *)p.base;
	p.used = 0;
	(void)build(&p, inv);
	t->bytes = p.used;
	derive(t);
	*out = t;
	return 0;
}

void tau_nodetruth_free(tau_nodetruth *t)
{
	if (t != &empty_block)
		free(t);
}

bool tau_nodetruth_is_shared(const tau_nodetruth *t)
{
	return t == &empty_block;
}

bool tau_nodetruth_problem(const tau_nodetruth *t, size_t i, char *buf, size_t cap)
{
	for (size_t k = 0; k < t->n_gpus; k++) {
		const tau_truth_gpu *g = &t->gpus[k];

		if (g->healthy || i-- > 0)
			continue;
		snprintf(buf, cap, "GPU %u (%s) unhealthy: %s", g->index,
		         g->uuid != NULL ? g->uuid : "no UUID",
		         g->reason != NULL ? g->reason : "NVML says so");
		return true;
	}
	for (size_t k = 0; k < t->n_devices; k++) {
		const tau_truth_device *d = &t->devices[k];

		if (!is_gpu_resource(d->resource) || d->allocatable || i-- > 0)
			continue;
		snprintf(buf, cap, "%s %s: %s", d->resource, d->id, d->reason);
		return true;
	}
	for (size_t k = 0; k < t->n_ports; k++) {
		const tau_truth_port *p = &t->ports[k];

		if (p->active || i-- > 0)
			continue;
		snprintf(buf, cap, "RDMA port %s/%s is not ACTIVE (state %u, phys_state %u)",
		         str_or_empty(p->device), str_or_empty(p->port), p->state, p->phys_state);
		return true;
	}
	for (size_t k = 0; k < t->n_csi; k++) {
		const tau_truth_csi *c = &t->csi[k];

		if (!c->probed || c->ready == TAU_TRUTH_TRUE || i-- > 0)
			continue;
		snprintf(buf, cap, "CSI driver %s: Probe %s%s%s", str_or_empty(c->name),
		         c->ready == TAU_TRUTH_FALSE ? "answered not ready" : "did not answer",
		         c->error != NULL ? ": " : "", c->error != NULL ? c->error : "");
		return true;
	}
	return false;
}

bool tau_nodetruth_has_active_port(const tau_nodetruth *t)
{
	return t->rdma_ports_up > 0;
}

const char *tau_nodetruth_health_name(tau_truth_health h)
{
	return h == TAU_TRUTH_HEALTH_OK         ? "ok"
	       : h == TAU_TRUTH_HEALTH_DEGRADED ? "degraded"
	                                        : "unknown";
}
