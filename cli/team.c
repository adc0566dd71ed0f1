/*
 * team.c - `tau team list` and `tau team status NAME`.
 *
 * The one idea: the command reads what the aggregator's budget controller
 * wrote (docs/budget.md) straight from the Kubernetes API - the TauTeam's
 * status, its root Cohort `tau-team-<team>`, the ClusterQueues drawing from
 * it, the TauCluster `cluster` - and, for a capacity team with an aggregator
 * named, GetPool's DRA part; it hands them to the pure functions that make
 * the documents (team_doc.c, team_budget.c, team_status.c) and never
 * recomputes the budget.  This file is the options and the reads.
 *
 * Exit codes (docs/cli.md): status exits 0 when the team is Ready for its
 * current generation, 1 when not (or the API cannot answer), 2 for usage and
 * input errors: an invalid team name (refused before any request) or a team
 * that does not exist.
 */
#include "team_internal.h"

#include "globalopts.h"
#include "inventory.h"
#include "output.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/names.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const tau_kube_resource res_teams = {"tau.azure.com", "v1alpha1", "teams", true};
static const tau_kube_resource res_team_workspaces = {"tau.azure.com", "v1alpha1", "workspaces",
                                                      true};
static const tau_kube_resource res_cohorts = {"kueue.x-k8s.io", "v1beta2", "cohorts", false};
static const tau_kube_resource res_cqs = {"kueue.x-k8s.io", "v1beta2", "clusterqueues", false};

/* ------------------------------------------------------------------------------------------ */
/* I/O                                                                                         */

/* GET or LIST what may be absent: 0 with *out NULL on 404; <0 (message printed) otherwise. */
static int read_optional(cJSON **out, tau_kube_client *c, const tau_kube_resource *res,
                         const char *ns, const char *name, const char *verb)
{
	int rc = name != NULL ? tau_kube_get(out, c, res, ns, name)
	                      : tau_kube_list_all(out, c, res, ns, NULL);

	if (rc == -TAU_ENOTFOUND) {
		*out = NULL;
		return 0;
	}
	if (rc != 0)
		fprintf(stderr, "tau team %s: reading %s%s%s: %s\n", verb, res->plural,
		        name != NULL ? " " : "", name != NULL ? name : "", tau_cli_api_message());
	return rc;
}

static void team_usage(FILE *out)
{
	fputs("Usage: tau team list [-o table|json|yaml]\n"
	      "       tau team status NAME [--aggregator ADDR [--ca-file F | --insecure]]\n"
	      "                            [-o table|json|yaml]\n"
	      "Options: --context C  --system-namespace NS  --kubeconfig F  --request-timeout D\n"
	      "status shows the team's Cohort budget per flavor and resource beside the pool\n"
	      "(capacity team) or, for an explicit team, beside its spec.quota, its workspaces'\n"
	      "guarantees, the applied allocation and the reserved total; each workspace\n"
	      "ClusterQueue's reservation and borrowing, and the team's conditions. With\n"
	      "--aggregator a capacity team's budget also shows VIA-DRA: the part of the pool\n"
	      "that DRA devices give (the aggregator's GetPool).\n"
	      "Exit codes: 0 success (status: the team is Ready), 1 not Ready or API failure,\n"
	      "2 usage error, invalid team name, or no such team.\n",
	      out);
}

/* Parse argv; fills *verb, *name, *o.  @return -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, const tau_cli_globals *g, const char **verb,
                      const char **name, tau_cli_opts *o)
{
	static const struct option lopts[] = {
	        TAU_CLI_GLOBAL_LONGOPTS TAU_CLI_SYSTEM_NAMESPACE_LONGOPT{
	                "output", required_argument, NULL, 'o'},
	        TAU_CLI_AGGREGATOR_LONGOPTS{NULL, 0, NULL, 0},
	};
	static const tau_cli_optspec optspec = {"tau team", "ho:", lopts, team_usage, .take = NULL};
	int exit_code = tau_cli_parse(o, g, argc, argv, &optspec, NULL, NULL);

	if (exit_code >= 0)
		return exit_code;
	if (optind >= argc) {
		team_usage(stderr);
		return TAU_CLI_USAGE;
	}
	*verb = argv[optind++];
	if (strcmp(*verb, "list") != 0 && strcmp(*verb, "status") != 0) {
		fprintf(stderr, "tau team: unknown command %s\n", *verb);
		team_usage(stderr);
		return TAU_CLI_USAGE;
	}
	if (strcmp(*verb, "status") == 0) {
		if (optind >= argc) {
			fprintf(stderr, "tau team status: NAME is required\n");
			return TAU_CLI_USAGE;
		}
		*name = argv[optind++];
		/* A TauTeam name is a DNS-1123 label (its CRD says so): refuse before any request.
		 */
		if (tau_names_check_dns1123_label(*name) != 0) {
			fprintf(stderr, "tau team status: invalid team name: %s\n",
			        tau_error_last()->msg);
			return TAU_CLI_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "tau team %s: unexpected argument %s\n", *verb, argv[optind]);
		return TAU_CLI_USAGE;
	}
	if (tau_cli_aggregator_given(&o->agg) && strcmp(*verb, "status") != 0) {
		fprintf(stderr,
		        "tau team %s: --aggregator, --ca-file and --insecure are for status\n",
		        *verb);
		return TAU_CLI_USAGE;
	}
	if (tau_cli_aggregator_check(&o->agg) < 0) {
		fprintf(stderr, "tau team status: %s\n", tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	return -1;
}

/*
 * The DRA part of the aggregator's pool into in->dra (owned by *dra), or in->dra_error; nothing
 * without an aggregator named by --aggregator or, as for every tau command, TAU_AGGREGATOR
 * (status stays an API command unless one is named).
 */
static void read_dra(tau_cli_team_input *in, cJSON **dra, char *why, size_t cap,
                     const tau_cli_aggregator_opts *agg, const tau_cli_globals *g)
{
	Tau__Inventory__V1__GetPoolRequest req = TAU__INVENTORY__V1__GET_POOL_REQUEST__INIT;
	const char *target = NULL;
	ProtobufCMessage *resp = NULL;
	tau_rpc_status st = {0};
	tau_rpc_channel *ch = NULL;
	const char *addr = tau_cli_aggregator_addr(agg);

	if (addr == NULL)
		return;
	in->aggregator = addr;
	if (tau_cli_aggregator_channel(&ch, &target, agg, g) < 0 ||
	    tau_rpc_unary(&resp, ch, TAU_CLI_QUERY "GetPool", &req.base,
	                  &tau__inventory__v1__pool__descriptor, tau_cli_rpc_timeout_ms(g, 10000),
	                  &st) < 0) {
		snprintf(why, cap, "%s%s%.600s", st.code != 0 ? tau_rpc_code_name(st.code) : "",
		         st.code != 0 ? ": " : "",
		         st.message[0] ? st.message : tau_error_last()->msg);
		in->dra_error = why;
	} else if ((*dra = tau_cli_team_pool_dra((const Tau__Inventory__V1__Pool *)resp)) == NULL) {
		snprintf(why, cap, "%s", tau_error_last()->msg);
		in->dra_error = why;
	}
	in->dra = *dra;
	tau_rpc_message_free(resp);
	tau_rpc_channel_free(ch);
}

static int run_list(tau_kube_client *client, const char *sysns, tau_cli_format fmt)
{
	cJSON *teams = NULL, *cluster = NULL, *wss = NULL, *doc = NULL;
	int rc = TAU_CLI_FAILED;

	if (tau_kube_list_all(&teams, client, &res_teams, sysns, NULL) != 0) {
		fprintf(stderr, "tau team list: %s\n", tau_cli_api_message());
		goto out;
	}
	if (read_optional(&cluster, client, &tau_cli_res_clusters, NULL, TAU_CLI_CLUSTER_NAME,
	                  "list") != 0 ||
	    read_optional(&wss, client, &res_team_workspaces, sysns, NULL, "list") != 0)
		goto out;
	doc = tau_cli_team_list_doc(teams, cluster, wss);
	if (doc == NULL || tau_cli_team_print_list(stdout, doc, fmt) != 0) {
		fprintf(stderr, "tau team list: %s\n", tau_error_last()->msg);
		goto out;
	}
	rc = TAU_CLI_OK;
out:
	cJSON_Delete(doc);
	cJSON_Delete(teams);
	cJSON_Delete(cluster);
	cJSON_Delete(wss);
	return rc;
}

static int run_status(tau_kube_client *client, const char *sysns, const char *name,
                      tau_cli_format fmt, const tau_cli_aggregator_opts *agg,
                      const tau_cli_globals *g)
{
	cJSON *team = NULL, *cluster = NULL, *cohort = NULL, *cqs = NULL, *wss = NULL, *doc = NULL;
	cJSON *dra = NULL;
	char cohort_name[TAU_CLI_TEAM_NAME_BUF], why[800];
	int rc;

	rc = tau_kube_get(&team, client, &res_teams, sysns, name);
	if (rc == -TAU_ENOTFOUND) {
		fprintf(stderr, "tau team status: team %s/%s not found: %s\n", sysns, name,
		        tau_cli_api_message());
		return TAU_CLI_USAGE;
	}
	if (rc != 0) {
		fprintf(stderr, "tau team status: team %s/%s: %s\n", sysns, name,
		        tau_cli_api_message());
		return TAU_CLI_FAILED;
	}
	rc = TAU_CLI_FAILED;
	tau_cli_team_cohort_name(cohort_name, team, name);
	if (read_optional(&cluster, client, &tau_cli_res_clusters, NULL, TAU_CLI_CLUSTER_NAME,
	                  "status") != 0 ||
	    read_optional(&cohort, client, &res_cohorts, NULL, cohort_name, "status") != 0 ||
	    read_optional(&cqs, client, &res_cqs, NULL, NULL, "status") != 0 ||
	    read_optional(&wss, client, &res_team_workspaces, sysns, NULL, "status") != 0)
		goto out;
	{
		tau_cli_team_input in = {team, cluster, cohort, cqs, wss, NULL, NULL, NULL};

		/* The DRA part of the pool is the capacity team's only (its pool is the cluster's).
		 */
		if (strcmp(tau_cli_team_mode(team, cluster), "capacity") == 0)
			read_dra(&in, &dra, why, sizeof(why), agg, g);
		doc = tau_cli_team_status_doc(&in);
	}
	if (doc == NULL || tau_cli_team_print_status(stdout, doc, fmt) != 0) {
		fprintf(stderr, "tau team status: %s\n", tau_error_last()->msg);
		goto out;
	}
	rc = tau_cli_team_ready(team) ? TAU_CLI_OK : TAU_CLI_FAILED;
out:
	cJSON_Delete(doc);
	cJSON_Delete(dra);
	cJSON_Delete(team);
	cJSON_Delete(cluster);
	cJSON_Delete(cohort);
	cJSON_Delete(cqs);
	cJSON_Delete(wss);
	return rc;
}

int tau_cli_team(int argc, char **argv, const tau_cli_globals *g)
{
	const char *verb = NULL, *name = NULL, *sysns;
	char sysns_buf[TAU_CLI_NS_BUF];
	tau_kube_client *client = NULL;
	tau_cli_opts o;
	int rc;

	if ((rc = parse_args(argc, argv, g, &verb, &name, &o)) >= 0)
		return rc;
	if (tau_cli_connect(&client, &o.gl) != 0) {
		fprintf(stderr, "tau team: %s\n", tau_error_last()->msg);
		tau_kube_client_free(client);
		return TAU_CLI_USAGE;
	}
	sysns = tau_cli_system_namespace(sysns_buf, sizeof(sysns_buf), client,
	                                 o.gl.system_namespace);
	rc = strcmp(verb, "list") == 0 ? run_list(client, sysns, o.fmt)
	                               : run_status(client, sysns, name, o.fmt, &o.agg, &o.gl);
	tau_kube_client_free(client);
	return rc;
}
