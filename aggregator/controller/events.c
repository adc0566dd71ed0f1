/*
 * events.c - core/v1 Events about the objects a controller manages.
 *
 * The one idea: an Event is news, not state.  The state is in the object's conditions,
 * which a level-triggered pass rewrites each time; an Event is recorded only where a pass
 * found a difference (a condition that moved, an object written), so repeating a pass
 * repeats no Event.  Recording never fails a pass: an API error is logged and dropped.
 */
#include "events.h"

#include "tau/clock.h"
#include "tau/conditions.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/str.h"

#include <stdio.h>
#include <string.h>

static const tau_kube_resource res_events = {"", "v1", "events", true};

/* Our CRDs' group version, for an object read without apiVersion (list items). */
#define TAU_API_VERSION "tau.azure.com/v1alpha1"

static bool add_str(cJSON *obj, const char *key, const char *v)
{
	return v != NULL && cJSON_AddStringToObject(obj, key, v) != NULL;
}

/* The Event object, or NULL (out of memory, or the object has no kind, name or uid). */
static cJSON *event_of(const cJSON *object, const char *ns, const char *type, const char *reason,
                       const char *message, const char *now)
{
	const char *name = tau_json_str(object, "metadata.name");
	const char *obj_ns = tau_json_str(object, "metadata.namespace");
	const char *api = tau_json_str(object, "apiVersion");
	cJSON *ev = cJSON_CreateObject(), *meta, *inv, *src;
	char gen[300];

	snprintf(gen, sizeof(gen), "%.250s.", name != NULL ? name : "tau");
	if (ev == NULL || !add_str(ev, "apiVersion", "v1") || !add_str(ev, "kind", "Event") ||
	    (meta = cJSON_AddObjectToObject(ev, "metadata")) == NULL ||
	    !add_str(meta, "generateName", gen) || !add_str(meta, "namespace", ns) ||
	    (inv = cJSON_AddObjectToObject(ev, "involvedObject")) == NULL ||
	    !add_str(inv, "apiVersion", api != NULL ? api : TAU_API_VERSION) ||
	    !add_str(inv, "kind", tau_json_str(object, "kind")) || !add_str(inv, "name", name) ||
	    (obj_ns != NULL && !add_str(inv, "namespace", obj_ns)) ||
	    !add_str(inv, "uid", tau_json_str(object, "metadata.uid")) ||
	    !add_str(ev, "reason", reason) || !add_str(ev, "message", message) ||
	    !add_str(ev, "type", type) || !add_str(ev, "firstTimestamp", now) ||
	    !add_str(ev, "lastTimestamp", now) || cJSON_AddNumberToObject(ev, "count", 1) == NULL ||
	    (src = cJSON_AddObjectToObject(ev, "source")) == NULL ||
	    !add_str(src, "component", "tau-aggregator") ||
	    !add_str(ev, "reportingComponent", "tau-aggregator")) {
		cJSON_Delete(ev);
		return NULL;
	}
	return ev;
}

void tau_controller_record_event(tau_kube_client *client, const char *controller,
                                 const cJSON *object, const char *type, const char *reason,
                                 const char *message)
{
	const char *ns = tau_json_str(object, "metadata.namespace");
	const char *name = tau_json_str(object, "metadata.name");
	char now[TAU_RFC3339_LEN];
	cJSON *ev;

	if (ns == NULL || ns[0] == '\0')
		ns = "default";
	if (tau_rfc3339(now, time(NULL)) < 0 ||
	    (ev = event_of(object, ns, type, reason, message, now)) == NULL) {
		tau_log_warn("event not recorded", "controller", controller, "object", name,
		             "reason", reason, "error",
		             "out of memory, or the object has no kind, "
		             "name or uid",
		             NULL);
		return;
	}
	tau_log_info("event recorded", "controller", controller, "kind",
	             tau_json_str(object, "kind"), "object", name, "type", type, "reason", reason,
	             "message", message, NULL);
	if (tau_kube_create(NULL, client, &res_events, ns, ev) < 0)
		tau_log_warn("event not recorded", "controller", controller, "object", name,
		             "reason", reason, "error", tau_error_last()->msg, NULL);
	cJSON_Delete(ev);
}

static bool listed(const char *const *types, const char *type)
{
	for (size_t i = 0; types != NULL && types[i] != NULL; i++)
		if (strcmp(types[i], type) == 0)
			return true;
	return false;
}

int tau_controller_record_condition_events(tau_kube_client *client, const char *controller,
                                           const cJSON *object, const cJSON *before,
                                           const cJSON *now, const char *const *types,
                                           bool (*warning)(const char *type, const char *status))
{
	const cJSON *c;
	int n = 0;

	cJSON_ArrayForEach(c, now)
	{
		const char *type = tau_json_str(c, "type"), *status = tau_json_str(c, "status"),
		           *reason = tau_json_str(c, "reason"), *message;
		char said[400];
		const cJSON *old;

		if (type == NULL || status == NULL || reason == NULL || !listed(types, type))
			continue;
		old = tau_conditions_find(before, type);
		if (old != NULL && tau_str_eq_both_set(tau_json_str(old, "status"), status) &&
		    tau_str_eq_both_set(tau_json_str(old, "reason"), reason))
			continue;
		message = tau_json_str(c, "message");
		if (message == NULL || message[0] == '\0') {
			/* A condition without words still says what moved. */
			snprintf(said, sizeof(said), "%.100s is %.20s (%.200s)", type, status,
			         reason);
			message = said;
		}
		tau_controller_record_event(client, controller, object,
		                            warning(type, status) ? TAU_EVENT_WARNING
		                                                  : TAU_EVENT_NORMAL,
		                            reason, message);
		n++;
	}
	return n;
}
