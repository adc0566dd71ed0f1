/*
 * fake_kubelet - a stand-in for kubelet's pod-resources API (v1.PodResourcesLister: List and
 * GetAllocatableResources) on a unix socket, through libtau's rpc server, for the agent's unit
 * and e2e tests.
 *
 * Usage: fake_kubelet --socket PATH --config FILE
 * Prints "ready" on stdout once serving; SIGTERM or SIGINT stops it. FILE is read on every call,
 * so a test changes allocations by rewriting it (atomically: write, then rename):
 *
 *   {"allocatable": [{"resource": "nvidia.com/gpu", "ids": ["GPU-a", "GPU-b"], "numa": 0}],
 *    "pods": [{"namespace": "ml", "name": "train-0",
 *              "containers": [{"name": "main",
 *                              "devices": [{"resource": "nvidia.com/gpu", "ids": ["GPU-a"],
 *                                           "numa": 0}],
 *                              "dynamic": [{"claimNamespace": "ml", "claimName": "gpus",
 *                                           "devices": [{"driver": "gpu.nvidia.com",
 *                                                        "pool": "node-a",
 *                                                        "device": "gpu-0"}]}]}]}],
 *    "hang": false,                  never answer any call (the client's deadline ends it)
 *    "allocatableStatus": 0}         a gRPC code GetAllocatableResources fails with (12:
 *                                    UNIMPLEMENTED, as a kubelet without the feature)
 *
 * "dynamic" becomes ContainerResources.dynamic_resources (DRA claims and the devices allocated
 * to them); a missing key of a device is sent as an empty string.
 * An unreadable or malformed FILE fails each call INTERNAL (tests/fakes/fake_plugin.h). Test-only.
 */
#include "../fake_plugin.h"

#include "kubelet/podresources/v1/podresources.pb-c.h"

#include <string.h>

static const char *config_path;

/* Devices of one JSON entry {"resource", "ids", "numa"}; strings lent from the JSON tree. */
static V1__ContainerDevices *make_devices(const cJSON *e)
{
	V1__ContainerDevices *d = calloc(1, sizeof(*d));
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(e, "ids");
	const cJSON *numa = cJSON_GetObjectItemCaseSensitive(e, "numa");
	size_t n = (size_t)cJSON_GetArraySize(ids), i = 0;
	const cJSON *id;

	v1__container_devices__init(d);
	d->resource_name = (char *)tau_json_str(e, "resource");
	if (d->resource_name == NULL)
		d->resource_name = (char *)"";
	d->device_ids = calloc(n ? n : 1, sizeof(char *));
	cJSON_ArrayForEach(id, ids)
	{
		if (cJSON_IsString(id))
			d->device_ids[i++] = id->valuestring;
	}
	d->n_device_ids = i;
	if (cJSON_IsNumber(numa)) {
		d->topology = calloc(1, sizeof(*d->topology));
		v1__topology_info__init(d->topology);
		d->topology->nodes = calloc(1, sizeof(V1__NUMANode *));
		d->topology->nodes[0] = calloc(1, sizeof(V1__NUMANode));
		v1__numanode__init(d->topology->nodes[0]);
		d->topology->nodes[0]->id = (int64_t)numa->valuedouble;
		d->topology->n_nodes = 1;
	}
	return d;
}

static void free_devices(V1__ContainerDevices *d)
{
	if (d->topology != NULL) {
		free(d->topology->nodes[0]);
		free(d->topology->nodes);
		free(d->topology);
	}
	free(d->device_ids);
	free(d);
}

static char *str_or_empty(const cJSON *obj, const char *key)
{
	const char *s = tau_json_str(obj, key);

	return (char *)(s != NULL ? s : "");
}

/* One claim {"claimNamespace", "claimName", "devices": [{"driver", "pool", "device"}]}. */
static V1__DynamicResource *make_dynamic(const cJSON *e)
{
	V1__DynamicResource *d = calloc(1, sizeof(*d));
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(e, "devices"), *x;
	size_t i = 0;

	v1__dynamic_resource__init(d);
	d->claim_namespace = str_or_empty(e, "claimNamespace");
	d->claim_name = str_or_empty(e, "claimName");
	d->claim_resources =
	        calloc((size_t)cJSON_GetArraySize(devs) + 1, sizeof(*d->claim_resources));
	cJSON_ArrayForEach(x, devs)
	{
		V1__ClaimResource *c = calloc(1, sizeof(*c));

		v1__claim_resource__init(c);
		c->driver_name = str_or_empty(x, "driver");
		c->pool_name = str_or_empty(x, "pool");
		c->device_name = str_or_empty(x, "device");
		d->claim_resources[i++] = c;
	}
	d->n_claim_resources = i;
	return d;
}

static void free_dynamic(V1__DynamicResource *d)
{
	for (size_t i = 0; i < d->n_claim_resources; i++)
		free(d->claim_resources[i]);
	free(d->claim_resources);
	free(d);
}

/* true when the call was answered or must stay unanswered; config in *out otherwise. */
static bool common_start(tau_rpc_call *call, cJSON **out)
{
	cJSON *cfg = fake_plugin_config(call, config_path);

	*out = NULL;
	if (cfg == NULL)
		return true;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "hang"))) {
		cJSON_Delete(cfg);
		return true; /* never answered: the client's deadline ends the call */
	}
	*out = cfg;
	return false;
}

static void on_allocatable(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	V1__AllocatableResourcesResponse resp = V1__ALLOCATABLE_RESOURCES_RESPONSE__INIT;
	const cJSON *list, *e;
	cJSON *cfg;
	int64_t code = 0;
	size_t n = 0;

	(void)ud;
	tau_rpc_message_free(msg);
	if (common_start(call, &cfg))
		return;
	if (tau_json_get_int(&code, cfg, "allocatableStatus") == 0 && code != 0) {
		tau_rpc_call_finish(call, (tau_rpc_code)code, "fake kubelet: allocatableStatus");
		cJSON_Delete(cfg);
		return;
	}
	list = cJSON_GetObjectItemCaseSensitive(cfg, "allocatable");
	resp.devices = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(*resp.devices));
	cJSON_ArrayForEach(e, list) resp.devices[n++] = make_devices(e);
	resp.n_devices = n;
	tau_rpc_call_reply(call, &resp.base);
	for (size_t i = 0; i < n; i++)
		free_devices(resp.devices[i]);
	free(resp.devices);
	cJSON_Delete(cfg);
}

static void on_list(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	V1__ListPodResourcesResponse resp = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
	const cJSON *pods, *p;
	cJSON *cfg;
	size_t np = 0;

	(void)ud;
	tau_rpc_message_free(msg);
	if (common_start(call, &cfg))
		return;
	pods = cJSON_GetObjectItemCaseSensitive(cfg, "pods");
	resp.pod_resources =
	        calloc((size_t)cJSON_GetArraySize(pods) + 1, sizeof(V1__PodResources *));
	cJSON_ArrayForEach(p, pods)
	{
		V1__PodResources *pr = calloc(1, sizeof(*pr));
		const cJSON *cs = cJSON_GetObjectItemCaseSensitive(p, "containers"), *c;
		size_t nc = 0;

		v1__pod_resources__init(pr);
		pr->name = (char *)(tau_json_str(p, "name") ? tau_json_str(p, "name") : "");
		pr->namespace_ =
		        (char *)(tau_json_str(p, "namespace") ? tau_json_str(p, "namespace") : "");
		pr->containers =
		        calloc((size_t)cJSON_GetArraySize(cs) + 1, sizeof(*pr->containers));
		cJSON_ArrayForEach(c, cs)
		{
			V1__ContainerResources *cr = calloc(1, sizeof(*cr));
			const cJSON *ds = cJSON_GetObjectItemCaseSensitive(c, "devices"), *d;
			size_t nd = 0;

			v1__container_resources__init(cr);
			cr->name = (char *)(tau_json_str(c, "name") ? tau_json_str(c, "name") : "");
			cr->devices =
			        calloc((size_t)cJSON_GetArraySize(ds) + 1, sizeof(*cr->devices));
			cJSON_ArrayForEach(d, ds) cr->devices[nd++] = make_devices(d);
			cr->n_devices = nd;
			ds = cJSON_GetObjectItemCaseSensitive(c, "dynamic");
			cr->dynamic_resources = calloc((size_t)cJSON_GetArraySize(ds) + 1,
			                               sizeof(*cr->dynamic_resources));
			nd = 0;
			cJSON_ArrayForEach(d, ds) cr->dynamic_resources[nd++] = make_dynamic(d);
			cr->n_dynamic_resources = nd;
			pr->containers[nc++] = cr;
		}
		pr->n_containers = nc;
		resp.pod_resources[np++] = pr;
	}
	resp.n_pod_resources = np;
	tau_rpc_call_reply(call, &resp.base);
	for (size_t i = 0; i < np; i++) {
		V1__PodResources *pr = resp.pod_resources[i];

		for (size_t j = 0; j < pr->n_containers; j++) {
			for (size_t k = 0; k < pr->containers[j]->n_devices; k++)
				free_devices(pr->containers[j]->devices[k]);
			free(pr->containers[j]->devices);
			for (size_t k = 0; k < pr->containers[j]->n_dynamic_resources; k++)
				free_dynamic(pr->containers[j]->dynamic_resources[k]);
			free(pr->containers[j]->dynamic_resources);
			free(pr->containers[j]);
		}
		free(pr->containers);
		free(pr);
	}
	free(resp.pod_resources);
	cJSON_Delete(cfg);
}

int main(int argc, char **argv)
{
	const char *socket_path = NULL;
	tau_rpc_method list = {.path = "/v1.PodResourcesLister/List",
	                       .kind = TAU_RPC_UNARY,
	                       .request = &v1__list_pod_resources_request__descriptor,
	                       .response = &v1__list_pod_resources_response__descriptor,
	                       .on_message = on_list};
	tau_rpc_method alloc = {.path = "/v1.PodResourcesLister/GetAllocatableResources",
	                        .kind = TAU_RPC_UNARY,
	                        .request = &v1__allocatable_resources_request__descriptor,
	                        .response = &v1__allocatable_resources_response__descriptor,
	                        .on_message = on_allocatable};

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--socket") == 0)
			socket_path = argv[i + 1];
		else if (strcmp(argv[i], "--config") == 0)
			config_path = argv[i + 1];
	}
	if (socket_path == NULL || config_path == NULL) {
		fprintf(stderr, "usage: fake_kubelet --socket PATH --config FILE\n");
		return 2;
	}
	{
		const tau_rpc_method methods[] = {list, alloc};
		const char *sockets[] = {socket_path};

		return fake_plugin_serve("fake_kubelet", methods, 2, sockets, 1);
	}
}
