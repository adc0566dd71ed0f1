/*
 * service_query.c - the service's gRPC methods: QueryService's handlers (ListNodes, GetNode,
 * ExplainNode, GetPool, WatchPool, ListWorkspaces, GetWorkspace, GetCapacity, Fit) and the
 * registration of every method, Report included, each query behind the query guard.
 *
 * The inventory queries read the node store under the state mutex.  ListWorkspaces and
 * GetWorkspace read the workspace controller's informer cache, which every replica fills
 * (only the leader reconciles).  The pointer to it has its own mutex (held across a cache
 * read, so it cannot be freed under a query) and is NULL with --no-workspace-controller, where
 * those queries answer UNAVAILABLE.
 */
#include "service_internal.h"

#include "query_auth.h"
#include "query.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/log.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/inventory/v1/query.pb-c.h"
#include "tau/rpc_server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- query callbacks (CQ thread) ---- */

tau_query_opts tau_inventory_query_opts(const tau_inventory *a)
{
	tau_query_opts o = {.now_ms = tau_clock_wall_ms(),
	                    .stale_after_ms = 3000LL * a->cfg.heartbeat_interval_s};
	return o;
}

static void finish_error(tau_rpc_call *call, int rc)
{
	tau_rpc_call_finish(call,
	                    rc == -TAU_ENOTFOUND ? TAU_RPC_NOT_FOUND
	                    : rc == -TAU_EINVAL  ? TAU_RPC_INVALID_ARGUMENT
	                                         : TAU_RPC_INTERNAL,
	                    tau_error_last()->msg);
}

/* Answer a unary query with `resp` (on success) or the error `rc`, then free `resp`. */
static void answer(tau_rpc_call *call, int rc, ProtobufCMessage *resp)
{
	if (rc < 0)
		finish_error(call, rc);
	else
		tau_rpc_call_reply(call, resp);
	if (resp != NULL)
		protobuf_c_message_free_unpacked(resp, NULL);
}

/* The unary queries that read the node store (query.h), one handler for all. */
typedef enum store_query {
	STORE_LIST_NODES,
	STORE_GET_NODE,
	STORE_EXPLAIN,
	STORE_CAPACITY,
	STORE_FIT
} store_query;

/* Run query `q` on `msg` under the state mutex, answer it, then free `msg`. */
static void answer_store_query(tau_rpc_call *call, ProtobufCMessage *msg, tau_inventory *a,
                               store_query q)
{
	union {
		Tau__Inventory__V1__ListNodesResponse *list;
		Tau__Inventory__V1__GetNodeResponse *node;
		Tau__Inventory__V1__ExplainNodeResponse *explain;
		Tau__Inventory__V1__GetCapacityResponse *capacity;
		Tau__Inventory__V1__FitResponse *fit;
	} r = {NULL};
	ProtobufCMessage *resp = NULL;
	tau_query_opts o = tau_inventory_query_opts(a);
	int rc = 0;

	pthread_mutex_lock(&a->mu);
	switch (q) {
	case STORE_LIST_NODES:
		rc = tau_query_list_nodes(&r.list, a->store,
		                          (Tau__Inventory__V1__ListNodesRequest *)msg, &o);
		resp = r.list != NULL ? &r.list->base : NULL;
		break;
	case STORE_GET_NODE:
		rc = tau_query_get_node(&r.node, a->store,
		                        ((Tau__Inventory__V1__GetNodeRequest *)msg)->name, &o);
		resp = r.node != NULL ? &r.node->base : NULL;
		break;
	case STORE_EXPLAIN:
		rc = tau_query_explain(&r.explain, a->store,
		                       ((Tau__Inventory__V1__ExplainNodeRequest *)msg)->name);
		resp = r.explain != NULL ? &r.explain->base : NULL;
		break;
	case STORE_CAPACITY:
		rc = tau_query_capacity(&r.capacity, a->store, &o);
		if (r.capacity != NULL)
			r.capacity->computed_unix_ms = tau_clock_wall_ms();
		resp = r.capacity != NULL ? &r.capacity->base : NULL;
		break;
	case STORE_FIT:
		rc = tau_query_fit(&r.fit, a->store, (Tau__Inventory__V1__FitRequest *)msg, &o);
		resp = r.fit != NULL ? &r.fit->base : NULL;
		break;
	}
	pthread_mutex_unlock(&a->mu);
	answer(call, rc, resp);
	tau_rpc_message_free(msg);
}

static void q_list_nodes(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	answer_store_query(call, msg, ud, STORE_LIST_NODES);
}

static void q_get_node(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	answer_store_query(call, msg, ud, STORE_GET_NODE);
}

static void q_explain(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	answer_store_query(call, msg, ud, STORE_EXPLAIN);
}

static void q_get_capacity(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	answer_store_query(call, msg, ud, STORE_CAPACITY);
}

static void q_fit(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	answer_store_query(call, msg, ud, STORE_FIT);
}

static void q_get_pool(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_inventory *a = ud;

	pthread_mutex_lock(&a->mu);
	tau_inventory_ensure_pool_locked(a);
	if (a->pool_msg != NULL)
		tau_rpc_call_reply(call, &a->pool_msg->base);
	else
		tau_rpc_call_finish(call, TAU_RPC_INTERNAL, "pool could not be computed");
	pthread_mutex_unlock(&a->mu);
	tau_rpc_message_free(msg);
}

static void q_watch_pool(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_inventory *a = ud;

	tau_rpc_message_free(msg);
	pthread_mutex_lock(&a->mu);
	if (a->n_watchers >= a->cfg.max_pool_watchers) {
		char text[160];

		pthread_mutex_unlock(&a->mu);
		atomic_fetch_add(&a->watchers_refused, 1);
		snprintf(text, sizeof(text),
		         "too many WatchPool streams (%zu, --max-pool-watchers); poll GetPool or "
		         "retry later",
		         a->cfg.max_pool_watchers);
		{
			char key[160];

			tau_inventory_peer_host(key, sizeof(key), tau_rpc_call_peer_address(call));
			strncat(key, "|watchpool-cap", sizeof(key) - strlen(key) - 1);
			if (tau_inventory_first_time(a, key)) /* once per peer host */
				tau_log_warn("WatchPool refused: watcher cap reached", "peer",
				             tau_rpc_call_peer_address(call), "reason", text, NULL);
		}
		tau_rpc_call_finish(call, TAU_RPC_RESOURCE_EXHAUSTED, text);
		return;
	}
	if (a->n_watchers == a->cap_watchers) {
		size_t cap = a->cap_watchers ? a->cap_watchers * 2 : 16;
		watcher *grown = realloc(a->watchers, cap * sizeof(*grown));

		if (grown == NULL) {
			pthread_mutex_unlock(&a->mu);
			tau_rpc_call_finish(call, TAU_RPC_RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
		a->watchers = grown;
		a->cap_watchers = cap;
	}
	a->watchers[a->n_watchers].call = tau_rpc_call_ref(call);
	a->watchers[a->n_watchers].sent_generation = 0;
	a->n_watchers++;
	tau_inventory_ensure_pool_locked(a);
	tau_inventory_send_to_watchers_locked(a);
	pthread_mutex_unlock(&a->mu);
}

static void q_watch_done(tau_rpc_call *call, tau_rpc_end end, void *ud)
{
	tau_inventory *a = ud;

	(void)end;
	/* The call user is not ours (the query guard owns it): look the call up. */
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->n_watchers; i++) {
		if (a->watchers[i].call == call) {
			tau_rpc_call_unref(call);
			a->watchers[i] = a->watchers[--a->n_watchers];
			break;
		}
	}
	pthread_mutex_unlock(&a->mu);
}

/* Called with ws_mu held.  False (and the call finished) when no synced controller runs here. */
static bool workspaces_available(tau_inventory *a, tau_rpc_call *call)
{
	if (a->workspaces == NULL) {
		tau_rpc_call_finish(call, TAU_RPC_UNAVAILABLE,
		                    "workspace controller not running on this replica");
		return false;
	}
	if (!tau_ws_controller_synced(a->workspaces)) {
		tau_rpc_call_finish(call, TAU_RPC_UNAVAILABLE,
		                    "workspace controller has not synced its cache yet");
		return false;
	}
	return true;
}

static void q_list_workspaces(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_inventory *a = ud;
	Tau__Inventory__V1__ListWorkspacesResponse *resp = NULL;
	tau_ws_summary *list = NULL;
	size_t n = 0;
	int rc;

	tau_rpc_message_free(msg);
	pthread_mutex_lock(&a->ws_mu);
	if (!workspaces_available(a, call)) {
		pthread_mutex_unlock(&a->ws_mu);
		return;
	}
	rc = tau_ws_controller_list(&list, &n, a->workspaces);
	pthread_mutex_unlock(&a->ws_mu);
	if (rc == 0)
		rc = tau_query_list_workspaces(&resp, list, n);
	answer(call, rc, resp != NULL ? &resp->base : NULL);
	tau_ws_summaries_free(list, n);
}

static void q_get_workspace(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_inventory *a = ud;
	const char *name = ((Tau__Inventory__V1__GetWorkspaceRequest *)msg)->name;
	Tau__Inventory__V1__WorkspaceSummary *resp = NULL;
	tau_ws_summary sum = {0};
	int rc;

	if (name == NULL || name[0] == '\0') {
		tau_rpc_call_finish(call, TAU_RPC_INVALID_ARGUMENT, "workspace name is required");
		goto out;
	}
	pthread_mutex_lock(&a->ws_mu);
	if (!workspaces_available(a, call)) {
		pthread_mutex_unlock(&a->ws_mu);
		goto out;
	}
	rc = tau_ws_controller_get(&sum, a->workspaces, name);
	pthread_mutex_unlock(&a->ws_mu);
	if (rc == -TAU_ENOTFOUND) {
		char text[384];

		snprintf(text, sizeof(text), "workspace %.253s not found", name);
		tau_rpc_call_finish(call, TAU_RPC_NOT_FOUND, text);
		goto out;
	}
	if (rc == 0)
		rc = tau_query_workspace(&resp, &sum);
	if (rc < 0)
		finish_error(call, rc);
	else
		tau_rpc_call_reply(call, &resp->base);
out:
	if (resp != NULL)
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	tau_ws_summary_clear(&sum);
	tau_rpc_message_free(msg);
}

int tau_inventory_register(tau_inventory *a, tau_rpc_server *srv)
{
	a->srv = srv;
#define QUERY(p, k, req, resp, fn)                                                                 \
	{.path = "/tau.inventory.v1.QueryService/" p,                                              \
	 .kind = (k),                                                                              \
	 .request = &tau__inventory__v1__##req##__descriptor,                                      \
	 .response = &tau__inventory__v1__##resp##__descriptor,                                    \
	 .on_message = (fn),                                                                       \
	 .ud = a}
	tau_rpc_method methods[] = {
	        {.path = "/tau.inventory.v1.InventoryService/Report",
	         .kind = TAU_RPC_BIDI,
	         .request = &tau__inventory__v1__agent_report__descriptor,
	         .response = &tau__inventory__v1__report_ack__descriptor,
	         .on_start = tau_inventory_report_start,
	         .on_message = tau_inventory_report_message,
	         .on_half_close = tau_inventory_report_half_close,
	         .on_done = tau_inventory_report_done,
	         .ud = a},
	        QUERY("ListNodes", TAU_RPC_UNARY, list_nodes_request, list_nodes_response,
	              q_list_nodes),
	        QUERY("GetNode", TAU_RPC_UNARY, get_node_request, get_node_response, q_get_node),
	        QUERY("GetPool", TAU_RPC_UNARY, get_pool_request, pool, q_get_pool),
	        QUERY("ExplainNode", TAU_RPC_UNARY, explain_node_request, explain_node_response,
	              q_explain),
	        QUERY("WatchPool", TAU_RPC_SERVER_STREAM, watch_pool_request, pool, q_watch_pool),
	        QUERY("ListWorkspaces", TAU_RPC_UNARY, list_workspaces_request,
	              list_workspaces_response, q_list_workspaces),
	        QUERY("GetWorkspace", TAU_RPC_UNARY, get_workspace_request, workspace_summary,
	              q_get_workspace),
	        QUERY("GetCapacity", TAU_RPC_UNARY, get_capacity_request, get_capacity_response,
	              q_get_capacity),
	        QUERY("Fit", TAU_RPC_UNARY, fit_request, fit_response, q_fit),
	};
#undef QUERY
	methods[5].on_done = q_watch_done;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		int rc = 0;

		/* Every query but Report (its own agent auth) is guarded unless anonymous. */
		if (i > 0 && a->cfg.query_auth != NULL)
			rc = tau_query_auth_guard(a->cfg.query_auth, &methods[i],
			                          strstr(methods[i].path, "Workspace") != NULL
			                                  ? "workspaces"
			                                  : "inventory");
		if (rc == 0)
			rc = tau_rpc_server_add_method(srv, &methods[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}
