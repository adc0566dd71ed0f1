/*
 * wscreate.c - `tau workspace create NAME ...`: write a TauWorkspace with the
 * reference's defaults, refusing before any write what the CRD or the
 * workspace controller would refuse.
 *
 * The one idea: the object is made by a pure function (tau_cli_ws_build)
 * from the flags, which also carries every rule the CRD and the controller
 * apply to the spec alone, so both are unit tested; the command adds what
 * only the cluster can tell (an existing workspace not created by tau, the
 * target namespace labelled for another workspace or claimed by one, a
 * missing namespace without --create-namespace, a missing TauTeam).
 *
 * "Created by tau" is the annotation tau.azure.com/created-by: tau on the
 * TauWorkspace.  Running create again on such a workspace replaces its spec
 * (same flags, same object); any other existing workspace is left alone.
 *
 * --wait follows the workspace until it is Ready for its generation, printing
 * each condition as it changes; a Degraded phase for the current generation,
 * a deletion or the --timeout ends it with the first failing condition's
 * reason and message (exit 1).
 */
#include "globalopts.h"
#include "output.h"
#include "wait.h"
#include "workspace.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/names.h"
#include "tau/parse.h"
#include "tau/str.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const tau_kube_resource res_workspaces = {"tau.azure.com", "v1alpha1", "workspaces", true};
static const tau_kube_resource res_teams = {"tau.azure.com", "v1alpha1", "teams", true};

#define WAIT_POLL_MS       250
#define DEFAULT_TIMEOUT_MS (5 * 60 * 1000)

static bool one_of(const char *s, const char *a, const char *b, const char *c)
{
	return s != NULL &&
	       (strcmp(s, a) == 0 || strcmp(s, b) == 0 || (c != NULL && strcmp(s, c) == 0));
}

/* The CRD's queue pattern: at most 63 of [a-z0-9]([-a-z0-9.]*[a-z0-9])?. */
static bool queue_name_ok(const char *q)
{
	size_t n = strlen(q);

	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = q[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');

		if (!alnum && ((i == 0 || i + 1 == n) || (ch != '-' && ch != '.')))
			return false;
	}
	return true;
}

static cJSON *refuse(char *err, size_t cap, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static cJSON *refuse(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
	return NULL;
}

static int check_name(char *err, size_t cap, const char *flag, const char *v,
                      int (*check)(const char *))
{
	if (check(v) == 0)
		return 0;
	snprintf(err, cap, "%s: %s", flag, tau_error_last()->msg);
	return -1;
}

cJSON *tau_cli_ws_build(const tau_cli_ws_spec *s, char *err, size_t cap)
{
	const char *mode = s->authorization != NULL ? s->authorization : "workspace-rbac";
	const char *ns = s->namespace != NULL ? s->namespace : s->name;
	const char *provider = s->principal_provider != NULL ? s->principal_provider : "entra";
	const char *kind = s->subject_kind != NULL ? s->subject_kind : "Group";
	bool rbac;
	cJSON *o = NULL, *md, *spec, *x;

	if (s->name == NULL || s->system_namespace == NULL)
		return refuse(err, cap, "NAME and the system namespace are required");
	/* The CRD: the name is a DNS-1123 label (the default namespace and a label value). */
	if (check_name(err, cap, "workspace name", s->name, tau_names_check_dns1123_label) < 0 ||
	    check_name(err, cap, "--system-namespace", s->system_namespace,
	               tau_names_check_dns1123_label) < 0 ||
	    check_name(err, cap, "--namespace", ns, tau_names_check_dns1123_label) < 0)
		return NULL;
	/* The CRD refuses default and kube-*; the controller refuses the system namespace. */
	if (strcmp(ns, "default") == 0 || strncmp(ns, "kube-", 5) == 0)
		return refuse(err, cap,
		              "--namespace %s: default and kube-* namespaces cannot host a "
		              "workspace",
		              ns);
	if (strcmp(ns, s->system_namespace) == 0)
		return refuse(err, cap,
		              "--namespace %s: it is the TauGrid system namespace and cannot host "
		              "a workspace",
		              ns);
	if (!one_of(mode, "workspace-rbac", "cluster-wide", NULL))
		return refuse(err, cap,
		              "--authorization %s: must be workspace-rbac or cluster-wide", mode);
	rbac = strcmp(mode, "workspace-rbac") == 0;
	if (!one_of(provider, "entra", "github", NULL))
		return refuse(err, cap, "--principal-provider %s: must be entra or github",
		              provider);
	if (!one_of(kind, "Group", "User", "ServiceAccount"))
		return refuse(err, cap, "--subject-kind %s: must be Group, User or ServiceAccount",
		              kind);
	if (rbac && (s->principal == NULL || s->subject == NULL))
		return refuse(err, cap,
		              "authorization workspace-rbac (the default) needs --principal (the "
		              "group at the identity provider) and --subject (the name the API "
		              "server authenticates); --authorization cluster-wide writes no "
		              "researcher binding");
	if (!rbac && (s->principal != NULL || s->subject != NULL || s->principal_provider != NULL ||
	              s->subject_kind != NULL))
		return refuse(err, cap,
		              "--authorization cluster-wide must leave --principal, "
		              "--principal-provider, --subject and --subject-kind unset");
	if (rbac && (strlen(s->principal) < 1 || strlen(s->principal) > 256))
		return refuse(err, cap, "--principal: must be 1 to 256 characters");
	if (rbac && (strlen(s->subject) < 1 || strlen(s->subject) > 512))
		return refuse(err, cap, "--subject: must be 1 to 512 characters");
	if (rbac && strcmp(kind, "ServiceAccount") == 0 &&
	    check_name(err, cap, "--subject (a ServiceAccount in the workspace namespace)",
	               s->subject, tau_names_check_dns1123_subdomain) < 0)
		return NULL;
	if (s->queue != NULL && !queue_name_ok(s->queue))
		return refuse(err, cap,
		              "--queue %s: at most 63 characters of lower-case letters, digits, "
		              "'-' and '.', starting and ending with a letter or digit",
		              s->queue);
	if (s->team != NULL &&
	    check_name(err, cap, "--team", s->team, tau_names_check_dns1123_label) < 0)
		return NULL;
	if ((s->wi_service_account == NULL) != (s->client_id == NULL))
		return refuse(err, cap,
		              "--workload-identity-sa and --client-id go together (the "
		              "ServiceAccount and the managed identity's client ID)");
	if (s->wi_service_account != NULL &&
	    check_name(err, cap, "--workload-identity-sa", s->wi_service_account,
	               tau_names_check_dns1123_subdomain) < 0)
		return NULL;
	if (s->client_id != NULL && (strlen(s->client_id) < 1 || strlen(s->client_id) > 128))
		return refuse(err, cap, "--client-id: must be 1 to 128 characters");

	o = cJSON_CreateObject();
	if (o == NULL)
		goto nomem;
	cJSON_AddStringToObject(o, "apiVersion", "tau.azure.com/v1alpha1");
	cJSON_AddStringToObject(o, "kind", "TauWorkspace");
	md = cJSON_AddObjectToObject(o, "metadata");
	spec = cJSON_AddObjectToObject(o, "spec");
	if (md == NULL || spec == NULL)
		goto nomem;
	cJSON_AddStringToObject(md, "name", s->name);
	cJSON_AddStringToObject(md, "namespace", s->system_namespace);
	x = cJSON_AddObjectToObject(md, "annotations");
	cJSON_AddStringToObject(x, TAU_CLI_CREATED_BY, TAU_CLI_CREATED_BY_TAU);
	x = cJSON_AddObjectToObject(spec, "authorization");
	cJSON_AddStringToObject(x, "mode", mode);
	if (rbac) {
		x = cJSON_AddObjectToObject(spec, "principalRef");
		cJSON_AddStringToObject(x, "provider", provider);
		cJSON_AddStringToObject(x, "name", s->principal);
		x = cJSON_AddObjectToObject(spec, "kubernetesSubject");
		cJSON_AddStringToObject(x, "kind", kind);
		cJSON_AddStringToObject(x, "name", s->subject);
		cJSON_AddStringToObject(spec, "role", "researcher");
	}
	x = cJSON_AddObjectToObject(spec, "target");
	cJSON_AddStringToObject(x, "namespace", ns);
	if (s->create_namespace)
		cJSON_AddTrueToObject(x, "createNamespace");
	if (s->adopt)
		cJSON_AddTrueToObject(x, "adopt");
	if (s->queue != NULL)
		cJSON_AddStringToObject(spec, "queue", s->queue);
	if (s->team != NULL) {
		x = cJSON_AddObjectToObject(spec, "teamRef");
		cJSON_AddStringToObject(x, "name", s->team);
	}
	if (s->wi_service_account != NULL) {
		x = cJSON_AddObjectToObject(spec, "workloadIdentity");
		cJSON_AddStringToObject(x, "serviceAccountName", s->wi_service_account);
		cJSON_AddStringToObject(x, "clientId", s->client_id);
	}
	if (!cJSON_IsString(tau_json_find(o, "spec.target.namespace")))
		goto nomem;
	return o;
nomem:
	cJSON_Delete(o);
	return refuse(err, cap, "out of memory");
}

bool tau_cli_ws_created_by_tau(const cJSON *ws)
{
	const cJSON *a = tau_json_find(ws, "metadata.annotations");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, TAU_CLI_CREATED_BY);

	return cJSON_IsString(v) && strcmp(v->valuestring, TAU_CLI_CREATED_BY_TAU) == 0;
}

const cJSON *tau_cli_ws_first_failing(const cJSON *ws)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, tau_json_find(ws, "status.conditions"))
	{
		const char *t = tau_cli_str(c, "type"), *st = tau_cli_str(c, "status");

		if (t == NULL || st == NULL)
			continue;
		/* WorkloadIdentityReady and QuotaReady never change the phase (docs/api.md). */
		if (strcmp(t, "DriftDetected") == 0 ? strcmp(st, "True") == 0
		                                    : strcmp(st, "True") != 0)
			return c;
	}
	return NULL;
}

int tau_cli_ws_wait_verdict(const cJSON *ws)
{
	int64_t gen = 0, obs = -1;
	const char *phase = tau_cli_str(ws, "status.phase");

	if (tau_cli_str(ws, "metadata.deletionTimestamp") != NULL)
		return -1;
	if (tau_cli_ws_ready(ws))
		return 1;
	tau_json_get_int(&gen, ws, "metadata.generation");
	if (tau_json_get_int(&obs, ws, "status.observedGeneration") == 0 && obs == gen &&
	    phase != NULL && strcmp(phase, "Degraded") == 0)
		return -1;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* I/O                                                                                         */

static void create_usage(FILE *out)
{
	fputs("Usage: tau workspace create NAME [--system-namespace NS] [-n|--namespace WS_NS]\n"
	      "         [--team T] [--authorization workspace-rbac|cluster-wide]\n"
	      "         [--principal-provider entra|github] [--principal P]\n"
	      "         [--subject-kind Group|User|ServiceAccount] [--subject S] [--queue Q]\n"
	      "         [--workload-identity-sa SA --client-id ID] [--create-namespace [--adopt]]\n"
	      "         [--wait [--timeout D]] [--dry-run [-o yaml|json]]\n"
	      "Writes TauWorkspace NAME into the system namespace (default: the installed one).\n"
	      "Defaults: --namespace NAME, --authorization workspace-rbac (needs --principal and\n"
	      "--subject), --principal-provider entra, --subject-kind Group, role researcher,\n"
	      "queue from TauCluster workspaceDefaults. --create-namespace lets the aggregator\n"
	      "create the namespace (Managed mode), --adopt take over an existing unlabelled\n"
	      "one. The workspace is marked with the annotation\n"
	      "tau.azure.com/created-by=tau; an existing workspace without it is never\n"
	      "overwritten, one with it gets the new spec. --wait follows the conditions until\n"
	      "Ready (timeout 5m). --dry-run prints the object (yaml by default) and writes\n"
	      "nothing.\n"
	      "Exit codes: 0 written (and Ready with --wait), 1 refused by the cluster's state,\n"
	      "not Ready or API failure, 2 usage or invalid value.\n",
	      out);
}

static void print_condition(FILE *out, const char *prefix, const cJSON *c)
{
	fprintf(out, "%s%s=%s %s: %s\n", prefix, tau_cli_str(c, "type"), tau_cli_str(c, "status"),
	        tau_cli_str(c, "reason") != NULL ? tau_cli_str(c, "reason") : "<none>",
	        tau_cli_str(c, "message") != NULL ? tau_cli_str(c, "message") : "");
}

/* Print the conditions of `ws` that are new or changed since `prev` (NULL: all). */
static void print_changes(const cJSON *ws, const cJSON *prev)
{
	const cJSON *c, *pc;

	cJSON_ArrayForEach(c, tau_json_find(ws, "status.conditions"))
	{
		bool seen = false;

		cJSON_ArrayForEach(pc, tau_json_find(prev, "status.conditions"))
		{
			if (tau_str_eq_or_both_null(tau_cli_str(pc, "type"),
			                            tau_cli_str(c, "type")) &&
			    tau_str_eq_or_both_null(tau_cli_str(pc, "status"),
			                            tau_cli_str(c, "status")) &&
			    tau_str_eq_or_both_null(tau_cli_str(pc, "reason"),
			                            tau_cli_str(c, "reason")) &&
			    tau_str_eq_or_both_null(tau_cli_str(pc, "message"),
			                            tau_cli_str(c, "message")))
				seen = true;
		}
		if (!seen)
			print_condition(stdout, "  ", c);
	}
}

/* tau workspace create --wait: what one look needs and keeps. */
typedef struct ws_follow {
	tau_kube_client *c;
	const char *sysns, *name;
	cJSON *prev;    /* the last workspace read, for the changes and the timeout's message */
	char phase[64]; /* the last phase printed */
} ws_follow;

/* One GET: print what changed; >0 Ready, <0 Degraded, deleted or being deleted, 0 not yet. */
static int follow_look(void *arg)
{
	ws_follow *f = arg;
	cJSON *ws = NULL;
	const char *p;
	int v, g = tau_kube_get(&ws, f->c, &res_workspaces, f->sysns, f->name);

	if (g == -TAU_ENOTFOUND) {
		fprintf(stdout, "workspace %s/%s: deleted while waiting\n", f->sysns, f->name);
		return -1;
	}
	if (g != 0) {
		fprintf(stderr, "tau workspace: reading %s/%s: %s\n", f->sysns, f->name,
		        tau_cli_api_message());
		return 0;
	}
	p = tau_cli_str(ws, "status.phase");
	if (strcmp(f->phase, p != NULL ? p : "") != 0) {
		snprintf(f->phase, sizeof(f->phase), "%s", p != NULL ? p : "");
		fprintf(stdout, "workspace %s: phase %s\n", f->name,
		        p != NULL ? p : "<none> (not reconciled yet)");
	}
	print_changes(ws, f->prev);
	fflush(stdout);
	v = tau_cli_ws_wait_verdict(ws);
	if (v > 0) {
		fprintf(stdout, "workspace %s: Ready (namespace %s, queue %s)\n", f->name,
		        tau_cli_str(ws, "status.target.resolvedNamespace"),
		        tau_cli_str(ws, "status.queue.localQueue"));
	} else if (v < 0) {
		const cJSON *failing = tau_cli_ws_first_failing(ws);

		fprintf(stdout, "workspace %s: %s\n", f->name,
		        tau_cli_str(ws, "metadata.deletionTimestamp") != NULL ? "being deleted"
		                                                              : "Degraded");
		if (failing != NULL)
			print_condition(stdout, "failing: ", failing);
	}
	cJSON_Delete(f->prev);
	f->prev = ws;
	return v;
}

int tau_cli_ws_follow(tau_kube_client *c, const char *sysns, const char *name, int64_t timeout_ms)
{
	ws_follow f = {c, sysns, name, NULL, ""};
	int v = tau_cli_wait(follow_look, NULL, &f, timeout_ms, WAIT_POLL_MS);

	if (v == 0) {
		const cJSON *failing = tau_cli_ws_first_failing(f.prev);

		fprintf(stdout, "workspace %s: not Ready after %lld s (phase %s)\n", name,
		        (long long)(timeout_ms / 1000), f.phase[0] ? f.phase : "<none>");
		if (failing != NULL)
			print_condition(stdout, "failing: ", failing);
	}
	cJSON_Delete(f.prev);
	return v > 0 ? TAU_CLI_OK : TAU_CLI_FAILED;
}

/* What only the cluster can tell: refused with exit 1 and the reason; 0 when nothing is. */
static int cluster_refusals(tau_kube_client *c, const cJSON *obj, const char *sysns,
                            bool create_namespace)
{
	const char *name = tau_cli_str(obj, "metadata.name"),
	           *ns = tau_cli_str(obj, "spec.target.namespace");
	const char *team = tau_cli_str(obj, "spec.teamRef.name"), *owner;
	cJSON *nsobj = NULL, *list = NULL, *t = NULL, *cluster = NULL;
	bool shared = false, adopt = false;
	const cJSON *w;
	int rc = 0, g;

	/* TauCluster spec.workspaces.allowSharedNamespaces lets workspaces share a namespace. */
	if (tau_kube_get(&cluster, c, &tau_cli_res_clusters, NULL, TAU_CLI_CLUSTER_NAME) == 0)
		tau_json_get_bool(&shared, cluster, "spec.workspaces.allowSharedNamespaces");
	tau_json_get_bool(&adopt, obj, "spec.target.adopt");

	g = tau_kube_get(&nsobj, c, &tau_kube_res_namespaces, NULL, ns);
	if (g == -TAU_ENOTFOUND && !create_namespace) {
		fprintf(stderr,
		        "tau workspace create: namespace %s does not exist; create it, or give "
		        "--create-namespace to let the aggregator create it (Managed mode)\n",
		        ns);
		rc = -1;
		goto out;
	}
	if (g != 0 && g != -TAU_ENOTFOUND) {
		fprintf(stderr, "tau workspace create: reading namespace %s: %s\n", ns,
		        tau_cli_api_message());
		rc = -1;
		goto out;
	}
	owner = NULL;
	if (nsobj != NULL) {
		const cJSON *labels = tau_json_find(nsobj, "metadata.labels");
		const cJSON *v =
		        cJSON_GetObjectItemCaseSensitive(labels, "tau.azure.com/workspace");

		owner = cJSON_IsString(v) ? v->valuestring : NULL;
	}
	if (nsobj != NULL && owner == NULL && create_namespace && !adopt) {
		fprintf(stderr,
		        "tau workspace create: namespace %s already exists without ownership "
		        "labels; "
		        "the aggregator takes it over only with --adopt\n",
		        ns);
		rc = -1;
		goto out;
	}
	if (owner != NULL && strcmp(owner, name) != 0 && !shared) {
		fprintf(stderr,
		        "tau workspace create: namespace %s belongs to workspace %s (label "
		        "tau.azure.com/workspace); choose another --namespace\n",
		        ns, owner);
		rc = -1;
		goto out;
	}
	if (tau_kube_list_all(&list, c, &res_workspaces, NULL, NULL) != 0) {
		fprintf(stderr, "tau workspace create: listing workspaces: %s\n",
		        tau_cli_api_message());
		rc = -1;
		goto out;
	}
	cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(list, "items"))
	{
		const char *wn = tau_cli_str(w, "metadata.name"),
		           *wns = tau_cli_str(w, "metadata.namespace");
		const char *tgt = tau_cli_str(w, "status.target.resolvedNamespace");

		if (wn == NULL || (strcmp(wn, name) == 0 && tau_str_eq_or_both_null(wns, sysns)))
			continue;
		if (tgt == NULL)
			tgt = tau_cli_str(w, "spec.target.namespace") != NULL
			              ? tau_cli_str(w, "spec.target.namespace")
			              : wn;
		if (strcmp(tgt, ns) == 0 && !shared) {
			fprintf(stderr,
			        "tau workspace create: namespace %s is already the namespace of "
			        "workspace %s/%s; choose another --namespace\n",
			        ns, wns != NULL ? wns : "", wn);
			rc = -1;
			goto out;
		}
	}
	if (team != NULL) {
		g = tau_kube_get(&t, c, &res_teams, sysns, team);
		if (g != 0) {
			fprintf(stderr, "tau workspace create: TauTeam %s/%s: %s\n", sysns, team,
			        g == -TAU_ENOTFOUND ? "not found (create the team first)"
			                            : tau_cli_api_message());
			rc = -1;
		}
	}
out:
	cJSON_Delete(nsobj);
	cJSON_Delete(list);
	cJSON_Delete(t);
	cJSON_Delete(cluster);
	return rc;
}

/* Report how a create or update of sysns/name went: TAU_CLI_OK or TAU_CLI_FAILED. */
static int written(int api_rc, const char *doing, const char *done, const char *sysns,
                   const char *name)
{
	if (api_rc != 0) {
		fprintf(stderr, "tau workspace create: %s %s/%s: %s\n", doing, sysns, name,
		        tau_cli_api_message());
		return TAU_CLI_FAILED;
	}
	fprintf(stdout, "workspace %s/%s %s\n", sysns, name, done);
	return TAU_CLI_OK;
}

/* Create, or replace the spec of a workspace tau created.  TAU_CLI_OK or TAU_CLI_FAILED. */
static int write_workspace(tau_kube_client *c, cJSON *obj, const char *sysns, const char *name)
{
	cJSON *cur = NULL, *out = NULL;
	int g = tau_kube_get(&cur, c, &res_workspaces, sysns, name), rc = TAU_CLI_FAILED;

	if (g == -TAU_ENOTFOUND) {
		rc = written(tau_kube_create(&out, c, &res_workspaces, sysns, obj), "creating",
		             "created", sysns, name);
		goto out;
	}
	if (g != 0) {
		fprintf(stderr, "tau workspace create: reading %s/%s: %s\n", sysns, name,
		        tau_cli_api_message());
		goto out;
	}
	if (!tau_cli_ws_created_by_tau(cur)) {
		fprintf(stderr,
		        "tau workspace create: workspace %s/%s exists and was not created by tau "
		        "(no annotation %s=%s); refusing to overwrite it (change it with kubectl, "
		        "or delete it first)\n",
		        sysns, name, TAU_CLI_CREATED_BY, TAU_CLI_CREATED_BY_TAU);
		goto out;
	}
	if (tau_cli_str(cur, "metadata.deletionTimestamp") != NULL) {
		fprintf(stderr,
		        "tau workspace create: workspace %s/%s is being deleted; wait until it is "
		        "gone (tau workspace delete %s --wait)\n",
		        sysns, name, name);
		goto out;
	}
	cJSON_ReplaceItemInObjectCaseSensitive(
	        cur, "spec", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(obj, "spec"), true));
	rc = written(tau_kube_update(&out, c, &res_workspaces, sysns, cur), "updating",
	             "updated (created by tau)", sysns, name);
out:
	cJSON_Delete(cur);
	cJSON_Delete(out);
	return rc;
}

int tau_cli_ws_create(int argc, char **argv, const tau_cli_globals *g)
{
	enum {
		O_TEAM = 256,
		O_AUTH,
		O_PROVIDER,
		O_PRINCIPAL,
		O_SUBJECT_KIND,
		O_SUBJECT,
		O_QUEUE,
		O_WI_SA,
		O_CLIENT_ID,
		O_CREATE_NS,
		O_ADOPT,
		O_WAIT,
		O_TIMEOUT,
		O_DRY_RUN
	};
	static const struct option lopts[] = {
	        TAU_CLI_GLOBAL_LONGOPTS TAU_CLI_SYSTEM_NAMESPACE_LONGOPT{
	                "output", required_argument, NULL, 'o'},
	        {"namespace", required_argument, NULL, 'n'},
	        {"team", required_argument, NULL, O_TEAM},
	        {"authorization", required_argument, NULL, O_AUTH},
	        {"principal-provider", required_argument, NULL, O_PROVIDER},
	        {"principal", required_argument, NULL, O_PRINCIPAL},
	        {"subject-kind", required_argument, NULL, O_SUBJECT_KIND},
	        {"subject", required_argument, NULL, O_SUBJECT},
	        {"queue", required_argument, NULL, O_QUEUE},
	        {"workload-identity-sa", required_argument, NULL, O_WI_SA},
	        {"client-id", required_argument, NULL, O_CLIENT_ID},
	        {"create-namespace", no_argument, NULL, O_CREATE_NS},
	        {"adopt", no_argument, NULL, O_ADOPT},
	        {"wait", no_argument, NULL, O_WAIT},
	        {"timeout", required_argument, NULL, O_TIMEOUT},
	        {"dry-run", no_argument, NULL, O_DRY_RUN},
	        {NULL, 0, NULL, 0},
	};
	static const tau_cli_optspec optspec = {"tau workspace create", "ho:n:", lopts,
	                                        create_usage, .take = NULL};
	tau_cli_ws_spec spec = {0};
	const char *output = NULL, *timeout = NULL;
	bool wait = false, dry_run = false;
	const tau_cli_keep keep[] = {
	        {'o', .arg = &output},
	        {'n', .arg = &spec.namespace},
	        {O_TEAM, .arg = &spec.team},
	        {O_AUTH, .arg = &spec.authorization},
	        {O_PROVIDER, .arg = &spec.principal_provider},
	        {O_PRINCIPAL, .arg = &spec.principal},
	        {O_SUBJECT_KIND, .arg = &spec.subject_kind},
	        {O_SUBJECT, .arg = &spec.subject},
	        {O_QUEUE, .arg = &spec.queue},
	        {O_WI_SA, .arg = &spec.wi_service_account},
	        {O_CLIENT_ID, .arg = &spec.client_id},
	        {O_CREATE_NS, .flag = &spec.create_namespace},
	        {O_ADOPT, .flag = &spec.adopt},
	        {O_WAIT, .flag = &wait},
	        {O_TIMEOUT, .arg = &timeout},
	        {O_DRY_RUN, .flag = &dry_run},
	        {0},
	};
	tau_cli_opts o;
	int64_t timeout_ms = DEFAULT_TIMEOUT_MS;
	tau_kube_client *client = NULL;
	char sysns[TAU_CLI_NS_BUF], err[1024];
	cJSON *obj = NULL;
	int exit_code, rc = TAU_CLI_USAGE;

	if ((exit_code = tau_cli_parse(&o, g, argc, argv, &optspec, keep, NULL)) >= 0)
		return exit_code;
	/* argv[0] is "create" (getopt's program name); then exactly NAME. */
	if (tau_cli_one_workspace_name(&spec.name, argc, argv, "tau workspace create") < 0)
		return TAU_CLI_USAGE;
	if (output != NULL && !dry_run) {
		fprintf(stderr, "tau workspace create: -o belongs to --dry-run\n");
		return TAU_CLI_USAGE;
	}
	if (output != NULL && strcmp(output, "yaml") != 0 && strcmp(output, "json") != 0) {
		fprintf(stderr, "tau workspace create: -o must be yaml or json, not \"%s\"\n",
		        output);
		return TAU_CLI_USAGE;
	}
	if (dry_run && wait) {
		fprintf(stderr, "tau workspace create: --wait and --dry-run exclude each other\n");
		return TAU_CLI_USAGE;
	}
	if (tau_cli_wait_timeout(&timeout_ms, &o.gl, wait, timeout, "tau workspace create") < 0)
		return TAU_CLI_USAGE;
	/* Offline with an explicit system namespace: the spec alone decides a dry run. */
	if (!(dry_run && o.gl.system_namespace != NULL) && tau_cli_connect(&client, &o.gl) != 0) {
		fprintf(stderr, "tau workspace create: %s%s\n", tau_error_last()->msg,
		        dry_run ? " (a dry run needs the cluster only to find the system "
		                  "namespace: give --system-namespace)"
		                : "");
		return TAU_CLI_USAGE;
	}
	if (client != NULL)
		tau_cli_system_namespace(sysns, sizeof(sysns), client, o.gl.system_namespace);
	else
		snprintf(sysns, sizeof(sysns), "%s", o.gl.system_namespace);
	spec.system_namespace = sysns;
	obj = tau_cli_ws_build(&spec, err, sizeof(err));
	if (obj == NULL) {
		fprintf(stderr, "tau workspace create: %s\n", err);
		goto out;
	}
	if (dry_run) {
		rc = tau_cli_doc_print(stdout, obj,
		                       output != NULL && strcmp(output, "json") == 0
		                               ? TAU_CLI_JSON
		                               : TAU_CLI_YAML);
		if (rc < 0)
			fprintf(stderr, "tau workspace create: %s\n", tau_error_last()->msg);
		rc = rc < 0 ? TAU_CLI_FAILED : TAU_CLI_OK;
		goto out;
	}
	rc = TAU_CLI_FAILED;
	if (cluster_refusals(client, obj, sysns, spec.create_namespace) != 0)
		goto out;
	rc = write_workspace(client, obj, sysns, spec.name);
	if (rc == TAU_CLI_OK && wait)
		rc = tau_cli_ws_follow(client, sysns, spec.name, timeout_ms);
out:
	cJSON_Delete(obj);
	tau_kube_client_free(client);
	return rc;
}
