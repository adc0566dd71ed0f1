/*
 * podresources.c - kubelet's pod-resources API joined into one list of devices.
 *
 * The one idea: a device is identified by (resource name, device ID); GetAllocatableResources
 * says which exist and are allocatable, List says which pod holds which, and the join keeps
 * both sides: an allocated device kubelet no longer lists as allocatable (its plugin marked it
 * unhealthy while a pod holds it) stays in the list with allocatable=false.  DRA devices are a
 * second list, identified by (driver, pool, device) as ResourceSlices name them: only held ones
 * are listed (which exist is the slices' business, read by the aggregator).  A device two
 * containers share (one claim in both, or shares of one device) is listed once, with the first
 * holder.  Exclusive CPUs and memory are not the agent's business.
 */
#include "podresources.h"

#include "hostprobe.h"
#include "localrpc.h"
#include "records.h"

#include "tau/error.h"

#include "kubelet/podresources/v1/podresources.pb-c.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define METHOD_ALLOCATABLE "/v1.PodResourcesLister/GetAllocatableResources"
#define METHOD_LIST        "/v1.PodResourcesLister/List"

void tau_agent_podres_init(tau_agent_podres *r)
{
	memset(r, 0, sizeof(*r));
}

static const size_t DEVICE_STRINGS[] = {
        offsetof(tau_agent_pod_device, resource),      offsetof(tau_agent_pod_device, id),
        offsetof(tau_agent_pod_device, pod_namespace), offsetof(tau_agent_pod_device, pod_name),
        offsetof(tau_agent_pod_device, container),
};
static const size_t DRA_STRINGS[] = {
        offsetof(tau_agent_dra_device, driver),     offsetof(tau_agent_dra_device, pool),
        offsetof(tau_agent_dra_device, device),     offsetof(tau_agent_dra_device, claim_namespace),
        offsetof(tau_agent_dra_device, claim_name), offsetof(tau_agent_dra_device, pod_namespace),
        offsetof(tau_agent_dra_device, pod_name),   offsetof(tau_agent_dra_device, container),
};

/* Free what the probe found and forget it (the note stays). */
static void podres_clear(tau_agent_podres *r)
{
	tau_agent_records_free(r->devices, r->n_devices, sizeof(*r->devices),
	                       TAU_AGENT_RECORD_STRINGS(DEVICE_STRINGS));
	tau_agent_records_free(r->dra, r->n_dra, sizeof(*r->dra),
	                       TAU_AGENT_RECORD_STRINGS(DRA_STRINGS));
	r->devices = NULL;
	r->n_devices = 0;
	r->n_dropped = 0;
	r->dra = NULL;
	r->n_dra = 0;
	r->n_dra_dropped = 0;
}

void tau_agent_podres_free(tau_agent_podres *r)
{
	if (r == NULL)
		return;
	podres_clear(r);
	free(r->note);
	tau_agent_podres_init(r);
}

static int64_t first_numa(const V1__ContainerDevices *cd)
{
	if (cd->topology == NULL || cd->topology->n_nodes == 0 || cd->topology->nodes[0] == NULL)
		return -1;
	return cd->topology->nodes[0]->id >= 0 ? cd->topology->nodes[0]->id : -1;
}

/* The device (resource, id), added when absent; NULL when the cap is reached (counted). */
static int device_get(tau_agent_podres *r, const char *resource, const char *id,
                      tau_agent_pod_device **out)
{
	tau_agent_pod_device *d;

	*out = NULL;
	for (size_t i = 0; i < r->n_devices; i++)
		if (strcmp(r->devices[i].resource, resource) == 0 &&
		    strcmp(r->devices[i].id, id) == 0) {
			*out = &r->devices[i];
			return 0;
		}
	if (r->n_devices == TAU_AGENT_PODRESOURCES_MAX_DEVICES) {
		r->n_dropped++;
		return 0;
	}
	d = &r->devices[r->n_devices];
	memset(d, 0, sizeof(*d));
	d->numa_node = -1;
	d->resource = strdup(resource);
	d->id = strdup(id);
	r->n_devices++;
	if (d->resource == NULL || d->id == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory reading pod resources");
	*out = d;
	return 0;
}

static int add_allocatable(tau_agent_podres *r, const V1__AllocatableResourcesResponse *resp)
{
	for (size_t i = 0; i < resp->n_devices; i++) {
		const V1__ContainerDevices *cd = resp->devices[i];

		for (size_t j = 0; cd != NULL && j < cd->n_device_ids; j++) {
			tau_agent_pod_device *d;
			int rc = device_get(r, cd->resource_name, cd->device_ids[j], &d);

			if (rc < 0)
				return rc;
			if (d == NULL)
				continue;
			d->allocatable = true;
			d->numa_node = first_numa(cd);
		}
	}
	return 0;
}

static bool name_ok(const char *s)
{
	return s != NULL && s[0] != '\0' && strlen(s) <= TAU_AGENT_PODRESOURCES_MAX_NAME;
}

/* A name that may be empty (a holder's), within the limit. */
static bool opt_name_ok(const char *s)
{
	return s == NULL || strlen(s) <= TAU_AGENT_PODRESOURCES_MAX_NAME;
}

static int dra_cmp_key(const tau_agent_dra_device *d, const char *driver, const char *pool,
                       const char *device)
{
	int c = strcmp(d->driver, driver);

	if (c == 0)
		c = strcmp(d->pool, pool);
	return c != 0 ? c : strcmp(d->device, device);
}

/* One claim resource held by (pod, container, claim): kept once, the first holder wins. */
static int add_dra(tau_agent_podres *r, const V1__PodResources *pod,
                   const V1__ContainerResources *ctr, const V1__DynamicResource *dr,
                   const V1__ClaimResource *cr)
{
	tau_agent_dra_device *d;

	if (cr->device_name == NULL || cr->device_name[0] == '\0')
		return 0; /* not a device (kubelet's API leaves room for other kinds) */
	if (!name_ok(cr->driver_name) || !name_ok(cr->pool_name) || !name_ok(cr->device_name) ||
	    !opt_name_ok(dr->claim_namespace) || !opt_name_ok(dr->claim_name) ||
	    !opt_name_ok(pod->namespace_) || !opt_name_ok(pod->name) || !opt_name_ok(ctr->name)) {
		r->n_dra_dropped++;
		return 0;
	}
	for (size_t i = 0; i < r->n_dra; i++)
		if (dra_cmp_key(&r->dra[i], cr->driver_name, cr->pool_name, cr->device_name) == 0)
			return 0;
	if (r->n_dra == TAU_AGENT_PODRESOURCES_MAX_DRA_DEVICES) {
		r->n_dra_dropped++;
		return 0;
	}
	if (r->dra == NULL) {
		r->dra = calloc(TAU_AGENT_PODRESOURCES_MAX_DRA_DEVICES, sizeof(*r->dra));
		if (r->dra == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory reading pod resources");
	}
	d = &r->dra[r->n_dra++];
	memset(d, 0, sizeof(*d));
	d->driver = strdup(cr->driver_name);
	d->pool = strdup(cr->pool_name);
	d->device = strdup(cr->device_name);
	d->claim_namespace = strdup(dr->claim_namespace != NULL ? dr->claim_namespace : "");
	d->claim_name = strdup(dr->claim_name != NULL ? dr->claim_name : "");
	d->pod_namespace = strdup(pod->namespace_ != NULL ? pod->namespace_ : "");
	d->pod_name = strdup(pod->name != NULL ? pod->name : "");
	d->container = strdup(ctr->name != NULL ? ctr->name : "");
	if (d->driver == NULL || d->pool == NULL || d->device == NULL ||
	    d->claim_namespace == NULL || d->claim_name == NULL || d->pod_namespace == NULL ||
	    d->pod_name == NULL || d->container == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory reading pod resources");
	return 0;
}

static int add_dynamic(tau_agent_podres *r, const V1__PodResources *pod,
                       const V1__ContainerResources *ctr)
{
	for (size_t k = 0; k < ctr->n_dynamic_resources; k++) {
		const V1__DynamicResource *dr = ctr->dynamic_resources[k];

		for (size_t j = 0; dr != NULL && j < dr->n_claim_resources; j++) {
			int rc;

			if (dr->claim_resources[j] == NULL)
				continue;
			rc = add_dra(r, pod, ctr, dr, dr->claim_resources[j]);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int add_holders(tau_agent_podres *r, const V1__ListPodResourcesResponse *resp)
{
	for (size_t p = 0; p < resp->n_pod_resources; p++) {
		const V1__PodResources *pod = resp->pod_resources[p];

		for (size_t c = 0; pod != NULL && c < pod->n_containers; c++) {
			const V1__ContainerResources *ctr = pod->containers[c];
			int drc = ctr != NULL ? add_dynamic(r, pod, ctr) : 0;

			if (drc < 0)
				return drc;
			for (size_t k = 0; ctr != NULL && k < ctr->n_devices; k++) {
				const V1__ContainerDevices *cd = ctr->devices[k];

				for (size_t j = 0; cd != NULL && j < cd->n_device_ids; j++) {
					tau_agent_pod_device *d;
					int rc = device_get(r, cd->resource_name, cd->device_ids[j],
					                    &d);

					if (rc < 0)
						return rc;
					if (d == NULL || d->pod_name != NULL)
						continue; /* over the cap, or held twice: first wins
						           */
					if (d->numa_node < 0)
						d->numa_node = first_numa(cd);
					d->pod_namespace = strdup(pod->namespace_);
					d->pod_name = strdup(pod->name);
					d->container = strdup(ctr->name);
					if (d->pod_namespace == NULL || d->pod_name == NULL ||
					    d->container == NULL)
						return tau_error_set(
						        TAU_ENOMEM,
						        "out of memory reading pod resources");
				}
			}
		}
	}
	return 0;
}

static int device_cmp(const void *a, const void *b)
{
	const tau_agent_pod_device *x = a, *y = b;
	int c = strcmp(x->resource, y->resource);

	return c != 0 ? c : strcmp(x->id, y->id);
}

static int dra_cmp(const void *a, const void *b)
{
	const tau_agent_dra_device *y = b;

	return dra_cmp_key(a, y->driver, y->pool, y->device);
}

int tau_agent_podres_probe(tau_agent_podres *r, const char *host_root, int timeout_ms)
{
	V1__AllocatableResourcesRequest areq = V1__ALLOCATABLE_RESOURCES_REQUEST__INIT;
	V1__ListPodResourcesRequest lreq = V1__LIST_POD_RESOURCES_REQUEST__INIT;
	ProtobufCMessage *alloc = NULL, *list = NULL;
	char path[PATH_MAX], why[TAU_AGENT_LOCALRPC_WHY_MAX], alloc_why[TAU_AGENT_LOCALRPC_WHY_MAX];
	tau_rpc_channel *ch = NULL;
	int rc = 0;

	tau_agent_podres_free(r);
	if (timeout_ms <= 0)
		timeout_ms = TAU_AGENT_PODRESOURCES_TIMEOUT_MS;
	if (host_root == NULL || host_root[0] == '\0')
		host_root = "/";
	if (tau_agent_host_path(path, sizeof(path), host_root, TAU_AGENT_PODRESOURCES_SOCKET) < 0) {
		tau_agent_note_set(&r->note, "%s", tau_error_last()->msg);
		return 0;
	}
	rc = tau_agent_local_channel_open(&ch, path, TAU_AGENT_PODRESOURCES_SOCKET, why,
	                                  sizeof(why));
	if (rc < 0) {
		tau_agent_note_set(&r->note, "kubelet pod-resources not reachable: %s", why);
		return 0;
	}
	r->devices = calloc(TAU_AGENT_PODRESOURCES_MAX_DEVICES, sizeof(*r->devices));
	if (r->devices == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory reading pod resources");
		goto out;
	}
	alloc_why[0] = '\0';
	if (tau_agent_local_call(&alloc, ch, METHOD_ALLOCATABLE, &areq.base,
	                         &v1__allocatable_resources_response__descriptor, timeout_ms,
	                         alloc_why, sizeof(alloc_why)) == 0) {
		r->allocatable_known = true;
		rc = add_allocatable(r, (const V1__AllocatableResourcesResponse *)alloc);
		if (rc < 0)
			goto out;
	} else if (strstr(alloc_why, ": UNIMPLEMENTED") == NULL) {
		/*
		 * Only a kubelet without the method (UNIMPLEMENTED) is worth a List: one that does
		 * not answer, or is gone, will not answer the next call either (one timeout).
		 */
		tau_agent_note_set(&r->note, "kubelet pod-resources not answering: %s", alloc_why);
		rc = 0;
		goto out;
	}
	if (tau_agent_local_call(&list, ch, METHOD_LIST, &lreq.base,
	                         &v1__list_pod_resources_response__descriptor, timeout_ms, why,
	                         sizeof(why)) != 0) {
		tau_agent_note_set(&r->note, "kubelet pod-resources not answering: %s", why);
		rc = 0;
		goto out;
	}
	rc = add_holders(r, (const V1__ListPodResourcesResponse *)list);
	if (rc < 0)
		goto out;
	qsort(r->devices, r->n_devices, sizeof(*r->devices), device_cmp);
	if (r->n_dra > 1)
		qsort(r->dra, r->n_dra, sizeof(*r->dra), dra_cmp);
	r->probed = true;
	if (!r->allocatable_known)
		tau_agent_note_set(&r->note, "allocatable devices unknown: %s", alloc_why);
	rc = 0;
out:
	if (!r->probed) {
		podres_clear(r);
		r->allocatable_known = false;
	}
	tau_rpc_message_free(alloc);
	tau_rpc_message_free(list);
	tau_rpc_channel_free(ch);
	return rc;
}

int tau_agent_podres_copy(tau_agent_podres *dst, const tau_agent_podres *src)
{
	bool failed = false;
	void *devices = NULL, *dra = NULL;

	tau_agent_podres_free(dst);
	*dst = *src;
	dst->note = tau_agent_strdup_opt(src->note, &failed);
	if (tau_agent_records_copy(&devices, src->devices, src->n_devices, sizeof(*src->devices),
	                           TAU_AGENT_RECORD_STRINGS(DEVICE_STRINGS), "pod resources") < 0 ||
	    tau_agent_records_copy(&dra, src->dra, src->n_dra, sizeof(*src->dra),
	                           TAU_AGENT_RECORD_STRINGS(DRA_STRINGS), "pod resources") < 0)
		failed = true;
	dst->devices = devices;
	dst->n_devices = devices != NULL ? src->n_devices : 0;
	dst->dra = dra;
	dst->n_dra = dra != NULL ? src->n_dra : 0;
	if (failed) {
		tau_agent_podres_free(dst);
		return tau_error_set(TAU_ENOMEM, "out of memory copying pod resources");
	}
	return 0;
}
