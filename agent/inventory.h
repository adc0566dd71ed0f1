/*
 * inventory.h - the node inventory tau-node-agent reports: what Kubernetes
 * says about this node (Node, CSINode, the pods on it) joined with what the
 * host probe saw locally, plus every mismatch and unreadable input as a
 * problem string.
 *
 * The inventory is a snapshot rebuilt from scratch whenever an input changes
 * (level-triggered), always in this order:
 *
 *   tau_agent_inventory inv;
 *   tau_agent_inventory_init(&inv);
 *   tau_agent_inventory_from_node(&inv, node);        // resets, then fills
 *   tau_agent_inventory_apply_csinode(&inv, csinode); // NULL: no CSINode
 *   tau_agent_inventory_apply_pods(&inv, pod_list);   // pods on this node
 *   ... probe the host for the inventory's driver names ...
 *   tau_agent_inventory_apply_host(&inv, &probe);
 *   tau_agent_inventory_check_consistency(&inv);
 *   tau_agent_inventory_to_json(&json, &inv);  tau_agent_inventory_digest(hex, &inv);
 *   tau_agent_inventory_free(&inv);
 *
 * All parsing is pure (cJSON in, struct out); the only I/O is in hostprobe.
 * Bad input never fails the whole report: the field becomes unknown and a
 * problem says why.  The JSON form is documented in docs/agent-inventory-json.md.
 */
#ifndef TAU_AGENT_INVENTORY_H
#define TAU_AGENT_INVENTORY_H

#include "hostprobe.h"

#include "tau/csi.h"
#include "tau/node_kind.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/** Caps on what a Node can make us hold; beyond them entries are dropped with a problem. */
#define TAU_AGENT_MAX_LABELS      512
#define TAU_AGENT_MAX_ALLOCATABLE 256
#define TAU_AGENT_MAX_CSI_DRIVERS 64
/** Longest label key/value, resource name, driver name or ID we keep (bytes). */
#define TAU_AGENT_MAX_STRING 1024

/** Well-known names. */
#define TAU_AGENT_LABEL_GPU_CLASS     "tau.azure.com/gpu-class"
#define TAU_AGENT_LABEL_OS            "kubernetes.io/os"
#define TAU_AGENT_TAINT_FLEX_DELETING "kubernetes.azure.com/flex-node-deleting"
#define TAU_AGENT_RESOURCE_GPU        "nvidia.com/gpu"

/** Which object tau_agent_inventory_prune trims (list items carry no kind of their own). */
typedef enum tau_agent_object_kind {
	TAU_AGENT_OBJECT_NODE,
	TAU_AGENT_OBJECT_CSINODE,
	TAU_AGENT_OBJECT_POD
} tau_agent_object_kind;

/** A value that may not be known (JSON true / false / null). */
typedef enum tau_agent_tristate {
	TAU_AGENT_UNKNOWN = -1,
	TAU_AGENT_FALSE = 0,
	TAU_AGENT_TRUE = 1
} tau_agent_tristate;

/** One label or one allocatable entry; both strings owned. */
typedef struct tau_agent_kv {
	char *key;
	char *value;
} tau_agent_kv;

/** One CSI driver known from CSINode, a node pod, or the host probe. */
typedef struct tau_agent_csi_driver {
	char *name;                    /**< owned */
	bool in_csinode;               /**< listed in CSINode spec.drivers (kubelet's truth) */
	bool has_node_pod;             /**< a pod on this node serves it */
	tau_agent_tristate socket;     /**< registration socket present; UNKNOWN if not probed */
	tau_csi_managed_by managed_by; /**< from the node pod's labels and args */
	tau_agent_csi_live *live;      /**< owned; the live check (csiprobe.h), NULL not probed */
} tau_agent_csi_driver;

/** Local devices as the host probe saw them; -1 means unknown. */
typedef struct tau_agent_devices {
	bool host_probed;         /**< tau_agent_inventory_apply_host ran */
	int64_t gpu_device_nodes; /**< /dev/nvidia<N> count */
	bool nvml_probed;         /**< NVML answered */
	int64_t nvml_gpus;        /**< NVML GPU count */
	int64_t nvml_healthy;     /**< NVML GPUs that answered a health read */
	char *nvml_note;          /**< owned; why NVML was not probed, or NULL */
	tau_agent_nvml nvml;      /**< owned; per-GPU facts, versions, missing symbols */
	tau_agent_podres podres;  /**< owned; kubelet pod-resources devices and holders */
	int64_t rdma_ports_total;
	int64_t rdma_ports_up;
	tau_agent_rdma_port *rdma_ports; /**< owned; per-port details, sorted by device, port */
	size_t n_rdma_ports;
} tau_agent_devices;

/**
 * The inventory of one node.  Strings are owned and NULL when unknown.
 * labels and allocatable are sorted by key (byte order), csi_drivers by name.
 */
typedef struct tau_agent_inventory {
	char *node_name;
	char *node_uid;
	char *resource_version;
	char *provider_id;
	char *gpu_class; /**< label tau.azure.com/gpu-class */
	char *os;        /**< label kubernetes.io/os, else status.nodeInfo.operatingSystem */
	tau_node_kind kind;
	tau_agent_tristate ready;       /**< Ready condition True/False; UNKNOWN otherwise */
	tau_agent_tristate schedulable; /**< !spec.unschedulable */
	tau_agent_tristate deleting;    /**< deletionTimestamp set, or Flex deleting taint */

	tau_agent_kv *labels;
	size_t n_labels;
	tau_agent_kv *allocatable; /**< value: canonical quantity string */
	size_t n_allocatable;
	tau_agent_csi_driver *csi_drivers;
	size_t n_csi_drivers;

	tau_agent_devices devices;
	tau_agent_problem_list problems;
} tau_agent_inventory;

/** Make an empty inventory (everything unknown).  Pairs with tau_agent_inventory_free. */
void tau_agent_inventory_init(tau_agent_inventory *inv);

/** Free what the inventory owns and leave it as after init.  NULL is a no-op. */
void tau_agent_inventory_free(tau_agent_inventory *inv);

/**
 * Add a problem (printf format) to the inventory, e.g. "CSINode not readable: ...".
 * @return 0 or -TAU_ENOMEM.
 */
int tau_agent_inventory_add_problem(tau_agent_inventory *inv, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/**
 * Deletes, in place, every member of a Node, CSINode or Pod that the inventory readers here
 * and in libtau (tau/node_kind.h, tau/csi.h) never look at: managedFields, annotations,
 * a Node's images and volumes, a Pod's volumes, status and container specs beyond the
 * command, args and env the CSI-origin rules read.  The agent's informers cache objects
 * through it, so an idle agent holds a few hundred bytes per Pod instead of the whole
 * object.  Keeps metadata.name, namespace and resourceVersion (the informer's key); an
 * inventory built from a pruned object equals one built from the whole object
 * (unit/test_agent_inventory).  NULL or a non-object: nothing happens.
 */
void tau_agent_inventory_prune(cJSON *obj, tau_agent_object_kind kind);

/**
 * Reset the inventory and fill it from a Node object (as `kubectl get node -o
 * json` prints it).  Every label is kept, every status.allocatable entry is
 * re-emitted as its canonical quantity string.  Unreadable parts become
 * unknown with a problem; entries beyond the caps are dropped with a problem.
 *
 * @param node  the Node (lent); NULL or a non-object is recorded as a problem
 * @return 0; -TAU_EINVAL when node is not an object or has no metadata.name
 *         (the inventory still holds what could be read, and says why);
 *         -TAU_ENOMEM.
 */
int tau_agent_inventory_from_node(tau_agent_inventory *inv, const cJSON *node);

/**
 * Mark the drivers kubelet registered, from the node's CSINode object.
 * NULL means the CSINode does not exist (no driver registered).  Calling it
 * again replaces the previous CSINode's marks.
 * @return 0; -TAU_EINVAL when the object is malformed or names another node
 *         (recorded as a problem, nothing marked); -TAU_ENOMEM.
 */
int tau_agent_inventory_apply_csinode(tau_agent_inventory *inv, const cJSON *csinode);

/**
 * Decide who deployed each CSI driver, from the pods on this node (a PodList
 * object with "items", or a bare array of pods), by libtau's rules
 * (tau_csi_origins_from_pods in tau/csi.h; drivers registered in CSINode
 * count as known).  Drivers seen only here are added (not in CSINode); the
 * rules' problems become the inventory's.  Calling it again replaces the
 * previous decision (NULL: no pods known).
 * @return 0; -TAU_EINVAL when pod_list is neither (recorded as a problem); -TAU_ENOMEM.
 */
int tau_agent_inventory_apply_pods(tau_agent_inventory *inv, const cJSON *pod_list);

/**
 * Join a host probe: socket state per driver (names the probe asked about but
 * the inventory lacks are added), device counts, and the probe's problems.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_agent_inventory_apply_host(tau_agent_inventory *inv, const tau_agent_host_probe *probe);

/**
 * Compare what the node advertises with what is there, adding a problem for
 * each mismatch: nvidia.com/gpu against /dev/nvidia<N> and NVML (scaled by
 * label nvidia.com/gpu.replicas; skipped under MIG strategy "single"), GPUs
 * present but nothing GPU-like advertised, unhealthy GPUs, rdma/ib against
 * RDMA ports up, any rdma/ resource with no port up, CSI drivers in CSINode without
 * a socket or with a socket but not in CSINode, node pods whose driver is
 * not registered, and drivers not supported on a Flex node.  Idempotent.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_agent_inventory_check_consistency(tau_agent_inventory *inv);

/**
 * Whether a driver is usable on this node: false on a Flex node when the
 * driver comes from the AKS add-on, or is disk.csi.azure.com (Azure managed
 * disks attach only to Azure VMs); true otherwise.
 */
bool tau_agent_csi_driver_supported(const tau_agent_inventory *inv,
                                    const tau_agent_csi_driver *driver);

/** Lends a driver entry by name, or NULL. */
const tau_agent_csi_driver *tau_agent_inventory_find_driver(const tau_agent_inventory *inv,
                                                            const char *name);

/** Lends the value of a label, or NULL. */
const char *tau_agent_inventory_label(const tau_agent_inventory *inv, const char *key);

/** Lends the canonical allocatable quantity of a resource, or NULL. */
const char *tau_agent_inventory_allocatable(const tau_agent_inventory *inv, const char *name);

/**
 * Build the stable JSON form (docs/agent-inventory-json.md): keys in a fixed
 * order, labels and allocatable sorted by key, drivers by name.
 * @param out  receives a new tree (caller frees with cJSON_Delete); untouched on failure
 * @return 0 or -TAU_ENOMEM.
 */
int tau_agent_inventory_to_json(cJSON **out, const tau_agent_inventory *inv);

/**
 * SHA-256 (lower-case hex, NUL-terminated) of the canonical serialisation:
 * the compact JSON of tau_agent_inventory_to_json without resourceVersion
 * (which changes on every kubelet heartbeat write) and without observed time
 * (the inventory has none).  Equal content gives an equal digest whatever
 * the order of the input's labels; any reported change gives another.
 * @return 0, -TAU_ENOMEM, or -TAU_EINTERNAL when OpenSSL fails.
 */
int tau_agent_inventory_digest(char out[65], const tau_agent_inventory *inv);

#endif /* TAU_AGENT_INVENTORY_H */
