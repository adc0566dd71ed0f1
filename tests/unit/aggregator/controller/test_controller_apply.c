/*
 * test_controller_apply.c - ensure, merge, delete and prune of owned objects
 * against the fake API server: create when absent, no write when nothing
 * differs, correction in place keeping other writers' fields, a 409 on update
 * re-read and retried, replace of an immutable difference, objects not ours
 * left alone, UID preconditions, finalizers, and pruning what the desired
 * state no longer names; the finalizer check and the write-body member helper.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/apply.h"
#include "fake_kube.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"

static const tau_kube_resource res_things = {"test.tau", "v1", "things", true};

static const char *const owned_annotations[] = {"example.com/extra"};

typedef struct env {
	fake_kube *fk;
	tau_kube_client *c;
	tau_apply_owner owner;
	tau_apply_kind kind;
} env;

static int setup(void **state)
{
	env *e = calloc(1, sizeof(*e));

	assert_int_equal(fake_kube_start(&e->fk), 0);
	assert_int_equal(fake_kube_client(&e->c, e->fk), 0);
	e->owner = (tau_apply_owner){.managed_by_label = "app.kubernetes.io/managed-by",
	                             .managed_by = "taugrid",
	                             .owner_label = "tau.azure.com/workspace",
	                             .owner = "alpha",
	                             .uid_annotation = "tau.azure.com/workspace-uid",
	                             .uid = "uid-alpha"};
	e->kind = (tau_apply_kind){.res = &res_things,
	                           .owned_annotations = owned_annotations,
	                           .n_owned_annotations = 1};
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	env *e = *state;

	tau_kube_client_free(e->c);
	fake_kube_stop(e->fk);
	free(e);
	return 0;
}

/* A desired Thing owned by alpha with spec.queue = `queue`. */
static cJSON *desired(const char *name, const char *queue)
{
	char json[768];

	snprintf(json, sizeof(json),
	         "{\"apiVersion\":\"test.tau/v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":\"%s\","
	         "\"namespace\":\"ns\",\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","
	         "\"tau.azure.com/workspace\":\"alpha\"},\"annotations\":{"
	         "\"tau.azure.com/workspace-uid\":\"uid-alpha\"}},\"spec\":{\"queue\":\"%s\"}}",
	         name, queue);
	return cJSON_Parse(json);
}

static const char *str(const cJSON *o, const char *path)
{
	const char *s = NULL;

	return tau_json_get_string(&s, o, path) == 0 ? s : NULL;
}

static const char *label(const cJSON *o, const char *section, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
	                                         section),
	        key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_create_then_unchanged(void **state)
{
	env *e = *state;
	cJSON *d = desired("t1", "q1"), *got;
	tau_apply_result r;
	uint64_t writes;

	assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d, &e->owner), 0);
	assert_int_equal(r.outcome, TAU_APPLY_CREATED);
	assert_string_equal(tau_apply_outcome_name(r.outcome), "created");
	got = fake_kube_get(e->fk, &res_things, "ns", "t1");
	assert_non_null(got);
	assert_string_equal(str(got, "spec.queue"), "q1");
	cJSON_Delete(got);

	writes = fake_kube_requests(e->fk, "PUT", NULL) + fake_kube_requests(e->fk, "POST", NULL);
	assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d, &e->owner), 0);
	assert_int_equal(r.outcome, TAU_APPLY_UNCHANGED);
	assert_string_equal(r.detail, "");
	assert_int_equal(fake_kube_requests(e->fk, "PUT", NULL) +
	                         fake_kube_requests(e->fk, "POST", NULL),
	                 writes);
	cJSON_Delete(d);
}

/* Drift on an owned field is corrected in place; another writer's label stays. */
static void test_update_keeps_foreign_fields(void **state)
{
	env *e = *state;
	cJSON *d = desired("t2", "q1"), *got;
	tau_apply_result r;

	assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d, &e->owner), 0);
	assert_int_equal(fake_kube_patch(e->fk, &res_things, "ns", "t2",
	                                 "{\"metadata\":{\"labels\":{\"team\":\"x\"},"
	                                 "\"annotations\":{\"example.com/extra\":\"1\"}},"
	                                 "\"spec\":{\"queue\":\"other\",\"defaulted\":true}}"),
	                 0);
	assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d, &e->owner), 0);
	assert_int_equal(r.outcome, TAU_APPLY_UPDATED);
	assert_string_equal(r.detail, "spec.queue is \"other\", want \"q1\"");
	got = fake_kube_get(e->fk, &res_things, "ns", "t2");
	assert_string_equal(str(got, "spec.queue"), "q1");
	assert_true(cJSON_IsTrue(tau_json_find(got, "spec.defaulted")));
	assert_string_equal(label(got, "labels", "team"), "x");
	/* An annotation we own but no longer want is removed. */
	assert_null(label(got, "annotations", "example.com/extra"));
	cJSON_Delete(got);
	cJSON_Delete(d);
}

/* A 409 on update (someone wrote in between) is re-read and retried. */
static void test_update_conflict_retried(void **state)
{
	env *e = *state;
	cJSON *d = desired("t3", "q1"), *d2 = desired("t3", "q2"), *got;
	tau_apply_result r;
	uint64_t puts;

	assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d, &e->owner), 0);
	puts = fake_kube_requests(e->fk, "PUT", &res_things);
	fake_kube_fail(e->fk, "PUT", &res_things, 409, 1);
	assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d2, &e->owner), 0);
	assert_int_equal(r.outcome, TAU_APPLY_UPDATED);
	assert_int_equal(fake_kube_requests(e->fk, "PUT", &res_things), puts + 2);
	got = fake_kube_get(e->fk, &res_things, "ns", "t3");
	assert_string_equal(str(got, "spec.queue"), "q2");
	cJSON_Delete(got);

	/* Three conflicts in a row give up with the API's reason. */
	fake_kube_fail(e->fk, "PUT", &res_things, 409, 3);
	assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d, &e->owner), -TAU_ECONFLICT);
	assert_non_null(strstr(r.detail, "update failed"));
	cJSON_Delete(d);
	cJSON_Delete(d2);
}

static bool queue_immutable(const cJSON *desired_obj, const cJSON *observed, const char *what)
{
	(void)desired_obj;
	(void)observed;
	return strncmp(what, "spec.queue", 10) == 0;
}

/* An immutable difference replaces the object (a new UID). */
static void test_replace_immutable(void **state)
{
	env *e = *state;
	cJSON *d = desired("t4", "q1"), *d2 = desired("t4", "q2"), *before, *after;
	tau_apply_kind k = e->kind;
	tau_apply_result r;

	k.must_replace = queue_immutable;
	assert_int_equal(tau_apply_ensure(&r, e->c, &k, d, &e->owner), 0);
	before = fake_kube_get(e->fk, &res_things, "ns", "t4");
	assert_int_equal(tau_apply_ensure(&r, e->c, &k, d2, &e->owner), 0);
	assert_int_equal(r.outcome, TAU_APPLY_REPLACED);
	after = fake_kube_get(e->fk, &res_things, "ns", "t4");
	assert_string_equal(str(after, "spec.queue"), "q2");
	assert_string_not_equal(str(after, "metadata.uid"), str(before, "metadata.uid"));
	cJSON_Delete(before);
	cJSON_Delete(after);
	cJSON_Delete(d);
	cJSON_Delete(d2);
}

/* An object of the same name that is not ours is left alone and the cause said. */
static void test_not_owned_left_alone(void **state)
{
	env *e = *state;
	cJSON *d = desired("t5", "q1"), *got;
	tau_apply_result r;
	uint64_t puts;

	assert_int_equal(fake_kube_seed(e->fk, &res_things,
	                                "{\"metadata\":{\"name\":\"t5\",\"namespace\":\"ns\","
	                                "\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","
	                                "\"tau.azure.com/workspace\":\"beta\"}},"
	                                "\"spec\":{\"queue\":\"theirs\"}}"),
	                 0);
	puts = fake_kube_requests(e->fk, "PUT", NULL);
	assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d, &e->owner), 0);
	assert_int_equal(r.outcome, TAU_APPLY_NOT_OWNED);
	assert_string_equal(r.detail, "label tau.azure.com/workspace is \"beta\", not \"alpha\"");
	assert_int_equal(fake_kube_requests(e->fk, "PUT", NULL), puts);
	got = fake_kube_get(e->fk, &res_things, "ns", "t5");
	assert_string_equal(str(got, "spec.queue"), "theirs");
	cJSON_Delete(got);

	assert_int_equal(tau_apply_delete_owned(&r, e->c, &res_things, "ns", "t5", &e->owner),
	                 -TAU_EPERM);
	assert_int_equal(r.outcome, TAU_APPLY_NOT_OWNED);
	assert_int_equal(fake_kube_count(e->fk, &res_things) > 0, 1);
	cJSON_Delete(d);
}

/* Deletes check the owner UID, honour finalizers and report absence. */
static void test_delete_owned(void **state)
{
	env *e = *state;
	cJSON *d = desired("t6", "q1");
	tau_apply_owner stale = e->owner;
	tau_apply_result r;

	assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d, &e->owner), 0);
	stale.uid = "uid-of-an-older-alpha";
	assert_int_equal(tau_apply_delete_owned(&r, e->c, &res_things, "ns", "t6", &stale),
	                 -TAU_EPERM);
	assert_string_equal(r.detail, "annotation tau.azure.com/workspace-uid is \"uid-alpha\", "
	                              "not \"uid-of-an-older-alpha\"");

	assert_int_equal(fake_kube_patch(e->fk, &res_things, "ns", "t6",
	                                 "{\"metadata\":{\"finalizers\":[\"x/hold\"]}}"),
	                 0);
	assert_int_equal(tau_apply_delete_owned(&r, e->c, &res_things, "ns", "t6", &e->owner), 0);
	assert_int_equal(r.outcome, TAU_APPLY_DELETED);
	assert_int_equal(tau_apply_delete_owned(&r, e->c, &res_things, "ns", "t6", &e->owner), 0);
	assert_int_equal(r.outcome, TAU_APPLY_DELETING);
	assert_int_equal(fake_kube_patch(e->fk, &res_things, "ns", "t6",
	                                 "{\"metadata\":{\"finalizers\":null}}"),
	                 0);
	assert_null(fake_kube_get(e->fk, &res_things, "ns", "t6"));
	assert_int_equal(tau_apply_delete_owned(&r, e->c, &res_things, "ns", "t6", &e->owner), 0);
	assert_int_equal(r.outcome, TAU_APPLY_ABSENT);
	cJSON_Delete(d);
}

typedef struct pruned {
	char names[8][32];
	int rcs[8];
	size_t n;
} pruned;

static void on_pruned(void *arg, const char *ns, const char *name, const tau_apply_result *r,
                      int rc)
{
	pruned *p = arg;

	(void)ns;
	(void)r;
	if (p->n < 8) {
		snprintf(p->names[p->n], sizeof(p->names[0]), "%s", name);
		p->rcs[p->n++] = rc;
	}
}

/* Every owned object the desired state no longer names goes; kept and foreign ones stay. */
static void test_prune(void **state)
{
	env *e = *state;
	const char *keep[] = {"p-keep"};
	tau_apply_result r;
	pruned p = {0};
	size_t deleted = 0;
	cJSON *foreign;

	for (int i = 0; i < 3; i++) {
		static const char *const names[] = {"p-keep", "p-old1", "p-old2"};
		cJSON *d = desired(names[i], "q");

		assert_int_equal(tau_apply_ensure(&r, e->c, &e->kind, d, &e->owner), 0);
		cJSON_Delete(d);
	}
	/* Labelled for alpha but annotated for another alpha: not ours to delete. */
	assert_int_equal(
	        fake_kube_seed(e->fk, &res_things,
	                       "{\"metadata\":{\"name\":\"p-foreign\",\"namespace\":\"ns\","
	                       "\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","
	                       "\"tau.azure.com/workspace\":\"alpha\"},\"annotations\":{"
	                       "\"tau.azure.com/workspace-uid\":\"uid-other\"}}}"),
	        0);
	assert_int_equal(tau_apply_prune(&deleted, e->c, &res_things, "ns", &e->owner, keep, 1,
	                                 on_pruned, &p),
	                 0);
	assert_int_equal(deleted, 2);
	assert_int_equal(p.n, 3);
	foreign = fake_kube_get(e->fk, &res_things, "ns", "p-keep");
	assert_non_null(foreign);
	cJSON_Delete(foreign);
	assert_null(fake_kube_get(e->fk, &res_things, "ns", "p-old1"));
	assert_null(fake_kube_get(e->fk, &res_things, "ns", "p-old2"));
	foreign = fake_kube_get(e->fk, &res_things, "ns", "p-foreign");
	assert_non_null(foreign);
	cJSON_Delete(foreign);
	for (size_t i = 0; i < p.n; i++)
		assert_int_equal(p.rcs[i], strcmp(p.names[i], "p-foreign") == 0 ? -TAU_EPERM : 0);
}

/* The default comparison, pure. */
static void test_diff_default(void **state)
{
	cJSON *d = desired("x", "q1"), *o = desired("x", "q1");
	char what[256];
	bool differs = true;

	(void)state;
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(o, "spec"), "serverDefault", "y");
	cJSON_AddObjectToObject(o, "status");
	assert_int_equal(tau_apply_diff_default(&differs, what, sizeof(what), d, o), 0);
	assert_false(differs);
	assert_string_equal(what, "");

	cJSON_ReplaceItemInObject(
	        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
	                                         "labels"),
	        "tau.azure.com/workspace", cJSON_CreateString("beta"));
	assert_int_equal(tau_apply_diff_default(&differs, what, sizeof(what), d, o), 0);
	assert_true(differs);
	assert_string_equal(
	        what, "metadata.labels[\"tau.azure.com/workspace\"] is \"beta\", want \"alpha\"");
	assert_int_equal(tau_apply_diff_default(&differs, what, sizeof(what), NULL, o),
	                 -TAU_EINVAL);
	cJSON_Delete(d);
	cJSON_Delete(o);
}

/* The finalizer check and the object member made for a write body, pure. */
static void test_finalizer_and_object_member(void **state)
{
	cJSON *o = cJSON_Parse("{\"metadata\":{\"finalizers\":[1,\"a/b\"]},\"spec\":3}");
	cJSON *md;

	(void)state;
	assert_true(tau_apply_has_finalizer(o, "a/b"));
	assert_false(tau_apply_has_finalizer(o, "a/c"));
	assert_false(tau_apply_has_finalizer(NULL, "a/b"));
	md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
	assert_ptr_equal(tau_apply_object_member(o, "metadata"), md);
	assert_true(cJSON_IsObject(tau_apply_object_member(o, "spec")));
	assert_int_equal(cJSON_GetArraySize(tau_apply_object_member(o, "spec")), 0);
	assert_true(cJSON_IsObject(tau_apply_object_member(o, "status")));
	assert_int_equal(cJSON_GetArraySize(o), 3);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_create_then_unchanged, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_update_keeps_foreign_fields, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_update_conflict_retried, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_replace_immutable, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_not_owned_left_alone, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_delete_owned, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
	        cmocka_unit_test(test_diff_default),
	        cmocka_unit_test(test_finalizer_and_object_member),
	};

	tau_log_set_level(TAU_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
