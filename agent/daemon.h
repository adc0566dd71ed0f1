/*
 * daemon.h - the state of tau-node-agent's event loop, shared by the files of the daemon only.
 *
 * agent.c runs the loop and owns this state; daemon_watch.c holds the informers that feed it
 * and daemon_send.c the reports it sends.  Everything here is touched by the main thread
 * only, except kube_dirty, pods_dirty and wake_fd, which the informers' handlers on the kube
 * loop thread set and write (docs/architecture.md "Threads and locks").
 */
#ifndef TAU_AGENT_DAEMON_H
#define TAU_AGENT_DAEMON_H

#include "agent.h"
#include "http.h"
#include "nodeconditions_publish.h"
#include "report.h"
#include "stream.h"

#include "tau/kube.h"
#include "tau/kube_informer.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef struct tau_agent_daemon {
	bool config_error; /* setup failed on the configuration (kubeconfig, CA, listen): exit 2 */
	const tau_agent_config *cfg;
	tau_kube_client *kc;
	tau_kube_loop *loop;
	tau_kube_informer *node_inf, *csinode_inf, *pods_inf;
	tau_agent_registry_watch *regw;
	tau_agent_stream *stream;
	tau_http_server *http;
	tau_agent_metrics metrics;
	tau_agent_session session;
	int sig_fd;
	int wake_fd;
	atomic_bool kube_dirty;
	atomic_bool pods_dirty; /* a pod on the node changed: ask kubelet's pod-resources again */

	int64_t start_ms;
	int64_t next_probe_ms;
	bool host_dirty;
	bool synced_all; /* all three informers listed */
	bool built;      /* an inventory exists */
	tau_agent_inventory inv;
	char digest[65];
	tau_agent_problem_list logged; /* the problems last logged, to log each once */
	int64_t observed_ms;           /* wall clock of the build that produced `digest` */
	char failed_digest[65];
	tau_agent_probe_cache cache;

	tau_agent_conditions_publisher conditions; /* --node-conditions */

	bool stopping;
	int64_t stop_deadline_ms;
	bool stop_closed;
} tau_agent_daemon;

/** The three informers (Node, CSINode, pods on the node) on a->loop, started.  @return 0 or < 0. */
int tau_agent_daemon_watch(tau_agent_daemon *a);

/**
 * A copy of the object `name` from an informer's cache; NULL with a problem text in
 * `problem` (set in *problem_out) when it is not listed yet, absent or cannot be copied.
 */
cJSON *tau_agent_daemon_cached(tau_kube_informer *inf, const char *name, const char *what,
                               char *problem, size_t cap, const char **problem_out);

/** Ask the report session what is due (inventory, heartbeat, reconnect) and do it. */
void tau_agent_daemon_send_due(tau_agent_daemon *a);

/** Take the stream's events (connected, ack, closed) into the session. */
void tau_agent_daemon_stream_events(tau_agent_daemon *a);

/** A signal arrived: send Stopping, half-close, and let the loop wait for the close. */
void tau_agent_daemon_begin_stop(tau_agent_daemon *a, const char *reason);

#endif /* TAU_AGENT_DAEMON_H */
