/*
 * csiprobe.h - a live check of each CSI driver whose registration socket is on this node.
 *
 * A CSINode entry can outlive its driver, and a registration socket can outlive its
 * registrar, so seeing them is not knowing the driver works.  For each driver the agent asks
 * the registration socket (<plugins_registry>/<driver>-reg.sock, kubelet's pluginregistration
 * GetInfo) which socket the driver serves on, then calls the CSI Identity service there:
 * GetPluginInfo (name, vendor version) and Probe (ready).  Every call has a deadline and the
 * whole probe a time budget, so a driver that hangs delays the agent by a bounded time.
 */
#ifndef TAU_AGENT_CSIPROBE_H
#define TAU_AGENT_CSIPROBE_H

#include <stdbool.h>
#include <stddef.h>

/** Deadline of each call (ms). */
#define TAU_AGENT_CSI_TIMEOUT_MS 2000
/** Time all drivers together may take (ms); drivers left when it is spent are not probed. */
#define TAU_AGENT_CSI_BUDGET_MS 5000
/** Only endpoints below this host directory are dialled (where kubelet keeps CSI sockets). */
#define TAU_AGENT_CSI_PLUGINS_DIR "/var/lib/kubelet/plugins/"

/** What the live check of one driver found. */
typedef struct tau_agent_csi_live {
	char *driver;         /**< owned; the driver name asked about */
	char *endpoint;       /**< owned; the driver's socket as the host sees it; NULL unknown */
	int ready;            /**< Probe: 1 ready, 0 not ready, -1 unknown (no answer) */
	char *plugin_name;    /**< owned; GetPluginInfo name; NULL unknown */
	char *vendor_version; /**< owned; GetPluginInfo vendor_version; NULL unknown */
	char *error;          /**< owned; why ready is not 1, or a name mismatch; NULL when fine */
} tau_agent_csi_live;

/**
 * Check each of the `n` drivers below `host_root` (NULL or "": "/"), each call bounded by
 * `timeout_ms` and all of them by `budget_ms` (<= 0: the defaults above).
 * @param out  receives an array of `n` results in the order asked (free with
 *             tau_agent_csi_live_free), NULL when n is 0
 * @return 0 (failures are in each result's error), or -TAU_ENOMEM.
 */
int tau_agent_csi_probe(tau_agent_csi_live **out, const char *host_root, const char *const *drivers,
                        size_t n, int timeout_ms, int budget_ms);

/** Free `n` results and the array.  NULL is a no-op. */
void tau_agent_csi_live_free(tau_agent_csi_live *live, size_t n);

/**
 * Deep copy of `n` results into *out (NULL when n is 0).
 * @return 0 or -TAU_ENOMEM (*out NULL).
 */
int tau_agent_csi_live_copy(tau_agent_csi_live **out, const tau_agent_csi_live *live, size_t n);

#endif /* TAU_AGENT_CSIPROBE_H */
