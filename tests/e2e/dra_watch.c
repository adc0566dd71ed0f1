/*
 * dra_watch.c - the aggregator's DRA watch (aggregator/inventory/drawatch.c) against kube-sim
 * seeded with tests/fixtures/dra (test_kube_client.py passes the seeds): what the sink receives
 * for the fixture DeviceClass, the two ResourceSlices and Kueue's ConfigMap; changes, deletes,
 * an unreadable and a missing Kueue Configuration; pruned objects; and a cluster that does not
 * serve resource.k8s.io/v1 (404 on the list, by a kube-sim fault) synced as empty, then
 * picked up once it is served.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/drawatch.h"
#include "kube_e2e.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/log.h"

#define NODE0  "aks-ndh100dra-20914731-vmss000000"
#define NODE1  "aks-ndh100dra-20914731-vmss000001"
#define SLICE0 NODE0 "-gpu.nvidia.com-7xk2p"
#define SLICE1 NODE1 "-gpu.nvidia.com-q9d4m"

/* ---- a sink that writes one line per call ---- */

typedef struct recorder {
	pthread_mutex_t lock;
	char log[16384];
	int pruned_violations; /* objects handed over with managedFields */
} recorder;

static void say(recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(recorder *r, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = strlen(r->log);
	va_start(ap, fmt);
	vsnprintf(r->log + n, sizeof(r->log) - n, fmt, ap);
	va_end(ap);
	n = strlen(r->log);
	if (n + 1 < sizeof(r->log)) {
		r->log[n] = ';';
		r->log[n + 1] = '\0';
	}
	pthread_mutex_unlock(&r->lock);
}

static void check_pruned(recorder *r, const cJSON *obj)
{
	if (tau_json_find(obj, "metadata.managedFields") != NULL) {
		pthread_mutex_lock(&r->lock);
		r->pruned_violations++;
		pthread_mutex_unlock(&r->lock);
	}
}

static void r_object(void *arg, tau_inventory_dra_kind kind, const cJSON *o, bool deleted)
{
	const char *what = kind == TAU_INVENTORY_DRA_SLICE ? "slice" : "class";

	if (deleted) {
		say(arg, "%s- %s", what, tau_json_str(o, "metadata.name"));
		return;
	}
	check_pruned(arg, o);
	if (kind == TAU_INVENTORY_DRA_SLICE) {
		int64_t gen = -1, devices = cJSON_GetArraySize(tau_json_find(o, "spec.devices"));

		tau_json_get_int(&gen, o, "spec.pool.generation");
		say(arg, "slice+ %s gen=%lld devices=%lld", tau_json_str(o, "metadata.name"),
		    (long long)gen, (long long)devices);
	} else {
		const char *ern = tau_json_str(o, "spec.extendedResourceName");

		say(arg, "class+ %s ern=%s", tau_json_str(o, "metadata.name"), ern ? ern : "-");
	}
}

static void r_kueue(void *arg, const tau_kueue_config *cfg, const char *error)
{
	if (error != NULL) {
		say(arg, "kueue error: %s", error);
	} else if (cfg == NULL) {
		say(arg, "kueue none");
	} else {
		char buf[512] = "";
		size_t n = 0;

		for (size_t i = 0; i < cfg->n_mappings && n < sizeof(buf); i++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s<-%s",
			                      cfg->mappings[i].name,
			                      cfg->mappings[i].device_classes[0]);
		say(arg, "kueue gate=%d%s", cfg->dra_gate, buf);
	}
}

static recorder rec = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const tau_inventory_dra_sink sink = {
        .arg = &rec, .object = r_object, .kueue_config = r_kueue};

static void reset_log(void)
{
	pthread_mutex_lock(&rec.lock);
	rec.log[0] = '\0';
	pthread_mutex_unlock(&rec.lock);
}

static bool log_has(void *arg)
{
	bool yes;

	pthread_mutex_lock(&rec.lock);
	yes = strstr(rec.log, (const char *)arg) != NULL;
	pthread_mutex_unlock(&rec.lock);
	return yes;
}

static void expect_line(const char *line)
{
	if (!e2e_wait(log_has, (void *)line, 20000)) {
		pthread_mutex_lock(&rec.lock);
		fail_msg("sink never got \"%s\"; it got: %s", line, rec.log);
	}
}

static bool synced(void *arg)
{
	return tau_inventory_dra_watch_synced(arg);
}

typedef struct running {
	tau_kube_client *client;
	tau_kube_loop *loop;
	tau_inventory_dra_watch *watch;
} running;

static void start(running *r)
{
	r->client = e2e_client(200, 0);
	assert_int_equal(tau_kube_loop_new(&r->loop, r->client), 0);
	assert_int_equal(tau_inventory_dra_watch_new(&r->watch, r->loop, NULL, &sink), 0);
	tau_inventory_dra_watch_start(r->watch);
	assert_int_equal(tau_kube_loop_start_thread(r->loop), 0);
}

static void stop(running *r)
{
	tau_kube_loop_join(r->loop);
	tau_inventory_dra_watch_free(r->watch);
	tau_kube_loop_free(r->loop);
	tau_kube_client_free(r->client);
}

static void put_configmap(tau_kube_client *c, const char *doc_json_string)
{
	cJSON *cm = NULL, *got = NULL;

	assert_int_equal(tau_kube_get(&cm, c, &tau_kube_res_configmaps, "kueue-system",
	                              "kueue-manager-config"),
	                 0);
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(cm, "data"),
	                                       "controller_manager_config.yaml",
	                                       cJSON_CreateString(doc_json_string));
	assert_int_equal(tau_kube_update(&got, c, &tau_kube_res_configmaps, "kueue-system", cm), 0);
	cJSON_Delete(got);
	cJSON_Delete(cm);
}

/* The seeded fixtures reach the sink as they are, pruned; changes and deletes follow. */
static void fixtures_then_changes(void **state)
{
	running r = {0};
	tau_kube_client *c = e2e_client(200, 0);
	cJSON *out = NULL;

	(void)state;
	reset_log();
	start(&r);
	assert_true(e2e_wait(synced, r.watch, 20000));
	expect_line("class+ gpu.nvidia.com ern=nvidia.com/gpu");
	expect_line("slice+ " SLICE0 " gen=1 devices=8");
	expect_line("slice+ " SLICE1 " gen=2 devices=4");
	expect_line("kueue gate=1 nvidia.com/gpu<-gpu.nvidia.com");
	assert_int_equal(rec.pruned_violations, 0);

	/* Kueue's configuration becomes unreadable: an error, never "no mappings". */
	reset_log();
	put_configmap(c, "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
	                 "resources:\n  deviceClassMappings:\n  - name: nvidia.com/gpu\n");
	expect_line("kueue error: ConfigMap kueue-system/kueue-manager-config key "
	            "controller_manager_config.yaml: kueue configuration: "
	            "resources.deviceClassMappings[0].deviceClassNames must list at least one "
	            "DeviceClass");
	assert_false(log_has((void *)"kueue none"));
	/* ... and is mended with another mapping */
	reset_log();
	put_configmap(c, "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
	                 "resources:\n  deviceClassMappings:\n  - name: example.com/accel\n"
	                 "    deviceClassNames: [mig.nvidia.com]\n");
	expect_line("kueue gate=-1 example.com/accel<-mig.nvidia.com");
	/* deleted: Kueue runs on its defaults */
	reset_log();
	assert_int_equal(tau_kube_delete(&out, c, &tau_kube_res_configmaps, "kueue-system",
	                                 "kueue-manager-config", NULL),
	                 0);
	cJSON_Delete(out);
	out = NULL;
	expect_line("kueue none");

	/* The pool generation completes: the second slice of generation 2 appears. */
	reset_log();
	{
		cJSON *s = e2e_json(
		        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
		        "\"metadata\":{\"name\":\"" NODE1 "-gpu.nvidia.com-z2v8r\"},"
		        "\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"" NODE1 "\","
		        "\"pool\":{\"name\":\"" NODE1
		        "\",\"generation\":2,\"resourceSliceCount\":2},"
		        "\"devices\":[{\"name\":\"gpu-4\"},{\"name\":\"gpu-5\"}]}}");

		assert_int_equal(
		        tau_kube_create(&out, c, &tau_inventory_res_resourceslices, NULL, s), 0);
		cJSON_Delete(out);
		out = NULL;
		cJSON_Delete(s);
	}
	expect_line("slice+ " NODE1 "-gpu.nvidia.com-z2v8r gen=2 devices=2");
	/* the class loses its extended resource name, then goes */
	reset_log();
	assert_int_equal(tau_kube_patch(&out, c, &tau_inventory_res_deviceclasses, NULL,
	                                "gpu.nvidia.com", NULL, TAU_KUBE_PATCH_MERGE,
	                                "{\"spec\":{\"extendedResourceName\":null}}"),
	                 0);
	cJSON_Delete(out);
	out = NULL;
	expect_line("class+ gpu.nvidia.com ern=-");
	assert_int_equal(tau_kube_delete(&out, c, &tau_inventory_res_deviceclasses, NULL,
	                                 "gpu.nvidia.com", NULL),
	                 0);
	cJSON_Delete(out);
	out = NULL;
	expect_line("class- gpu.nvidia.com");
	assert_int_equal(
	        tau_kube_delete(&out, c, &tau_inventory_res_resourceslices, NULL, SLICE0, NULL), 0);
	cJSON_Delete(out);
	expect_line("slice- " SLICE0);
	assert_int_equal(rec.pruned_violations, 0);
	stop(&r);
	tau_kube_client_free(c);
}

/* resource.k8s.io/v1 not served (404): synced with nothing; served later: picked up. */
static void not_served_counts_as_empty(void **state)
{
	running r = {0};
	tau_kube_client *c = e2e_client(200, 0);

	(void)state;
	assert_int_equal(e2e_faults(c, "PUT",
	                            "{\"rules\":[{\"verb\":\"list\",\"resource\":"
	                            "\"resourceslices,deviceclasses\",\"status\":404,"
	                            "\"message\":\"the server could not find the requested "
	                            "resource\"}]}"),
	                 0);
	reset_log();
	start(&r);
	assert_true(e2e_wait(synced, r.watch, 20000));
	assert_false(log_has((void *)"slice+"));
	assert_false(log_has((void *)"class+"));
	assert_int_equal(e2e_faults(c, "DELETE", NULL), 0);
	/* the informers list again on their backoff (800 ms, doubling) and find the objects */
	expect_line("slice+ " NODE1 "-gpu.nvidia.com-z2v8r gen=2 devices=2");
	stop(&r);
	tau_kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(fixtures_then_changes),
	        cmocka_unit_test(not_served_counts_as_empty),
	};

	tau_log_init_from_env(); /* TAU_LOG_LEVEL=debug shows the informers' requests */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
