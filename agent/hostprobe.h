/*
 * hostprobe.h - what tau-node-agent can see on its own host, under --host-root.
 *
 * The local probes, all below a root directory so tests can
 * run them over fake trees (sockets and NVML through fakes we build):
 *   - the kubelet plugin registry (<root>/var/lib/kubelet/plugins_registry):
 *     one registration socket "<driver>-reg.sock" per CSI driver whose
 *     node-driver-registrar is running;
 *   - NVIDIA GPUs: device nodes <root>/dev/nvidia<N>, and, when
 *     libnvidia-ml.so.1 loads at run time (dlopen, never a build dependency),
 *     NVML's GPU count and per-GPU health;
 *   - InfiniBand/RoCE ports: <root>/sys/class/infiniband/<dev>/ports/<n>/ (state,
 *     phys_state, rate, link_layer, counters/link_downed);
 *   - and, each in its own module, NVML's per-GPU facts (nvml.h), kubelet's pod-resources
 *     (podresources.h) and the live check of each CSI driver with a socket (csiprobe.h).
 *
 * Nothing here talks to the Kubernetes API.  What cannot be read is reported as
 * unknown (-1 or TAU_AGENT_SOCKET_UNKNOWN) plus a problem string, never as zero.
 *
 * Also a small inotify watch on the plugin registry directory, so the event
 * loop learns about sockets appearing or vanishing without polling.
 */
#ifndef TAU_AGENT_HOSTPROBE_H
#define TAU_AGENT_HOSTPROBE_H

#include "csiprobe.h"
#include "nvml.h"
#include "podresources.h"
#include "records.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Most driver names one probe answers for. */
#define TAU_AGENT_PROBE_MAX_DRIVERS 64
/** Most problem strings one list keeps (the last slot then says how many were not shown). */
#define TAU_AGENT_MAX_PROBLEMS 64
/** Longest problem string kept, NUL included (longer ones are truncated). */
#define TAU_AGENT_PROBLEM_MAX 512
/** Most InfiniBand ports counted (a peer-controlled tree must not make us loop forever). */
#define TAU_AGENT_PROBE_MAX_RDMA_PORTS 4096
/** Most ports described one by one (tau_agent_rdma_port); more are counted only, with a problem. */
#define TAU_AGENT_PROBE_MAX_RDMA_PORT_DETAILS 64

/**
 * Environment variable steering NVML: unset means dlopen("libnvidia-ml.so.1");
 * "off" (or "0", "false", "") disables NVML, which tests use; anything else
 * is the file name handed to dlopen instead.
 */
#define TAU_AGENT_NVML_ENV "TAU_AGENT_NVML"

/** The NVML library name loaded by default. */
#define TAU_AGENT_NVML_SONAME "libnvidia-ml.so.1"

/** Path of the kubelet plugin registry below the host root. */
#define TAU_AGENT_PLUGIN_REGISTRY "/var/lib/kubelet/plugins_registry"

/**
 * A bounded list of human-readable problems ("cannot read ...: Permission
 * denied").  Exact duplicates are kept once.  When more than
 * TAU_AGENT_MAX_PROBLEMS arrive, the last slot is replaced by
 * "N more problems not shown", so the list never grows past the cap.
 */
typedef struct tau_agent_problem_list {
	char *items[TAU_AGENT_MAX_PROBLEMS]; /**< owned strings, in the order added */
	size_t n;                            /**< slots in use */
	size_t not_shown;                    /**< problems summarised by the last slot, or 0 */
} tau_agent_problem_list;

/**
 * Add a printf-formatted problem (truncated to TAU_AGENT_PROBLEM_MAX - 1 bytes).
 * @return 0, or -TAU_ENOMEM (the problem is then only counted in not_shown).
 */
int tau_agent_problem_add(tau_agent_problem_list *list, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/** tau_agent_problem_add with a va_list (for other variadic adders). */
int tau_agent_problem_addv(tau_agent_problem_list *list, const char *fmt, va_list ap)
        __attribute__((format(printf, 2, 0)));

/** Add a copy of an already formatted problem text.  @return as tau_agent_problem_add. */
int tau_agent_problem_add_text(tau_agent_problem_list *list, const char *text);

/** Free the strings and empty the list (a zeroed list is empty).  NULL is a no-op. */
void tau_agent_problem_list_free(tau_agent_problem_list *list);

/** True when `list` holds a problem with exactly the text `text`. */
bool tau_agent_problem_list_has(const tau_agent_problem_list *list, const char *text);

/**
 * Make `dst` a copy of `src` (what was there is freed).
 * @return 0, or -TAU_ENOMEM with `dst` holding the problems copied so far.
 */
int tau_agent_problem_list_copy(tau_agent_problem_list *dst, const tau_agent_problem_list *src);

/**
 * Replace *note with a printf-formatted text (at most TAU_AGENT_PROBLEM_MAX - 1 bytes): a
 * probe's "why not" note.  Out of memory leaves *note NULL: the note is optional.
 */
void tau_agent_note_set(char **note, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * buf = root (without trailing '/') + rel, where rel starts with '/'; NULL root is "".
 * @return 0, or -TAU_ETOOBIG when it does not fit `cap` (the message names the path).
 */
int tau_agent_host_path(char *buf, size_t cap, const char *root, const char *rel);

/** State of one driver's registration socket. */
typedef enum tau_agent_socket_state {
	TAU_AGENT_SOCKET_UNKNOWN = 0, /**< the registry could not be read, or not probed */
	TAU_AGENT_SOCKET_ABSENT = 1,  /**< no "<driver>-reg.sock" socket there */
	TAU_AGENT_SOCKET_PRESENT = 2  /**< "<driver>-reg.sock" exists and is a socket */
} tau_agent_socket_state;

/** The answer for one driver name. */
typedef struct tau_agent_driver_socket {
	char *driver;                 /**< owned copy of the driver name asked about */
	tau_agent_socket_state state; /**< see tau_agent_socket_state */
} tau_agent_driver_socket;

/**
 * One InfiniBand/RoCE port as sysfs describes it
 * (<root>/sys/class/infiniband/<device>/ports/<port>/...).  Each field that
 * could not be read is unknown (-1 or NULL) and a problem says why.
 */
typedef struct tau_agent_rdma_port {
	char *device; /**< owned; "mlx5_0" */
	char *port;   /**< owned; the port directory name, "1" */
	int state;    /**< `state` number: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER; -1 */
	int phys_state;      /**< `phys_state` number: 5 LinkUp, 3 Disabled, 2 Polling, ...; -1 */
	char *rate;          /**< owned; `rate` text, "400 Gb/sec (4X NDR)"; NULL unknown */
	int64_t rate_mbps;   /**< the rate's leading number in Mb/s (400 Gb/sec: 400000); -1 */
	char *link_layer;    /**< owned; `link_layer`: "InfiniBand", or "Ethernet" for RoCE; NULL */
	int64_t link_downed; /**< `counters/link_downed`: times the link went down; -1 unknown */
} tau_agent_rdma_port;

/**
 * Everything one host probe found.  Counts are -1 when unknown (the place
 * could not be read); each unknown comes with a problem string.
 */
typedef struct tau_agent_host_probe {
	tau_agent_driver_socket *sockets; /**< owned; one per distinct driver name asked */
	size_t n_sockets;

	int64_t gpu_device_nodes; /**< entries <root>/dev/nvidia<digits>; -1 if /dev unreadable */

	bool nvml_probed;        /**< NVML loaded and answered nvmlInit + count */
	int64_t nvml_gpus;       /**< NVML's GPU count; -1 unless nvml_probed */
	int64_t nvml_healthy;    /**< GPUs tau_agent_nvml judges healthy; -1 unless probed */
	char *nvml_note;         /**< owned; why NVML was not probed (NULL when it was) */
	tau_agent_nvml nvml;     /**< per-GPU facts, versions, missing symbols (nvml.h) */
	tau_agent_podres podres; /**< kubelet pod-resources: devices and holders (podresources.h) */
	/** owned; the live CSI check (csiprobe.h) of each driver whose socket is present */
	tau_agent_csi_live *csi_live;
	size_t n_csi_live;

	int64_t rdma_ports_total; /**< ports under /sys/class/infiniband; -1 if unreadable */
	int64_t rdma_ports_up;    /**< of those, state "4: ACTIVE"; -1 if unreadable */
	/** owned; the first TAU_AGENT_PROBE_MAX_RDMA_PORT_DETAILS ports, sorted by device, port */
	tau_agent_rdma_port *rdma_ports;
	size_t n_rdma_ports;

	tau_agent_problem_list problems; /**< what could not be read, in the order found */
} tau_agent_host_probe;

/** Make an empty probe (all unknown).  Pairs with tau_agent_host_probe_free. */
void tau_agent_host_probe_init(tau_agent_host_probe *probe);

/** Free what the probe owns and leave it as after init.  NULL is a no-op. */
void tau_agent_host_probe_free(tau_agent_host_probe *probe);

/**
 * Probe the host below `host_root` (NULL or "" means "/"): registration
 * sockets for each of the `n` driver names (duplicates answered once; a name
 * that is not a single path component, e.g. "a/b" or "..", is answered
 * UNKNOWN with a problem), GPU device nodes, NVML (see TAU_AGENT_NVML_ENV)
 * and InfiniBand port states.
 *
 * `probe` must be initialised; whatever it held is freed first.  Unreadable
 * places do not fail the call: they leave the matching field unknown and add
 * a problem.  Driver names beyond TAU_AGENT_PROBE_MAX_DRIVERS are dropped
 * with a problem.
 *
 * @return 0; -TAU_EINVAL when probe is NULL or driver_names is NULL with n > 0;
 *         -TAU_ENOMEM when an allocation failed (the probe is then partial).
 */
int tau_agent_probe_host(tau_agent_host_probe *probe, const char *host_root,
                         const char *const *driver_names, size_t n);

/**
 * Parse the text of an InfiniBand port "state" file ("4: ACTIVE\n").
 * @return 1 when the port is up (state 4, ACTIVE), 0 when it is in another
 *         known state (1 DOWN, 2 INIT, 3 ARMED, 5 ACTIVE_DEFER), -TAU_EINVAL
 *         when the text is not "<number>: <NAME>".
 */
int tau_agent_rdma_state_is_up(const char *text, size_t len);

/**
 * Parse a sysfs "<number>: <Name>" line as InfiniBand `state` and `phys_state`
 * files hold ("5: LinkUp\n", "3: Disabled\n"): the name is letters, digits and '_'.
 * @return the number (0 .. 9999), or -TAU_EINVAL when the text is not of that form.
 */
int tau_agent_sysfs_numbered(const char *text, size_t len);

/**
 * Parse the leading number of an InfiniBand `rate` file ("400 Gb/sec (4X NDR)",
 * "2.5 Gb/sec (1X SDR)") into Mb/s, exactly (at most 3 decimals).
 * @return 0 and *mbps; -TAU_EINVAL when the text does not start "<number> Gb/sec".
 */
int tau_agent_rdma_rate_mbps(int64_t *mbps, const char *text, size_t len);

/**
 * The RDMA part of the probe (rdma.c): count and describe the ports under
 * <root>/sys/class/infiniband into p; unreadable parts become problems.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_agent_probe_rdma(tau_agent_host_probe *p, const char *root);

/** Free `n` ports and the array (NULL is a no-op). */
void tau_agent_rdma_ports_free(tau_agent_rdma_port *ports, size_t n);

/**
 * Deep copy of `n` ports into *out (NULL when n is 0).
 * @return 0 or -TAU_ENOMEM (*out NULL).
 */
int tau_agent_rdma_ports_copy(tau_agent_rdma_port **out, const tau_agent_rdma_port *ports,
                              size_t n);

/** A watch on the plugin registry directory (opaque). */
typedef struct tau_agent_registry_watch tau_agent_registry_watch;

/**
 * Start watching <host_root>/var/lib/kubelet/plugins_registry with inotify.
 * If that directory does not exist yet, the nearest existing parent is
 * watched instead and the watch moves down when the directory appears
 * (tau_agent_registry_watch_on_parent tells which).
 *
 * @param out  receives the new watch (free with tau_agent_registry_watch_free)
 * @return 0, -TAU_EIO when inotify cannot be set up (message has errno text),
 *         -TAU_ENOMEM, -TAU_ETOOBIG when the path is too long.
 */
int tau_agent_registry_watch_open(tau_agent_registry_watch **out, const char *host_root);

/** The fd to poll for readability (O_NONBLOCK, O_CLOEXEC); owned by the watch. */
int tau_agent_registry_watch_fd(const tau_agent_registry_watch *w);

/** True while the registry directory itself is missing and a parent is watched. */
bool tau_agent_registry_watch_on_parent(const tau_agent_registry_watch *w);

/** Lends the directory being watched now (valid until the next drain or free). */
const char *tau_agent_registry_watch_path(const tau_agent_registry_watch *w);

/**
 * Read all pending events without blocking.
 * @return 1 when the registry may have changed (a socket came or went, the
 *         directory appeared or vanished, or events were lost): rescan;
 *         0 when nothing relevant happened; -TAU_EIO on a read error.
 */
int tau_agent_registry_watch_drain(tau_agent_registry_watch *w);

/** Close the inotify fd and free the watch.  NULL is a no-op. */
void tau_agent_registry_watch_free(tau_agent_registry_watch *w);

#endif /* TAU_AGENT_HOSTPROBE_H */
