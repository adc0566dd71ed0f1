/*
 * fake_csi_driver - a stand-in CSI node plugin with its node-driver-registrar, for the agent's
 * unit and e2e tests, on libtau's rpc server.
 *
 * Usage: fake_csi_driver --registration PATH --endpoint PATH --advertise PATH --config FILE
 * Listens on both sockets: --registration is <plugins_registry>/<driver>-reg.sock, where
 * pluginregistration.Registration/GetInfo answers {type CSIPlugin, name, endpoint: --advertise
 * (the path as the host sees it)}; --endpoint is the driver's own socket, where
 * csi.v1.Identity/GetPluginInfo and /Probe answer. (libtau serves every method on every
 * socket; the agent calls each on its own.) Prints "ready" once serving; SIGTERM stops it.
 * FILE is read on every call:
 *
 *   {"name": "disk.csi.azure.com", "vendorVersion": "v1.29.9",
 *    "ready": true,            Probe's ready: true, false, or null (unset: ready per the spec)
 *    "probeStatus": 0,         a gRPC code Probe fails with
 *    "hang": false}            never answer Identity calls (GetInfo still answers)
 *
 * Test-only.
 */
#include "../fake_plugin.h"

#include "csi/v1/identity.pb-c.h"
#include "kubelet/pluginregistration/v1/registration.pb-c.h"

#include <string.h>

static const char *config_path;
static const char *advertised;

static const char *str_or(const cJSON *cfg, const char *key, const char *dflt)
{
	const char *v = tau_json_str(cfg, key);

	return v != NULL ? v : dflt;
}

static void on_get_info(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
	char *versions[1] = {(char *)"1.0.0"};
	cJSON *cfg;

	(void)ud;
	tau_rpc_message_free(msg);
	if ((cfg = fake_plugin_config(call, config_path)) == NULL)
		return;
	info.type = (char *)"CSIPlugin";
	info.name = (char *)str_or(cfg, "name", "");
	info.endpoint = (char *)advertised;
	info.supported_versions = versions;
	info.n_supported_versions = 1;
	tau_rpc_call_reply(call, &info.base);
	cJSON_Delete(cfg);
}

/* NULL when the call was answered or must hang; the config otherwise. */
static cJSON *identity_start(tau_rpc_call *call)
{
	cJSON *cfg = fake_plugin_config(call, config_path);

	if (cfg != NULL && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "hang"))) {
		cJSON_Delete(cfg);
		return NULL; /* never answered: the client's deadline ends the call */
	}
	return cfg;
}

static void on_plugin_info(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Csi__V1__GetPluginInfoResponse resp = CSI__V1__GET_PLUGIN_INFO_RESPONSE__INIT;
	cJSON *cfg;

	(void)ud;
	tau_rpc_message_free(msg);
	if ((cfg = identity_start(call)) == NULL)
		return;
	resp.name = (char *)str_or(cfg, "name", "");
	resp.vendor_version = (char *)str_or(cfg, "vendorVersion", "");
	tau_rpc_call_reply(call, &resp.base);
	cJSON_Delete(cfg);
}

static void on_probe(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Csi__V1__ProbeResponse resp = CSI__V1__PROBE_RESPONSE__INIT;
	Csi__V1__BoolValue ready = CSI__V1__BOOL_VALUE__INIT;
	const cJSON *r;
	int64_t code = 0;
	cJSON *cfg;

	(void)ud;
	tau_rpc_message_free(msg);
	if ((cfg = identity_start(call)) == NULL)
		return;
	if (tau_json_get_int(&code, cfg, "probeStatus") == 0 && code != 0) {
		tau_rpc_call_finish(call, (tau_rpc_code)code, "fake CSI driver: probeStatus");
		cJSON_Delete(cfg);
		return;
	}
	r = cJSON_GetObjectItemCaseSensitive(cfg, "ready");
	if (cJSON_IsBool(r)) {
		ready.value = cJSON_IsTrue(r);
		resp.ready = &ready;
	}
	tau_rpc_call_reply(call, &resp.base);
	cJSON_Delete(cfg);
}

int main(int argc, char **argv)
{
	const char *registration = NULL, *endpoint = NULL;
	tau_rpc_method methods[] = {
	        {.path = "/pluginregistration.Registration/GetInfo",
	         .kind = TAU_RPC_UNARY,
	         .request = &pluginregistration__info_request__descriptor,
	         .response = &pluginregistration__plugin_info__descriptor,
	         .on_message = on_get_info},
	        {.path = "/csi.v1.Identity/GetPluginInfo",
	         .kind = TAU_RPC_UNARY,
	         .request = &csi__v1__get_plugin_info_request__descriptor,
	         .response = &csi__v1__get_plugin_info_response__descriptor,
	         .on_message = on_plugin_info},
	        {.path = "/csi.v1.Identity/Probe",
	         .kind = TAU_RPC_UNARY,
	         .request = &csi__v1__probe_request__descriptor,
	         .response = &csi__v1__probe_response__descriptor,
	         .on_message = on_probe},
	};

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--registration") == 0)
			registration = argv[i + 1];
		else if (strcmp(argv[i], "--endpoint") == 0)
			endpoint = argv[i + 1];
		else if (strcmp(argv[i], "--advertise") == 0)
			advertised = argv[i + 1];
		else if (strcmp(argv[i], "--config") == 0)
			config_path = argv[i + 1];
	}
	if (registration == NULL || endpoint == NULL || advertised == NULL || config_path == NULL) {
		fprintf(stderr, "usage: fake_csi_driver --registration PATH --endpoint PATH "
		                "--advertise PATH --config FILE\n");
		return 2;
	}
	{
		const char *sockets[] = {registration, endpoint};

		return fake_plugin_serve("fake_csi_driver", methods,
		                         sizeof(methods) / sizeof(methods[0]), sockets, 2);
	}
}
