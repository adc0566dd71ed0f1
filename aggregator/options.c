/*
 * options.c - command line and environment of tau-aggregator (options.h).
 *
 * One idea: a setting's text is picked first (flag, else its environment
 * twin, else the default) and remembered with the name it came from, then
 * parsed once, so a refusal names what the operator actually typed:
 * "TAU_HEARTBEAT_INTERVAL 1e300: not a duration ..." or "--heartbeat-interval ...".
 */
#include "options.h"

#include "tau/error.h"
#include "tau/mem.h"
#include "tau/parse.h"
#include "tau/prog.h"
#include "tau/rpc_server.h"

#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void tau_agg_options_usage(FILE *out)
{
	fputs("Usage: tau-aggregator --grpc-listen ADDR --http-listen ADDR [options]\n"
	      "\n"
	      "Keep the GPU inventory and capacity pool of the cluster and answer queries.\n"
	      "\n"
	      "Options (environment twin in brackets):\n"
	      "  --kubeconfig FILE            kubeconfig (default: $KUBECONFIG, in-cluster "
	      "config)\n"
	      "  --context NAME               kubeconfig context [TAU_CONTEXT]\n"
	      "  --grpc-listen ADDR           gRPC address for agents and queries "
	      "[TAU_GRPC_LISTEN]\n"
	      "  --http-listen ADDR           HTTP address for /healthz /readyz /metrics "
	      "[TAU_HTTP_LISTEN]\n"
	      "  --system-namespace NS        namespace of the leader Lease and the TauWorkspaces\n"
	      "                               (default tau-system) [TAU_SYSTEM_NAMESPACE]\n"
	      "  --kueue-config-namespace NS  namespace of Kueue's kueue-manager-config ConfigMap\n"
	      "                               (default kueue-system) [TAU_KUEUE_CONFIG_NAMESPACE]\n"
	      "  --leader-elect               elect one writing replica with a Lease "
	      "[TAU_LEADER_ELECT=1]\n"
	      "  --tls-cert F --tls-key F     serve gRPC over TLS [TAU_TLS_CERT, TAU_TLS_KEY]\n"
	      "  --token-audience A           audience agent tokens must carry (default taugrid)\n"
	      "                               [TAU_TOKEN_AUDIENCE]\n"
	      "  --agent-service-account NS:NAME  the agents' ServiceAccount\n"
	      "                               (default tau-system:tau-node-agent) "
	      "[TAU_AGENT_SERVICE_ACCOUNT]\n"
	      "  --initial-sync-timeout DUR   wait this long for every GPU node's agent (default "
	      "60s)\n"
	      "                               [TAU_INITIAL_SYNC_TIMEOUT]\n"
	      "  --heartbeat-interval DUR     heartbeat interval told to agents (default 30s)\n"
	      "                               [TAU_HEARTBEAT_INTERVAL]\n"
	      "  --no-local-token-verification  admit an agent only after its TokenReview\n"
	      "                               (default: verify its token against the API server's\n"
	      "                               /openid/v1/jwks, admit at once, confirm by\n"
	      "                               TokenReview) [TAU_NO_LOCAL_TOKEN_VERIFICATION]\n"
	      "  --allow-anonymous-queries    answer QueryService calls without a bearer token\n"
	      "                               (logged; default: TokenReview + "
	      "SubjectAccessReview)\n"
	      "                               [TAU_ALLOW_ANONYMOUS_QUERIES=1]\n"
	      "  --max-pending-reviews N      token reviews queued before RESOURCE_EXHAUSTED,\n"
	      "                               for queries and for Report streams each\n"
	      "                               (default 4096) [TAU_MAX_PENDING_REVIEWS]\n"
	      "  --max-reviews-per-peer N     Report token reviews queued or running per peer\n"
	      "                               (default 8) [TAU_MAX_REVIEWS_PER_PEER]\n"
	      "  --review-qps N               TokenReviews (and SubjectAccessReviews) a second,\n"
	      "                               a budget of their own beside the kube client's\n"
	      "                               20 (default 400) [TAU_REVIEW_QPS]\n"
	      "  --review-burst N             reviews allowed at once over it (default 100)\n"
	      "                               [TAU_REVIEW_BURST]\n"
	      "  --review-workers N           Report token reviews running at once (default 8)\n"
	      "                               [TAU_REVIEW_WORKERS]\n"
	      "  --grpc-threads N             threads serving gRPC calls (1 to 8, default 2)\n"
	      "                               [TAU_GRPC_THREADS]\n"
	      "  --max-streams-per-peer N     gRPC calls open at once per peer (TLS identity,\n"
	      "                               else address; default 256) "
	      "[TAU_MAX_STREAMS_PER_PEER]\n"
	      "  --max-pool-watchers N        open WatchPool streams before RESOURCE_EXHAUSTED\n"
	      "                               (default 1024) [TAU_MAX_POOL_WATCHERS]\n"
	      "  --max-concurrent-streams N   HTTP/2 streams per connection (default 1000)\n"
	      "                               [TAU_MAX_CONCURRENT_STREAMS]\n",
	      out);
	fputs("  --log-level LEVEL            debug|info|warn|error [TAU_LOG_LEVEL]\n"
	      "  --log-format FORMAT          logfmt|json (default logfmt) [TAU_LOG_FORMAT]\n"
	      "  --feature-gates LIST         Name=true|false,... (known: MultipleWorkspaces)\n"
	      "                               [TAU_FEATURE_GATES]\n"
	      "\n"
	      "Workspace controller (runs on the leader; reconciles TauWorkspaces):\n"
	      "  --namespace-mode MODE        Managed|Operator (default: the TauCluster's\n"
	      "                               spec.workspaces.namespaceMode) [TAU_NAMESPACE_MODE]\n"
	      "  --allowlist-selector SEL     Operator mode: namespaces with these labels\n"
	      "                               [TAU_ALLOWLIST_SELECTOR]\n"
	      "  --allowlist-file F           Operator mode: a JSON array of namespace names,\n"
	      "                               reloaded on change (not with --allowlist-selector)\n"
	      "                               [TAU_ALLOWLIST_FILE]\n"
	      "  --namespace-map-file F       a JSON object {workspace: namespace}\n"
	      "                               [TAU_NAMESPACE_MAP_FILE]\n"
	      "  --researcher-role NAME       ClusterRole bound for researchers (default\n"
	      "                               tau-researcher) [TAU_RESEARCHER_ROLE]\n"
	      "  --no-workspace-controller    serve the inventory only "
	      "[TAU_WORKSPACE_CONTROLLER=0]\n"
	      "\n"
	      "Budget controller:\n"
	      "  --budget-coalesce DUR        gather pool changes this long before a reconcile\n"
	      "                               (default 200ms) [TAU_BUDGET_COALESCE]\n"
	      "  --budget-resync DUR          reconcile every budget this often (default 5m)\n"
	      "                               [TAU_BUDGET_RESYNC]\n"
	      "\n"
	      "  --help                       show this help\n"
	      "  --version                    print the version\n"
	      "\n"
	      "Durations: 500ms, 60s, 2m, 1h30m, or plain seconds.  Exit status 2 for a usage\n"
	      "or configuration error.\n"
	      "Prints \"ready grpc=PORT http=PORT\" on stdout once serving.\n",
	      out);
}

/* The flag's value if given, else the environment twin's unless empty; *from names it. */
static const char *pick(const char *flag_value, const char *flag, tau_env_fn env, const char *var,
                        const char **from)
{
	const char *v;

	if (flag_value != NULL) {
		*from = flag;
		return flag_value;
	}
	v = env(var);
	if (v != NULL && v[0] != '\0') {
		*from = var;
		return v;
	}
	return NULL;
}

static int duration(int64_t *out, const char *flag_value, const char *flag, tau_env_fn env,
                    const char *var, int64_t min_ms, int64_t max_ms)
{
	const char *from = flag;
	const char *v = pick(flag_value, flag, env, var, &from);

	return v == NULL ? 0 : tau_parse_duration_ms(out, from, v, min_ms, max_ms);
}

/* A switch: the flag turns it on; else the environment twin, parsed as a boolean. */
static int flag_or_env_bool(bool *out, bool flag_given, tau_env_fn env, const char *var)
{
	const char *v;

	if (flag_given) {
		*out = true;
		return 0;
	}
	v = env(var);
	if (v == NULL || v[0] == '\0')
		return 0;
	return tau_parse_bool(out, var, v);
}

int tau_agg_feature_gates_parse(tau_agg_feature_gates *gates, const char *what, const char *text)
{
	static const struct {
		const char *name;
		size_t offset;
	} known[] = {
	        {"MultipleWorkspaces", offsetof(tau_agg_feature_gates, multiple_workspaces)},
	};
	tau_agg_feature_gates g = *gates;
	const char *p = text;

	while (p != NULL && *p != '\0') {
		const char *comma = strchr(p, ',');
		size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		char name[64], value[16];
		size_t i, nlen;
		bool on;

		if (eq == NULL)
			return tau_error_set(TAU_EINVAL,
			                     "%s %s: missing =true or =false after \"%.*s\"", what,
			                     text, (int)len, p);
		nlen = (size_t)(eq - p);
		if (nlen == 0 || nlen >= sizeof(name) || len - nlen - 1 >= sizeof(value))
			return tau_error_set(TAU_EINVAL,
			                     "%s %s: expected Name=true|false, not \"%.*s\"", what,
			                     text, (int)len, p);
		memcpy(name, p, nlen);
		name[nlen] = '\0';
		memcpy(value, eq + 1, len - nlen - 1);
		value[len - nlen - 1] = '\0';
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strcmp(name, known[i].name) == 0)
				break;
		if (i == sizeof(known) / sizeof(known[0]))
			return tau_error_set(
			        TAU_EINVAL,
			        "%s %s: unknown feature gate %s (known: MultipleWorkspaces)", what,
			        text, name);
		if (strcasecmp(value, "true") == 0)
			on = true;
		else if (strcasecmp(value, "false") == 0)
			on = false;
		else
			return tau_error_set(TAU_EINVAL, "%s %s: %s=%s: expected true or false",
			                     what, text, name, value);
		*(bool *)((char *)&g + known[i].offset) = on;
		p = comma != NULL ? comma + 1 : NULL;
	}
	*gates = g;
	return 0;
}

enum {
	O_HELP = 256,
	O_VERSION,
	O_KUBECONFIG,
	O_CONTEXT,
	O_GRPC,
	O_HTTP,
	O_NS,
	O_KUEUE_NS,
	O_LEADER,
	O_CERT,
	O_KEY,
	O_AUD,
	O_SA,
	O_SYNC,
	O_HB,
	O_LOG,
	O_LOG_FORMAT,
	O_GATES,
	O_MODE,
	O_ALLOW_SEL,
	O_ALLOW_FILE,
	O_MAP,
	O_ROLE,
	O_NO_WS,
	O_COALESCE,
	O_RESYNC,
	O_ANON,
	O_NO_LOCAL_VERIFY,
	O_PENDING,
	O_WATCHERS,
	O_STREAMS,
	O_PEER_REVIEWS,
	O_PEER_STREAMS,
	O_REVIEW_QPS,
	O_REVIEW_BURST,
	O_REVIEW_WORKERS,
	O_GRPC_THREADS
};

/* Flags whose text is parsed after the environment is merged. */
typedef struct raw_flags {
	const char *sync, *heartbeat, *log_level, *log_format, *gates, *ns_mode, *coalesce, *resync;
	const char *max_pending, *max_watchers, *max_streams, *peer_reviews, *peer_streams;
	const char *review_qps, *review_burst, *review_workers, *grpc_threads;
	bool leader_elect, no_ws, anonymous, no_local_verify;
} raw_flags;

static int read_flags(tau_agg_options *o, raw_flags *r, int argc, char **argv)
{
	static const struct option opts[] = {
	        {"help", no_argument, NULL, O_HELP},
	        {"version", no_argument, NULL, O_VERSION},
	        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
	        {"context", required_argument, NULL, O_CONTEXT},
	        {"grpc-listen", required_argument, NULL, O_GRPC},
	        {"http-listen", required_argument, NULL, O_HTTP},
	        {"system-namespace", required_argument, NULL, O_NS},
	        {"kueue-config-namespace", required_argument, NULL, O_KUEUE_NS},
	        {"leader-elect", no_argument, NULL, O_LEADER},
	        {"tls-cert", required_argument, NULL, O_CERT},
	        {"tls-key", required_argument, NULL, O_KEY},
	        {"token-audience", required_argument, NULL, O_AUD},
	        {"agent-service-account", required_argument, NULL, O_SA},
	        {"initial-sync-timeout", required_argument, NULL, O_SYNC},
	        {"heartbeat-interval", required_argument, NULL, O_HB},
	        {"log-level", required_argument, NULL, O_LOG},
	        {"log-format", required_argument, NULL, O_LOG_FORMAT},
	        {"feature-gates", required_argument, NULL, O_GATES},
	        {"namespace-mode", required_argument, NULL, O_MODE},
	        {"allowlist-selector", required_argument, NULL, O_ALLOW_SEL},
	        {"allowlist-file", required_argument, NULL, O_ALLOW_FILE},
	        {"namespace-map-file", required_argument, NULL, O_MAP},
	        {"researcher-role", required_argument, NULL, O_ROLE},
	        {"no-workspace-controller", no_argument, NULL, O_NO_WS},
	        {"budget-coalesce", required_argument, NULL, O_COALESCE},
	        {"budget-resync", required_argument, NULL, O_RESYNC},
	        {"allow-anonymous-queries", no_argument, NULL, O_ANON},
	        {"no-local-token-verification", no_argument, NULL, O_NO_LOCAL_VERIFY},
	        {"max-pending-reviews", required_argument, NULL, O_PENDING},
	        {"max-pool-watchers", required_argument, NULL, O_WATCHERS},
	        {"max-concurrent-streams", required_argument, NULL, O_STREAMS},
	        {"max-reviews-per-peer", required_argument, NULL, O_PEER_REVIEWS},
	        {"max-streams-per-peer", required_argument, NULL, O_PEER_STREAMS},
	        {"review-qps", required_argument, NULL, O_REVIEW_QPS},
	        {"review-burst", required_argument, NULL, O_REVIEW_BURST},
	        {"review-workers", required_argument, NULL, O_REVIEW_WORKERS},
	        {"grpc-threads", required_argument, NULL, O_GRPC_THREADS},
	        {NULL, 0, NULL, 0},
	};
	/* where each option goes, by its code less O_HELP: its argument, or true */
	const char **const text[] = {
	        [O_KUBECONFIG - O_HELP] = &o->kubeconfig,
	        [O_CONTEXT - O_HELP] = &o->context,
	        [O_GRPC - O_HELP] = &o->grpc_listen,
	        [O_HTTP - O_HELP] = &o->http_listen,
	        [O_NS - O_HELP] = &o->system_namespace,
	        [O_KUEUE_NS - O_HELP] = &o->kueue_namespace,
	        [O_CERT - O_HELP] = &o->tls_cert,
	        [O_KEY - O_HELP] = &o->tls_key,
	        [O_AUD - O_HELP] = &o->token_audience,
	        [O_SA - O_HELP] = &o->agent_sa,
	        [O_SYNC - O_HELP] = &r->sync,
	        [O_HB - O_HELP] = &r->heartbeat,
	        [O_LOG - O_HELP] = &r->log_level,
	        [O_LOG_FORMAT - O_HELP] = &r->log_format,
	        [O_GATES - O_HELP] = &r->gates,
	        [O_MODE - O_HELP] = &r->ns_mode,
	        [O_ALLOW_SEL - O_HELP] = &o->allowlist_selector,
	        [O_ALLOW_FILE - O_HELP] = &o->allowlist_file,
	        [O_MAP - O_HELP] = &o->namespace_map_file,
	        [O_ROLE - O_HELP] = &o->researcher_role,
	        [O_COALESCE - O_HELP] = &r->coalesce,
	        [O_RESYNC - O_HELP] = &r->resync,
	        [O_PENDING - O_HELP] = &r->max_pending,
	        [O_WATCHERS - O_HELP] = &r->max_watchers,
	        [O_STREAMS - O_HELP] = &r->max_streams,
	        [O_PEER_REVIEWS - O_HELP] = &r->peer_reviews,
	        [O_PEER_STREAMS - O_HELP] = &r->peer_streams,
	        [O_REVIEW_QPS - O_HELP] = &r->review_qps,
	        [O_REVIEW_BURST - O_HELP] = &r->review_burst,
	        [O_REVIEW_WORKERS - O_HELP] = &r->review_workers,
	        [O_GRPC_THREADS - O_HELP] = &r->grpc_threads,
	};
	bool *const flag[] = {
	        [O_HELP - O_HELP] = &o->help,
	        [O_VERSION - O_HELP] = &o->version,
	        [O_LEADER - O_HELP] = &r->leader_elect,
	        [O_NO_WS - O_HELP] = &r->no_ws,
	        [O_ANON - O_HELP] = &r->anonymous,
	        [O_NO_LOCAL_VERIFY - O_HELP] = &r->no_local_verify,
	};
	int c;

	optind = 0; /* GNU: full reinitialisation, so tests can parse again */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		size_t i = (size_t)(c - O_HELP);

		if (c >= O_HELP && i < TAU_N_ELEMENTS(text) && text[i] != NULL)
			*text[i] = optarg;
		else if (c >= O_HELP && i < TAU_N_ELEMENTS(flag) && flag[i] != NULL)
			*flag[i] = true;
		else
			return tau_prog_getopt_error(c, argv);
	}
	if (optind < argc)
		return tau_error_set(TAU_EINVAL, "unexpected argument \"%s\"", argv[optind]);
	return 0;
}

/* The environment twins of the plain strings, then the defaults. */
static void merge_strings(tau_agg_options *o, tau_env_fn env)
{
	const char *from;
	const char *v;

	o->context = pick(o->context, "--context", env, "TAU_CONTEXT", &from);
	o->grpc_listen = pick(o->grpc_listen, "--grpc-listen", env, "TAU_GRPC_LISTEN", &from);
	o->http_listen = pick(o->http_listen, "--http-listen", env, "TAU_HTTP_LISTEN", &from);
	v = pick(o->system_namespace, "--system-namespace", env, "TAU_SYSTEM_NAMESPACE", &from);
	o->system_namespace = v != NULL ? v : "tau-system";
	v = pick(o->kueue_namespace, "--kueue-config-namespace", env, "TAU_KUEUE_CONFIG_NAMESPACE",
	         &from);
	o->kueue_namespace = v != NULL ? v : "kueue-system";
	o->tls_cert = pick(o->tls_cert, "--tls-cert", env, "TAU_TLS_CERT", &from);
	o->tls_key = pick(o->tls_key, "--tls-key", env, "TAU_TLS_KEY", &from);
	v = pick(o->token_audience, "--token-audience", env, "TAU_TOKEN_AUDIENCE", &from);
	o->token_audience = v != NULL ? v : "taugrid";
	v = pick(o->agent_sa, "--agent-service-account", env, "TAU_AGENT_SERVICE_ACCOUNT", &from);
	o->agent_sa = v != NULL ? v : "tau-system:tau-node-agent";
	o->allowlist_selector = pick(o->allowlist_selector, "--allowlist-selector", env,
	                             "TAU_ALLOWLIST_SELECTOR", &from);
	o->allowlist_file =
	        pick(o->allowlist_file, "--allowlist-file", env, "TAU_ALLOWLIST_FILE", &from);
	o->namespace_map_file = pick(o->namespace_map_file, "--namespace-map-file", env,
	                             "TAU_NAMESPACE_MAP_FILE", &from);
	o->researcher_role =
	        pick(o->researcher_role, "--researcher-role", env, "TAU_RESEARCHER_ROLE", &from);
}

static int parse_values(tau_agg_options *o, const raw_flags *r, tau_env_fn env)
{
	/* the whole-number options, each from 1 to its maximum */
	const struct {
		const char *raw, *flag, *var;
		int *out;
		int max;
	} counts[] = {
	        {r->max_pending, "--max-pending-reviews", "TAU_MAX_PENDING_REVIEWS",
	         &o->max_pending_reviews, 1000000},
	        {r->max_watchers, "--max-pool-watchers", "TAU_MAX_POOL_WATCHERS",
	         &o->max_pool_watchers, 1000000},
	        {r->max_streams, "--max-concurrent-streams", "TAU_MAX_CONCURRENT_STREAMS",
	         &o->max_concurrent_streams, 1000000},
	        {r->peer_reviews, "--max-reviews-per-peer", "TAU_MAX_REVIEWS_PER_PEER",
	         &o->max_reviews_per_peer, 1000000},
	        {r->peer_streams, "--max-streams-per-peer", "TAU_MAX_STREAMS_PER_PEER",
	         &o->max_streams_per_peer, 1000000},
	        {r->review_qps, "--review-qps", "TAU_REVIEW_QPS", &o->review_qps, 100000},
	        {r->review_burst, "--review-burst", "TAU_REVIEW_BURST", &o->review_burst, 100000},
	        {r->review_workers, "--review-workers", "TAU_REVIEW_WORKERS", &o->review_workers,
	         TAU_AGG_REVIEW_WORKERS_MAX},
	        {r->grpc_threads, "--grpc-threads", "TAU_GRPC_THREADS", &o->grpc_threads,
	         TAU_RPC_MAX_CQ_THREADS},
	};
	const char *from = NULL, *v;
	bool workspace_controller = true;
	char host[256];
	int port, rc;

	if ((rc = duration(&o->sync_timeout_ms, r->sync, "--initial-sync-timeout", env,
	                   "TAU_INITIAL_SYNC_TIMEOUT", 0, TAU_AGG_SYNC_TIMEOUT_MAX_MS)) < 0 ||
	    (rc = duration(&o->heartbeat_ms, r->heartbeat, "--heartbeat-interval", env,
	                   "TAU_HEARTBEAT_INTERVAL", TAU_AGG_HEARTBEAT_MIN_MS,
	                   TAU_AGG_HEARTBEAT_MAX_MS)) < 0 ||
	    (rc = duration(&o->budget_coalesce_ms, r->coalesce, "--budget-coalesce", env,
	                   "TAU_BUDGET_COALESCE", 0, TAU_AGG_BUDGET_COALESCE_MAX_MS)) < 0 ||
	    (rc = duration(&o->budget_resync_ms, r->resync, "--budget-resync", env,
	                   "TAU_BUDGET_RESYNC", TAU_AGG_BUDGET_RESYNC_MIN_MS,
	                   TAU_AGG_BUDGET_RESYNC_MAX_MS)) < 0)
		return rc;
	if ((rc = flag_or_env_bool(&o->leader_elect, r->leader_elect, env, "TAU_LEADER_ELECT")) <
	            0 ||
	    (rc = flag_or_env_bool(&o->allow_anonymous_queries, r->anonymous, env,
	                           "TAU_ALLOW_ANONYMOUS_QUERIES")) < 0 ||
	    (rc = flag_or_env_bool(&o->no_local_token_verification, r->no_local_verify, env,
	                           "TAU_NO_LOCAL_TOKEN_VERIFICATION")) < 0)
		return rc;
	for (size_t i = 0; i < TAU_N_ELEMENTS(counts); i++) {
		if ((v = pick(counts[i].raw, counts[i].flag, env, counts[i].var, &from)) != NULL &&
		    (rc = tau_parse_int(counts[i].out, from, v, 1, counts[i].max)) < 0)
			return rc;
	}
	if (r->no_ws) {
		o->no_workspace_controller = true;
	} else if ((v = env("TAU_WORKSPACE_CONTROLLER")) != NULL && v[0] != '\0') {
		if ((rc = tau_parse_bool(&workspace_controller, "TAU_WORKSPACE_CONTROLLER", v)) < 0)
			return rc;
		o->no_workspace_controller = !workspace_controller;
	}
	if ((v = pick(r->log_level, "--log-level", env, "TAU_LOG_LEVEL", &from)) != NULL) {
		if (tau_log_level_parse(&o->log_level, v) < 0)
			return tau_error_set(TAU_EINVAL,
			                     "%s %s: expected debug, info, warn or error", from, v);
		o->log_level_set = true;
	}
	if ((v = pick(r->log_format, "--log-format", env, "TAU_LOG_FORMAT", &from)) != NULL) {
		if (tau_log_format_parse(&o->log_format, v) < 0)
			return tau_error_set(TAU_EINVAL, "%s %s: expected logfmt or json", from, v);
		o->log_format_set = true;
	}
	if ((v = pick(r->gates, "--feature-gates", env, "TAU_FEATURE_GATES", &from)) != NULL &&
	    (rc = tau_agg_feature_gates_parse(&o->gates, from, v)) < 0)
		return rc;
	if ((v = pick(r->ns_mode, "--namespace-mode", env, "TAU_NAMESPACE_MODE", &from)) != NULL) {
		if (strcasecmp(v, "managed") == 0)
			o->namespace_mode = TAU_AGG_NS_MODE_MANAGED;
		else if (strcasecmp(v, "operator") == 0)
			o->namespace_mode = TAU_AGG_NS_MODE_OPERATOR;
		else
			return tau_error_set(TAU_EINVAL, "%s is Managed or Operator, not \"%s\"",
			                     from, v);
	}
	if (o->grpc_listen == NULL || o->http_listen == NULL)
		return tau_error_set(TAU_EINVAL, "--grpc-listen and --http-listen are required");
	if (tau_parse_listen(host, sizeof(host), &port, o->http_listen) < 0)
		return tau_error_wrap("--http-listen");
	/* gRPC also listens on "unix:PATH"; anything else is HOST:PORT, checked here so the gRPC
	 * core never sees (and logs) a malformed address. */
	if (strncmp(o->grpc_listen, "unix:", 5) != 0 &&
	    tau_parse_listen(host, sizeof(host), &port, o->grpc_listen) < 0)
		return tau_error_wrap("--grpc-listen");
	if ((o->tls_cert == NULL) != (o->tls_key == NULL))
		return tau_error_set(TAU_EINVAL, "--tls-cert and --tls-key go together");
	return 0;
}

int tau_agg_options_parse(tau_agg_options *o, int argc, char **argv, tau_env_fn env)
{
	raw_flags r = {0};
	int rc;

	*o = (tau_agg_options){.sync_timeout_ms = 60 * 1000,
	                       .heartbeat_ms = 30 * 1000,
	                       .budget_coalesce_ms = 200,
	                       .budget_resync_ms = 5 * 60 * 1000,
	                       .log_level = TAU_LOG_INFO,
	                       .max_pending_reviews = 4096,
	                       .max_pool_watchers = 1024,
	                       .max_concurrent_streams = 1000,
	                       .max_reviews_per_peer = 8,
	                       .max_streams_per_peer = 256,
	                       .review_qps = 400,
	                       .review_burst = 100,
	                       .review_workers = 8,
	                       .grpc_threads = 2};
	if (env == NULL)
		env = tau_env_get;
	if ((rc = read_flags(o, &r, argc, argv)) < 0)
		return rc;
	if (o->help || o->version)
		return 0;
	merge_strings(o, env);
	return parse_values(o, &r, env);
}
