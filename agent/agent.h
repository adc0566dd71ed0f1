/*
 * agent.h - tau-node-agent's two modes: the long-running event loop that
 * streams inventory to the aggregator, and the one-shot "--once -o json".
 *
 * Both build the inventory the same way (build.h), so what --once prints is
 * exactly what the daemon would report.
 */
#ifndef TAU_AGENT_AGENT_H
#define TAU_AGENT_AGENT_H

#include "build.h"
#include "config.h"

#include "tau/kube.h"

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/**
 * The Kubernetes client both modes use: the configured kubeconfig and context, the agent's
 * user agent, and with --once kubectl's --request-timeout.  Logs what failed.
 * @return 0; < 0 (-TAU_ENOMEM, or a configuration error).
 */
int tau_agent_kube_client_new(tau_kube_client **out, const tau_agent_config *cfg);

/**
 * --once: read Node, CSINode and pods from the API, probe the host, print the
 * inventory JSON on `out`.  @return the exit code: 0 printed, 1 printed but
 * the Node could not be read, 2 configuration error (nothing printed).
 */
int tau_agent_once(const tau_agent_config *cfg, FILE *out);

/**
 * The daemon: watch, probe, stream until SIGTERM/SIGINT.  Blocks those
 * signals in the calling thread before starting any other thread.
 * @return the exit code (0 after a signal, 1 on a fatal error).
 */
int tau_agent_run(const tau_agent_config *cfg);

#endif /* TAU_AGENT_AGENT_H */
