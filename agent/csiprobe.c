/*
 * csiprobe.c - CSI registration GetInfo, then Identity GetPluginInfo and Probe, per driver.
 *
 * The one idea: the registration names the driver's socket, and that name comes from a peer,
 * so it is dialled only when it is an absolute path below /var/lib/kubelet/plugins/ without
 * ".." (where kubelet's registration model puts CSI sockets); anything else is reported, not
 * followed.  Probe's `ready` is a BoolValue: unset means ready (CSI spec), false means "not
 * yet".  A deadline on one driver ends that driver's checks, and the time budget of the
 * whole probe ends the rest, each saying so.
 */
#include "csiprobe.h"

#include "hostprobe.h"
#include "localrpc.h"
#include "records.h"

#include "tau/clock.h"
#include "tau/error.h"

#include "csi/v1/identity.pb-c.h"
#include "kubelet/pluginregistration/v1/registration.pb-c.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METHOD_GET_INFO    "/pluginregistration.Registration/GetInfo"
#define METHOD_PLUGIN_INFO "/csi.v1.Identity/GetPluginInfo"
#define METHOD_PROBE       "/csi.v1.Identity/Probe"

static const size_t LIVE_STRINGS[] = {
        offsetof(tau_agent_csi_live, driver),      offsetof(tau_agent_csi_live, endpoint),
        offsetof(tau_agent_csi_live, plugin_name), offsetof(tau_agent_csi_live, vendor_version),
        offsetof(tau_agent_csi_live, error),
};

void tau_agent_csi_live_free(tau_agent_csi_live *live, size_t n)
{
	tau_agent_records_free(live, n, sizeof(*live), TAU_AGENT_RECORD_STRINGS(LIVE_STRINGS));
}

/* An endpoint we may dial: absolute, below the plugins directory, no "." or ".." parts. */
static bool endpoint_allowed(const char *ep)
{
	size_t dir_len = strlen(TAU_AGENT_CSI_PLUGINS_DIR);

	if (strncmp(ep, TAU_AGENT_CSI_PLUGINS_DIR, dir_len) != 0 || ep[dir_len] == '\0')
		return false;
	for (const char *p = ep; (p = strchr(p, '/')) != NULL; p++)
		if (strncmp(p, "/../", 4) == 0 || strcmp(p, "/..") == 0 ||
		    strncmp(p, "/./", 3) == 0 || strcmp(p, "/.") == 0)
			return false;
	return true;
}

/* A channel to the socket `shown` (a host path below root); false with l->error set. */
static bool dial(tau_rpc_channel **ch, tau_agent_csi_live *l, const char *root, const char *shown,
                 const char *what)
{
	char path[PATH_MAX], why[TAU_AGENT_LOCALRPC_WHY_MAX];

	if (tau_agent_host_path(path, sizeof(path), root, shown) < 0) {
		tau_agent_note_set(&l->error, "%s", tau_error_last()->msg);
		return false;
	}
	if (tau_agent_local_channel_open(ch, path, shown, why, sizeof(why)) < 0) {
		tau_agent_note_set(&l->error, "%s: %s", what, why);
		return false;
	}
	return true;
}

/* One call on ch; false with l->error set ("<what> <why>"), *hung when it timed out. */
static bool call(ProtobufCMessage **resp, tau_rpc_channel *ch, const char *method,
                 const ProtobufCMessage *req, const ProtobufCMessageDescriptor *desc,
                 int timeout_ms, tau_agent_csi_live *l, bool *hung, const char *what)
{
	char why[TAU_AGENT_LOCALRPC_WHY_MAX];

	if (tau_agent_local_call(resp, ch, method, req, desc, timeout_ms, why, sizeof(why)) == 0)
		return true;
	*hung = strstr(why, "DEADLINE_EXCEEDED") != NULL;
	tau_agent_note_set(&l->error, "%s %s", what, why);
	return false;
}

/*
 * GetInfo on the registration socket: l->endpoint on success, l->error otherwise.
 * *hung when the registrar did not answer in time.  0, or -TAU_ENOMEM.
 */
static int ask_registration(tau_agent_csi_live *l, const char *root, int timeout_ms, bool *hung)
{
	Pluginregistration__InfoRequest req = PLUGINREGISTRATION__INFO_REQUEST__INIT;
	char rel[PATH_MAX];
	ProtobufCMessage *resp = NULL;
	tau_rpc_channel *ch = NULL;
	const Pluginregistration__PluginInfo *info;
	int rc = 0;

	snprintf(rel, sizeof(rel), "%s/%s-reg.sock", TAU_AGENT_PLUGIN_REGISTRY, l->driver);
	if (!dial(&ch, l, root, rel, "registration"))
		return 0;
	if (!call(&resp, ch, METHOD_GET_INFO, &req.base,
	          &pluginregistration__plugin_info__descriptor, timeout_ms, l, hung,
	          "registration"))
		goto out;
	info = (const Pluginregistration__PluginInfo *)resp;
	if (!endpoint_allowed(info->endpoint)) {
		tau_agent_note_set(&l->error,
		                   "registration names endpoint \"%.200s\", not a socket below %s",
		                   info->endpoint, TAU_AGENT_CSI_PLUGINS_DIR);
		goto out;
	}
	l->endpoint = strdup(info->endpoint);
	if (l->endpoint == NULL)
		rc = tau_error_set(TAU_ENOMEM, "out of memory probing CSI drivers");
out:
	tau_rpc_message_free(resp);
	tau_rpc_channel_free(ch);
	return rc;
}

/* GetPluginInfo and Probe on the driver's own socket.  0, or -TAU_ENOMEM. */
static int ask_identity(tau_agent_csi_live *l, const char *root, int timeout_ms, bool *hung)
{
	Csi__V1__GetPluginInfoRequest ireq = CSI__V1__GET_PLUGIN_INFO_REQUEST__INIT;
	Csi__V1__ProbeRequest preq = CSI__V1__PROBE_REQUEST__INIT;
	ProtobufCMessage *info = NULL, *probe = NULL;
	const Csi__V1__GetPluginInfoResponse *pi;
	const Csi__V1__ProbeResponse *pr;
	tau_rpc_channel *ch = NULL;
	int rc = 0;

	if (!dial(&ch, l, root, l->endpoint, "driver socket"))
		return 0;
	if (!call(&info, ch, METHOD_PLUGIN_INFO, &ireq.base,
	          &csi__v1__get_plugin_info_response__descriptor, timeout_ms, l, hung, "Identity"))
		goto out;
	pi = (const Csi__V1__GetPluginInfoResponse *)info;
	l->plugin_name = strdup(pi->name);
	l->vendor_version = strdup(pi->vendor_version);
	if (l->plugin_name == NULL || l->vendor_version == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory probing CSI drivers");
		goto out;
	}
	if (!call(&probe, ch, METHOD_PROBE, &preq.base, &csi__v1__probe_response__descriptor,
	          timeout_ms, l, hung, "Identity"))
		goto out;
	pr = (const Csi__V1__ProbeResponse *)probe;
	/* BoolValue: unset is ready (CSI spec). */
	l->ready = pr->ready == NULL || pr->ready->value;
	if (!l->ready)
		tau_agent_note_set(&l->error, "Probe answered ready=false");
	else if (strcmp(pi->name, l->driver) != 0)
		tau_agent_note_set(&l->error, "the socket serves driver \"%.200s\", not %s",
		                   pi->name, l->driver);
out:
	tau_rpc_message_free(info);
	tau_rpc_message_free(probe);
	tau_rpc_channel_free(ch);
	return rc;
}

/* The timeout of the next call: the per-call one, or what is left of the budget; 0 (noted in
 * l->error) when the budget is spent. */
static int call_timeout(tau_agent_csi_live *l, uint64_t deadline, int timeout_ms, int budget_ms)
{
	uint64_t now = tau_clock_mono_ms();

	if (now >= deadline) {
		tau_agent_note_set(&l->error, "not probed: the CSI probe's %d ms budget was spent",
		                   budget_ms);
		return 0;
	}
	return deadline - now < (uint64_t)timeout_ms ? (int)(deadline - now) : timeout_ms;
}

int tau_agent_csi_probe(tau_agent_csi_live **out, const char *host_root, const char *const *drivers,
                        size_t n, int timeout_ms, int budget_ms)
{
	tau_agent_csi_live *live;
	uint64_t deadline;
	int rc = 0;

	*out = NULL;
	if (n == 0)
		return 0;
	if (host_root == NULL || host_root[0] == '\0')
		host_root = "/";
	if (timeout_ms <= 0)
		timeout_ms = TAU_AGENT_CSI_TIMEOUT_MS;
	if (budget_ms <= 0)
		budget_ms = TAU_AGENT_CSI_BUDGET_MS;
	live = calloc(n, sizeof(*live));
	if (live == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory probing CSI drivers");
	deadline = tau_clock_mono_ms() + (uint64_t)budget_ms;
	for (size_t i = 0; i < n && rc == 0; i++) {
		tau_agent_csi_live *l = &live[i];
		bool hung = false;
		int t;

		l->ready = -1;
		l->driver = strdup(drivers[i]);
		if (l->driver == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "out of memory probing CSI drivers");
			break;
		}
		if ((t = call_timeout(l, deadline, timeout_ms, budget_ms)) == 0)
			continue;
		rc = ask_registration(l, host_root, t, &hung);
		if (rc < 0 || l->endpoint == NULL || hung)
			continue;
		if ((t = call_timeout(l, deadline, timeout_ms, budget_ms)) == 0)
			continue;
		rc = ask_identity(l, host_root, t, &hung);
	}
	if (rc < 0) {
		tau_agent_csi_live_free(live, n);
		return rc;
	}
	*out = live;
	return 0;
}

int tau_agent_csi_live_copy(tau_agent_csi_live **out, const tau_agent_csi_live *live, size_t n)
{
	void *copy = NULL;
	int rc = tau_agent_records_copy(&copy, live, n, sizeof(*live),
	                                TAU_AGENT_RECORD_STRINGS(LIVE_STRINGS), "CSI probes");

	*out = copy;
	return rc;
}
