/*
 * cluster.c - `tau cluster install|uninstall|status`.
 *
 * install runs helm (upgrade --install of the umbrella chart charts/taugrid
 * into NS, with systemNamespace=NS) and then waits on the readiness gate;
 * status prints the gate and changes nothing; uninstall removes the release
 * and says what it keeps.  The gate, in order, each step printed as it passes:
 *   1. CRDs Established (clusters, teams, workspaces .tau.azure.com);
 *   2. the aggregator Deployment NS/tau-aggregator available, with a leader
 *      (Lease NS/tau-aggregator held and renewed);
 *   3. the inventory established (TauCluster condition InventoryEstablished,
 *      which the aggregator writes from its inventory; with --aggregator ADDR
 *      also GetPool, naming the nodes it still waits for);
 *   4. the TauCluster's conditions, observed for its generation.
 * Exit 0 only when all pass; 1 with the failing step and its reason.
 *
 * Which helm: $TAU_HELM, else .tools/bin/helm of the source tree the binary
 * was built in (scripts/install-deps puts the pinned helm there), else helm on
 * PATH.  Which chart (a directory or a packaged .tgz): --chart, else $TAU_CHART,
 * else charts/taugrid next to the binary's tree (build/../charts/taugrid) or an
 * installed share/taugrid/charts/taugrid.
 *
 * An umbrella release never takes over a component a standalone release owns,
 * and a standalone chart never takes over what the umbrella owns: the charts
 * refuse it at render time (docs/install.md); tau passes that refusal on and
 * says what to do.
 */
#include "cluster.h"
#include "globalopts.h"
#include "wait.h"

#include "inventory.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/mem.h"
#include "tau/names.h"
#include "tau/parse.h"

#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *const tau_cli_crd_names[3] = {"clusters.tau.azure.com", "teams.tau.azure.com",
                                          "workspaces.tau.azure.com"};

static const tau_kube_resource res_crds = {"apiextensions.k8s.io", "v1",
                                           "customresourcedefinitions", false};
static const tau_kube_resource res_deployments = {"apps", "v1", "deployments", true};
static const tau_kube_resource res_leases = {"coordination.k8s.io", "v1", "leases", true};

#define AGGREGATOR_NAME    "tau-aggregator"
#define DEFAULT_RELEASE    "taugrid"
#define DEFAULT_TIMEOUT_MS (5 * 60 * 1000)
#define GATE_POLL_MS       500
#define MAX_HELM_ARGS      128

#define S tau_cli_str

/* The condition `type` of obj's status.conditions, or NULL. */
static const cJSON *condition(const cJSON *obj, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, tau_json_find(obj, "status.conditions"))
	{
		if (S(c, "type") != NULL && strcmp(S(c, "type"), type) == 0)
			return c;
	}
	return NULL;
}

static bool cond_is(const cJSON *obj, const char *type, const char *status)
{
	const cJSON *c = condition(obj, type);

	return c != NULL && S(c, "status") != NULL && strcmp(S(c, "status"), status) == 0;
}

bool tau_cli_gate_crds(char *msg, size_t cap, const cJSON *const crds[3])
{
	for (int i = 0; i < 3; i++) {
		if (crds[i] == NULL) {
			snprintf(msg, cap, "CRD %s not found", tau_cli_crd_names[i]);
			return false;
		}
		if (!cond_is(crds[i], "Established", "True")) {
			snprintf(msg, cap, "CRD %s is not Established yet", tau_cli_crd_names[i]);
			return false;
		}
	}
	snprintf(msg, cap, "%s, %s, %s", tau_cli_crd_names[0], tau_cli_crd_names[1],
	         tau_cli_crd_names[2]);
	return true;
}

/* RFC 3339 (UTC, optional fraction) to time_t; -1 when it is not one. */
static time_t parse_time(const char *s)
{
	struct tm tm = {0};
	int n = 0;

	if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
	                        &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return timegm(&tm);
}

bool tau_cli_gate_aggregator(char *msg, size_t cap, const char *ns, const cJSON *deploy,
                             const cJSON *lease, time_t now)
{
	int64_t avail = 0, dur = 0;
	const char *holder = S(lease, "spec.holderIdentity");
	time_t renew = parse_time(S(lease, "spec.renewTime"));

	if (deploy == NULL) {
		snprintf(msg, cap,
		         "Deployment %s/%s not found (is the aggregator disabled, or owned "
		         "by a standalone release in another namespace?)",
		         ns, AGGREGATOR_NAME);
		return false;
	}
	tau_json_get_int(&avail, deploy, "status.availableReplicas");
	if (avail < 1 && !cond_is(deploy, "Available", "True")) {
		snprintf(msg, cap, "Deployment %s/%s has no available replica", ns,
		         AGGREGATOR_NAME);
		return false;
	}
	if (lease == NULL || holder == NULL || holder[0] == '\0') {
		snprintf(msg, cap, "no leader: Lease %s/%s %s", ns, AGGREGATOR_NAME,
		         lease == NULL ? "not found" : "has no holder");
		return false;
	}
	tau_json_get_int(&dur, lease, "spec.leaseDurationSeconds");
	if (renew < 0 || renew + (time_t)dur < now) {
		snprintf(msg, cap, "no leader: Lease %s/%s held by %s has lapsed (renewed %s)", ns,
		         AGGREGATOR_NAME, holder,
		         S(lease, "spec.renewTime") ? S(lease, "spec.renewTime") : "never");
		return false;
	}
	snprintf(msg, cap, "Deployment %s/%s available (%lld), leader %s", ns, AGGREGATOR_NAME,
	         (long long)avail, holder);
	return true;
}

/* The TauCluster's status is for its current generation. */
static bool observed(char *msg, size_t cap, const cJSON *cluster)
{
	int64_t gen = 0, obs = -1;

	if (cluster == NULL) {
		snprintf(msg, cap, "TauCluster %s not found", TAU_CLI_CLUSTER_NAME);
		return false;
	}
	tau_json_get_int(&gen, cluster, "metadata.generation");
	if (tau_json_get_int(&obs, cluster, "status.observedGeneration") != 0 || obs != gen) {
		snprintf(
		        msg, cap,
		        "TauCluster %s: status not written for generation %lld yet (the aggregator "
		        "leader writes it)",
		        TAU_CLI_CLUSTER_NAME, (long long)gen);
		return false;
	}
	return true;
}

bool tau_cli_gate_inventory(char *msg, size_t cap, const cJSON *cluster)
{
	const cJSON *c;

	if (!observed(msg, cap, cluster))
		return false;
	c = condition(cluster, "InventoryEstablished");
	if (c == NULL || !cond_is(cluster, "InventoryEstablished", "True")) {
		snprintf(msg, cap, "InventoryEstablished=%s %s: %s",
		         c != NULL && S(c, "status") ? S(c, "status") : "<unset>",
		         c != NULL && S(c, "reason") ? S(c, "reason") : "",
		         c != NULL && S(c, "message") ? S(c, "message") : "not reported yet");
		return false;
	}
	snprintf(msg, cap, "%s", S(c, "message") ? S(c, "message") : "established");
	return true;
}

bool tau_cli_gate_pool(char *msg, size_t cap, bool established, uint32_t missing_count,
                       char *const *names, size_t n_names)
{
	size_t used = strnlen(msg, cap);
	int n;

	if (established && missing_count == 0)
		return true;
	n = snprintf(msg + used, cap - used,
	             established ? "; established by the initial sync timeout, but %" PRIu32
	                           " GPU node%s' agent never reported (counted from the Node "
	                           "object; see tau inventory explain NODE):"
	                         : "; waiting for %" PRIu32 " node%s:",
	             missing_count, missing_count == 1 ? "" : "s");
	used += n > 0 && (size_t)n < cap - used ? (size_t)n : 0;
	for (size_t i = 0; i < n_names && used + 1 < cap; i++) {
		n = snprintf(msg + used, cap - used, " %s", names[i]);
		used += n > 0 && (size_t)n < cap - used ? (size_t)n : 0;
	}
	return false;
}

bool tau_cli_gate_conditions(char *msg, size_t cap, const cJSON *cluster)
{
	const cJSON *c;
	size_t used = 0;

	if (!observed(msg, cap, cluster))
		return false;
	cJSON_ArrayForEach(c, tau_json_find(cluster, "status.conditions"))
	{
		const char *t = S(c, "type"), *st = S(c, "status"), *r = S(c, "reason");
		bool bad;

		if (t == NULL || st == NULL)
			continue;
		if (strcmp(t, "ConflictDetected") == 0)
			bad = strcmp(st, "True") == 0;
		else if (strcmp(t, "NodeTruthAgrees") == 0)
			bad = false; /* advice: the budget follows the Node objects */
		else if (strcmp(t, "BudgetReady") == 0)
			bad = strcmp(st, "True") != 0 &&
			      !(r != NULL && strcmp(r, "NoCapacityTeam") == 0);
		else
			bad = strcmp(st, "True") != 0;
		if (bad) {
			snprintf(msg, cap, "%s=%s %s: %s", t, st, r != NULL ? r : "",
			         S(c, "message") ? S(c, "message") : "");
			return false;
		}
		if (used < cap) {
			int n = snprintf(msg + used, cap - used, "%s%s=%s", used ? ", " : "", t,
			                 st);

			used += n > 0 ? (size_t)n : 0;
		}
	}
	if (used == 0)
		snprintf(msg, cap, "no conditions reported");
	return used > 0;
}

/* ------------------------------------------------------------------------------------------ */
/* I/O: the gate                                                                               */

typedef struct gate_ctx {
	tau_kube_client *c;
	const char *ns;
	const char *aggregator;   /* --aggregator: also GetPool */
	const tau_cli_globals *g; /* the token GetPool sends */
	char api_error[512];      /* the first read of this step that failed other than 404 */
} gate_ctx;

static const char *const step_names[4] = {"CRDs established", "aggregator available with a leader",
                                          "inventory established", "TauCluster conditions"};

/* The object, or NULL when absent; another failure is also kept in g->api_error, so an API
 * that cannot be reached is reported as such, not as a missing object. */
static cJSON *get_or_null(gate_ctx *g, const tau_kube_resource *res, const char *ns,
                          const char *name)
{
	cJSON *o = NULL;
	int rc = tau_kube_get(&o, g->c, res, ns, name);

	if (rc != 0 && rc != -TAU_ENOTFOUND && g->api_error[0] == '\0')
		snprintf(g->api_error, sizeof(g->api_error), "%s", tau_cli_api_message());
	return rc == 0 ? o : NULL;
}

/* GetPool judged by tau_cli_gate_pool, appended to msg; false when the aggregator cannot
 * answer. */
static bool pool_missing(char *msg, size_t cap, const char *addr, const tau_cli_globals *g)
{
	Tau__Inventory__V1__GetPoolRequest req = TAU__INVENTORY__V1__GET_POOL_REQUEST__INIT;
	ProtobufCMessage *resp = NULL;
	tau_rpc_status st = {0};
	tau_rpc_channel *ch = NULL;
	const char *target = NULL;
	const tau_cli_aggregator_opts agg = {addr, NULL, false};
	size_t used = strlen(msg);
	bool ok = false;

	if (tau_cli_aggregator_channel(&ch, &target, &agg, g) < 0 ||
	    tau_rpc_unary(&resp, ch, TAU_CLI_QUERY "GetPool", &req.base,
	                  &tau__inventory__v1__pool__descriptor, tau_cli_rpc_timeout_ms(g, 5000),
	                  &st) < 0) {
		snprintf(msg + used, cap - used, "; aggregator %s: GetPool failed: %s",
		         target != NULL ? target : addr,
		         st.message[0] ? st.message : tau_error_last()->msg);
	} else {
		const Tau__Inventory__V1__Pool *p = (const Tau__Inventory__V1__Pool *)resp;

		ok = tau_cli_gate_pool(msg, cap, p->established, p->missing_count, p->missing_nodes,
		                       p->n_missing_nodes);
	}
	tau_rpc_message_free(resp);
	tau_rpc_channel_free(ch);
	return ok;
}

static bool run_step(gate_ctx *g, int step, char *msg, size_t cap)
{
	bool ok = false;

	g->api_error[0] = '\0';
	if (step == 0) {
		cJSON *crds[3];

		for (int i = 0; i < 3; i++)
			crds[i] = get_or_null(g, &res_crds, NULL, tau_cli_crd_names[i]);
		ok = tau_cli_gate_crds(msg, cap, (const cJSON *const *)crds);
		for (int i = 0; i < 3; i++)
			cJSON_Delete(crds[i]);
	} else if (step == 1) {
		cJSON *d = get_or_null(g, &res_deployments, g->ns, AGGREGATOR_NAME);
		cJSON *l = get_or_null(g, &res_leases, g->ns, AGGREGATOR_NAME);

		ok = tau_cli_gate_aggregator(msg, cap, g->ns, d, l, time(NULL));
		cJSON_Delete(d);
		cJSON_Delete(l);
	} else {
		cJSON *cl = get_or_null(g, &tau_cli_res_clusters, NULL, TAU_CLI_CLUSTER_NAME);

		ok = step == 2 ? tau_cli_gate_inventory(msg, cap, cl)
		               : tau_cli_gate_conditions(msg, cap, cl);
		if (step == 2 && g->aggregator != NULL)
			ok = pool_missing(msg, cap, g->aggregator, g->g) && ok;
		cJSON_Delete(cl);
	}
	if (!ok && g->api_error[0] != '\0')
		snprintf(msg, cap, "API server: %s", g->api_error);
	return ok;
}

/* The gate's walk: the step reached and what it last said. */
typedef struct gate_walk {
	gate_ctx *g;
	int step;
	char msg[2048], shown[2048]; /* shown: the last "[waiting]" line's message */
} gate_walk;

/* Run the steps from the one reached, printing each one passed; >0 all four passed, 0 not yet. */
static int gate_look(void *arg)
{
	gate_walk *w = arg;

	for (; w->step < 4; w->step++) {
		if (!run_step(w->g, w->step, w->msg, sizeof(w->msg)))
			return 0;
		fprintf(stdout, "[ok]      %d/4 %s: %s\n", w->step + 1, step_names[w->step],
		        w->msg);
		fflush(stdout);
		w->shown[0] = '\0';
	}
	return 1;
}

static void gate_note(void *arg)
{
	gate_walk *w = arg;

	if (strcmp(w->msg, w->shown) != 0) {
		fprintf(stdout, "[waiting] %d/4 %s: %s\n", w->step + 1, step_names[w->step],
		        w->msg);
		fflush(stdout);
		snprintf(w->shown, sizeof(w->shown), "%s", w->msg);
	}
}

/* Walk the gate; with timeout_ms > 0 wait for each step.  TAU_CLI_OK or TAU_CLI_FAILED. */
static int gate(gate_ctx *g, int64_t timeout_ms)
{
	gate_walk w = {.g = g};

	if (tau_cli_wait(gate_look, gate_note, &w, timeout_ms, GATE_POLL_MS) == 0) {
		fprintf(stdout, "[FAILED]  %d/4 %s: %s\n", w.step + 1, step_names[w.step], w.msg);
		return TAU_CLI_FAILED;
	}
	fprintf(stdout, "TauGrid in %s is ready\n", g->ns);
	return TAU_CLI_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* I/O: helm                                                                                   */

static bool executable(const char *p)
{
	return access(p, X_OK) == 0;
}

/* The directory of the running binary. */
static bool exe_dir(char *out, size_t cap)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	char *slash;

	if (n <= 0)
		return false;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (slash == NULL)
		return false;
	*slash = '\0';
	if (strlen(buf) >= cap)
		return false;
	memcpy(out, buf, strlen(buf) + 1);
	return true;
}

/* First of `rel` (relative to the binary's directory, its parent, grandparent) that exists. */
static bool find_near_binary(char *out, size_t cap, const char *rel, bool want_exec)
{
	static const char *const ups[] = {"", "/..", "/../.."};
	char dir[PATH_MAX / 2];

	if (!exe_dir(dir, sizeof(dir)))
		return false;
	for (size_t i = 0; i < sizeof(ups) / sizeof(ups[0]); i++) {
		int n = snprintf(out, cap, "%s%s/%s", dir, ups[i], rel);

		if (n < 0 || (size_t)n >= cap)
			continue;
		if (want_exec ? executable(out) : access(out, R_OK) == 0)
			return true;
	}
	return false;
}

/* Which helm; *why says how it was found. */
static bool find_helm(char *out, size_t cap, const char **why)
{
	const char *env = getenv("TAU_HELM"), *path = getenv("PATH");

	if (env != NULL && env[0] != '\0') {
		snprintf(out, cap, "%s", env);
		*why = "$TAU_HELM";
		return true;
	}
	if (find_near_binary(out, cap, ".tools/bin/helm", true)) {
		*why = "the project's .tools/bin";
		return true;
	}
	for (const char *p = path; p != NULL && *p != '\0';) {
		const char *end = strchr(p, ':');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

		snprintf(out, cap, "%.*s/helm", (int)len, p);
		if (len > 0 && executable(out)) {
			*why = "PATH";
			return true;
		}
		p = end != NULL ? end + 1 : NULL;
	}
	return false;
}

static bool find_chart(char *out, size_t cap, const char *flag)
{
	const char *env = getenv("TAU_CHART");

	if (flag != NULL || (env != NULL && env[0] != '\0')) {
		snprintf(out, cap, "%s", flag != NULL ? flag : env);
		return true;
	}
	return find_near_binary(out, cap, "charts/taugrid/Chart.yaml", false) ||
	       find_near_binary(out, cap, "share/taugrid/charts/taugrid/Chart.yaml", false);
}

/*
 * Run argv with its stdout ours; its stderr is copied to ours as it comes and its first
 * `cap` - 1 bytes kept in `err` (for telling helm's refusals apart).  Returns the exit status
 * (or -1 when it could not run).
 */
static int run(char *const *argv, char *err, size_t cap)
{
	int fds[2], st;
	size_t used = 0;
	pid_t pid;
	char buf[4096];
	ssize_t n;

	err[0] = '\0';
	fflush(stdout);
	fflush(stderr);
	if (pipe(fds) != 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		close(fds[1]);
		execv(argv[0], argv);
		fprintf(stderr, "tau: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		fwrite(buf, 1, (size_t)n, stderr);
		if (used + 1 < cap) {
			size_t k = (size_t)n < cap - 1 - used ? (size_t)n : cap - 1 - used;

			memcpy(err + used, buf, k);
			used += k;
			err[used] = '\0';
		}
	}
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* The command                                                                                 */

static void cluster_usage(FILE *out)
{
	fputs("Usage: tau cluster install [-n|--namespace NS] [-f values.yaml]... [--set k=v]...\n"
	      "                           [--context C] [--timeout D] [--dry-run]\n"
	      "                           [--release NAME] [--chart DIR|TGZ] [--aggregator ADDR]\n"
	      "       tau cluster status [-n|--namespace NS] [--aggregator ADDR]\n"
	      "       tau cluster uninstall [-n|--namespace NS] [--release NAME] [--delete-crds]\n"
	      "install: helm upgrade --install of the umbrella chart (release taugrid) into NS\n"
	      "(default: the installed system namespace, else tau-system) with "
	      "systemNamespace=NS,\n"
	      "then waits (--timeout, default 5m) on the readiness gate, printing each step:\n"
	      "  1 CRDs Established  2 Deployment NS/tau-aggregator available with a leader\n"
	      "  (Lease NS/tau-aggregator)  3 inventory established (TauCluster\n"
	      "  InventoryEstablished; with --aggregator ADDR also GetPool, naming the nodes it\n"
	      "  waits for)  4 the TauCluster's conditions.\n"
	      "--dry-run renders and installs nothing (helm --dry-run=server once the CRDs\n"
	      "exist, --dry-run=client before).\n"
	      "status: the same gate, once, changing nothing.\n"
	      "uninstall: helm uninstall; keeps the CRDs (and so every TauWorkspace and TauTeam)\n"
	      "unless --delete-crds.\n"
	      "helm: $TAU_HELM, else .tools/bin/helm of this build's source tree\n"
	      "(scripts/install-deps), else helm on PATH. Chart (a directory or a `helm package`\n"
	      ".tgz): --chart, else $TAU_CHART, else charts/taugrid of this build's source tree\n"
	      "or share/taugrid/charts/taugrid.\n"
	      "Exit codes: 0 ready (or done), 1 helm refused or a gate step failed (named),\n"
	      "2 usage error.\n",
	      out);
}

enum { O_SET = 256, O_TIMEOUT, O_DRY_RUN, O_RELEASE, O_CHART, O_AGG, O_DELETE_CRDS };

/* The repeated options, -f and --set, each kept in the order given. */
typedef struct helm_lists {
	const char *values[32], *sets[64];
	size_t n_values, n_sets;
} helm_lists;

/* Keep arg in args, at most `cap` of them.  @return -1 to go on, else the exit code. */
static int push_arg(const char **args, size_t *n, size_t cap, const char *arg, const char *what)
{
	if (*n == cap) {
		fprintf(stderr, "tau cluster: at most %zu %s\n", cap, what);
		return TAU_CLI_USAGE;
	}
	args[(*n)++] = arg;
	return -1;
}

/* tau_cli_optspec.take: -f and --set into the helm_lists ctx. */
static int take_list(void *ctx, int c, const char *arg)
{
	helm_lists *l = ctx;

	if (c == 'f')
		return push_arg(l->values, &l->n_values, TAU_N_ELEMENTS(l->values), arg,
		                "-f files");
	return push_arg(l->sets, &l->n_sets, TAU_N_ELEMENTS(l->sets), arg, "--set values");
}

int tau_cli_cluster(int argc, char **argv, const tau_cli_globals *g)
{
	static const struct option lopts[] = {
	        /* --system-namespace is --namespace here: where TauGrid is (to be) installed. */
	        TAU_CLI_GLOBAL_LONGOPTS{"system-namespace", required_argument, NULL, 'n'},
	        {"namespace", required_argument, NULL, 'n'},
	        {"values", required_argument, NULL, 'f'},
	        {"set", required_argument, NULL, O_SET},
	        {"timeout", required_argument, NULL, O_TIMEOUT},
	        {"dry-run", no_argument, NULL, O_DRY_RUN},
	        {"release", required_argument, NULL, O_RELEASE},
	        {"chart", required_argument, NULL, O_CHART},
	        {"aggregator", required_argument, NULL, O_AGG},
	        {"delete-crds", no_argument, NULL, O_DELETE_CRDS},
	        {NULL, 0, NULL, 0},
	};
	static const tau_cli_optspec optspec = {"tau cluster", "hf:n:", lopts, cluster_usage,
	                                        .take = take_list};
	const char *verb, *ns_flag = NULL, *timeout = NULL, *release = DEFAULT_RELEASE,
	                  *chart_flag = NULL, *helm_why = "";
	bool dry_run = false, delete_crds = false;
	gate_ctx gc = {0};
	const tau_cli_keep keep[] = {
	        {'n', .arg = &ns_flag},
	        {O_TIMEOUT, .arg = &timeout},
	        {O_DRY_RUN, .flag = &dry_run},
	        {O_RELEASE, .arg = &release},
	        {O_CHART, .arg = &chart_flag},
	        {O_AGG, .arg = &gc.aggregator},
	        {O_DELETE_CRDS, .flag = &delete_crds},
	        {0},
	};
	helm_lists lists = {0};
	tau_cli_opts o;
	int64_t timeout_ms = DEFAULT_TIMEOUT_MS;
	char ns[TAU_CLI_NS_BUF], helm[PATH_MAX], chart[PATH_MAX], nsset[TAU_CLI_NS_BUF + 32],
	        tmo[32];
	char *hargv[MAX_HELM_ARGS], helm_err[16384];
	size_t h = 0;
	tau_kube_client *client = NULL;
	int exit_code, c, rc = TAU_CLI_USAGE;

	if ((exit_code = tau_cli_parse(&o, g, argc, argv, &optspec, keep, &lists)) >= 0)
		return exit_code;
	if (optind + 1 != argc) {
		cluster_usage(stderr);
		return TAU_CLI_USAGE;
	}
	verb = argv[optind];
	if (strcmp(verb, "install") != 0 && strcmp(verb, "uninstall") != 0 &&
	    strcmp(verb, "status") != 0) {
		fprintf(stderr, "tau cluster: unknown command %s\n", verb);
		return TAU_CLI_USAGE;
	}
	if (strcmp(verb, "install") != 0 && (lists.n_values > 0 || lists.n_sets > 0 || dry_run ||
	                                     chart_flag != NULL || timeout != NULL)) {
		fprintf(stderr,
		        "tau cluster %s: -f, --set, --dry-run, --chart and --timeout belong "
		        "to install\n",
		        verb);
		return TAU_CLI_USAGE;
	}
	if (delete_crds && strcmp(verb, "uninstall") != 0) {
		fprintf(stderr, "tau cluster: --delete-crds belongs to uninstall\n");
		return TAU_CLI_USAGE;
	}
	if (tau_cli_wait_timeout_parse(&timeout_ms, timeout, 0, "tau cluster install") < 0)
		return TAU_CLI_USAGE;
	if (ns_flag != NULL && tau_names_check_dns1123_label(ns_flag) != 0) {
		fprintf(stderr, "tau cluster: --namespace: %s\n", tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	if (tau_names_check_dns1123_subdomain(release) != 0) {
		fprintf(stderr, "tau cluster: --release: %s\n", tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	/* The gate's --timeout bounds each of its requests unless --request-timeout says. */
	if (!o.gl.request_timeout_set && strcmp(verb, "install") == 0 && timeout_ms > 0) {
		o.gl.request_timeout_set = true;
		o.gl.request_timeout_ms = timeout_ms;
	}
	if (tau_cli_connect(&client, &o.gl) != 0) {
		fprintf(stderr, "tau cluster: %s\n", tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	tau_cli_system_namespace(ns, sizeof(ns), client,
	                         ns_flag != NULL ? ns_flag : o.gl.system_namespace);
	gc.c = client;
	gc.ns = ns;
	gc.g = &o.gl;
	if (strcmp(verb, "status") == 0) {
		fprintf(stdout, "TauGrid readiness gate in namespace %s:\n", ns);
		rc = gate(&gc, 0);
		goto out;
	}
	rc = TAU_CLI_FAILED;
	if (!find_helm(helm, sizeof(helm), &helm_why)) {
		fprintf(stderr,
		        "tau cluster %s: no helm: set TAU_HELM, run scripts/install-deps "
		        "(it puts helm in .tools/bin), or put helm on PATH\n",
		        verb);
		goto out;
	}
	hargv[h++] = helm;
	if (strcmp(verb, "uninstall") == 0) {
		hargv[h++] = (char *)"uninstall";
		hargv[h++] = (char *)release;
	} else {
		if (!find_chart(chart, sizeof(chart), chart_flag)) {
			fprintf(stderr,
			        "tau cluster install: the umbrella chart was not found next to "
			        "this binary: give --chart DIR|TGZ or set TAU_CHART\n");
			goto out;
		}
		{
			char *slash = strstr(chart, "/Chart.yaml");

			if (slash != NULL && slash[strlen("/Chart.yaml")] == '\0')
				*slash = '\0';
		}
		snprintf(nsset, sizeof(nsset), "systemNamespace=%s", ns);
		snprintf(tmo, sizeof(tmo), "%llds", (long long)(timeout_ms / 1000 + 1));
		hargv[h++] = (char *)"upgrade";
		hargv[h++] = (char *)"--install";
		hargv[h++] = (char *)release;
		hargv[h++] = chart;
		hargv[h++] = (char *)"--create-namespace";
		hargv[h++] = (char *)"--timeout";
		hargv[h++] = tmo;
		for (size_t i = 0; i < lists.n_values; i++) {
			hargv[h++] = (char *)"-f";
			hargv[h++] = (char *)lists.values[i];
		}
		for (size_t i = 0; i < lists.n_sets; i++) {
			hargv[h++] = (char *)"--set";
			hargv[h++] = (char *)lists.sets[i];
		}
		/* Last: the release namespace is the system namespace (the chart checks it). */
		hargv[h++] = (char *)"--set";
		hargv[h++] = nsset;
		if (dry_run) {
			/* The server validates only what it knows: before the CRDs exist (a
			 * fresh cluster) it cannot check the TauCluster and TauTeams. */
			char m[512];

			if (run_step(&gc, 0, m, sizeof(m))) {
				hargv[h++] = (char *)"--dry-run=server";
			} else {
				hargv[h++] = (char *)"--dry-run=client";
				fprintf(stderr,
				        "tau cluster install: %s, so the server cannot validate "
				        "the "
				        "custom resources: rendering with helm --dry-run=client\n",
				        m);
			}
		}
	}
	hargv[h++] = (char *)"--namespace";
	hargv[h++] = ns;
	if (o.gl.context != NULL) {
		hargv[h++] = (char *)"--kube-context";
		hargv[h++] = (char *)o.gl.context;
	}
	if (o.gl.kubeconfig != NULL) {
		hargv[h++] = (char *)"--kubeconfig";
		hargv[h++] = (char *)o.gl.kubeconfig;
	}
	hargv[h] = NULL;
	fprintf(stderr, "tau cluster %s: running %s (helm from %s)\n", verb, helm, helm_why);
	c = run(hargv, helm_err, sizeof(helm_err));
	if (c != 0) {
		fprintf(stderr,
		        "tau cluster %s: helm %s release %s in %s failed (exit %d); see its "
		        "message "
		        "above.%s\n",
		        verb,
		        strcmp(verb, "install") == 0 ? "upgrade --install of" : "uninstall of",
		        release, ns, c,
		        strstr(helm_err, "is owned by release") != NULL
		                ? " A component owned by another release (standalone or umbrella) "
		                  "is never taken over: uninstall that release, or disable the "
		                  "component with --set aggregator.enabled=false or "
		                  "nodeAgent.enabled=false as helm says."
		                : "");
		goto out;
	}
	if (strcmp(verb, "uninstall") == 0) {
		fprintf(stdout, "release %s uninstalled from %s\n", release, ns);
		if (!delete_crds) {
			fprintf(stdout,
			        "kept: the CRDs %s, %s, %s, and with them every TauWorkspace, "
			        "TauTeam "
			        "and the TauCluster (Helm never deletes a chart's crds/; deleting "
			        "a "
			        "CRD deletes all its objects). Remove them with "
			        "`tau cluster uninstall --delete-crds`.\n",
			        tau_cli_crd_names[0], tau_cli_crd_names[1], tau_cli_crd_names[2]);
			fprintf(stdout, "kept: namespace %s.\n", ns);
			rc = TAU_CLI_OK;
			goto out;
		}
		rc = TAU_CLI_OK;
		for (int i = 0; i < 3; i++) {
			int d = tau_kube_delete(NULL, client, &res_crds, NULL, tau_cli_crd_names[i],
			                        NULL);

			if (d != 0 && d != -TAU_ENOTFOUND) {
				fprintf(stderr, "tau cluster uninstall: deleting CRD %s: %s\n",
				        tau_cli_crd_names[i], tau_cli_api_message());
				rc = TAU_CLI_FAILED;
			} else {
				fprintf(stdout, "deleted CRD %s (and its objects)\n",
				        tau_cli_crd_names[i]);
			}
		}
		goto out;
	}
	if (dry_run) {
		rc = TAU_CLI_OK;
		goto out;
	}
	fprintf(stdout, "release %s installed in %s; readiness gate (timeout %s):\n", release, ns,
	        timeout != NULL ? timeout : "5m");
	rc = gate(&gc, timeout_ms > 0 ? timeout_ms : 1);
out:
	tau_kube_client_free(client);
	return rc;
}
