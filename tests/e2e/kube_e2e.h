/*
 * kube_e2e.h - helpers shared by the kube-sim driven C tests
 * (tests/e2e/kube_*.c); driven by tests/e2e/test_kube_client.py, which
 * starts kube-sim and passes its kubeconfig in KUBE_SIM_KUBECONFIG.
 */
#ifndef TAU_KUBE_E2E_H
#define TAU_KUBE_E2E_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "tau/kube.h"

/** A client for $KUBE_SIM_KUBECONFIG with test-friendly limits; aborts on failure. */
tau_kube_client *e2e_client(double qps, int max_retries);

/** POST (add), PUT (replace) or DELETE (clear) /sim/faults with `json`. @return 0 or <0. */
int e2e_faults(tau_kube_client *c, const char *method, const char *json);

/** Parse printf-formatted JSON; aborts on failure. */
cJSON *e2e_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Create a namespace, ignoring AlreadyExists. @return 0 or <0. */
int e2e_namespace(tau_kube_client *c, const char *name);

/** Poll `cond` every 20 ms until true or `timeout_ms`; @return cond's last answer. */
bool e2e_wait(bool (*cond)(void *arg), void *arg, uint64_t timeout_ms);

#endif
