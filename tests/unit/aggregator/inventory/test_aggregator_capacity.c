/*
 * Unit tests of free-now capacity from node truth: the per-class figures, the fit query (any
 * split, whole nodes, N per node, needing IB), unknown nodes never taken as free, bad
 * requests, and nodes whose GPUs count through DRA (in use while a ResourceClaim holds them).
 */
#include "dra_fixture.h"
#include "inventory/capacity.h"
#include "inventory/query.h"
#include "truth_fixture.h"
#include "truth_store.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Add Node `name` of `cls`; with `f`, its agent reports and its truth is decoded from f. */
static void add_node(tau_nodestore *s, const char *name, const char *cls, truth_fixture *f)
{
	truth_store_node(s, name, cls, f, true);
}

/*
 * h100: a (8 GPUs, 2 held, GPU-3 unhealthy: 5 free), b (8 free: a whole node), c (4 held,
 * ports down: 4 free), d (no agent: counts with its Node after the grace period), e (agent,
 * kubelet pod-resources unreachable).  a100: g (8 free).
 */
static tau_nodestore *cluster(void)
{
	tau_nodestore *s = NULL;
	truth_fixture *a = truth_fixture_node("a", 8, 2), *c = truth_fixture_node("c", 8, 4);
	truth_fixture *e = truth_fixture_node("e", 8, 0);

	truth_fixture_gpu_unhealthy(a, 3, "row remap pending");
	truth_fixture_ports_down(c);
	e->ld.pod_resources_probed = false;
	e->ld.pod_resources_allocatable_known = false;
	e->ld.n_pod_devices = 0;
	e->ld.pod_resources_note = TRUTH_S("kubelet pod-resources socket missing");
	assert_int_equal(tau_nodestore_new(&s, 0, 1000), 0);
	add_node(s, "a", "h100", a);
	add_node(s, "b", "h100", truth_fixture_node("b", 8, 0));
	add_node(s, "c", "h100", c);
	add_node(s, "d", "h100", NULL);
	add_node(s, "e", "h100", e);
	add_node(s, "g", "a100", truth_fixture_node("g", 8, 0));
	tau_nodestore_api_synced(s);
	tau_nodestore_tick(s, 2000); /* d counts with its Node's allocatable now */
	return s;
}

static const tau_query_opts opts = {.now_ms = 3000, .stale_after_ms = 60000};

static void class_figures(void **state)
{
	tau_nodestore *s = cluster();
	tau_class_capacity c;
	Tau__Inventory__V1__GetCapacityResponse *resp = NULL;

	(void)state;
	assert_int_equal(tau_pool_flavor_count(tau_nodestore_pool(s)), 2);
	assert_int_equal(tau_capacity_class(&c, s, 1, &opts), 0);
	assert_string_equal(c.gpu_class, "h100");
	assert_int_equal(c.nodes, 5);
	assert_int_equal(c.nodes_known, 3);
	assert_int_equal(c.nodes_unknown, 2); /* d: no agent; e: no pod-resources */
	assert_int_equal(c.nodes_degraded, 2);
	assert_int_equal(c.gpus_healthy, 23);
	assert_int_equal(c.gpus_in_use, 6);
	assert_int_equal(c.gpus_free, 17);
	assert_int_equal(c.whole_nodes_free, 1);
	assert_int_equal(tau_capacity_class(&c, s, 2, &opts), -TAU_ENOTFOUND);

	/* b's agent goes away: its figures become unknown, not free */
	tau_nodestore_set_connected(s, "b", false, 2500);
	assert_int_equal(tau_capacity_class(&c, s, 1, &opts), 0);
	assert_int_equal(c.nodes_unknown, 3);
	assert_int_equal(c.gpus_free, 9);
	assert_int_equal(c.whole_nodes_free, 0);

	assert_int_equal(tau_query_capacity(&resp, s, &opts), 0);
	assert_int_equal(resp->n_classes, 2);
	assert_string_equal(resp->classes[0]->gpu_class, "a100");
	assert_int_equal(resp->classes[0]->gpus_free, 8);
	assert_int_equal(resp->classes[0]->whole_nodes_free, 1);
	assert_int_equal(resp->classes[1]->gpus_free, 9);
	assert_int_equal(resp->classes[1]->nodes_unknown, 3);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	tau_nodestore_free(s);
}

/* Fit `req` and check fits and the placement "node:gpus,node:gpus". */
static void assert_fit(tau_nodestore *s, tau_fit_request req, bool fits, const char *want)
{
	tau_fit_result r = {0};
	char got[256] = "";
	size_t off = 0;

	assert_int_equal(tau_capacity_fit(&r, s, &req, &opts), 0);
	for (size_t i = 0; i < r.n_places; i++)
		off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%s:%u", i ? "," : "",
		                        r.places[i].node, r.places[i].gpus);
	if (r.fits != fits || strcmp(got, want) != 0)
		fail_msg("fit %u: fits %d placement \"%s\", want %d \"%s\" (%s)", req.gpus, r.fits,
		         got, fits, want, r.reason);
	tau_fit_result_clear(&r);
}

static void fit_modes(void **state)
{
	tau_nodestore *s = cluster();
	tau_fit_result r = {0};

	(void)state;
	/* any split: largest free first, as few nodes as possible */
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 8}, true, "b:8");
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 16}, true, "b:8,a:5,c:3");
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 18}, false, "");
	/* whole nodes: only b has every GPU healthy and free */
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 8, .whole_nodes = true}, true,
	           "b:8");
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 16, .whole_nodes = true},
	           false, "");
	/* 4 per node across 3 nodes: a (5 free), b, c (4 free) each give 4 */
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 12, .gpus_per_node = 4}, true,
	           "a:4,b:4,c:4");
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 10, .gpus_per_node = 5}, true,
	           "a:5,b:5");
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 18, .gpus_per_node = 6}, false,
	           "");
	/* needing IB leaves c (ports down) out */
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 13, .needs_ib = true}, true,
	           "b:8,a:5");
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 14, .needs_ib = true}, false,
	           "");
	/* the other class is apart */
	assert_fit(s, (tau_fit_request){.gpu_class = "a100", .gpus = 8}, true, "g:8");

	/* what a "does not fit" says: what can be had, and the unknown nodes by name */
	assert_int_equal(
	        tau_capacity_fit(&r, s, &(tau_fit_request){.gpu_class = "h100", .gpus = 18}, &opts),
	        0);
	assert_false(r.fits);
	assert_int_equal(r.nodes, 5);
	assert_int_equal(r.candidates, 3);
	assert_int_equal(r.candidate_gpus, 17);
	assert_int_equal(r.unknown_count, 2);
	assert_int_equal(r.n_unknown, 2);
	assert_string_equal(r.unknown[0], "d");
	assert_string_equal(r.unknown[1], "e");
	assert_string_equal(r.reason, "18 GPUs of class h100 do not fit now: 17 can be had on 3 of "
	                              "5 counted nodes; 2 nodes unknown (no live agent report with "
	                              "pod-resources; never taken as free)");
	tau_fit_result_clear(&r);

	/* b's agent goes stale: b is unknown, and 8 now takes a and c */
	tau_nodestore_set_connected(s, "b", false, 2500);
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 8}, true, "a:5,c:3");
	assert_fit(s, (tau_fit_request){.gpu_class = "h100", .gpus = 8, .whole_nodes = true}, false,
	           "");
	tau_nodestore_free(s);
}

static void assert_bad(tau_nodestore *s, tau_fit_request req, int code, const char *want)
{
	tau_fit_result r = {0};
	Tau__Inventory__V1__FitResponse *resp = NULL;
	Tau__Inventory__V1__FitRequest m = TAU__INVENTORY__V1__FIT_REQUEST__INIT;

	assert_int_equal(tau_capacity_fit(&r, s, &req, &opts), -code);
	assert_int_equal(r.n_places, 0);
	assert_null(r.places);
	if (strstr(tau_error_last()->msg, want) == NULL)
		fail_msg("error \"%s\" lacks \"%s\"", tau_error_last()->msg, want);
	/* the same through the query message */
	m.gpu_class = (char *)(req.gpu_class != NULL ? req.gpu_class : "");
	m.gpus = req.gpus;
	m.gpus_per_node = req.gpus_per_node;
	m.whole_nodes = req.whole_nodes;
	assert_int_equal(tau_query_fit(&resp, s, &m, &opts), -code);
	assert_null(resp);
}

static void fit_bad_requests(void **state)
{
	tau_nodestore *s = cluster();
	Tau__Inventory__V1__FitResponse *resp = NULL;
	Tau__Inventory__V1__FitRequest m = TAU__INVENTORY__V1__FIT_REQUEST__INIT;

	(void)state;
	assert_bad(s, (tau_fit_request){.gpu_class = "h100", .gpus = 0}, TAU_EINVAL,
	           "gpus must be at least 1");
	assert_bad(s, (tau_fit_request){.gpu_class = "h100", .gpus = TAU_FIT_MAX_GPUS + 1},
	           TAU_EINVAL, "gpus 65537 is over the limit of 65536");
	assert_bad(s, (tau_fit_request){.gpu_class = "", .gpus = 8}, TAU_EINVAL,
	           "gpu_class is required");
	assert_bad(s, (tau_fit_request){.gpu_class = "x100", .gpus = 8}, TAU_ENOTFOUND,
	           "GPU class x100 is not in the pool");
	assert_bad(s, (tau_fit_request){.gpu_class = "h100", .gpus = 10, .gpus_per_node = 4},
	           TAU_EINVAL, "gpus 10 is not a multiple of gpus_per_node 4");
	assert_bad(s,
	           (tau_fit_request){
	                   .gpu_class = "h100", .gpus = 8, .gpus_per_node = 4, .whole_nodes = true},
	           TAU_EINVAL, "whole_nodes and gpus_per_node exclude each other");

	/* and a good one through the message */
	m.gpu_class = (char *)"h100";
	m.gpus = 16;
	assert_int_equal(tau_query_fit(&resp, s, &m, &opts), 0);
	assert_true(resp->fits);
	assert_int_equal(resp->n_placement, 3);
	assert_string_equal(resp->placement[1]->node, "a");
	assert_int_equal(resp->placement[1]->gpus, 5);
	assert_int_equal(resp->placement[2]->gpus_free, 4);
	assert_int_equal(resp->unknown_count, 2);
	assert_int_equal(resp->n_unknown_nodes, 2);
	assert_string_equal(resp->reason, "16 GPUs of class h100 fit now on 3 nodes");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	tau_nodestore_free(s);
}

/* A store without agents answers "unknown", never "free". */
static void no_agents_no_free(void **state)
{
	tau_nodestore *s = NULL;
	tau_class_capacity c;
	tau_fit_result r = {0};

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 1000), 0);
	add_node(s, "x", "h100", NULL);
	add_node(s, "y", "h100", NULL);
	tau_nodestore_api_synced(s);
	tau_nodestore_tick(s, 2000);
	assert_int_equal(tau_capacity_class(&c, s, 0, &opts), 0);
	assert_int_equal(c.nodes, 2);
	assert_int_equal(c.nodes_unknown, 2);
	assert_int_equal(c.gpus_free, 0);
	assert_int_equal(
	        tau_capacity_fit(&r, s, &(tau_fit_request){.gpu_class = "h100", .gpus = 1}, &opts),
	        0);
	assert_false(r.fits);
	assert_int_equal(r.unknown_count, 2);
	tau_fit_result_clear(&r);
	tau_nodestore_free(s);
}

/*
 * Class "dra": x, y, z publish 8 GPUs each only through DRA (their Nodes advertise 0); w
 * advertises 8 device-plugin GPUs and publishes 8 DRA devices too (allocatable counts, never
 * both).  x: a claim holds gpu-0 and gpu-1, and devices the pool does not count as GPUs (one
 * of another driver, one its slices do not publish); y: nothing held; z: an agent that does
 * not report DRA devices; w: 3 device-plugin GPUs held.
 */
static tau_nodestore *dra_cluster(tau_dra_store **dra)
{
	tau_nodestore *s = NULL;
	truth_fixture *x = truth_fixture_node("x", 0, 0), *y = truth_fixture_node("y", 0, 0);
	const char *nodes[] = {"w", "x", "y", "z"};
	cJSON *j;

	assert_int_equal(tau_dra_store_new(dra), 0);
	j = dra_fixture_gpu_class("type", "gpu");
	assert_int_equal(tau_dra_store_class_upsert(*dra, j), 0);
	cJSON_Delete(j);
	for (size_t i = 0; i < 4; i++) {
		j = dra_fixture_gpu_slice(nodes[i], 8, 1);
		assert_int_equal(tau_dra_store_slice_upsert(*dra, j), 0);
		cJSON_Delete(j);
	}
	truth_fixture_dra_held(x, "dra.net", "x", "eth1");
	truth_fixture_dra_held(x, DRA_FIXTURE_DRIVER, "x", "gpu-0");
	truth_fixture_dra_held(x, DRA_FIXTURE_DRIVER, "x", "gpu-1");
	truth_fixture_dra_held(x, DRA_FIXTURE_DRIVER, "x", "gpu-9");
	y->ld.dra_devices_read = true;
	assert_int_equal(tau_nodestore_new(&s, 0, 1000), 0);
	assert_int_equal(tau_nodestore_set_dra(s, *dra), 0);
	truth_store_node_gpus(s, "w", "dra", 8, truth_fixture_node("w", 8, 3), true);
	truth_store_node_gpus(s, "x", "dra", 0, x, true);
	truth_store_node_gpus(s, "y", "dra", 0, y, true);
	truth_store_node_gpus(s, "z", "dra", 0, truth_fixture_node("z", 0, 0), true);
	tau_nodestore_api_synced(s);
	return s;
}

static void dra_gpus_in_use(void **state)
{
	tau_dra_store *dra = NULL;
	tau_nodestore *s = dra_cluster(&dra);
	tau_class_capacity c;
	tau_node_status st;
	tau_truth_gpus g;
	bool via = false;
	Tau__Inventory__V1__ListNodesResponse *list = NULL;
	char sum[64];

	(void)state;
	/* the pool counts 8 GPUs per node, w's from allocatable */
	assert_int_equal(tau_pool_flavor_count(tau_nodestore_pool(s)), 1);
	assert_string_equal(tau_pool_flavor_at(tau_nodestore_pool(s), 0)->resources[0].name,
	                    "nvidia.com/gpu");
	assert_int_equal(
	        tau_pool_sum_format(sum, sizeof(sum),
	                            &tau_pool_flavor_at(tau_nodestore_pool(s), 0)->resources[0]),
	        0);
	assert_string_equal(sum, "32");
	/* x: gpu-0 and gpu-1 held; eth1 (another driver) and gpu-9 (not published) are no GPUs */
	assert_int_equal(tau_nodestore_get(s, "x", &st), 0);
	g = tau_capacity_node_gpus(&st, tau_nodestore_dra_view(s), &via);
	assert_true(via);
	assert_true(g.known);
	assert_int_equal(g.devices, 8);
	assert_int_equal(g.in_use, 2);
	assert_int_equal(g.free, 6);
	/* w counts its device-plugin GPUs: its DRA devices do not count */
	assert_int_equal(tau_nodestore_get(s, "w", &st), 0);
	g = tau_capacity_node_gpus(&st, tau_nodestore_dra_view(s), &via);
	assert_false(via);
	assert_int_equal(g.free, 5);
	/* z's agent does not say which DRA devices claims hold: unknown, never free */
	assert_int_equal(tau_nodestore_get(s, "z", &st), 0);
	g = tau_capacity_node_gpus(&st, tau_nodestore_dra_view(s), &via);
	assert_true(via);
	assert_false(g.known);
	assert_int_equal(g.free, 0);

	assert_int_equal(tau_capacity_class(&c, s, 0, &opts), 0);
	assert_string_equal(c.gpu_class, "dra");
	assert_int_equal(c.nodes, 4);
	assert_int_equal(c.nodes_known, 3);
	assert_int_equal(c.nodes_unknown, 1);
	assert_int_equal(c.gpus_healthy, 24);
	assert_int_equal(c.gpus_in_use, 5);
	assert_int_equal(c.gpus_free, 19);
	assert_int_equal(c.whole_nodes_free, 1); /* y */
	assert_fit(s, (tau_fit_request){.gpu_class = "dra", .gpus = 14}, true, "y:8,x:6");
	assert_fit(s, (tau_fit_request){.gpu_class = "dra", .gpus = 16, .whole_nodes = true}, false,
	           "");
	assert_fit(s, (tau_fit_request){.gpu_class = "dra", .gpus = 20}, false, "");

	/* tau inventory nodes reads the same figures (HEALTH, FREE) */
	assert_int_equal(tau_query_list_nodes(&list, s, NULL, &opts), 0);
	assert_int_equal(list->n_nodes, 4);
	assert_false(list->nodes[0]->truth->gpus_through_dra);
	assert_int_equal(list->nodes[0]->truth->gpus_free, 5);
	assert_true(list->nodes[1]->truth->gpus_through_dra);
	assert_true(list->nodes[1]->truth->gpus_known);
	assert_int_equal(list->nodes[1]->truth->gpu_devices, 8);
	assert_int_equal(list->nodes[1]->truth->gpus_in_use, 2);
	assert_int_equal(list->nodes[1]->truth->gpus_free, 6);
	assert_false(list->nodes[3]->truth->gpus_known);
	assert_int_equal(list->nodes[3]->truth->gpus_free, 0);
	protobuf_c_message_free_unpacked(&list->base, NULL);

	/* the claim released: free again; the class deleted: the node has no GPUs to be free */
	{
		truth_fixture *x = truth_fixture_node("x", 0, 0);
		tau_nodetruth *t = NULL;

		x->ld.dra_devices_read = true;
		assert_int_equal(tau_nodetruth_decode(&t, &x->inv), 0);
		assert_int_equal(tau_nodestore_set_truth(s, "x", t), 0);
		free(x);
	}
	assert_fit(s, (tau_fit_request){.gpu_class = "dra", .gpus = 16, .whole_nodes = true}, true,
	           "x:8,y:8");
	assert_int_equal(tau_dra_store_class_delete(dra, DRA_FIXTURE_DRIVER), 0);
	assert_int_equal(tau_nodestore_set_dra(s, dra), 0);
	assert_int_equal(tau_nodestore_get(s, "x", &st), 0);
	g = tau_capacity_node_gpus(&st, tau_nodestore_dra_view(s), &via);
	assert_false(via);
	assert_int_equal(g.devices, 0);
	assert_fit(s, (tau_fit_request){.gpu_class = "dra", .gpus = 6}, false, "");
	assert_int_equal(
	        tau_pool_sum_format(sum, sizeof(sum),
	                            &tau_pool_flavor_at(tau_nodestore_pool(s), 0)->resources[0]),
	        0);
	assert_string_equal(sum, "8");
	tau_nodestore_free(s);
	tau_dra_store_free(dra);
}

/* The pool says how much of each sum comes through DRA, per flavor and per node. */
static void dra_part_of_the_pool(void **state)
{
	tau_dra_store *dra = NULL;
	tau_nodestore *s = dra_cluster(&dra);
	Tau__Inventory__V1__Pool *p = NULL;
	Tau__Inventory__V1__ListNodesResponse *list = NULL;
	const Tau__Inventory__V1__Flavor *f;
	cJSON *j = dra_fixture_gpu_slice("v", 8, 1);

	(void)state;
	/* v publishes 8 GPUs too but is not Ready: nothing of it counts */
	assert_int_equal(tau_dra_store_slice_upsert(dra, j), 0);
	cJSON_Delete(j);
	assert_int_equal(tau_nodestore_set_dra(s, dra), 0);
	truth_store_node_gpus(s, "v", "dra", 0, NULL, false);
	assert_int_equal(tau_query_pool(&p, s), 0);
	assert_int_equal(p->n_flavors, 1);
	f = p->flavors[0];
	assert_string_equal(f->name, "dra");
	assert_int_equal(f->node_count, 4);
	assert_int_equal(f->n_resources, 1);
	assert_string_equal(f->resources[0]->key, "nvidia.com/gpu");
	assert_string_equal(f->resources[0]->value, "32");
	/* x, y and z give 8 each through DRA; w's 8 are its allocatable */
	assert_int_equal(f->n_dra_resources, 1);
	assert_string_equal(f->dra_resources[0]->key, "nvidia.com/gpu");
	assert_string_equal(f->dra_resources[0]->value, "24");
	protobuf_c_message_free_unpacked(&p->base, NULL);

	/* per node: what its DRA devices add beside allocatable */
	assert_int_equal(tau_query_list_nodes(&list, s, NULL, &opts), 0);
	assert_int_equal(list->n_nodes, 5);
	assert_string_equal(list->nodes[0]->name, "v");
	assert_false(list->nodes[0]->counted);
	assert_int_equal(list->nodes[0]->n_dra_resources, 1);
	assert_string_equal(list->nodes[1]->name, "w");
	assert_int_equal(list->nodes[1]->n_dra_resources, 0);
	assert_int_equal(list->nodes[2]->n_dra_resources, 1);
	assert_string_equal(list->nodes[2]->dra_resources[0]->name, "nvidia.com/gpu");
	assert_string_equal(list->nodes[2]->dra_resources[0]->quantity, "8");
	protobuf_c_message_free_unpacked(&list->base, NULL);

	/* the class deleted: nothing comes through DRA, the pool has w's 8 */
	assert_int_equal(tau_dra_store_class_delete(dra, DRA_FIXTURE_DRIVER), 0);
	assert_int_equal(tau_nodestore_set_dra(s, dra), 0);
	assert_int_equal(tau_query_pool(&p, s), 0);
	assert_string_equal(p->flavors[0]->resources[0]->value, "8");
	assert_int_equal(p->flavors[0]->n_dra_resources, 0);
	protobuf_c_message_free_unpacked(&p->base, NULL);
	tau_nodestore_free(s);
	tau_dra_store_free(dra);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(class_figures),    cmocka_unit_test(fit_modes),
	        cmocka_unit_test(fit_bad_requests), cmocka_unit_test(no_agents_no_free),
	        cmocka_unit_test(dra_gpus_in_use),  cmocka_unit_test(dra_part_of_the_pool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
