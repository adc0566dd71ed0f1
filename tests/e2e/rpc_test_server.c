/*
 * rpc_test_server - serves every method of tau.inventory.v1 with canned answers, through
 * lib/rpc, for the interoperability tests (tests/e2e/test_rpc_interop.py).
 *
 * Usage: rpc_test_server [--listen ADDR] [--token T] [--tls-cert F --tls-key F
 *        [--client-ca F [--require-client-cert]]] [--max-calls-per-peer N]
 * Prints "ready <port>" on stdout once serving; SIGTERM or SIGINT shuts it down gracefully,
 * printing "stats refused_peer_cap=N refused_metadata=N" first.
 * With --token, every method except health needs "authorization: Bearer T".
 * GetNode answers "missing" with NOT_FOUND and reports in status.reasons what it saw:
 * "peer:<TLS identity or ->", "cn:<common name or ->", "tls:<0|1>".
 */
#include "tau/error.h"
#include "tau/file.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/inventory/v1/query.pb-c.h"
#include "tau/rpc_server.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Test certificates are a few KiB; anything near this is a wrong path. */
#define PEM_MAX_BYTES (1u << 20)

static const char *required_token;
static tau_rpc_health *health;

static int check_token(tau_rpc_call *call, void *ud)
{
	const char *token = tau_rpc_call_bearer_token(call);

	(void)ud;
	if (required_token == NULL)
		return 0;
	if (token == NULL || strcmp(token, required_token) != 0) {
		tau_rpc_call_finish(call, TAU_RPC_UNAUTHENTICATED, "missing or wrong bearer token");
		return TAU_RPC_UNAUTHENTICATED;
	}
	return 0;
}

/* ---- canned data -------------------------------------------------------------------------- */

static void fill_status(Tau__Inventory__V1__NodeStatus *st, const char *name,
                        Tau__Inventory__V1__ResourceQuantity **res)
{
	static Tau__Inventory__V1__ResourceQuantity cpu =
	        TAU__INVENTORY__V1__RESOURCE_QUANTITY__INIT;
	static Tau__Inventory__V1__ResourceQuantity gpu =
	        TAU__INVENTORY__V1__RESOURCE_QUANTITY__INIT;

	cpu.name = (char *)"cpu";
	cpu.quantity = (char *)"96";
	gpu.name = (char *)"nvidia.com/gpu";
	gpu.quantity = (char *)"8";
	res[0] = &cpu;
	res[1] = &gpu;
	st->name = (char *)name;
	st->gpu_class = (char *)"h100";
	st->counted = true;
	st->connected = true;
	st->n_allocatable = 2;
	st->allocatable = res;
	st->last_heard_unix_ms = 1700000000000;
}

static void list_nodes(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__ListNodesResponse resp = TAU__INVENTORY__V1__LIST_NODES_RESPONSE__INIT;
	Tau__Inventory__V1__NodeStatus a = TAU__INVENTORY__V1__NODE_STATUS__INIT;
	Tau__Inventory__V1__NodeStatus b = TAU__INVENTORY__V1__NODE_STATUS__INIT;
	Tau__Inventory__V1__NodeStatus *nodes[2] = {&a, &b};
	Tau__Inventory__V1__ResourceQuantity *ra[2], *rb[2];
	char *reasons[1] = {(char *)"P1.ready: node is not Ready"};

	(void)ud;
	tau_rpc_message_free(msg);
	fill_status(&a, "gpu-node-1", ra);
	fill_status(&b, "gpu-node-2", rb);
	b.counted = false;
	b.n_reasons = 1;
	b.reasons = reasons;
	resp.n_nodes = 2;
	resp.nodes = nodes;
	tau_rpc_call_reply(call, &resp.base);
}

static void get_node(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__GetNodeRequest *req = (Tau__Inventory__V1__GetNodeRequest *)msg;
	Tau__Inventory__V1__GetNodeResponse resp = TAU__INVENTORY__V1__GET_NODE_RESPONSE__INIT;
	Tau__Inventory__V1__NodeStatus st = TAU__INVENTORY__V1__NODE_STATUS__INIT;
	Tau__Inventory__V1__NodeInventory inv = TAU__INVENTORY__V1__NODE_INVENTORY__INIT;
	Tau__Inventory__V1__LocalDevices dev = TAU__INVENTORY__V1__LOCAL_DEVICES__INIT;
	Tau__Inventory__V1__CsiDriver csi = TAU__INVENTORY__V1__CSI_DRIVER__INIT;
	Tau__Inventory__V1__CsiDriver *csis[1] = {&csi};
	Tau__Inventory__V1__NodeInventory__LabelsEntry label =
	        TAU__INVENTORY__V1__NODE_INVENTORY__LABELS_ENTRY__INIT;
	Tau__Inventory__V1__NodeInventory__LabelsEntry *labels[1] = {&label};
	Tau__Inventory__V1__ResourceQuantity *res[2];
	char peer[300], cn[300], tls[16];
	char *reasons[3] = {peer, cn, tls};

	(void)ud;
	if (strcmp(req->name, "missing") == 0) {
		tau_rpc_call_finish(call, TAU_RPC_NOT_FOUND, "node missing is not known");
		tau_rpc_message_free(msg);
		return;
	}
	fill_status(&st, req->name, res);
	snprintf(peer, sizeof(peer), "peer:%.250s",
	         tau_rpc_call_peer_identity(call) ? tau_rpc_call_peer_identity(call) : "-");
	snprintf(cn, sizeof(cn), "cn:%.250s",
	         tau_rpc_call_peer_common_name(call) ? tau_rpc_call_peer_common_name(call) : "-");
	snprintf(tls, sizeof(tls), "tls:%d", tau_rpc_call_peer_is_tls(call) ? 1 : 0);
	st.n_reasons = 3;
	st.reasons = reasons;
	inv.node_name = req->name;
	inv.node_uid = (char *)"0b6f7c1e-1111-2222-3333-444455556666";
	inv.gpu_class = (char *)"h100";
	label.key = (char *)"tau.azure.com/gpu-class";
	label.value = (char *)"h100";
	inv.n_labels = 1;
	inv.labels = labels;
	inv.n_allocatable = 2;
	inv.allocatable = res;
	inv.ready = true;
	inv.schedulable = true;
	inv.os = (char *)"linux";
	inv.kind = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_FLEX;
	csi.name = (char *)"disk.csi.azure.com";
	csi.in_csi_node = true;
	csi.socket_present = true;
	csi.managed_by = TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_AKS_ADDON;
	csi.supported = false;
	csi.detail = (char *)"Azure Disk is not usable on Flex nodes";
	inv.n_csi_drivers = 1;
	inv.csi_drivers = csis;
	dev.gpus_present = 8;
	dev.gpus_healthy = 8;
	dev.gpus_probed = true;
	dev.rdma_ports_total = 8;
	dev.rdma_ports_up = 7;
	inv.devices = &dev;
	inv.resource_version = (char *)"12345";
	inv.observed_unix_ms = 1700000000000;
	inv.agent_version = (char *)"0.1.0";
	inv.digest = (char *)"sha256:00";
	resp.status = &st;
	resp.inventory = &inv;
	tau_rpc_call_reply(call, &resp.base);
	tau_rpc_message_free(msg);
}

static void fill_pool(Tau__Inventory__V1__Pool *pool, Tau__Inventory__V1__Flavor **flavors,
                      Tau__Inventory__V1__Flavor *fl,
                      Tau__Inventory__V1__Flavor__ResourcesEntry **res,
                      Tau__Inventory__V1__Flavor__ResourcesEntry *r)
{
	tau__inventory__v1__flavor__init(fl);
	tau__inventory__v1__flavor__resources_entry__init(&r[0]);
	tau__inventory__v1__flavor__resources_entry__init(&r[1]);
	r[0].key = (char *)"cpu";
	r[0].value = (char *)"192";
	r[1].key = (char *)"nvidia.com/gpu";
	r[1].value = (char *)"16";
	res[0] = &r[0];
	res[1] = &r[1];
	fl->name = (char *)"h100";
	fl->node_count = 2;
	fl->n_resources = 2;
	fl->resources = res;
	flavors[0] = fl;
	pool->established = true;
	pool->n_flavors = 1;
	pool->flavors = flavors;
	pool->generation = 1;
	pool->computed_unix_ms = 1700000000000;
}

static void get_pool(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__Pool pool = TAU__INVENTORY__V1__POOL__INIT;
	Tau__Inventory__V1__Flavor *flavors[1], fl;
	Tau__Inventory__V1__Flavor__ResourcesEntry *res[2], r[2];

	(void)ud;
	tau_rpc_message_free(msg);
	fill_pool(&pool, flavors, &fl, res, r);
	tau_rpc_call_reply(call, &pool.base);
}

static void watch_pool(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__Pool pool = TAU__INVENTORY__V1__POOL__INIT;
	Tau__Inventory__V1__Flavor *flavors[1], fl;
	Tau__Inventory__V1__Flavor__ResourcesEntry *res[2], r[2];

	(void)ud;
	tau_rpc_message_free(msg);
	fill_pool(&pool, flavors, &fl, res, r);
	for (uint64_t g = 1; g <= 3; g++) {
		pool.generation = g;
		tau_rpc_call_send(call, &pool.base);
	}
	tau_rpc_call_finish(call, TAU_RPC_OK, NULL);
}

static void explain_node(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__ExplainNodeRequest *req = (Tau__Inventory__V1__ExplainNodeRequest *)msg;
	Tau__Inventory__V1__ExplainNodeResponse resp =
	        TAU__INVENTORY__V1__EXPLAIN_NODE_RESPONSE__INIT;
	Tau__Inventory__V1__Rule r1 = TAU__INVENTORY__V1__RULE__INIT;
	Tau__Inventory__V1__Rule r2 = TAU__INVENTORY__V1__RULE__INIT;
	Tau__Inventory__V1__Rule *rules[2] = {&r1, &r2};

	(void)ud;
	r1.name = (char *)"P1.linux";
	r1.pass = true;
	r1.detail = (char *)"kubernetes.io/os=linux";
	r2.name = (char *)"P1.ready";
	r2.pass = false;
	r2.detail = (char *)"Ready condition is False";
	resp.name = req->name;
	resp.counted = false;
	resp.n_rules = 2;
	resp.rules = rules;
	tau_rpc_call_reply(call, &resp.base);
	tau_rpc_message_free(msg);
}

static void fill_workspace(Tau__Inventory__V1__WorkspaceSummary *ws, const char *name,
                           Tau__Inventory__V1__Condition **conds, Tau__Inventory__V1__Condition *c)
{
	tau__inventory__v1__workspace_summary__init(ws);
	tau__inventory__v1__condition__init(c);
	c->type = (char *)"RBACReady";
	c->status = (char *)"True";
	c->reason = (char *)"Reconciled";
	c->message = (char *)"role binding in place";
	c->last_transition_unix_ms = 1700000000000;
	conds[0] = c;
	ws->name = (char *)name;
	ws->phase = (char *)"Ready";
	ws->namespace_ = (char *)name;
	ws->queue = (char *)"default";
	ws->n_conditions = 1;
	ws->conditions = conds;
}

static void list_workspaces(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__ListWorkspacesResponse resp =
	        TAU__INVENTORY__V1__LIST_WORKSPACES_RESPONSE__INIT;
	Tau__Inventory__V1__WorkspaceSummary ws, *list[1] = {&ws};
	Tau__Inventory__V1__Condition c, *conds[1];

	(void)ud;
	tau_rpc_message_free(msg);
	fill_workspace(&ws, "alpha", conds, &c);
	resp.n_workspaces = 1;
	resp.workspaces = list;
	tau_rpc_call_reply(call, &resp.base);
}

static void get_workspace(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__GetWorkspaceRequest *req =
	        (Tau__Inventory__V1__GetWorkspaceRequest *)msg;
	Tau__Inventory__V1__WorkspaceSummary ws;
	Tau__Inventory__V1__Condition c, *conds[1];

	(void)ud;
	if (strcmp(req->name, "alpha") != 0) {
		tau_rpc_call_finish(call, TAU_RPC_NOT_FOUND, "no such workspace");
	} else {
		fill_workspace(&ws, "alpha", conds, &c);
		tau_rpc_call_reply(call, &ws.base);
	}
	tau_rpc_message_free(msg);
}

/* Report: ack every report; the first of a stream must be a full inventory. */
static void report(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__AgentReport *rep = (Tau__Inventory__V1__AgentReport *)msg;
	Tau__Inventory__V1__ReportAck ack = TAU__INVENTORY__V1__REPORT_ACK__INIT;
	uintptr_t seen_full = (uintptr_t)tau_rpc_call_user(call);

	(void)ud;
	ack.seq = rep->seq;
	ack.heartbeat_interval_seconds = 15;
	ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK;
	if (rep->body_case == TAU__INVENTORY__V1__AGENT_REPORT__BODY__NOT_SET) {
		ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_REJECTED;
		ack.message = (char *)"report carries nothing";
	} else if (rep->body_case == TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY) {
		tau_rpc_call_set_user(call, (void *)(uintptr_t)1);
	} else if (!seen_full) {
		ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_RESEND_FULL;
		ack.message = (char *)"first report must be a full inventory";
	}
	tau_rpc_call_send(call, &ack.base);
	tau_rpc_message_free(msg);
}

static void report_half_close(tau_rpc_call *call, void *ud)
{
	(void)ud;
	tau_rpc_call_finish(call, TAU_RPC_OK, NULL);
}

int main(int argc, char **argv)
{
	const char *listen = "127.0.0.1:0";
	const char *cert = NULL, *key = NULL, *client_ca = NULL;
	bool require_client_cert = false;
	tau_rpc_server_tls tls = {0};
	tau_rpc_server_opts opts = {0};
	tau_rpc_server_stats stats;
	tau_rpc_server *srv = NULL;
	sigset_t sigs;
	int sig = 0;
	int port = 0;
#define M(p, k, req, resp, fn)                                                                     \
	{.path = "/tau.inventory.v1." p,                                                           \
	 .kind = (k),                                                                              \
	 .request = &tau__inventory__v1__##req##__descriptor,                                      \
	 .response = &tau__inventory__v1__##resp##__descriptor,                                    \
	 .on_start = check_token,                                                                  \
	 .on_message = (fn)}
	tau_rpc_method methods[] = {
	        M("QueryService/ListNodes", TAU_RPC_UNARY, list_nodes_request, list_nodes_response,
	          list_nodes),
	        M("QueryService/GetNode", TAU_RPC_UNARY, get_node_request, get_node_response,
	          get_node),
	        M("QueryService/GetPool", TAU_RPC_UNARY, get_pool_request, pool, get_pool),
	        M("QueryService/WatchPool", TAU_RPC_SERVER_STREAM, watch_pool_request, pool,
	          watch_pool),
	        M("QueryService/ExplainNode", TAU_RPC_UNARY, explain_node_request,
	          explain_node_response, explain_node),
	        M("QueryService/ListWorkspaces", TAU_RPC_UNARY, list_workspaces_request,
	          list_workspaces_response, list_workspaces),
	        M("QueryService/GetWorkspace", TAU_RPC_UNARY, get_workspace_request,
	          workspace_summary, get_workspace),
	        M("InventoryService/Report", TAU_RPC_BIDI, agent_report, report_ack, report),
	};
#undef M

	methods[7].on_half_close = report_half_close;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--require-client-cert") == 0) {
			require_client_cert = true;
			continue;
		}
		if (v == NULL) {
			fprintf(stderr, "usage: rpc_test_server [--listen A] [--token T] "
			                "[--tls-cert F --tls-key F [--client-ca F "
			                "[--require-client-cert]]] [--max-calls-per-peer N]\n");
			return 2;
		}
		if (strcmp(a, "--listen") == 0)
			listen = v;
		else if (strcmp(a, "--token") == 0)
			required_token = v;
		else if (strcmp(a, "--tls-cert") == 0)
			cert = v;
		else if (strcmp(a, "--tls-key") == 0)
			key = v;
		else if (strcmp(a, "--client-ca") == 0)
			client_ca = v;
		else if (strcmp(a, "--max-calls-per-peer") == 0)
			opts.max_calls_per_peer = atoi(v);
		else {
			fprintf(stderr, "rpc_test_server: unknown option %s\n", a);
			return 2;
		}
		i++;
	}
	/* Signals are taken by sigwait below; block them before any thread starts. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (tau_rpc_server_new(&srv, &opts) < 0 || tau_rpc_health_new(&health) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (tau_rpc_server_add_method(srv, &methods[i]) < 0)
			goto fail;
	if (tau_rpc_health_register(health, srv) < 0 ||
	    tau_rpc_health_set(health, "tau.inventory.v1.InventoryService",
	                       TAU_RPC_HEALTH_SERVING) < 0 ||
	    tau_rpc_health_set(health, "tau.inventory.v1.QueryService", TAU_RPC_HEALTH_SERVING) < 0)
		goto fail;
	if (cert != NULL) {
		char *cert_pem = NULL, *key_pem = NULL, *client_ca_pem = NULL;

		if (tau_file_read(&cert_pem, NULL, cert, PEM_MAX_BYTES, "--tls-cert") < 0 ||
		    tau_file_read(&key_pem, NULL, key ? key : "", PEM_MAX_BYTES, "--tls-key") < 0 ||
		    (client_ca != NULL && tau_file_read(&client_ca_pem, NULL, client_ca,
		                                        PEM_MAX_BYTES, "--client-ca") < 0)) {
			fprintf(stderr, "rpc_test_server: %s\n", tau_error_last()->msg);
			free(cert_pem);
			free(key_pem);
			return 2;
		}
		tls.cert_pem = cert_pem;
		tls.key_pem = key_pem;
		tls.client_ca_pem = client_ca_pem;
		tls.require_client_cert = require_client_cert;
	}
	if (tau_rpc_server_listen(srv, listen, cert ? &tls : NULL, &port) < 0 ||
	    tau_rpc_server_start(srv) < 0)
		goto fail;
	free((char *)tls.cert_pem);
	free((char *)tls.key_pem);
	free((char *)tls.client_ca_pem);
	printf("ready %d\n", port);
	fflush(stdout);
	sigwait(&sigs, &sig);
	tau_rpc_server_stats_get(srv, &stats);
	printf("stats refused_peer_cap=%llu refused_metadata=%llu\n",
	       (unsigned long long)stats.refused_peer_cap,
	       (unsigned long long)stats.refused_metadata);
	fflush(stdout);
	tau_rpc_health_set_all_not_serving(health);
	tau_rpc_server_shutdown(srv, 1000);
	tau_rpc_server_free(srv);
	tau_rpc_health_free(health);
	return 0;
fail:
	fprintf(stderr, "rpc_test_server: %s\n", tau_error_last()->msg);
	tau_rpc_server_free(srv);
	tau_rpc_health_free(health);
	return 1;
}
