/*
 * tau-aggregator - authenticates agents, keeps the inventory and the pool,
 * and answers queries.
 *
 * main() only wires the parts together: flags (each with an environment
 * twin), the Kubernetes client, the rpc server with the Report and query
 * services plus grpc.health.v1, the Node/TauCluster informers, optional
 * leader election and the HTTP endpoints.  Every replica ingests reports
 * and serves queries from its own store (agents may reach any replica
 * behind a Service); only the leader may write to the API, so the
 * TauWorkspace controller, which writes, is built (and its options
 * checked) at start-up but started only on the leader, on a kube loop and
 * thread of its own.  The main thread then waits for a signal and shuts
 * down in reverse order: the workspace controller first (so it stops
 * writing before the Lease is released), then the rpc server.
 */
#include "inventory/http.h"
#include "inventory/kubewatch.h"
#include "inventory/service.h"
#include "workspace/controller.h"

#include "tau/error.h"
#include "tau/file.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/kube_leader.h"
#include "tau/log.h"
#include "tau/rpc.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Certificate and key files: a PEM chain is far below 1 MiB; a larger file is a wrong path. */
#define TLS_PEM_MAX_BYTES (1u << 20)

typedef struct options {
	const char *kubeconfig, *context, *grpc_listen, *http_listen, *system_namespace;
	const char *tls_cert, *tls_key, *token_audience, *agent_sa, *sync_timeout, *log_level;
	const char *heartbeat;
	/* workspace controller */
	const char *namespace_mode, *allowlist_selector, *allowlist_file, *namespace_map_file;
	const char *researcher_role;
	bool leader_elect;
	bool no_workspace_controller;
} options;

/* The workspace controller and its loop; ws_mu orders a start (leader thread) against
 * shutdown (main thread). */
typedef struct ws_runtime {
	pthread_mutex_t mu;
	tau_ws_controller *ctl;
	tau_kube_loop *loop;
	const char *system_namespace, *mode;
	bool running, closed;
} ws_runtime;

typedef struct runtime {
	tau_agg *agg;
	tau_kube_leader *leader;
	bool leader_elect;
	atomic_bool serving;
	atomic_bool ws_failed; /* the controller could not start on the leader: restart */
	ws_runtime ws;
} runtime;

typedef struct reviewer {
	tau_kube_client *client;
	const char *audience;
} reviewer;

static void usage(FILE *out)
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
	      "  --log-level LEVEL            debug|info|warn|error [TAU_LOG_LEVEL]\n"
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
	      "  --help                       show this help\n"
	      "  --version                    print the version\n"
	      "\n"
	      "Prints \"ready grpc=PORT http=PORT\" on stdout once serving.\n",
	      out);
}

/* "60s", "500ms", "2m", "1h", or plain seconds.  Returns ms, or -1. */
static int64_t parse_duration_ms(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -1;
	if (*end == '\0' || strcmp(end, "s") == 0)
		return (int64_t)(v * 1000);
	if (strcmp(end, "ms") == 0)
		return (int64_t)v;
	if (strcmp(end, "m") == 0)
		return (int64_t)(v * 60000);
	if (strcmp(end, "h") == 0)
		return (int64_t)(v * 3600000);
	return -1;
}

static int review_token(void *ud, const char *token, tau_auth_review *out)
{
	reviewer *r = ud;
	tau_kube_token_review *tr = NULL;
	const char *aud[1] = {r->audience};
	int rc = tau_kube_token_review_submit(&tr, r->client, token, aud, 1);

	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	out->authenticated = tr->authenticated;
	snprintf(out->username, sizeof(out->username), "%s", tr->username ? tr->username : "");
	snprintf(out->node_name, sizeof(out->node_name), "%s", tr->node_name ? tr->node_name : "");
	snprintf(out->error, sizeof(out->error), "%s", tr->error ? tr->error : "");
	tau_kube_token_review_free(tr);
	return 0;
}

static bool readiness(void *ud, char *reason, size_t cap)
{
	runtime *rt = ud;
	bool established = tau_agg_established(rt->agg);

	if (!atomic_load(&rt->serving)) {
		snprintf(reason, cap, "starting");
		return false;
	}
	if (rt->leader_elect && !tau_kube_leader_is_leader(rt->leader)) {
		snprintf(reason, cap, "follower serving queries (pool %s)",
		         established ? "established" : "not established");
		return true;
	}
	snprintf(reason, cap, "%s",
	         established ? "leader, pool established" : "leader, waiting for the sync gate");
	return established;
}

/* Start the workspace controller (main thread without --leader-elect, else the
 * leader thread).  Once per process: a lost lease ends the process.  @return 0 or < 0. */
static int ws_start(runtime *rt)
{
	ws_runtime *ws = &rt->ws;
	int rc = 0;

	pthread_mutex_lock(&ws->mu);
	if (ws->ctl == NULL || ws->closed || ws->running)
		goto out;
	if ((rc = tau_ws_controller_start(ws->ctl)) < 0 ||
	    (rc = tau_kube_loop_start_thread(ws->loop)) < 0) {
		tau_log_error("cannot start the workspace controller", "reason",
		              tau_error_last()->msg, NULL);
		goto out;
	}
	ws->running = true;
	tau_agg_set_workspaces(rt->agg, ws->ctl);
	tau_log_info("workspace controller started", "system_namespace", ws->system_namespace,
	             "namespace_mode", ws->mode, NULL);
out:
	pthread_mutex_unlock(&ws->mu);
	return rc;
}

/* Stop and free the controller, and keep it from starting later.  Idempotent. */
static void ws_shutdown(runtime *rt)
{
	ws_runtime *ws = &rt->ws;

	pthread_mutex_lock(&ws->mu);
	ws->closed = true;
	if (rt->agg != NULL)
		tau_agg_set_workspaces(rt->agg, NULL); /* waits for queries reading the cache */
	/* stop is safe on a controller never or half started; join is a no-op without a thread */
	tau_ws_controller_stop(ws->ctl);
	if (ws->loop != NULL)
		tau_kube_loop_join(ws->loop);
	if (ws->running)
		tau_log_info("workspace controller stopped", NULL);
	ws->running = false;
	tau_ws_controller_free(ws->ctl);
	ws->ctl = NULL;
	tau_kube_loop_free(ws->loop);
	ws->loop = NULL;
	pthread_mutex_unlock(&ws->mu);
}

/* Build the controller without starting it, so a bad option fails at start-up.
 * @return 0, or < 0 (-TAU_EINVAL: a configuration error). */
static int ws_prepare(runtime *rt, const options *o, tau_kube_client *client)
{
	tau_ws_controller_opts wo = {0};
	int rc;

	if (o->no_workspace_controller)
		return 0;
	wo.client = client;
	wo.system_namespace = o->system_namespace;
	wo.allowlist_selector = o->allowlist_selector;
	wo.allowlist_file = o->allowlist_file;
	wo.namespace_map_file = o->namespace_map_file;
	wo.researcher_cluster_role = o->researcher_role;
	rt->ws.mode = "from TauCluster";
	if (o->namespace_mode != NULL) {
		wo.ns_mode_set = true;
		wo.ns_mode = strcasecmp(o->namespace_mode, "operator") == 0 ? TAU_WS_NS_OPERATOR
		                                                            : TAU_WS_NS_MANAGED;
		rt->ws.mode = wo.ns_mode == TAU_WS_NS_OPERATOR ? "Operator" : "Managed";
	}
	rt->ws.system_namespace = o->system_namespace;
	if ((rc = tau_kube_loop_new(&rt->ws.loop, client)) < 0)
		return rc;
	wo.loop = rt->ws.loop;
	return tau_ws_controller_new(&rt->ws.ctl, &wo);
}

static void on_started_leading(void *arg)
{
	runtime *rt = arg;

	tau_agg_set_leader(rt->agg, true);
	tau_log_info("became leader", NULL);
	if (ws_start(rt) < 0) {
		/* A leader that cannot reconcile workspaces should hand over: restart. */
		atomic_store(&rt->ws_failed, true);
		kill(getpid(), SIGUSR1);
	}
}

static void on_stopped_leading(void *arg)
{
	runtime *rt = arg;

	tau_agg_set_leader(rt->agg, false);
	tau_log_warn("stopped leading", NULL);
	/* A lost lease is not regained (kube_leader.h): restart to campaign again. */
	if (rt->leader != NULL && tau_kube_leader_lost(rt->leader))
		kill(getpid(), SIGUSR1);
}

static const char *env_or(const char *cur, const char *name)
{
	const char *v = getenv(name);

	return cur != NULL ? cur : (v != NULL && v[0] != '\0' ? v : NULL);
}

static int parse_args(options *o, int argc, char **argv)
{
	enum {
		O_KUBECONFIG = 256,
		O_CONTEXT,
		O_GRPC,
		O_HTTP,
		O_NS,
		O_LEADER,
		O_CERT,
		O_KEY,
		O_AUD,
		O_SA,
		O_SYNC,
		O_LOG,
		O_HB,
		O_MODE,
		O_ALLOW_SEL,
		O_ALLOW_FILE,
		O_MAP,
		O_ROLE,
		O_NO_WS
	};
	static const struct option opts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, 'V'},
	        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
	        {"context", required_argument, NULL, O_CONTEXT},
	        {"grpc-listen", required_argument, NULL, O_GRPC},
	        {"http-listen", required_argument, NULL, O_HTTP},
	        {"system-namespace", required_argument, NULL, O_NS},
	        {"leader-elect", no_argument, NULL, O_LEADER},
	        {"tls-cert", required_argument, NULL, O_CERT},
	        {"tls-key", required_argument, NULL, O_KEY},
	        {"token-audience", required_argument, NULL, O_AUD},
	        {"agent-service-account", required_argument, NULL, O_SA},
	        {"initial-sync-timeout", required_argument, NULL, O_SYNC},
	        {"heartbeat-interval", required_argument, NULL, O_HB},
	        {"log-level", required_argument, NULL, O_LOG},
	        {"namespace-mode", required_argument, NULL, O_MODE},
	        {"allowlist-selector", required_argument, NULL, O_ALLOW_SEL},
	        {"allowlist-file", required_argument, NULL, O_ALLOW_FILE},
	        {"namespace-map-file", required_argument, NULL, O_MAP},
	        {"researcher-role", required_argument, NULL, O_ROLE},
	        {"no-workspace-controller", no_argument, NULL, O_NO_WS},
	        {NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("tau-aggregator %s\n", TAU_VERSION_STRING);
			return 1;
		case O_KUBECONFIG:
			o->kubeconfig = optarg;
			break;
		case O_CONTEXT:
			o->context = optarg;
			break;
		case O_GRPC:
			o->grpc_listen = optarg;
			break;
		case O_HTTP:
			o->http_listen = optarg;
			break;
		case O_NS:
			o->system_namespace = optarg;
			break;
		case O_LEADER:
			o->leader_elect = true;
			break;
		case O_CERT:
			o->tls_cert = optarg;
			break;
		case O_KEY:
			o->tls_key = optarg;
			break;
		case O_AUD:
			o->token_audience = optarg;
			break;
		case O_SA:
			o->agent_sa = optarg;
			break;
		case O_SYNC:
			o->sync_timeout = optarg;
			break;
		case O_HB:
			o->heartbeat = optarg;
			break;
		case O_LOG:
			o->log_level = optarg;
			break;
		case O_MODE:
			o->namespace_mode = optarg;
			break;
		case O_ALLOW_SEL:
			o->allowlist_selector = optarg;
			break;
		case O_ALLOW_FILE:
			o->allowlist_file = optarg;
			break;
		case O_MAP:
			o->namespace_map_file = optarg;
			break;
		case O_ROLE:
			o->researcher_role = optarg;
			break;
		case O_NO_WS:
			o->no_workspace_controller = true;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tau-aggregator: unexpected argument \"%s\"\n", argv[optind]);
		return -1;
	}
	o->context = env_or(o->context, "TAU_CONTEXT");
	o->grpc_listen = env_or(o->grpc_listen, "TAU_GRPC_LISTEN");
	o->http_listen = env_or(o->http_listen, "TAU_HTTP_LISTEN");
	o->system_namespace = env_or(o->system_namespace, "TAU_SYSTEM_NAMESPACE");
	o->tls_cert = env_or(o->tls_cert, "TAU_TLS_CERT");
	o->tls_key = env_or(o->tls_key, "TAU_TLS_KEY");
	o->token_audience = env_or(o->token_audience, "TAU_TOKEN_AUDIENCE");
	o->agent_sa = env_or(o->agent_sa, "TAU_AGENT_SERVICE_ACCOUNT");
	o->sync_timeout = env_or(o->sync_timeout, "TAU_INITIAL_SYNC_TIMEOUT");
	o->heartbeat = env_or(o->heartbeat, "TAU_HEARTBEAT_INTERVAL");
	o->namespace_mode = env_or(o->namespace_mode, "TAU_NAMESPACE_MODE");
	o->allowlist_selector = env_or(o->allowlist_selector, "TAU_ALLOWLIST_SELECTOR");
	o->allowlist_file = env_or(o->allowlist_file, "TAU_ALLOWLIST_FILE");
	o->namespace_map_file = env_or(o->namespace_map_file, "TAU_NAMESPACE_MAP_FILE");
	o->researcher_role = env_or(o->researcher_role, "TAU_RESEARCHER_ROLE");
	if (!o->leader_elect) {
		const char *v = getenv("TAU_LEADER_ELECT");

		o->leader_elect = v != NULL && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0);
	}
	if (!o->no_workspace_controller) {
		const char *v = getenv("TAU_WORKSPACE_CONTROLLER");

		o->no_workspace_controller =
		        v != NULL && (strcmp(v, "0") == 0 || strcmp(v, "false") == 0);
	}
	if (o->namespace_mode != NULL && strcasecmp(o->namespace_mode, "managed") != 0 &&
	    strcasecmp(o->namespace_mode, "operator") != 0) {
		fprintf(stderr,
		        "tau-aggregator: --namespace-mode is Managed or Operator, not \"%s\"\n",
		        o->namespace_mode);
		return -1;
	}
	if (o->system_namespace == NULL)
		o->system_namespace = "tau-system";
	if (o->token_audience == NULL)
		o->token_audience = "taugrid";
	if (o->agent_sa == NULL)
		o->agent_sa = "tau-system:tau-node-agent";
	if (o->sync_timeout == NULL)
		o->sync_timeout = "60s";
	if (o->heartbeat == NULL)
		o->heartbeat = "30s";
	if (o->grpc_listen == NULL || o->http_listen == NULL) {
		fprintf(stderr, "tau-aggregator: --grpc-listen and --http-listen are required\n");
		return -1;
	}
	if ((o->tls_cert == NULL) != (o->tls_key == NULL)) {
		fprintf(stderr, "tau-aggregator: --tls-cert and --tls-key go together\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	options o = {0};
	runtime rt = {0};
	reviewer rv = {0};
	tau_kube_config *kcfg = NULL;
	tau_kube_client *client = NULL;
	tau_rpc_server *srv = NULL;
	tau_rpc_health *health = NULL;
	tau_agg_kube *kube = NULL;
	tau_agg_http *http = NULL;
	tau_agg_config acfg = {0};
	tau_kube_config_options kopts = {0};
	tau_rpc_server_tls tls = {0};
	char agent_user[512], identity[300], host[256];
	char *cert_pem = NULL, *key_pem = NULL;
	int64_t sync_ms, hb_ms;
	int grpc_port = 0, http_port = 0, sig = 0, exit_code = 1, rc;
	sigset_t sigs;

	tau_log_init_from_env();
	pthread_mutex_init(&rt.ws.mu, NULL);
	rc = parse_args(&o, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	if (o.log_level != NULL) {
		tau_log_level lvl;

		if (tau_log_level_parse(&lvl, o.log_level) < 0) {
			fprintf(stderr, "tau-aggregator: %s\n", tau_error_last()->msg);
			return 2;
		}
		tau_log_set_level(lvl);
	}
	sync_ms = parse_duration_ms(o.sync_timeout);
	hb_ms = parse_duration_ms(o.heartbeat);
	if (sync_ms < 0 || hb_ms < 1000) {
		fprintf(stderr,
		        "tau-aggregator: bad duration (--initial-sync-timeout %s, "
		        "--heartbeat-interval %s; e.g. 60s, 2m)\n",
		        o.sync_timeout, o.heartbeat);
		return 2;
	}
	if (tau_auth_sa_user(agent_user, sizeof(agent_user), o.agent_sa) < 0) {
		fprintf(stderr, "tau-aggregator: %s\n", tau_error_last()->msg);
		return 2;
	}
	if (o.tls_cert != NULL) {
		if (tau_file_read(&cert_pem, NULL, o.tls_cert, TLS_PEM_MAX_BYTES, "--tls-cert") <
		            0 ||
		    tau_file_read(&key_pem, NULL, o.tls_key, TLS_PEM_MAX_BYTES, "--tls-key") < 0) {
			fprintf(stderr, "tau-aggregator: %s\n", tau_error_last()->msg);
			goto out;
		}
		tls.cert_pem = cert_pem;
		tls.key_pem = key_pem;
	}

	/* Signals are taken by sigwait below; block them before any thread starts. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	kopts.kubeconfig = o.kubeconfig;
	kopts.context = o.context;
	if (tau_kube_config_load(&kcfg, &kopts) < 0 || tau_kube_client_new(&client, kcfg) < 0) {
		tau_log_error("cannot reach Kubernetes", "reason", tau_error_last()->msg, NULL);
		goto out;
	}
	if ((rc = ws_prepare(&rt, &o, client)) < 0) {
		fprintf(stderr, "tau-aggregator: %s\n", tau_error_last()->msg);
		exit_code = rc == -TAU_EINVAL ? 2 : 1;
		goto out;
	}
	rv.client = client;
	rv.audience = o.token_audience;
	acfg.agent_user = agent_user;
	acfg.review = review_token;
	acfg.review_ud = &rv;
	acfg.sync_timeout_ms = sync_ms;
	acfg.heartbeat_interval_s = (int)(hb_ms / 1000);
	if (tau_agg_new(&rt.agg, &acfg) < 0)
		goto fail;
	rt.leader_elect = o.leader_elect;
	if (!o.leader_elect)
		tau_agg_set_leader(rt.agg, true);

	if (tau_rpc_server_new(&srv, NULL) < 0 || tau_rpc_health_new(&health) < 0 ||
	    tau_rpc_health_register(health, srv) < 0 || tau_agg_register(rt.agg, srv) < 0)
		goto fail;
	if (tau_rpc_server_listen(srv, o.grpc_listen, o.tls_cert ? &tls : NULL, &grpc_port) < 0) {
		tau_log_error("cannot listen for gRPC", "address", o.grpc_listen, "reason",
		              tau_error_last()->msg, NULL);
		goto out;
	}
	if (tau_agg_start(rt.agg) < 0 || tau_rpc_server_start(srv) < 0)
		goto fail;
	if (tau_agg_kube_start(&kube, client, rt.agg) < 0)
		goto fail;
	if (!o.leader_elect && ws_start(&rt) < 0)
		goto out; /* ws_start logged why */
	if (o.leader_elect) {
		tau_kube_leader_config lc = {.namespace = o.system_namespace,
		                             .name = "tau-aggregator",
		                             .identity = identity,
		                             .release_on_cancel = true,
		                             .on_started = on_started_leading,
		                             .on_stopped = on_stopped_leading,
		                             .arg = &rt};

		if (gethostname(host, sizeof(host)) != 0)
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
		snprintf(identity, sizeof(identity), "%.200s_%ld", host, (long)getpid());
		if (tau_kube_leader_new(&rt.leader, client, &lc) < 0 ||
		    tau_kube_leader_start(rt.leader) < 0)
			goto fail;
	}
	if (tau_agg_http_start(&http, o.http_listen, rt.agg, readiness, &rt, &http_port) < 0) {
		tau_log_error("cannot listen for HTTP", "address", o.http_listen, "reason",
		              tau_error_last()->msg, NULL);
		goto out;
	}
	atomic_store(&rt.serving, true);
	{
		char gp[16], hp[16];

		snprintf(gp, sizeof(gp), "%d", grpc_port);
		snprintf(hp, sizeof(hp), "%d", http_port);
		tau_log_info("serving", "grpc_port", gp, "http_port", hp, "tls",
		             o.tls_cert ? "on" : "off", "agent_user", agent_user, "audience",
		             o.token_audience, NULL);
	}
	printf("ready grpc=%d http=%d\n", grpc_port, http_port);
	fflush(stdout);

	sigwait(&sigs, &sig);
	tau_log_info("shutting down", "signal",
	             sig != SIGUSR1               ? strsignal(sig)
	             : atomic_load(&rt.ws_failed) ? "workspace controller failed to start"
	                                          : "leadership lost",
	             NULL);
	exit_code = sig == SIGUSR1 ? 1 : 0;
	goto out;
fail:
	tau_log_error("start-up failed", "reason", tau_error_last()->msg, NULL);
out:
	atomic_store(&rt.serving, false);
	if (health != NULL)
		tau_rpc_health_set_all_not_serving(health);
	ws_shutdown(&rt); /* before the leader releases the Lease: stop writing first */
	if (rt.leader != NULL)
		tau_kube_leader_stop(rt.leader);
	if (srv != NULL)
		tau_rpc_server_shutdown(srv, 5000);
	tau_agg_kube_stop(kube);
	if (rt.agg != NULL)
		tau_agg_stop(rt.agg);
	tau_agg_http_stop(http);
	tau_rpc_server_free(srv);
	tau_rpc_health_free(health);
	tau_kube_leader_free(rt.leader);
	tau_agg_free(rt.agg);
	tau_kube_client_free(client);
	tau_kube_config_free(kcfg);
	free(cert_pem);
	free(key_pem);
	pthread_mutex_destroy(&rt.ws.mu);
	return exit_code;
}
