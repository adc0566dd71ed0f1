/*
 * podresources.c - kubelet's pod-resources API joined into one list of devices.
 *
 * The one idea: a device is identified by (resource name, device ID); GetAllocatableResources
 * says which exist and are allocatable, List says which pod holds which, and the join keeps
 * both sides: an allocated device kubelet no longer lists as allocatable (its plugin marked it
 * unhealthy while a pod holds it) stays in the list with allocatable=false.  Only device-plugin
 * devices are read; exclusive CPUs and memory are not the agent's business.
 */
#include "podresources.h"

#include "hostprobe.h"
#include "localrpc.h"

#include "tau/error.h"

#include "kubelet/podresources/v1/podresources.pb-c.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METHOD_ALLOCATABLE "/v1.PodResourcesLister/GetAllocatableResources"
#define METHOD_LIST        "/v1.PodResourcesLister/List"

void tau_agent_podres_init(tau_agent_podres *r)
{
	memset(r, 0, sizeof(*r));
}

static void device_free(tau_agent_pod_device *d)
{
	free(d->resource);
	free(d->id);
	free(d->pod_namespace);
	free(d->pod_name);
	free(d->container);
}

void tau_agent_podres_free(tau_agent_podres *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_devices; i++)
		device_free(&r->devices[i]);
	free(r->devices);
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

static int add_holders(tau_agent_podres *r, const V1__ListPodResourcesResponse *resp)
{
	for (size_t p = 0; p < resp->n_pod_resources; p++) {
		const V1__PodResources *pod = resp->pod_resources[p];

		for (size_t c = 0; pod != NULL && c < pod->n_containers; c++) {
			const V1__ContainerResources *ctr = pod->containers[c];

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
	r->probed = true;
	if (!r->allocatable_known)
		tau_agent_note_set(&r->note, "allocatable devices unknown: %s", alloc_why);
	rc = 0;
out:
	if (!r->probed) {
		for (size_t i = 0; i < r->n_devices; i++)
			device_free(&r->devices[i]);
		free(r->devices);
		r->devices = NULL;
		r->n_devices = 0;
		r->n_dropped = 0;
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

	tau_agent_podres_free(dst);
	*dst = *src;
	dst->note = tau_agent_strdup_opt(src->note, &failed);
	dst->devices = NULL;
	dst->n_devices = 0;
	if (src->n_devices > 0) {
		dst->devices = calloc(src->n_devices, sizeof(*dst->devices));
		if (dst->devices == NULL) {
			failed = true;
		} else {
			for (size_t i = 0; i < src->n_devices; i++) {
				const tau_agent_pod_device *s = &src->devices[i];
				tau_agent_pod_device *d = &dst->devices[i];

				*d = *s;
				d->resource = tau_agent_strdup_opt(s->resource, &failed);
				d->id = tau_agent_strdup_opt(s->id, &failed);
				d->pod_namespace = tau_agent_strdup_opt(s->pod_namespace, &failed);
				d->pod_name = tau_agent_strdup_opt(s->pod_name, &failed);
				d->container = tau_agent_strdup_opt(s->container, &failed);
			}
			dst->n_devices = src->n_devices;
		}
	}
	if (failed) {
		tau_agent_podres_free(dst);
		return tau_error_set(TAU_ENOMEM, "out of memory copying pod resources");
	}
	return 0;
}
