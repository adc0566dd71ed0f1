/*
 * team_status.c - the `tau team status` view: one document, then its table.
 *
 * The one idea: tau_cli_team_status_doc assembles the stable JSON document
 * (docs/cli.md) from the team, its Cohort, the ClusterQueues drawing from it
 * and the TauCluster, and never recomputes the budget; the table form is
 * printed from that document only, so both forms always say the same.
 */
#include "team_internal.h"

#include "output.h"

#include "tau/error.h"
#include "tau/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* status: the queues drawing from the budget                                                  */

static cJSON *queue_entry(cJSON *doc, const char *ws, const char *cq_name, const cJSON *cq)
{
	cJSON *o = cJSON_CreateObject(), *resv;
	const cJSON *fl, *res;
	char where[1024];

	tau_cli_team_put(o, "workspace", ws);
	tau_cli_team_put(o, "clusterQueue",
	                 cq != NULL ? tau_json_str(cq, "metadata.name") : cq_name);
	cJSON_AddBoolToObject(o, "found", cq != NULL);
	tau_cli_team_put(o, "cohort", tau_json_str(cq, "spec.cohortName"));
	tau_cli_team_put_int(o, "admittedWorkloads", cq, "status.admittedWorkloads");
	tau_cli_team_put_int(o, "reservingWorkloads", cq, "status.reservingWorkloads");
	tau_cli_team_put_int(o, "pendingWorkloads", cq, "status.pendingWorkloads");
	resv = cJSON_AddArrayToObject(o, "reservations");
	cJSON_ArrayForEach(fl, tau_json_find(cq, "status.flavorsReservation"))
	{
		const char *flavor = tau_json_str(fl, "name");

		cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(fl, "resources"))
		{
			cJSON *r = cJSON_CreateObject();
			const char *rname = tau_json_str(res, "name");

			tau_cli_team_put(r, "flavor", flavor);
			tau_cli_team_put(r, "resource", rname);
			for (size_t k = 0; k < 2; k++) {
				const char *field = k == 0 ? "total" : "borrowed";

				snprintf(where, sizeof(where),
				         "ClusterQueue %s flavor %s resource %s %s",
				         tau_json_str(cq, "metadata.name"),
				         tau_cli_team_or_none(flavor), tau_cli_team_or_none(rname),
				         field);
				tau_cli_team_put_quantity(
				        r, field, cJSON_GetObjectItemCaseSensitive(res, field), doc,
				        where);
			}
			cJSON_AddItemToArray(resv, r);
		}
	}
	return o;
}

/*
 * One entry per TauWorkspace of the team (its ClusterQueue: the one labelled with the
 * workspace, else tau-ws-<workspace>; found false when there is none), then every other
 * ClusterQueue labelled with the team or naming the team's Cohort in spec.cohortName.
 */
static int add_queues(cJSON *doc, const tau_cli_team_input *in, const char *team,
                      const char *cohort_name)
{
	const cJSON *qitems = tau_cli_team_items_of(in->queues), *w, *q;
	size_t nq = (size_t)cJSON_GetArraySize(qitems), i;
	cJSON *arr = cJSON_AddArrayToObject(doc, "queues");
	bool *used = calloc(nq + 1, sizeof(*used));

	if (used == NULL || arr == NULL) {
		free(used);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(w, tau_cli_team_items_of(in->workspaces))
	{
		const char *ws = tau_json_str(w, "metadata.name");
		const cJSON *match = NULL;
		char cq_name[TAU_CLI_TEAM_NAME_BUF];

		if (ws == NULL || !tau_str_eq_both_set(tau_json_str(w, "spec.teamRef.name"), team))
			continue;
		snprintf(cq_name, sizeof(cq_name), TAU_CLI_TEAM_CQ_PREFIX "%s", ws);
		i = 0;
		cJSON_ArrayForEach(q, qitems)
		{
			bool labelled =
			        tau_str_eq_both_set(tau_json_label(q, TAU_CLI_TEAM_LABEL_WS), ws) &&
			        tau_str_eq_both_set(tau_json_label(q, TAU_CLI_TEAM_LABEL_TEAM),
			                            team);

			if (!used[i] &&
			    (labelled ||
			     tau_str_eq_both_set(tau_json_str(q, "metadata.name"), cq_name))) {
				used[i] = true;
				match = q;
				break;
			}
			i++;
		}
		cJSON_AddItemToArray(arr, queue_entry(doc, ws, cq_name, match));
	}
	i = 0;
	cJSON_ArrayForEach(q, qitems)
	{
		if (!used[i] &&
		    (tau_str_eq_both_set(tau_json_label(q, TAU_CLI_TEAM_LABEL_TEAM), team) ||
		     tau_str_eq_both_set(tau_json_str(q, "spec.cohortName"), cohort_name)))
			cJSON_AddItemToArray(
			        arr, queue_entry(doc, tau_json_label(q, TAU_CLI_TEAM_LABEL_WS),
			                         NULL, q));
		i++;
	}
	free(used);
	return 0;
}

/* The team's conditions, each with exactly these string fields (null when unset). */
static void add_conditions(cJSON *doc, const cJSON *team)
{
	static const char *const fields[] = {"type", "status", "reason", "message",
	                                     "lastTransitionTime"};
	cJSON *arr = cJSON_AddArrayToObject(doc, "conditions");
	const cJSON *c;

	cJSON_ArrayForEach(c, tau_json_find(team, "status.conditions"))
	{
		cJSON *o = cJSON_CreateObject();

		for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++)
			tau_cli_team_put(o, fields[k], tau_json_str(c, fields[k]));
		cJSON_AddItemToArray(arr, o);
	}
}

cJSON *tau_cli_team_status_doc(const tau_cli_team_input *in)
{
	const char *name = tau_json_str(in->team, "metadata.name"), *uid, *found_uid;
	char cohort_name[TAU_CLI_TEAM_NAME_BUF];
	bool capacity;
	cJSON *doc, *co;

	if (name == NULL) {
		tau_error_set(TAU_EINVAL, "not a team: no metadata.name");
		return NULL;
	}
	tau_cli_team_cohort_name(cohort_name, in->team, name);
	capacity = strcmp(tau_cli_team_mode(in->team, in->cluster), "capacity") == 0;
	if ((doc = cJSON_CreateObject()) == NULL ||
	    cJSON_AddArrayToObject(doc, "warnings") == NULL) {
		cJSON_Delete(doc);
		tau_error_set(TAU_ENOMEM, "out of memory");
		return NULL;
	}
	tau_cli_team_put(doc, "name", name);
	tau_cli_team_put(doc, "systemNamespace", tau_json_str(in->team, "metadata.namespace"));
	tau_cli_team_put(doc, "mode", capacity ? "capacity" : "explicit");
	tau_cli_team_put(doc, "phase", tau_json_str(in->team, "status.phase"));
	cJSON_AddBoolToObject(doc, "ready", tau_cli_team_ready(in->team));
	tau_cli_team_put_int(doc, "generation", in->team, "metadata.generation");
	tau_cli_team_put_int(doc, "observedGeneration", in->team, "status.observedGeneration");
	tau_cli_team_put(
	        doc, "reason",
	        tau_json_str(tau_cli_team_condition(in->team, TAU_CLI_TEAM_COND_QUOTA), "reason"));
	co = cJSON_AddObjectToObject(doc, "cohort");
	tau_cli_team_put(co, "name", cohort_name);
	uid = tau_json_str(in->team, "status.cohortUID");
	tau_cli_team_put(co, "uid", uid);
	cJSON_AddBoolToObject(co, "found", in->cohort != NULL);
	found_uid = tau_json_str(in->cohort, "metadata.uid");
	if (in->cohort == NULL)
		tau_cli_team_warn(doc, "Cohort %s does not exist", cohort_name);
	else if (uid != NULL && found_uid != NULL && strcmp(uid, found_uid) != 0)
		tau_cli_team_warn(
		        doc, "Cohort %s has UID %s, not status.cohortUID %s (recreated since?)",
		        cohort_name, found_uid, uid);
	if (tau_cli_team_add_budget(doc, in, capacity, name, cohort_name) != 0 ||
	    add_queues(doc, in, name, cohort_name) != 0) {
		cJSON_Delete(doc);
		return NULL;
	}
	add_conditions(doc, in->team);
	/* "warnings" last in the printed document, so readers meet the facts first. */
	cJSON_AddItemToObject(doc, "warnings", cJSON_DetachItemFromObject(doc, "warnings"));
	return doc;
}

/* ------------------------------------------------------------------------------------------ */
/* status: printing                                                                            */

static int print_budget(FILE *out, const cJSON *doc)
{
	static const char *const headers[] = {"FLAVOR", "RESOURCE", "BUDGET", "POOL", "VIA-DRA"};
	static const char *const keys[] = {"flavor", "resource", "budget", "pool", "viaDra"};
	/* An explicit team: its quota, what its workspaces are guaranteed, the Cohort's rest,
	 * what Kueue holds now and what is reserved of it. */
	static const char *const x_headers[] = {"FLAVOR", "RESOURCE", "QUOTA",   "GUARANTEES",
	                                        "BUDGET", "APPLIED",  "RESERVED"};
	static const char *const x_keys[] = {"flavor", "resource", "pool",    "guarantees",
	                                     "budget", "applied",  "reserved"};
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, "budget");

	if (tau_str_eq_both_set(tau_json_str(doc, "poolSource"), TAU_CLI_TEAM_SRC_SPEC_QUOTA))
		return tau_cli_team_print_objects(
		        out, "Budget",
		        "Budget (QUOTA: spec.quota; GUARANTEES: workspace spec.quota; "
		        "BUDGET: Cohort nominalQuota; APPLIED: Cohort and workspace "
		        "queues; RESERVED: their reservations)",
		        rows, x_headers, x_keys, 7);
	if (cJSON_IsTrue(tau_json_find(doc, "dra.checked")))
		return tau_cli_team_print_objects(
		        out, "Budget",
		        "Budget (Cohort nominalQuota) beside the pool (TauCluster "
		        "discoveredCapacity; VIA-DRA: the part of it DRA devices give, "
		        "from the aggregator)",
		        rows, headers, keys, 5);
	return tau_cli_team_print_objects(
	        out, "Budget",
	        "Budget (Cohort nominalQuota) beside the pool (TauCluster "
	        "discoveredCapacity)",
	        rows, headers, keys, 4);
}

/* One row per reservation of each queue (one row for a queue without any), then the table. */
static int print_queues(FILE *out, const cJSON *doc)
{
	static const char *const headers[] = {"WORKSPACE", "CLUSTERQUEUE", "ADMITTED", "PENDING",
	                                      "FLAVOR",    "RESOURCE",     "RESERVED", "BORROWED"};
	static const char *const keys[] = {
	        "workspace", "clusterQueue", "admittedWorkloads", "pendingWorkloads", "flavor",
	        "resource",  "total",        "borrowed"};
	cJSON *rows = cJSON_CreateArray();
	const cJSON *q;
	int rc;

	cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(doc, "queues"))
	{
		const cJSON *resv = cJSON_GetObjectItemCaseSensitive(q, "reservations");
		bool found = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "found"));
		size_t k = 0, n = (size_t)cJSON_GetArraySize(resv);

		do {
			cJSON *row = cJSON_Duplicate(cJSON_GetArrayItem(resv, (int)k), true);

			if (row == NULL) /* no reservation: "-" for a queue, "<none>" for none */
				row = cJSON_CreateObject();
			tau_cli_team_put(row, "workspace", tau_json_str(q, "workspace"));
			tau_cli_team_put(row, "clusterQueue",
			                 found ? tau_json_str(q, "clusterQueue") : "<not found>");
			for (size_t c = 2; c < 4; c++)
				cJSON_AddItemToObject(
				        row, keys[c],
				        cJSON_Duplicate(
				                cJSON_GetObjectItemCaseSensitive(q, keys[c]),
				                true));
			for (size_t c = 4; n == 0 && found && c < 8; c++)
				tau_cli_team_put(row, keys[c], "-");
			cJSON_AddItemToArray(rows, row);
		} while (++k < n);
	}
	rc = tau_cli_team_print_objects(out, "Queues",
	                                "Queues (ClusterQueue reservations and borrowing)", rows,
	                                headers, keys, 8);
	cJSON_Delete(rows);
	return rc;
}

int tau_cli_team_print_status(FILE *out, const cJSON *doc, tau_cli_format fmt)
{
	const char *name = tau_json_str(doc, "name"), *phase = tau_json_str(doc, "phase");
	const cJSON *co = cJSON_GetObjectItemCaseSensitive(doc, "cohort"), *w;
	int64_t gen = 0, obs = 0;

	if (name == NULL)
		return tau_error_set(TAU_EINVAL, "team status: no name");
	if (fmt != TAU_CLI_TABLE)
		return tau_cli_doc_print(out, doc, fmt);
	tau_json_get_int(&gen, doc, "generation");
	fprintf(out, "Name:                %s\n", name);
	fprintf(out, "System namespace:    %s\n",
	        tau_cli_team_or_none(tau_json_str(doc, "systemNamespace")));
	fprintf(out, "Mode:                %s\n", tau_cli_team_or_none(tau_json_str(doc, "mode")));
	fprintf(out, "Phase:               %s\n", tau_cli_team_or_none(phase));
	if (tau_json_get_int(&obs, doc, "observedGeneration") == 0)
		fprintf(out, "Generation:          %lld (observed %lld)\n", (long long)gen,
		        (long long)obs);
	else
		fprintf(out, "Generation:          %lld (not observed yet)\n", (long long)gen);
	fprintf(out, "Cohort:              %s%s\n", tau_cli_team_or_none(tau_json_str(co, "name")),
	        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(co, "found")) ? "" : " (not found)");
	static const char *const cond_headers[] = {"TYPE", "STATUS", "REASON", "MESSAGE"};
	static const char *const cond_keys[] = {"type", "status", "reason", "message"};

	if (print_budget(out, doc) != 0 || print_queues(out, doc) != 0 ||
	    tau_cli_team_print_objects(out, "Conditions", "Conditions",
	                               cJSON_GetObjectItemCaseSensitive(doc, "conditions"),
	                               cond_headers, cond_keys, 4) != 0)
		return -TAU_ENOMEM;
	cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(doc, "warnings"))
	{
		if (cJSON_IsString(w))
			fprintf(out, "Warning: %s\n", w->valuestring);
	}
	return 0;
}
