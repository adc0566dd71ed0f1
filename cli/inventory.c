/*
 * inventory.c - `tau inventory nodes|pool|explain NODE|fit`: ask the
 * aggregator's QueryService and print the answer as a table or JSON.
 *
 * The one idea: printing is separate from asking.  The render functions take
 * the protobuf answers and return text, so the stable JSON shapes and the
 * table layout are unit tested without a server (tests/unit/test_cli_*.c).
 */
#include "inventory.h"

#include "cli.h"
#include "globalopts.h"
#include "output.h"
#include "table.h"

#include "tau/buf.h"
#include "tau/error.h"
#include "tau/kube.h"
#include "tau/parse.h"
#include "tau/rpc_client.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUERY TAU_CLI_QUERY
/* Nodes asked per ListNodes page (the aggregator may send fewer). */
#define TAU_CLI_NODES_PAGE 500
/* fit --gpus: the aggregator's limit (TAU_FIT_MAX_GPUS). */
#define TAU_CLI_FIT_MAX_GPUS 65536
/* --timeout: a bare number is seconds; an hour is past any sane query. */
#define TIMEOUT_MAX_MS (3600 * 1000)

/* The document `root` (taken, freed here) as JSON or YAML text. */
static int doc_out(char **out, cJSON *root, tau_cli_format fmt)
{
	int rc = root != NULL ? tau_cli_doc_render(out, root, fmt)
	                      : tau_error_set(TAU_ENOMEM, "out of memory");

	cJSON_Delete(root);
	return rc;
}

static int table_out(char **out, tau_table *t, const char *footer)
{
	char *body = NULL;
	int rc = tau_table_render(&body, t);

	tau_table_free(t);
	if (rc < 0)
		return rc;
	if (footer != NULL) {
		size_t a = strlen(body), b = strlen(footer);
		char *all = realloc(body, a + b + 1);

		if (all == NULL) {
			free(body);
			return tau_error_set(TAU_ENOMEM, "out of memory");
		}
		memcpy(all + a, footer, b + 1);
		body = all;
	}
	*out = body;
	return 0;
}

/* A new object at the end of array arr. */
static cJSON *add_object(cJSON *arr)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddItemToArray(arr, o);
	return o;
}

/* The free-now figures per class as JSON objects (the pool's "freeNow"). */
static void capacity_json(cJSON *arr, const Tau__Inventory__V1__GetCapacityResponse *cap)
{
	for (size_t i = 0; i < cap->n_classes; i++) {
		const Tau__Inventory__V1__ClassCapacity *c = cap->classes[i];
		cJSON *o = add_object(arr);

		cJSON_AddStringToObject(o, "gpuClass", c->gpu_class);
		cJSON_AddNumberToObject(o, "nodes", (double)c->nodes);
		cJSON_AddNumberToObject(o, "nodesKnown", (double)c->nodes_known);
		cJSON_AddNumberToObject(o, "nodesUnknown", (double)c->nodes_unknown);
		cJSON_AddNumberToObject(o, "nodesDegraded", (double)c->nodes_degraded);
		cJSON_AddNumberToObject(o, "gpusHealthy", (double)c->gpus_healthy);
		cJSON_AddNumberToObject(o, "gpusInUse", (double)c->gpus_in_use);
		cJSON_AddNumberToObject(o, "gpusFree", (double)c->gpus_free);
		cJSON_AddNumberToObject(o, "wholeNodesFree", (double)c->whole_nodes_free);
	}
}

/* The free-now table, appended to `text` (which it replaces). */
static int capacity_table(char **text, const Tau__Inventory__V1__GetCapacityResponse *cap)
{
	static const char *const hdr[] = {"GPU-CLASS", "NODES",    "KNOWN",
	                                  "UNKNOWN",   "DEGRADED", "HEALTHY",
	                                  "IN-USE",    "FREE",     "WHOLE-NODES-FREE"};
	tau_table *t = NULL;
	char *body = NULL, *all;
	int rc = tau_table_new(&t, 9, hdr);
	size_t a, b;

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < cap->n_classes; i++) {
		const Tau__Inventory__V1__ClassCapacity *c = cap->classes[i];
		char v[8][16];
		const char *row[9];
		uint32_t nums[8] = {c->nodes,          c->nodes_known,     c->nodes_unknown,
		                    c->nodes_degraded, c->gpus_healthy,    c->gpus_in_use,
		                    c->gpus_free,      c->whole_nodes_free};

		row[0] = c->gpu_class;
		for (size_t k = 0; k < 8; k++) {
			snprintf(v[k], sizeof(v[k]), "%" PRIu32, nums[k]);
			row[k + 1] = v[k];
		}
		if ((rc = tau_table_add(t, row)) < 0) {
			tau_table_free(t);
			return rc;
		}
	}
	rc = tau_table_render(&body, t);
	tau_table_free(t);
	if (rc < 0)
		return rc;
	a = strlen(*text);
	b = strlen(body);
	all = realloc(*text, a + b + 64);
	if (all == NULL) {
		free(body);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	a += (size_t)snprintf(all + a, 64,
	                      "\nFree now (node truth; unknown nodes never count "
	                      "as free):\n");
	memcpy(all + a, body, b + 1);
	free(body);
	*text = all;
	return 0;
}

/* The part of flavor f's sum of `resource` that comes through DRA devices, or NULL. */
static const char *dra_part(const Tau__Inventory__V1__Flavor *f, const char *resource)
{
	for (size_t i = 0; i < f->n_dra_resources; i++)
		if (strcmp(f->dra_resources[i]->key, resource) == 0)
			return f->dra_resources[i]->value;
	return NULL;
}

/*
 * The pool's table: one row per flavor and resource, then the gate.  VIA-DRA (the part of the
 * sum that DRA devices give) only when some of the pool comes through DRA.
 */
static int pool_table(char **out, const Tau__Inventory__V1__Pool *pool)
{
	{
		static const char *const hdr[] = {"FLAVOR", "NODES", "RESOURCE", "ALLOCATABLE",
		                                  "VIA-DRA"};
		tau_table *t = NULL;
		char footer[4096];
		size_t off, cols = 4;
		int rc;

		for (size_t i = 0; i < pool->n_flavors; i++)
			cols = pool->flavors[i]->n_dra_resources > 0 ? 5 : cols;
		if ((rc = tau_table_new(&t, cols, hdr)) < 0)
			return rc;
		for (size_t i = 0; i < pool->n_flavors; i++) {
			const Tau__Inventory__V1__Flavor *f = pool->flavors[i];
			char nodes[32];

			snprintf(nodes, sizeof(nodes), "%" PRIu32, f->node_count);
			for (size_t r = 0; r < f->n_resources; r++) {
				const char *dra = dra_part(f, f->resources[r]->key);
				const char *row[5] = {f->name, nodes, f->resources[r]->key,
				                      f->resources[r]->value,
				                      dra != NULL ? dra : "-"};

				if ((rc = tau_table_add(t, row)) < 0) {
					tau_table_free(t);
					return rc;
				}
			}
		}
		off = (size_t)snprintf(footer, sizeof(footer), "\nEstablished: %s\n",
		                       pool->established ? "yes"
		                                         : "no (budgets are not shrunk yet)");
		if (pool->valid)
			off += (size_t)snprintf(footer + off, sizeof(footer) - off, "Valid: yes\n");
		else
			off += (size_t)snprintf(
			        footer + off, sizeof(footer) - off,
			        "Valid: no, nothing counts (budget zeroed): %.1500s\n",
			        pool->invalid_reason != NULL ? pool->invalid_reason : "");
		off += (size_t)snprintf(footer + off, sizeof(footer) - off, "Missing nodes: ");
		for (size_t i = 0; i < pool->n_missing_nodes && off < sizeof(footer) - 64; i++)
			off += (size_t)snprintf(footer + off, sizeof(footer) - off, "%s%s",
			                        i ? ", " : "", pool->missing_nodes[i]);
		if (pool->n_missing_nodes == 0 && pool->missing_count == 0)
			off += (size_t)snprintf(footer + off, sizeof(footer) - off, "none");
		else if (off >= sizeof(footer) - 64 || pool->missing_count > pool->n_missing_nodes)
			off += (size_t)snprintf(footer + off, sizeof(footer) - off,
			                        ", ... (%" PRIu32 " in all)", pool->missing_count);
		snprintf(footer + off, sizeof(footer) - off, "\n");
		return table_out(out, t, footer);
	}
}

int tau_cli_render_pool(char **out, const Tau__Inventory__V1__Pool *pool,
                        const Tau__Inventory__V1__GetCapacityResponse *cap, tau_cli_format fmt)
{
	if (fmt == TAU_CLI_TABLE) {
		int rc = pool_table(out, pool);

		if (rc == 0 && cap != NULL && (rc = capacity_table(out, cap)) < 0) {
			free(*out);
			*out = NULL;
		}
		return rc;
	}
	{
		cJSON *root = cJSON_CreateObject();
		cJSON *missing, *flavors;

		/* The documented key order: established, valid, invalidReason, missingNodes,
		 * flavors. */
		cJSON_AddBoolToObject(root, "established", pool->established);
		cJSON_AddBoolToObject(root, "valid", pool->valid);
		cJSON_AddStringToObject(root, "invalidReason",
		                        pool->invalid_reason != NULL ? pool->invalid_reason : "");
		missing = cJSON_AddArrayToObject(root, "missingNodes");
		for (size_t i = 0; i < pool->n_missing_nodes; i++)
			cJSON_AddItemToArray(missing, cJSON_CreateString(pool->missing_nodes[i]));
		cJSON_AddNumberToObject(root, "missingCount", (double)pool->missing_count);
		flavors = cJSON_AddArrayToObject(root, "flavors");
		for (size_t i = 0; i < pool->n_flavors; i++) {
			const Tau__Inventory__V1__Flavor *f = pool->flavors[i];
			cJSON *fo = add_object(flavors);
			cJSON *res;

			cJSON_AddStringToObject(fo, "name", f->name);
			cJSON_AddNumberToObject(fo, "nodes", (double)f->node_count);
			res = cJSON_AddObjectToObject(fo, "resources");
			for (size_t r = 0; r < f->n_resources; r++)
				cJSON_AddStringToObject(res, f->resources[r]->key,
				                        f->resources[r]->value);
			res = cJSON_AddObjectToObject(fo, "draResources");
			for (size_t r = 0; r < f->n_dra_resources; r++)
				cJSON_AddStringToObject(res, f->dra_resources[r]->key,
				                        f->dra_resources[r]->value);
		}
		if (cap != NULL)
			capacity_json(cJSON_AddArrayToObject(root, "freeNow"), cap);
		return doc_out(out, root, fmt);
	}
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static const char *health_name(Tau__Inventory__V1__NodeHealth h)
{
	return h == TAU__INVENTORY__V1__NODE_HEALTH__NODE_HEALTH_OK         ? "ok"
	       : h == TAU__INVENTORY__V1__NODE_HEALTH__NODE_HEALTH_DEGRADED ? "degraded"
	                                                                    : "unknown";
}

/* The node's free GPUs are known now: its agent reported pod-resources and is not stale. */
static bool node_free_known(const Tau__Inventory__V1__NodeStatus *n)
{
	return n->truth != NULL && n->truth->gpus_known && !n->stale;
}

/* Object `name` of o: a node's quantities (ResourceQuantity name: quantity). */
static void quantities_json(cJSON *o, const char *name,
                            Tau__Inventory__V1__ResourceQuantity *const *q, size_t n)
{
	cJSON *obj = cJSON_AddObjectToObject(o, name);

	for (size_t i = 0; i < n; i++)
		cJSON_AddStringToObject(obj, q[i]->name, q[i]->quantity);
}

/* health, gpusThroughDra, gpusHealthy, gpusInUse, gpusFree (null when unknown), problems. */
static void node_truth_json(cJSON *o, const Tau__Inventory__V1__NodeStatus *n)
{
	const Tau__Inventory__V1__NodeTruth *nt = n->truth;
	cJSON *problems;

	cJSON_AddStringToObject(o, "health", health_name(nt != NULL ? nt->health : 0));
	cJSON_AddBoolToObject(o, "gpusThroughDra", nt != NULL && nt->gpus_through_dra);
	if (node_free_known(n)) {
		cJSON_AddNumberToObject(o, "gpusHealthy", (double)nt->gpus_healthy);
		cJSON_AddNumberToObject(o, "gpusInUse", (double)nt->gpus_in_use);
		cJSON_AddNumberToObject(o, "gpusFree", (double)nt->gpus_free);
	} else {
		cJSON_AddNullToObject(o, "gpusHealthy");
		cJSON_AddNullToObject(o, "gpusInUse");
		cJSON_AddNullToObject(o, "gpusFree");
	}
	problems = cJSON_AddArrayToObject(o, "problems");
	for (size_t i = 0; nt != NULL && i < nt->n_problems; i++)
		cJSON_AddItemToArray(problems, cJSON_CreateString(nt->problems[i]));
}

int tau_cli_render_fit(char **out, const Tau__Inventory__V1__FitResponse *fit, tau_cli_format fmt)
{
	if (fmt != TAU_CLI_TABLE) {
		cJSON *root = cJSON_CreateObject(), *pl, *un;

		cJSON_AddBoolToObject(root, "fits", fit->fits);
		cJSON_AddStringToObject(root, "reason", fit->reason);
		pl = cJSON_AddArrayToObject(root, "placement");
		for (size_t i = 0; i < fit->n_placement; i++) {
			cJSON *p = add_object(pl);

			cJSON_AddStringToObject(p, "node", fit->placement[i]->node);
			cJSON_AddNumberToObject(p, "gpus", (double)fit->placement[i]->gpus);
			cJSON_AddNumberToObject(p, "gpusFree",
			                        (double)fit->placement[i]->gpus_free);
		}
		cJSON_AddNumberToObject(root, "nodes", (double)fit->nodes);
		cJSON_AddNumberToObject(root, "candidates", (double)fit->candidates);
		cJSON_AddNumberToObject(root, "candidateGpus", (double)fit->candidate_gpus);
		cJSON_AddNumberToObject(root, "unknownCount", (double)fit->unknown_count);
		un = cJSON_AddArrayToObject(root, "unknownNodes");
		for (size_t i = 0; i < fit->n_unknown_nodes; i++)
			cJSON_AddItemToArray(un, cJSON_CreateString(fit->unknown_nodes[i]));
		return doc_out(out, root, fmt);
	} else {
		static const char *const hdr[] = {"NODE", "GPUS", "FREE-NOW"};
		tau_table *t = NULL;
		char footer[2048];
		size_t off;
		int rc = tau_table_new(&t, 3, hdr);

		if (rc < 0)
			return rc;
		for (size_t i = 0; i < fit->n_placement; i++) {
			char g[16], f[16];
			const char *row[3] = {fit->placement[i]->node, g, f};

			snprintf(g, sizeof(g), "%" PRIu32, fit->placement[i]->gpus);
			snprintf(f, sizeof(f), "%" PRIu32, fit->placement[i]->gpus_free);
			if ((rc = tau_table_add(t, row)) < 0) {
				tau_table_free(t);
				return rc;
			}
		}
		off = (size_t)snprintf(footer, sizeof(footer),
		                       "\nFits: %s: %.1000s\nUnknown nodes: ",
		                       fit->fits ? "yes" : "no", fit->reason);
		for (size_t i = 0; i < fit->n_unknown_nodes && off < sizeof(footer) - 64; i++)
			off += (size_t)snprintf(footer + off, sizeof(footer) - off, "%s%.253s",
			                        i ? ", " : "", fit->unknown_nodes[i]);
		if (fit->unknown_count == 0)
			off += (size_t)snprintf(footer + off, sizeof(footer) - off, "none");
		else if (fit->unknown_count > fit->n_unknown_nodes)
			off += (size_t)snprintf(footer + off, sizeof(footer) - off,
			                        ", ... (%" PRIu32 " in all)", fit->unknown_count);
		snprintf(footer + off, sizeof(footer) - off, "\n");
		if (fit->n_placement == 0) {
			/* no table to show: only the verdict */
			tau_table_free(t);
			*out = strdup(footer + 1);
			return *out != NULL ? 0 : tau_error_set(TAU_ENOMEM, "out of memory");
		}
		return table_out(out, t, footer);
	}
}

int tau_cli_render_nodes(char **out, const Tau__Inventory__V1__ListNodesResponse *nodes,
                         tau_cli_format fmt)
{
	if (fmt != TAU_CLI_TABLE) {
		cJSON *root = cJSON_CreateArray();

		for (size_t i = 0; i < nodes->n_nodes; i++) {
			const Tau__Inventory__V1__NodeStatus *n = nodes->nodes[i];
			cJSON *o = add_object(root);
			cJSON *reasons;

			cJSON_AddStringToObject(o, "name", n->name);
			cJSON_AddStringToObject(o, "gpuClass", n->gpu_class);
			cJSON_AddBoolToObject(o, "counted", n->counted);
			reasons = cJSON_AddArrayToObject(o, "reasons");
			for (size_t r = 0; r < n->n_reasons; r++)
				cJSON_AddItemToArray(reasons, cJSON_CreateString(n->reasons[r]));
			cJSON_AddBoolToObject(o, "connected", n->connected);
			cJSON_AddBoolToObject(o, "stale", n->stale);
			quantities_json(o, "allocatable", n->allocatable, n->n_allocatable);
			quantities_json(o, "draResources", n->dra_resources, n->n_dra_resources);
			cJSON_AddNumberToObject(o, "lastHeardUnixMs",
			                        (double)n->last_heard_unix_ms);
			node_truth_json(o, n);
		}
		return doc_out(out, root, fmt);
	} else {
		static const char *const hdr[] = {"NAME",      "GPU-CLASS", "COUNTED",
		                                  "CONNECTED", "STALE",     "GPUS",
		                                  "HEALTH",    "FREE",      "REASON"};
		tau_table *t = NULL;
		int rc = tau_table_new(&t, 9, hdr);

		if (rc < 0)
			return rc;
		for (size_t i = 0; i < nodes->n_nodes; i++) {
			const Tau__Inventory__V1__NodeStatus *n = nodes->nodes[i];
			const Tau__Inventory__V1__NodeTruth *nt = n->truth;
			const char *gpus = "0";
			const char *row[9];
			char free_now[16], dra_gpus[48];

			for (size_t r = 0; r < n->n_allocatable; r++) {
				if (strcmp(n->allocatable[r]->name, "nvidia.com/gpu") == 0)
					gpus = n->allocatable[r]->quantity;
			}
			/* GPUs the pool counts through DRA (the Node advertises none then) */
			for (size_t r = 0; r < n->n_dra_resources; r++) {
				if (strcmp(n->dra_resources[r]->name, "nvidia.com/gpu") == 0) {
					snprintf(dra_gpus, sizeof(dra_gpus), "%.24s (DRA)",
					         n->dra_resources[r]->quantity);
					gpus = dra_gpus;
				}
			}
			if (node_free_known(n))
				snprintf(free_now, sizeof(free_now), "%" PRIu32, nt->gpus_free);
			else
				snprintf(free_now, sizeof(free_now), "unknown");
			row[0] = n->name;
			row[1] = n->gpu_class[0] ? n->gpu_class : "<none>";
			row[2] = yes_no(n->counted);
			row[3] = yes_no(n->connected);
			row[4] = yes_no(n->stale);
			row[5] = gpus;
			row[6] = health_name(nt != NULL ? nt->health : 0);
			row[7] = free_now;
			/* A failed rule first; else what makes the node degraded. */
			row[8] = n->n_reasons > 0                   ? n->reasons[0]
			         : nt != NULL && nt->n_problems > 0 ? nt->problems[0]
			                                            : "";
			if ((rc = tau_table_add(t, row)) < 0) {
				tau_table_free(t);
				return rc;
			}
		}
		return table_out(out, t, NULL);
	}
}

/*
 * The pool's rules, the footer, then the agent.* rules in a table of their own: what the node's
 * agent sees never changes whether the node counts, so it is not mixed into that verdict.
 */
static int explain_with_truth(char **out, tau_table *pool_rules, const char *footer,
                              const Tau__Inventory__V1__ExplainNodeResponse *ex)
{
	static const char *const hdr[] = {"NODE TRUTH", "RESULT", "DETAIL"};
	static const char heading[] = "\nWhat the node's agent sees (never changes whether it "
	                              "counts):\n";
	tau_table *t = NULL;
	char *truth = NULL, *all = NULL;
	int rc = tau_table_new(&t, 3, hdr);

	for (size_t i = 0; rc == 0 && i < ex->n_node_truth; i++) {
		const Tau__Inventory__V1__Rule *r = ex->node_truth[i];
		const char *row[3] = {r->name,
		                      r->unknown ? "unknown"
		                      : r->pass  ? "ok"
		                                 : "WARN",
		                      r->detail};

		rc = tau_table_add(t, row);
	}
	if (rc == 0)
		rc = table_out(&truth, t, NULL);
	else
		tau_table_free(t);
	if (rc < 0) {
		tau_table_free(pool_rules);
		return rc;
	}
	{
		tau_buf b = TAU_BUF_INIT(0);

		tau_buf_printf(&b, "%s%s%s", footer, heading, truth);
		free(truth);
		if (tau_buf_error(&b) < 0) {
			rc = tau_buf_error(&b);
			tau_buf_free(&b);
			tau_table_free(pool_rules);
			return rc;
		}
		all = tau_buf_take(&b, NULL);
	}
	rc = table_out(out, pool_rules, all);
	free(all);
	return rc;
}

int tau_cli_render_explain(char **out, const Tau__Inventory__V1__ExplainNodeResponse *ex,
                           tau_cli_format fmt)
{
	if (fmt != TAU_CLI_TABLE) {
		cJSON *root = cJSON_CreateObject();
		cJSON *rules;

		cJSON_AddStringToObject(root, "name", ex->name);
		cJSON_AddBoolToObject(root, "counted", ex->counted);
		cJSON_AddStringToObject(root, "flavor", ex->flavor);
		rules = cJSON_AddArrayToObject(root, "rules");
		for (size_t i = 0; i < ex->n_rules; i++) {
			cJSON *r = add_object(rules);

			cJSON_AddStringToObject(r, "name", ex->rules[i]->name);
			cJSON_AddBoolToObject(r, "pass", ex->rules[i]->pass);
			cJSON_AddStringToObject(r, "detail", ex->rules[i]->detail);
		}
		rules = cJSON_AddArrayToObject(root, "nodeTruth");
		for (size_t i = 0; i < ex->n_node_truth; i++) {
			cJSON *r = add_object(rules);

			cJSON_AddStringToObject(r, "name", ex->node_truth[i]->name);
			cJSON_AddBoolToObject(r, "pass", ex->node_truth[i]->pass);
			cJSON_AddBoolToObject(r, "unknown", ex->node_truth[i]->unknown);
			cJSON_AddStringToObject(r, "detail", ex->node_truth[i]->detail);
		}
		return doc_out(out, root, fmt);
	} else {
		static const char *const hdr[] = {"RULE", "RESULT", "DETAIL"};
		tau_table *t = NULL;
		char footer[512];
		int rc = tau_table_new(&t, 3, hdr);

		if (rc < 0)
			return rc;
		for (size_t i = 0; i < ex->n_rules; i++) {
			const char *row[3] = {ex->rules[i]->name,
			                      ex->rules[i]->pass ? "pass" : "FAIL",
			                      ex->rules[i]->detail};

			if ((rc = tau_table_add(t, row)) < 0) {
				tau_table_free(t);
				return rc;
			}
		}
		if (ex->counted)
			snprintf(footer, sizeof(footer), "\nNode %.253s counts in flavor %.200s.\n",
			         ex->name, ex->flavor);
		else
			snprintf(footer, sizeof(footer), "\nNode %.253s does not count.\n",
			         ex->name);
		if (ex->n_node_truth == 0)
			return table_out(out, t, footer);
		return explain_with_truth(out, t, footer, ex);
	}
}

/* ---- the command ---- */

static void usage(FILE *out)
{
	fputs("Usage: tau inventory nodes [--gpu-class C] [--counted] [options]\n"
	      "       tau inventory pool [options]\n"
	      "       tau inventory explain NODE [options]\n"
	      "       tau inventory fit --gpu-class C --gpus N [--whole-nodes | --per-node P]\n"
	      "                         [--ib] [options]\n"
	      "\n"
	      "Options:\n"
	      "  --aggregator ADDR   aggregator gRPC address (env TAU_AGGREGATOR; "
	      "default " TAU_CLI_DEFAULT_AGGREGATOR ")\n"
	      "  --ca-file F         TLS, trusting the CA in F\n"
	      "  --insecure          plaintext gRPC (the default without --ca-file)\n"
	      "  -o table|json|yaml  output format (default table)\n"
	      "  --timeout DURATION  per request: seconds or 500ms, 1m (default 10)\n"
	      "  --request-timeout D the same as the global option: 0 means no limit;\n"
	      "                      --timeout wins when both are given\n"
	      "\n"
	      "`explain` exits 1 when the node does not count; `fit` exits 1 when the job\n"
	      "does not fit now (nodes without a live agent report are unknown, never free).\n",
	      out);
}

/* Every page of a ListNodes answer, and one response lending all their nodes. */
typedef struct tau_cli_node_pages {
	ProtobufCMessage **pages;
	size_t n_pages;
	Tau__Inventory__V1__ListNodesResponse all; /* nodes lent from the pages */
} tau_cli_node_pages;

static void node_pages_clear(tau_cli_node_pages *p)
{
	for (size_t i = 0; i < p->n_pages; i++)
		tau_rpc_message_free(p->pages[i]);
	free(p->pages);
	free(p->all.nodes);
	memset(p, 0, sizeof(*p));
}

/*
 * Follow ListNodes pages until the aggregator says there are no more.  Each
 * token must move forward (names are sorted), so a broken server cannot make
 * this loop forever.  @return 0, or < 0 with `status` set on an rpc failure.
 */
static int list_all_nodes(tau_cli_node_pages *out, tau_rpc_channel *ch, const char *cls,
                          bool counted_only, int timeout_ms, tau_rpc_status *status)
{
	Tau__Inventory__V1__ListNodesRequest req = TAU__INVENTORY__V1__LIST_NODES_REQUEST__INIT;
	char *token = strdup("");
	int rc = 0;

	tau__inventory__v1__list_nodes_response__init(&out->all);
	if (token == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	req.gpu_class = (char *)(cls != NULL ? cls : "");
	req.counted_only = counted_only;
	req.page_size = TAU_CLI_NODES_PAGE;
	while (rc == 0 && token != NULL) {
		ProtobufCMessage *msg = NULL;
		const Tau__Inventory__V1__ListNodesResponse *page;
		ProtobufCMessage **grown;
		Tau__Inventory__V1__NodeStatus **all;
		const char *next;

		req.page_token = token;
		if ((rc = tau_rpc_unary(&msg, ch, QUERY "ListNodes", &req.base,
		                        &tau__inventory__v1__list_nodes_response__descriptor,
		                        timeout_ms, status)) < 0)
			break;
		grown = realloc(out->pages, (out->n_pages + 1) * sizeof(*grown));
		if (grown == NULL) {
			tau_rpc_message_free(msg);
			rc = tau_error_set(TAU_ENOMEM, "out of memory");
			break;
		}
		out->pages = grown;
		out->pages[out->n_pages++] = msg;
		page = (const Tau__Inventory__V1__ListNodesResponse *)msg;
		if (page->n_nodes == 0) {
			/* e.g. the last page of a filtered list: nothing to add */
		} else if (page->n_nodes > SIZE_MAX / sizeof(*all) - out->all.n_nodes ||
		           (all = realloc(out->all.nodes, (out->all.n_nodes + page->n_nodes) *
		                                                  sizeof(*all))) == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "out of memory");
			break;
		} else {
			memcpy(all + out->all.n_nodes, page->nodes, page->n_nodes * sizeof(*all));
			out->all.nodes = all;
			out->all.n_nodes += page->n_nodes;
		}
		next = page->next_page_token != NULL ? page->next_page_token : "";
		if (next[0] == '\0') {
			free(token);
			token = NULL;
		} else if (strcmp(next, token) <= 0) {
			rc = tau_error_set(TAU_EINVAL,
			                   "the aggregator's next_page_token \"%.64s\" "
			                   "does not move forward",
			                   next);
		} else {
			free(token);
			token = strdup(next);
			if (token == NULL)
				rc = tau_error_set(TAU_ENOMEM, "out of memory");
		}
	}
	free(token);
	return rc;
}

enum { O_CLASS = 256, O_COUNTED, O_TIMEOUT, O_GPUS, O_WHOLE, O_PER_NODE, O_IB };

/* The options that are numbers, each refused as it is taken when it does not parse. */
typedef struct inventory_numbers {
	int gpus, per_node; /* fit: 0 not given */
	int64_t timeout_ms; /* --timeout; -1: not given */
} inventory_numbers;

/* tau_cli_optspec.take: --gpus, --per-node and --timeout into the inventory_numbers ctx. */
static int take_number(void *ctx, int c, const char *arg)
{
	inventory_numbers *num = ctx;
	int rc;

	if (c == O_TIMEOUT)
		rc = tau_parse_duration_ms(&num->timeout_ms, "--timeout", arg, 1, TIMEOUT_MAX_MS);
	else
		rc = tau_parse_int(c == O_GPUS ? &num->gpus : &num->per_node,
		                   c == O_GPUS ? "--gpus" : "--per-node", arg, 1,
		                   TAU_CLI_FIT_MAX_GPUS);
	if (rc < 0) {
		fprintf(stderr, "tau inventory: %s\n", tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	return -1;
}

int tau_cli_inventory(int argc, char **argv, const tau_cli_globals *g)
{
	static const struct option opts[] = {
	        TAU_CLI_GLOBAL_LONGOPTS{"gpu-class", required_argument, NULL, O_CLASS},
	        {"counted", no_argument, NULL, O_COUNTED},
	        {"timeout", required_argument, NULL, O_TIMEOUT},
	        {"output", required_argument, NULL, 'o'},
	        {"gpus", required_argument, NULL, O_GPUS},
	        {"whole-nodes", no_argument, NULL, O_WHOLE},
	        {"per-node", required_argument, NULL, O_PER_NODE},
	        {"ib", no_argument, NULL, O_IB},
	        TAU_CLI_AGGREGATOR_LONGOPTS{NULL, 0, NULL, 0},
	};
	static const tau_cli_optspec optspec = {"tau inventory", "ho:", opts, usage,
	                                        .take = take_number};
	const char *cls = NULL, *what, *node = NULL;
	bool counted_only = false, whole_nodes = false, needs_ib = false;
	const tau_cli_keep keep[] = {{O_CLASS, .arg = &cls},
	                             {O_COUNTED, .flag = &counted_only},
	                             {O_WHOLE, .flag = &whole_nodes},
	                             {O_IB, .flag = &needs_ib},
	                             {0}};
	inventory_numbers num = {.timeout_ms = -1};
	tau_cli_opts o;
	int exit_code, rc = TAU_CLI_FAILED;
	const char *target = NULL;
	tau_rpc_channel *ch = NULL;
	tau_rpc_status status = {0};
	ProtobufCMessage *resp = NULL;
	char *text = NULL;

	if ((exit_code = tau_cli_parse(&o, g, argc, argv, &optspec, keep, &num)) >= 0)
		return exit_code;
	if (optind >= argc) {
		usage(stderr);
		return TAU_CLI_USAGE;
	}
	what = argv[optind++];
	if (strcmp(what, "explain") == 0) {
		if (optind >= argc) {
			fprintf(stderr, "tau inventory explain: NODE is required\n");
			return TAU_CLI_USAGE;
		}
		node = argv[optind++];
	} else if (strcmp(what, "fit") == 0) {
		const char *bad = cls == NULL || cls[0] == '\0' ? "--gpu-class C is required"
		                  : num.gpus == 0               ? "--gpus N is required"
		                  : whole_nodes && num.per_node > 0
		                          ? "--whole-nodes and --per-node exclude each other"
		                  : num.per_node > 0 && num.gpus % num.per_node != 0
		                          ? "--gpus must be a multiple of --per-node"
		                          : NULL;

		if (bad != NULL) {
			fprintf(stderr, "tau inventory fit: %s\n", bad);
			return TAU_CLI_USAGE;
		}
	} else if (strcmp(what, "nodes") != 0 && strcmp(what, "pool") != 0) {
		fprintf(stderr,
		        "tau inventory: unknown subcommand \"%s\" (nodes, pool, explain, fit)\n",
		        what);
		return TAU_CLI_USAGE;
	}
	if (strcmp(what, "fit") != 0 &&
	    (num.gpus > 0 || num.per_node > 0 || whole_nodes || needs_ib)) {
		fprintf(stderr,
		        "tau inventory %s: --gpus, --per-node, --whole-nodes and --ib are for "
		        "fit\n",
		        what);
		return TAU_CLI_USAGE;
	}
	if (optind < argc) {
		fprintf(stderr, "tau inventory %s: unexpected argument \"%s\"\n", what,
		        argv[optind]);
		return TAU_CLI_USAGE;
	}
	if (num.timeout_ms < 0)
		num.timeout_ms = tau_cli_rpc_timeout_ms(&o.gl, 10000);
	if (tau_cli_aggregator_channel(&ch, &target, &o.agg, &o.gl) < 0) {
		fprintf(stderr, "tau inventory: %s\n", tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	if (strcmp(what, "pool") == 0) {
		Tau__Inventory__V1__GetPoolRequest req = TAU__INVENTORY__V1__GET_POOL_REQUEST__INIT;

		Tau__Inventory__V1__GetCapacityRequest creq =
		        TAU__INVENTORY__V1__GET_CAPACITY_REQUEST__INIT;
		ProtobufCMessage *cap = NULL;
		tau_rpc_status cst = {0};

		if (tau_rpc_unary(&resp, ch, QUERY "GetPool", &req.base,
		                  &tau__inventory__v1__pool__descriptor, num.timeout_ms,
		                  &status) < 0)
			goto rpc_failed;
		/* An aggregator without GetCapacity (older) still shows its pool. */
		if (tau_rpc_unary(&cap, ch, QUERY "GetCapacity", &creq.base,
		                  &tau__inventory__v1__get_capacity_response__descriptor,
		                  num.timeout_ms, &cst) < 0) {
			fprintf(stderr,
			        "tau inventory pool: free-now figures unavailable: %s: %s\n",
			        tau_rpc_code_name(cst.code),
			        cst.message[0] ? cst.message : tau_error_last()->msg);
			cap = NULL;
		}
		if (tau_cli_render_pool(&text, (Tau__Inventory__V1__Pool *)resp,
		                        (Tau__Inventory__V1__GetCapacityResponse *)cap,
		                        o.fmt) < 0) {
			tau_rpc_message_free(cap);
			goto render_failed;
		}
		tau_rpc_message_free(cap);
		rc = TAU_CLI_OK;
	} else if (strcmp(what, "fit") == 0) {
		Tau__Inventory__V1__FitRequest req = TAU__INVENTORY__V1__FIT_REQUEST__INIT;

		req.gpu_class = (char *)cls;
		req.gpus = (uint32_t)num.gpus;
		req.gpus_per_node = (uint32_t)num.per_node;
		req.whole_nodes = whole_nodes;
		req.needs_ib = needs_ib;
		if (tau_rpc_unary(&resp, ch, QUERY "Fit", &req.base,
		                  &tau__inventory__v1__fit_response__descriptor, num.timeout_ms,
		                  &status) < 0)
			goto rpc_failed;
		if (tau_cli_render_fit(&text, (Tau__Inventory__V1__FitResponse *)resp, o.fmt) < 0)
			goto render_failed;
		rc = ((Tau__Inventory__V1__FitResponse *)resp)->fits ? TAU_CLI_OK : TAU_CLI_FAILED;
	} else if (strcmp(what, "nodes") == 0) {
		tau_cli_node_pages pages = {0};

		if (list_all_nodes(&pages, ch, cls, counted_only, num.timeout_ms, &status) < 0) {
			node_pages_clear(&pages);
			if (status.code != TAU_RPC_OK)
				goto rpc_failed;
			goto render_failed;
		}
		if (tau_cli_render_nodes(&text, &pages.all, o.fmt) < 0) {
			node_pages_clear(&pages);
			goto render_failed;
		}
		node_pages_clear(&pages);
		rc = TAU_CLI_OK;
	} else {
		Tau__Inventory__V1__ExplainNodeRequest req =
		        TAU__INVENTORY__V1__EXPLAIN_NODE_REQUEST__INIT;

		req.name = (char *)node;
		if (tau_rpc_unary(&resp, ch, QUERY "ExplainNode", &req.base,
		                  &tau__inventory__v1__explain_node_response__descriptor,
		                  num.timeout_ms, &status) < 0)
			goto rpc_failed;
		if (tau_cli_render_explain(&text, (Tau__Inventory__V1__ExplainNodeResponse *)resp,
		                           o.fmt) < 0)
			goto render_failed;
		rc = ((Tau__Inventory__V1__ExplainNodeResponse *)resp)->counted ? TAU_CLI_OK
		                                                                : TAU_CLI_FAILED;
	}
	fputs(text, stdout);
	goto out;
rpc_failed:
	fprintf(stderr, "tau inventory %s: aggregator %s: %s: %s\n", what, target,
	        tau_rpc_code_name(status.code),
	        status.message[0] ? status.message : tau_error_last()->msg);
	rc = status.code == TAU_RPC_NOT_FOUND || status.code == TAU_RPC_INVALID_ARGUMENT
	             ? TAU_CLI_USAGE
	             : TAU_CLI_FAILED;
	goto out;
render_failed:
	fprintf(stderr, "tau inventory %s: %s\n", what, tau_error_last()->msg);
	rc = TAU_CLI_FAILED;
out:
	free(text);
	tau_rpc_message_free(resp);
	tau_rpc_channel_free(ch);
	return rc;
}
