/*
 * controller/events.h - core/v1 Events a controller records about the objects it manages.
 *
 * Events say what a controller did and what changed, for `kubectl describe` and
 * `kubectl get events`.  They are deduplicated the way the budget controller's are: a
 * controller records one when something changed (a condition's status or reason moved
 * from what the object's status said, an object was written), never on a pass that
 * changed nothing, so a resync or a retry records none.  Recording is best effort: a
 * failure is logged at warn and never retried, and never fails the pass.
 */
#ifndef TAU_AGGREGATOR_CONTROLLER_EVENTS_H
#define TAU_AGGREGATOR_CONTROLLER_EVENTS_H

#include "tau/kube.h"

#include <stdbool.h>

#include <cjson/cJSON.h>

/** Event types. */
#define TAU_EVENT_NORMAL  "Normal"
#define TAU_EVENT_WARNING "Warning"

/**
 * Record an Event about `object` (its apiVersion, kind, name, namespace and uid are
 * read from it) in the object's namespace, "default" for a cluster-scoped one, with
 * source and reportingComponent tau-aggregator.  Logs "event recorded" at info with
 * `controller`, or "event not recorded" at warn on failure.
 */
void tau_controller_record_event(tau_kube_client *client, const char *controller,
                                 const cJSON *object, const char *type, const char *reason,
                                 const char *message);

/**
 * Record an Event for each condition of `now` (an array of conditions) whose status or
 * reason differs from the condition of the same type in `before` (NULL or an array;
 * absent counts as changed).  The Event's reason is the condition's reason, its message
 * the condition's ("TYPE is STATUS (REASON)" when it has none); its type is Warning when
 * `warning(type, status)`, else Normal.  Only conditions whose type is in `types` (NULL-terminated)
 * count: another controller's conditions on the same object are not ours to announce.
 * @return the number of Events attempted.
 */
int tau_controller_record_condition_events(tau_kube_client *client, const char *controller,
                                           const cJSON *object, const cJSON *before,
                                           const cJSON *now, const char *const *types,
                                           bool (*warning)(const char *type, const char *status));

#endif /* TAU_AGGREGATOR_CONTROLLER_EVENTS_H */
