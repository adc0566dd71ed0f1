/*
 * tau-aggregator - authenticates agents, keeps the inventory and the pool,
 * and answers queries.
 *
 * main() only wires the parts together: the options (options.c parses and
 * checks every flag and its environment twin), the Kubernetes client, the rpc server with the
 * Report and query services plus grpc.health.v1, the Node/TauCluster informers, optional leader
 * election and the HTTP endpoints.  Every replica ingests reports and serves queries from its own
 * store (agents may reach any replica behind a Service); only the leader may write to the API, so
 * the TauWorkspace controller is built (and its options checked) at start-up, its informers run on
 * every replica (on a kube loop and thread of its own, so followers answer workspace queries), and
 * its worker, which writes, starts only on the leader.  The main thread then waits for
 * a signal and shuts down in reverse order: the workspace controller first (so it stops writing
 * before the Lease is released), then the rpc server.
 */
#include "options.h"

#include "budget/controller.h"
#include "controller/runtime.h"
#include "inventory/snapshot.h"
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
#include "tau/parse.h"
#include "tau/pem.h"
#include "tau/prog.h"
#include "tau/rpc_server.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* Certificate and key files: a PEM chain is far below 1 MiB; a larger file is a wrong path. */
#define TLS_PEM_MAX_BYTES (1u << 20)

/* The workspace controller and its loop; ws_mu orders a start (leader thread) against
 * shutdown (main thread).  The loop (informers, read API) runs on every replica; the
 * controller reconciles only while leading. */
typedef struct ws_runtime {
	pthread_mutex_t mu;
	tau_ws_controller *ctl;
	tau_kube_loop *loop;
	const char *system_namespace, *mode;
	bool loop_running, running, closed;
} ws_runtime;

/* The budget controller and its loop, on the leader only; mu orders start against shutdown. */
typedef struct budget_runtime {
	pthread_mutex_t mu;
	tau_budget_controller *ctl;
	tau_kube_loop *loop;
	bool running, closed;
} budget_runtime;

typedef struct runtime {
	tau_inventory *agg;
	tau_kube_client *clients[2]; /* "main" and "review", for their request metrics */
	tau_kube_leader *leader;
	bool leader_elect;
	atomic_bool serving;
	atomic_bool ws_failed; /* the controller could not start on the leader: restart */
	ws_runtime ws;
	budget_runtime budget;
} runtime;

typedef struct reviewer {
	tau_kube_client *client;
	const char *audience;
} reviewer;

static int review_token(void *ud, const char *token, tau_auth_review *out)
{
	reviewer *r = ud;
	tau_kube_token_review *tr = NULL;
	const char *aud[1] = {r->audience};
	int rc = tau_kube_token_review_submit(&tr, r->client, token, aud, 1);

	if (rc < 0)
		return rc;
	/* A name too long to hold is refused, not cut: the review is then unauthenticated. */
	(void)tau_auth_review_set(out, tr->authenticated, tr->username, tr->node_name, tr->error);
	tau_kube_token_review_free(tr);
	return 0;
}

/* A query's token: TokenReview with the API server's own audiences, then a SubjectAccessReview. */
/* The service-account issuer and its keys, as the API server publishes them (keys.h); the
 * set is read from the API server's own /openid/v1/jwks, not the jwks_uri, which may name an
 * address outside the cluster. */
static int fetch_issuer_keys(void *ud, char **issuer, tau_jwks **keys)
{
	reviewer *r = ud;
	tau_kube_request req = {.method = "GET", .max_retries = -1};
	cJSON *doc = NULL, *jwks = NULL;
	const cJSON *iss;
	int rc;

	req.path = "/.well-known/openid-configuration";
	if ((rc = tau_kube_client_request(&doc, r->client, &req)) < 0)
		return rc;
	iss = cJSON_GetObjectItemCaseSensitive(doc, "issuer");
	if (!cJSON_IsString(iss) || iss->valuestring[0] == '\0') {
		cJSON_Delete(doc);
		return tau_error_set(TAU_EINVAL,
		                     "/.well-known/openid-configuration names no issuer");
	}
	req.path = "/openid/v1/jwks";
	if ((rc = tau_kube_client_request(&jwks, r->client, &req)) == 0)
		rc = tau_jwks_parse(keys, jwks, NULL);
	if (rc == 0 && (*issuer = strdup(iss->valuestring)) == NULL) {
		tau_jwks_free(*keys);
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cJSON_Delete(doc);
	cJSON_Delete(jwks);
	return rc;
}

static int review_query(void *ud, const char *token, const char *resource, tau_auth_review *out)
{
	reviewer *r = ud;
	tau_kube_token_review *tr = NULL;
	char reason[256];
	bool allowed = false;
	int rc = tau_kube_token_review_submit(&tr, r->client, token, NULL, 0);

	if (rc < 0)
		return rc;
	if (tau_auth_review_set(out, tr->authenticated, tr->username, NULL, tr->error) < 0 ||
	    !out->authenticated || tr->username == NULL) {
		out->authenticated = false;
		tau_kube_token_review_free(tr);
		return 0;
	}
	rc = tau_kube_subject_access_review(&allowed, reason, sizeof(reason), r->client, tr,
	                                    TAU_QUERY_AUTH_VERB, TAU_QUERY_AUTH_GROUP, resource);
	tau_kube_token_review_free(tr);
	if (rc < 0)
		return rc;
	if (!allowed)
		snprintf(out->error, sizeof(out->error), "%s",
		         reason[0] != '\0' ? reason : "no RBAC rule allows it");
	return 0;
}

static bool readiness(void *ud, char *reason, size_t cap)
{
	runtime *rt = ud;
	bool established = tau_inventory_established(rt->agg);

	if (!atomic_load(&rt->serving)) {
		snprintf(reason, cap, "starting");
		return false;
	}
	/* With --leader-elect only the leader is Ready, so a Service (Ready endpoints only)
	 * routes every agent and every query to it: one store, one answer.  The leader is Ready
	 * as soon as it leads, before its pool is established, because the agents can only reach
	 * it once it is Ready; queries say established=false until then (docs/install.md, HA). */
	if (rt->leader_elect) {
		if (!tau_kube_leader_is_leader(rt->leader)) {
			snprintf(reason, cap,
			         "follower: not Ready, so the Service routes agents and queries to "
			         "the leader");
			return false;
		}
		snprintf(reason, cap, "%s",
		         established ? "leader, pool established"
		                     : "leader, waiting for the sync gate");
		return true;
	}
	snprintf(reason, cap, "%s", established ? "pool established" : "waiting for the sync gate");
	return established;
}

/*
 * Run one start of the workspace or budget controller once, under the controller's `mu`:
 * nothing when `*done` or after its shutdown (`*closed`); else `step`, which answers > 0
 * when there is no controller, 0 when it started (`*done` turns true) or < 0, logged with
 * `what` as the reason's message.  @return 0 or < 0.
 */
static int start_once(runtime *rt, pthread_mutex_t *mu, const bool *closed, bool *done,
                      int (*step)(runtime *rt), const char *what)
{
	int rc = 0;

	pthread_mutex_lock(mu);
	if (!*closed && !*done) {
		rc = step(rt);
		if (rc < 0)
			tau_log_error(what, "reason", tau_error_last()->msg, NULL);
		*done = rc == 0;
	}
	pthread_mutex_unlock(mu);
	return rc < 0 ? rc : 0;
}

static int ws_open_step(runtime *rt)
{
	ws_runtime *ws = &rt->ws;
	int rc;

	if (ws->ctl == NULL)
		return 1;
	if ((rc = tau_ws_controller_start_informers(ws->ctl)) < 0 ||
	    (rc = tau_kube_loop_start_thread(ws->loop)) < 0)
		return rc;
	tau_inventory_set_workspaces(rt->agg, ws->ctl);
	return 0;
}

/* Open the workspace controller's caches on every replica (main thread): the informers
 * and their loop start, and workspace queries answer from them, leader or not.
 * @return 0 or < 0. */
static int ws_open(runtime *rt)
{
	return start_once(rt, &rt->ws.mu, &rt->ws.closed, &rt->ws.loop_running, ws_open_step,
	                  "cannot start the workspace informers");
}

static int ws_start_step(runtime *rt)
{
	ws_runtime *ws = &rt->ws;
	int rc;

	if (ws->ctl == NULL)
		return 1;
	if ((rc = tau_ws_controller_start(ws->ctl)) < 0)
		return rc;
	tau_log_info("workspace controller started", "system_namespace", ws->system_namespace,
	             "namespace_mode", ws->mode, NULL);
	return 0;
}

/* Start reconciling (main thread without --leader-elect, else the leader thread).
 * Once per process: a lost lease ends the process.  @return 0 or < 0. */
static int ws_start(runtime *rt)
{
	return start_once(rt, &rt->ws.mu, &rt->ws.closed, &rt->ws.running, ws_start_step,
	                  "cannot start the workspace controller");
}

/*
 * The end of the workspace or budget controller's shutdown, with its `mu` held and the
 * controller freed: log `stopped` if it was running, free its loop (which outlives the
 * controller's informers) and unlock.
 */
static void shutdown_end(pthread_mutex_t *mu, bool *running, tau_kube_loop **loop,
                         const char *stopped)
{
	if (*running)
		tau_log_info(stopped, NULL);
	*running = false;
	tau_kube_loop_free(*loop);
	*loop = NULL;
	pthread_mutex_unlock(mu);
}

/* Stop and free the controller, and keep it from starting later.  Idempotent. */
static void ws_shutdown(runtime *rt)
{
	ws_runtime *ws = &rt->ws;

	pthread_mutex_lock(&ws->mu);
	ws->closed = true;
	if (rt->agg != NULL)
		tau_inventory_set_workspaces(rt->agg,
		                             NULL); /* waits for queries reading the cache */
	/* stop is safe on a controller never or half started; join is a no-op without a thread */
	tau_ws_controller_stop(ws->ctl);
	if (ws->loop != NULL)
		tau_kube_loop_join(ws->loop);
	tau_ws_controller_free(ws->ctl);
	ws->ctl = NULL;
	shutdown_end(&ws->mu, &ws->running, &ws->loop, "workspace controller stopped");
}

/* Build the controller without starting it, so a bad option fails at start-up.
 * @return 0, or < 0 (-TAU_EINVAL: a configuration error). */
static int ws_prepare(runtime *rt, const tau_agg_options *o, tau_kube_client *client)
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
	wo.multiple_workspaces = o->gates.multiple_workspaces;
	rt->ws.mode = "from TauCluster";
	if (o->namespace_mode != TAU_AGG_NS_MODE_FROM_CLUSTER) {
		wo.ns_mode_set = true;
		wo.ns_mode = o->namespace_mode == TAU_AGG_NS_MODE_OPERATOR ? TAU_WS_NS_OPERATOR
		                                                           : TAU_WS_NS_MANAGED;
		rt->ws.mode = wo.ns_mode == TAU_WS_NS_OPERATOR ? "Operator" : "Managed";
	}
	rt->ws.system_namespace = o->system_namespace;
	if ((rc = tau_kube_loop_new(&rt->ws.loop, client)) < 0)
		return rc;
	wo.loop = rt->ws.loop;
	return tau_ws_controller_new(&rt->ws.ctl, &wo);
}

/* The budget's view of the inventory: a pool snapshot, which the inventory then owns. */
static int budget_inventory(void *arg, tau_budget_inventory *out)
{
	runtime *rt = arg;
	tau_pool_snapshot *snap = NULL;
	int rc = tau_inventory_pool_snapshot(rt->agg, &snap);

	return rc < 0 ? rc : tau_budget_inventory_from_snapshot(out, snap);
}

static void budget_pool_changed(void *arg)
{
	runtime *rt = arg;

	tau_budget_controller_trigger(rt->budget.ctl);
}

/* Build the budget controller without starting it.  @return 0 or < 0. */
static int budget_prepare(runtime *rt, const tau_agg_options *o, tau_kube_client *client)
{
	tau_budget_controller_config bc = {0};
	int rc;

	if ((rc = tau_kube_loop_new(&rt->budget.loop, client)) < 0)
		return rc;
	bc.client = client;
	bc.loop = rt->budget.loop;
	bc.system_namespace = o->system_namespace;
	bc.coalesce_ms = (uint64_t)o->budget_coalesce_ms;
	bc.resync_ms = (uint64_t)o->budget_resync_ms;
	bc.multiple_workspaces = o->gates.multiple_workspaces;
	bc.inventory = budget_inventory;
	bc.inventory_arg = rt;
	return tau_budget_controller_new(&rt->budget.ctl, &bc);
}

static int budget_start_step(runtime *rt)
{
	budget_runtime *b = &rt->budget;
	int rc;

	if (b->ctl == NULL)
		return 1;
	tau_budget_controller_start_informers(b->ctl);
	if ((rc = tau_kube_loop_start_thread(b->loop)) < 0 ||
	    (rc = tau_budget_controller_start(b->ctl)) < 0 ||
	    (rc = tau_inventory_pool_subscribe(rt->agg, budget_pool_changed, rt)) < 0)
		return rc;
	tau_log_info("budget controller started", NULL);
	return 0;
}

/* Start the budget controller on the leader (informers, loop, worker, pool trigger). */
static int budget_start(runtime *rt)
{
	return start_once(rt, &rt->budget.mu, &rt->budget.closed, &rt->budget.running,
	                  budget_start_step, "cannot start the budget controller");
}

/* /metrics after the inventory's families: the budget's, from its caches (zeros before the
 * controller exists or after it stopped), then the controllers' runtime and work queues, and
 * the Kubernetes clients' requests.  Each controller's mutex keeps it alive meanwhile. */
static int more_metrics(void *arg, tau_buf *out)
{
	static const char *const client_names[2] = {"main", "review"};
	runtime *rt = arg;
	budget_runtime *b = &rt->budget;
	tau_controller *ctls[2];
	size_t n = 0;
	int rc;

	pthread_mutex_lock(&rt->ws.mu);
	pthread_mutex_lock(&b->mu);
	rc = tau_budget_controller_metrics(b->ctl, out);
	if (rt->ws.ctl != NULL)
		ctls[n++] = tau_ws_controller_runtime(rt->ws.ctl);
	if (b->ctl != NULL)
		ctls[n++] = tau_budget_controller_runtime(b->ctl);
	tau_controller_metrics_write(out, ctls, n);
	pthread_mutex_unlock(&b->mu);
	pthread_mutex_unlock(&rt->ws.mu);
	tau_kube_client_metrics_write(out, "tau_aggregator", rt->clients, client_names,
	                              rt->clients[1] != NULL ? 2 : 1);
	return rc < 0 ? rc : tau_buf_error(out);
}

/* Stop and free the budget controller; it never starts again.  Idempotent. */
static void budget_shutdown(runtime *rt)
{
	budget_runtime *b = &rt->budget;

	pthread_mutex_lock(&b->mu);
	b->closed = true;
	if (b->running && rt->agg != NULL)
		tau_inventory_pool_unsubscribe(rt->agg, budget_pool_changed, rt);
	tau_budget_controller_stop(b->ctl);
	if (b->loop != NULL) {
		tau_kube_loop_stop(b->loop);
		tau_kube_loop_join(b->loop);
	}
	tau_budget_controller_free(b->ctl);
	b->ctl = NULL;
	shutdown_end(&b->mu, &b->running, &b->loop, "budget controller stopped");
}

static void on_started_leading(void *arg)
{
	runtime *rt = arg;

	tau_inventory_set_leader(rt->agg, true);
	tau_log_info("became leader", NULL);
	if (ws_start(rt) < 0 || budget_start(rt) < 0) {
		/* A leader that cannot reconcile should hand over: restart. */
		atomic_store(&rt->ws_failed, true);
		kill(getpid(), SIGUSR1);
	}
}

static void on_stopped_leading(void *arg)
{
	runtime *rt = arg;

	tau_inventory_set_leader(rt->agg, false);
	tau_log_warn("stopped leading", NULL);
	/* A lost lease is not regained (kube_leader.h): restart to campaign again. */
	if (rt->leader != NULL && tau_kube_leader_lost(rt->leader))
		kill(getpid(), SIGUSR1);
}

/* Bind `addr` (a HOST:PORT flag; unix:PATH is left to the server) once and let it go, before
 * anything starts: an address that cannot be had is a configuration error said in one line,
 * where gRPC's core would print its own multi-line log first.  0 or -TAU_EINVAL. */
static int check_listen(const char *flag, const char *addr)
{
	struct addrinfo hints, *res = NULL;
	char host[256], port_s[16];
	int port, fd, one = 1, rc = 0;

	if (strncmp(addr, "unix:", 5) == 0)
		return 0;
	if (tau_parse_listen(host, sizeof(host), &port, addr) < 0)
		return tau_error_wrap("%s", flag);
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port_s, sizeof(port_s), "%d", port);
	if (getaddrinfo(host[0] != '\0' ? host : NULL, port_s, &hints, &res) != 0 || res == NULL)
		return tau_error_set(TAU_EINVAL, "%s %s: cannot resolve host %s", flag, addr, host);
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = tau_error_set(TAU_EINVAL, "%s %s: %s", flag, addr, strerror(errno));
	} else {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, res->ai_addr, res->ai_addrlen) != 0)
			rc = tau_error_set(TAU_EINVAL, "%s %s: cannot bind: %s", flag, addr,
			                   strerror(errno));
		close(fd);
	}
	freeaddrinfo(res);
	return rc;
}

int main(int argc, char **argv)
{
	tau_agg_options o;
	runtime rt = {0};
	reviewer rv = {0};
	tau_kube_config *kcfg = NULL;
	tau_kube_client *client = NULL, *review_client = NULL;
	tau_kube_config *review_cfg = NULL;
	tau_rpc_server *srv = NULL;
	tau_rpc_health *health = NULL;
	tau_inventory_kube *kube = NULL;
	tau_agg_http *http = NULL;
	tau_inventory_config acfg = {0};
	tau_query_auth_config qcfg = {0};
	tau_rpc_server_opts sopts = {0};
	tau_query_auth *query_auth = NULL;
	tau_auth_keys *keys = NULL;
	tau_kube_config_options kopts = {0};
	tau_rpc_server_tls tls = {0};
	char agent_user[512], identity[300], host[256];
	char *cert_pem = NULL, *key_pem = NULL;
	int grpc_port = 0, http_port = 0, sig = 0, exit_code = 1, rc;
	sigset_t sigs;

	tau_log_init_from_env();
	pthread_mutex_init(&rt.ws.mu, NULL);
	pthread_mutex_init(&rt.budget.mu, NULL);
	if (tau_agg_options_parse(&o, argc, argv, NULL) < 0) {
		fprintf(stderr, "tau-aggregator: %s (see --help)\n", tau_error_last()->msg);
		return 2;
	}
	if (tau_prog_help_version("tau-aggregator", o.help, o.version, tau_agg_options_usage) == 0)
		return 0;
	if (o.log_level_set)
		tau_log_set_level(o.log_level);
	if (o.log_format_set)
		tau_log_set_format(o.log_format);
	if (check_listen("--grpc-listen", o.grpc_listen) < 0 ||
	    check_listen("--http-listen", o.http_listen) < 0) {
		fprintf(stderr, "tau-aggregator: %s\n", tau_error_last()->msg);
		return 2;
	}
	if (tau_auth_sa_user(agent_user, sizeof(agent_user), o.agent_sa) < 0) {
		fprintf(stderr, "tau-aggregator: %s\n", tau_error_last()->msg);
		return 2;
	}
	if (o.tls_cert != NULL) {
		size_t cert_len = 0;
		char what[300];

		snprintf(what, sizeof(what), "--tls-cert %.256s", o.tls_cert);
		if (tau_file_read(&cert_pem, &cert_len, o.tls_cert, TLS_PEM_MAX_BYTES,
		                  "--tls-cert") < 0 ||
		    tau_pem_check_certificates(cert_pem, cert_len, what) < 0 ||
		    tau_file_read(&key_pem, NULL, o.tls_key, TLS_PEM_MAX_BYTES, "--tls-key") < 0) {
			fprintf(stderr, "tau-aggregator: %s\n", tau_error_last()->msg);
			exit_code = 2;
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
	if (tau_kube_config_load(&kcfg, &kopts) < 0) {
		/* A kubeconfig that is missing, malformed or names no usable context:
		 * configuration. */
		fprintf(stderr, "tau-aggregator: kubeconfig: %s\n", tau_error_last()->msg);
		exit_code = 2;
		goto out;
	}
	if (tau_kube_client_new(&client, kcfg) < 0) {
		tau_log_error("cannot reach Kubernetes", "reason", tau_error_last()->msg, NULL);
		goto out;
	}
	if ((rc = ws_prepare(&rt, &o, client)) < 0) {
		fprintf(stderr, "tau-aggregator: %s\n", tau_error_last()->msg);
		exit_code = rc == -TAU_EINVAL ? 2 : 1;
		goto out;
	}
	if (budget_prepare(&rt, &o, client) < 0) {
		fprintf(stderr, "tau-aggregator: %s\n", tau_error_last()->msg);
		goto out;
	}
	/* Reviews have a budget of their own (--review-qps): after a restart every agent's token
	 * is reviewed at once, and at the client's 20/s 10,000 agents would wait 500 s, while
	 * the informers, the Lease and the budget writes keep theirs (docs/aggregator.md). */
	if (tau_kube_config_dup(&review_cfg, kcfg) < 0)
		goto fail;
	review_cfg->qps = o.review_qps;
	review_cfg->burst = (unsigned)o.review_burst;
	if (tau_kube_client_new(&review_client, review_cfg) < 0)
		goto fail;
	rv.client = review_client;
	rt.clients[0] = client;
	rt.clients[1] = review_client;
	rv.audience = o.token_audience;
	acfg.agent_user = agent_user;
	acfg.review = review_token;
	acfg.review_ud = &rv;
	acfg.sync_timeout_ms = o.sync_timeout_ms;
	acfg.heartbeat_interval_s = (int)(o.heartbeat_ms / 1000);
	acfg.max_pool_watchers = (size_t)o.max_pool_watchers;
	sopts.max_concurrent_streams = o.max_concurrent_streams;
	sopts.max_calls_per_peer = o.max_streams_per_peer;
	sopts.cq_threads = o.grpc_threads;
	acfg.max_pending_reviews = (size_t)o.max_pending_reviews;
	acfg.max_reviews_per_peer = (size_t)o.max_reviews_per_peer;
	acfg.auth_threads = o.review_workers;
	if (o.no_local_token_verification) {
		tau_log_info("agents are admitted only after their TokenReview", "flag",
		             "--no-local-token-verification", NULL);
	} else {
		if (tau_auth_keys_new(&keys, fetch_issuer_keys, &rv, o.token_audience, agent_user) <
		            0 ||
		    tau_auth_keys_start(keys) < 0)
			goto fail;
		acfg.keys = keys;
	}
	if (o.allow_anonymous_queries) {
		tau_log_warn("queries are not authenticated: anyone who reaches the gRPC port may "
		             "read the inventory and workspaces",
		             "flag", "--allow-anonymous-queries", NULL);
	} else {
		qcfg.review = review_query;
		qcfg.review_ud = &rv;
		qcfg.max_pending = (size_t)o.max_pending_reviews;
		if (tau_query_auth_new(&query_auth, &qcfg) < 0)
			goto fail;
		acfg.query_auth = query_auth;
	}
	if (tau_inventory_new(&rt.agg, &acfg) < 0)
		goto fail;
	rt.leader_elect = o.leader_elect;
	if (!o.leader_elect)
		tau_inventory_set_leader(rt.agg, true);

	if (tau_rpc_server_new(&srv, &sopts) < 0 || tau_rpc_health_new(&health) < 0 ||
	    tau_rpc_health_register(health, srv) < 0 || tau_inventory_register(rt.agg, srv) < 0)
		goto fail;
	if ((rc = tau_rpc_server_listen(srv, o.grpc_listen, o.tls_cert ? &tls : NULL, &grpc_port)) <
	    0) {
		/* Bad TLS material, or an address taken since check_listen: configuration. */
		fprintf(stderr, "tau-aggregator: --grpc-listen %s: %s\n", o.grpc_listen,
		        tau_error_last()->msg);
		exit_code = rc == -TAU_EINVAL || rc == -TAU_EIO ? 2 : 1;
		goto out;
	}
	if (tau_inventory_start(rt.agg) < 0 || tau_rpc_server_start(srv) < 0)
		goto fail;
	if (tau_inventory_kube_start(&kube, client, rt.agg, o.kueue_namespace) < 0)
		goto fail;
	if (ws_open(&rt) < 0)
		goto out; /* ws_open logged why */
	if (!o.leader_elect && (ws_start(&rt) < 0 || budget_start(&rt) < 0))
		goto out; /* they logged why */
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
	if (tau_agg_http_start(&http, o.http_listen, rt.agg, readiness, &rt, more_metrics, &rt,
	                       &http_port) < 0) {
		fprintf(stderr, "tau-aggregator: --http-listen %s: %s\n", o.http_listen,
		        tau_error_last()->msg);
		exit_code = 2;
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
	budget_shutdown(&rt);
	if (rt.leader != NULL)
		tau_kube_leader_stop(rt.leader);
	if (srv != NULL)
		tau_rpc_server_shutdown(srv, 5000);
	tau_inventory_kube_stop(kube);
	if (rt.agg != NULL)
		tau_inventory_stop(rt.agg);
	tau_agg_http_stop(http);
	tau_rpc_server_free(srv);
	tau_query_auth_free(query_auth); /* after the server: no call is left to review */
	tau_rpc_health_free(health);
	tau_kube_leader_free(rt.leader);
	tau_inventory_free(rt.agg);
	tau_auth_keys_free(keys); /* after the state that borrowed it */
	tau_kube_client_free(review_client);
	tau_kube_config_free(review_cfg);
	tau_kube_client_free(client);
	tau_kube_config_free(kcfg);
	free(cert_pem);
	free(key_pem);
	pthread_mutex_destroy(&rt.ws.mu);
	pthread_mutex_destroy(&rt.budget.mu);
	return exit_code;
}
