/* Unit tests of report validation, protobuf -> tau_node_facts, and the sequence rules. */
#include "inventory/report.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct fixture {
	Tau__Inventory__V1__NodeInventory inv;
	Tau__Inventory__V1__NodeInventory__LabelsEntry lab[3], *labp[3];
	Tau__Inventory__V1__ResourceQuantity res[3], *resp[3];
} fixture;

static void build(fixture *f)
{
	static const char *const lk[3] = {"tau.azure.com/gpu-class", "kubernetes.io/os", "a/b"};
	static const char *const lv[3] = {"h100", "linux", "x"};
	/* Deliberately unsorted and in mixed notations. */
	static const char *const rn[3] = {"nvidia.com/gpu", "cpu", "memory"};
	static const char *const rq[3] = {"8", "1.5", "1024Mi"};

	memset(f, 0, sizeof(*f));
	tau__inventory__v1__node_inventory__init(&f->inv);
	f->inv.node_name = (char *)"gpu-1";
	f->inv.node_uid = (char *)"uid-1";
	f->inv.gpu_class = (char *)"h100";
	f->inv.os = (char *)"linux";
	f->inv.ready = true;
	f->inv.schedulable = true;
	for (int i = 0; i < 3; i++) {
		tau__inventory__v1__node_inventory__labels_entry__init(&f->lab[i]);
		f->lab[i].key = (char *)lk[i];
		f->lab[i].value = (char *)lv[i];
		f->labp[i] = &f->lab[i];
		tau__inventory__v1__resource_quantity__init(&f->res[i]);
		f->res[i].name = (char *)rn[i];
		f->res[i].quantity = (char *)rq[i];
		f->resp[i] = &f->res[i];
	}
	f->inv.n_labels = 3;
	f->inv.labels = f->labp;
	f->inv.n_allocatable = 3;
	f->inv.allocatable = f->resp;
}

static void converts_and_sorts(void **state)
{
	fixture f;
	tau_node_facts facts = {0};
	char q[64];

	(void)state;
	build(&f);
	assert_int_equal(tau_report_to_facts(&facts, &f.inv), 0);
	assert_string_equal(facts.name, "gpu-1");
	assert_string_equal(facts.gpu_class, "h100");
	assert_string_equal(facts.os, "linux");
	assert_true(facts.ready && facts.schedulable && !facts.deleting);
	assert_int_equal(facts.n_labels, 3);
	assert_string_equal(facts.label_keys[0], "a/b");
	assert_string_equal(facts.label_keys[2], "tau.azure.com/gpu-class");
	assert_int_equal(facts.n_allocatable, 3);
	assert_string_equal(facts.allocatable[0].name, "cpu");
	assert_int_equal(tau_quantity_format(q, sizeof(q), &facts.allocatable[0].value), 0);
	assert_string_equal(q, "1500m");
	assert_string_equal(facts.allocatable[1].name, "memory");
	assert_int_equal(tau_quantity_format(q, sizeof(q), &facts.allocatable[1].value), 0);
	assert_string_equal(q, "1Gi");
	assert_null(facts.provider_id); /* empty string -> absent */
	tau_node_facts_clear(&facts);
}

/* The view has the same facts without copying a string: they point into the message. */
static void view_borrows(void **state)
{
	fixture f;
	tau_report_view v;
	tau_node_facts owned = {0};

	(void)state;
	build(&f);
	assert_int_equal(tau_report_view_facts(&v, &f.inv), 0);
	assert_ptr_equal(v.facts.name, f.inv.node_name);
	assert_ptr_equal(v.facts.gpu_class, f.inv.gpu_class);
	assert_null(v.facts.provider_id); /* empty string -> absent, as in owned facts */
	for (size_t i = 0; i < v.facts.n_labels; i++) {
		bool found = false;

		for (size_t k = 0; k < f.inv.n_labels; k++)
			found = found || (v.facts.label_keys[i] == f.inv.labels[k]->key &&
			                  v.facts.label_values[i] == f.inv.labels[k]->value);
		assert_true(found);
	}
	assert_int_equal(tau_report_to_facts(&owned, &f.inv), 0);
	assert_true(tau_node_facts_equal(&v.facts, &owned));
	tau_node_facts_clear(&owned);
	tau_report_view_clear(&v);
	assert_null(v.block);

	/* A refused inventory leaves the view zeroed (nothing to clear). */
	build(&f);
	f.lab[1].key = (char *)"a/b";
	assert_int_equal(tau_report_view_facts(&v, &f.inv), -TAU_EINVAL);
	assert_null(v.block);
	assert_int_equal(v.facts.n_labels, 0);
	assert_null(v.facts.name);
}

/* Each bad inventory is refused with the field named and the facts left zeroed. */
static void refuse(fixture *f, int code, const char *needle)
{
	tau_node_facts facts = {0};
	tau_node_facts zero = {0};

	assert_int_equal(tau_report_to_facts(&facts, &f->inv), -code);
	assert_memory_equal(&facts, &zero, sizeof(zero));
	if (strstr(tau_error_last()->msg, needle) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", tau_error_last()->msg, needle);
}

static void bad_names(void **state)
{
	fixture f;

	(void)state;
	build(&f);
	f.inv.node_name = (char *)"";
	refuse(&f, TAU_EINVAL, "node_name");
	build(&f);
	f.inv.node_name = (char *)"Bad_Name";
	refuse(&f, TAU_EINVAL, "node_name");
	build(&f);
	f.lab[2].key = (char *)"-bad";
	refuse(&f, TAU_EINVAL, "labels");
	build(&f);
	f.lab[2].value = (char *)"has space";
	refuse(&f, TAU_EINVAL, "labels[a/b]");
	build(&f);
	f.res[0].name = (char *)"nvidia.com/gpu!";
	refuse(&f, TAU_EINVAL, "resource name");
	build(&f);
	f.res[1].name = (char *)"nvidia.com/gpu"; /* listed twice */
	refuse(&f, TAU_EINVAL, "twice");
	build(&f);
	f.lab[1].key = (char *)"a/b";
	refuse(&f, TAU_EINVAL, "twice");
	build(&f);
	f.inv.gpu_class = (char *)"a100"; /* disagrees with the label */
	refuse(&f, TAU_EINVAL, "gpu_class");
	build(&f);
	f.inv.gpu_class = (char *)""; /* label present, field empty */
	refuse(&f, TAU_EINVAL, "gpu_class");
}

static void bad_quantities(void **state)
{
	fixture f;

	(void)state;
	build(&f);
	f.res[0].quantity = (char *)"8 GPUs";
	refuse(&f, TAU_EINVAL, "allocatable[nvidia.com/gpu]");
	build(&f);
	f.res[0].quantity = (char *)"";
	refuse(&f, TAU_EINVAL, "allocatable[nvidia.com/gpu]");
	build(&f);
	f.res[0].quantity = (char *)"-1";
	refuse(&f, TAU_EINVAL, "negative");
	build(&f);
	f.res[1].quantity = (char *)"1e9999999";
	refuse(&f, TAU_ERANGE, "allocatable[cpu]");
}

static void oversize(void **state)
{
	fixture f;
	char *problems[TAU_REPORT_MAX_PROBLEMS + 1];
	char longtext[TAU_REPORT_MAX_TEXT + 2];
	Tau__Inventory__V1__ResourceQuantity *many[TAU_REPORT_MAX_RESOURCES + 1];
	Tau__Inventory__V1__ResourceQuantity one = TAU__INVENTORY__V1__RESOURCE_QUANTITY__INIT;

	(void)state;
	for (size_t i = 0; i <= TAU_REPORT_MAX_PROBLEMS; i++)
		problems[i] = (char *)"p";
	build(&f);
	f.inv.n_problems = TAU_REPORT_MAX_PROBLEMS + 1;
	f.inv.problems = problems;
	refuse(&f, TAU_ETOOBIG, "problems");
	memset(longtext, 'x', sizeof(longtext) - 1);
	longtext[sizeof(longtext) - 1] = '\0';
	problems[0] = longtext;
	build(&f);
	f.inv.n_problems = 1;
	f.inv.problems = problems;
	refuse(&f, TAU_ETOOBIG, "problems[]");
	one.name = (char *)"cpu";
	one.quantity = (char *)"1";
	for (size_t i = 0; i <= TAU_REPORT_MAX_RESOURCES; i++)
		many[i] = &one;
	build(&f);
	f.inv.n_allocatable = TAU_REPORT_MAX_RESOURCES + 1;
	f.inv.allocatable = many;
	refuse(&f, TAU_ETOOBIG, "allocatable");
	build(&f);
	f.inv.digest = longtext;
	refuse(&f, TAU_ETOOBIG, "digest");
}

#define INV  TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY
#define HB   TAU__INVENTORY__V1__AGENT_REPORT__BODY_HEARTBEAT
#define STOP TAU__INVENTORY__V1__AGENT_REPORT__BODY_STOPPING
#define NONE TAU__INVENTORY__V1__AGENT_REPORT__BODY__NOT_SET

static void sequence_rules(void **state)
{
	tau_report_seq st = {0};

	(void)state;
	assert_int_equal(tau_report_seq_classify(&st, 0, INV), TAU_REPORT_INVALID_SEQ);
	assert_int_equal(tau_report_seq_classify(&st, 1, NONE), TAU_REPORT_INVALID_SEQ);
	/* First report must be an inventory. */
	assert_int_equal(tau_report_seq_classify(&st, 1, HB), TAU_REPORT_NEED_FULL);
	assert_int_equal(tau_report_seq_classify(&st, 1, INV), TAU_REPORT_PROCESS);
	tau_report_seq_accept(&st, 1, INV);
	assert_int_equal(tau_report_seq_classify(&st, 2, HB), TAU_REPORT_PROCESS);
	tau_report_seq_accept(&st, 2, HB);
	/* Duplicates and replays. */
	assert_int_equal(tau_report_seq_classify(&st, 2, HB), TAU_REPORT_DUPLICATE);
	assert_int_equal(tau_report_seq_classify(&st, 1, INV), TAU_REPORT_DUPLICATE);
	/* A gap: a heartbeat needs a full inventory and does not advance; an inventory does. */
	assert_int_equal(tau_report_seq_classify(&st, 5, HB), TAU_REPORT_NEED_FULL);
	assert_int_equal(st.last, 2);
	assert_int_equal(tau_report_seq_classify(&st, 7, INV), TAU_REPORT_PROCESS);
	tau_report_seq_accept(&st, 7, INV);
	assert_int_equal(st.last, 7);
	assert_int_equal(tau_report_seq_classify(&st, 8, STOP), TAU_REPORT_PROCESS);
}

/*
 * Which OK acks may replace an OK ack still waiting (tau_rpc_call_send_latest): the highest
 * seq accepted only. A duplicate's ack replacing the waiting ack of a newer report would
 * leave that report unacknowledged.
 */
static void ack_supersedes(void **state)
{
	tau_report_seq st = {0};
	tau_report_action act;

	(void)state;
	act = tau_report_seq_classify(&st, 1, INV);
	tau_report_seq_accept(&st, 1, INV);
	assert_true(tau_report_ack_supersedes(&st, 1, act));
	for (uint64_t seq = 2; seq <= 5; seq++) {
		act = tau_report_seq_classify(&st, seq, HB);
		assert_int_equal(act, TAU_REPORT_PROCESS);
		tau_report_seq_accept(&st, seq, HB);
		assert_true(tau_report_ack_supersedes(&st, seq, act));
	}
	/* A replay of 3 after 5: acked OK, but queued behind the ack of 5, never in its place. */
	act = tau_report_seq_classify(&st, 3, HB);
	assert_int_equal(act, TAU_REPORT_DUPLICATE);
	assert_false(tau_report_ack_supersedes(&st, 3, act));
	act = tau_report_seq_classify(&st, 5, INV);
	assert_int_equal(act, TAU_REPORT_DUPLICATE);
	assert_false(tau_report_ack_supersedes(&st, 5, act));

	/* Before any inventory a Stopping is taken in any position: one below `last` does not
	 * supersede the ack of the higher one. */
	memset(&st, 0, sizeof(st));
	act = tau_report_seq_classify(&st, 9, STOP);
	tau_report_seq_accept(&st, 9, STOP);
	assert_true(tau_report_ack_supersedes(&st, 9, act));
	act = tau_report_seq_classify(&st, 4, STOP);
	assert_int_equal(act, TAU_REPORT_PROCESS);
	tau_report_seq_accept(&st, 4, STOP);
	assert_false(tau_report_ack_supersedes(&st, 4, act));
}

/* The report's bytes as the agent sends them, into buf; returns the length. */
static size_t packed_report(uint8_t *buf, size_t cap, const Tau__Inventory__V1__NodeInventory *inv)
{
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	size_t n;

	rep.seq = 3;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY;
	rep.inventory = (Tau__Inventory__V1__NodeInventory *)inv;
	n = protobuf_c_message_get_packed_size(&rep.base);
	assert_true(n <= cap);
	return protobuf_c_message_pack(&rep.base, buf);
}

static uint64_t fingerprint_of(const Tau__Inventory__V1__NodeInventory *inv)
{
	uint8_t buf[2048];
	size_t n = packed_report(buf, sizeof(buf), inv);

	return tau_report_fingerprint(buf, n);
}

/*
 * The fingerprint stands for everything but the digest and the observation time: a new digest
 * or time over the same facts keeps it, and any other change moves it, with the digest kept
 * the same (the agent's digest is never trusted to say "unchanged").
 */
static void fingerprint_ignores_only_digest_and_time(void **state)
{
	fixture f;
	uint64_t base;
	char big[TAU_REPORT_MAX_ID + 2];

	(void)state;
	build(&f);
	f.inv.digest = (char *)"d0";
	f.inv.observed_unix_ms = 1000;
	base = fingerprint_of(&f.inv);
	assert_int_not_equal(base, 0);
	assert_int_equal(fingerprint_of(&f.inv), base);
	f.inv.digest = (char *)"d1";
	f.inv.observed_unix_ms = 2000;
	assert_int_equal(fingerprint_of(&f.inv), base);
	f.inv.digest = NULL; /* no digest at all: the same facts still */
	assert_int_equal(fingerprint_of(&f.inv), base);
	f.inv.digest = (char *)"d0";

	/* Same digest, one field changed: a different fingerprint each time. */
	f.res[0].quantity = (char *)"7";
	assert_int_not_equal(fingerprint_of(&f.inv), base);
	f.res[0].quantity = (char *)"8";
	f.lab[2].value = (char *)"y";
	assert_int_not_equal(fingerprint_of(&f.inv), base);
	f.lab[2].value = (char *)"x";
	f.inv.ready = false;
	assert_int_not_equal(fingerprint_of(&f.inv), base);
	f.inv.ready = true;
	f.inv.resource_version = (char *)"2";
	assert_int_not_equal(fingerprint_of(&f.inv), base);
	f.inv.resource_version = NULL;
	f.inv.agent_version = (char *)"v2";
	assert_int_not_equal(fingerprint_of(&f.inv), base);
	f.inv.agent_version = NULL;
	assert_int_equal(fingerprint_of(&f.inv), base);

	/* A digest over the limit gives none: the full path refuses it with its own error. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	f.inv.digest = big;
	assert_int_equal(fingerprint_of(&f.inv), 0);
	f.inv.digest = (char *)"d0";
	assert_int_equal(fingerprint_of(&f.inv), base);
}

/* Bytes whose fingerprint would not decide alone give none. */
static void fingerprint_none(void **state)
{
	fixture f;
	uint8_t buf[2048], two[4096];
	size_t n;
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	Tau__Inventory__V1__Heartbeat hb = TAU__INVENTORY__V1__HEARTBEAT__INIT;
	/* seq 1 and field 2 as a varint, not an inventory */
	const uint8_t varint_inventory[] = {0x08, 0x01, 0x10, 0x05};
	/* a group (wire type 3) */
	const uint8_t group[] = {0x08, 0x01, 0x13, 0x14};

	(void)state;
	build(&f);
	n = packed_report(buf, sizeof(buf), &f.inv);
	assert_int_not_equal(tau_report_fingerprint(buf, n), 0);
	/* truncated, empty, NULL */
	assert_int_equal(tau_report_fingerprint(buf, n - 1), 0);
	assert_int_equal(tau_report_fingerprint(buf, 0), 0);
	assert_int_equal(tau_report_fingerprint(NULL, 0), 0);
	/* two inventories one after the other (the decoder merges them) */
	memcpy(two, buf, n);
	memcpy(two + n, buf, n);
	assert_int_equal(tau_report_fingerprint(two, 2 * n), 0);
	/* a heartbeat */
	hb.digest = (char *)"d0";
	rep.seq = 2;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_HEARTBEAT;
	rep.heartbeat = &hb;
	n = protobuf_c_message_pack(&rep.base, buf);
	assert_int_equal(tau_report_fingerprint(buf, n), 0);
	assert_int_equal(tau_report_fingerprint(varint_inventory, sizeof(varint_inventory)), 0);
	assert_int_equal(tau_report_fingerprint(group, sizeof(group)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(converts_and_sorts),
	        cmocka_unit_test(bad_names),
	        cmocka_unit_test(bad_quantities),
	        cmocka_unit_test(oversize),
	        cmocka_unit_test(sequence_rules),
	        cmocka_unit_test(view_borrows),
	        cmocka_unit_test(ack_supersedes),
	        cmocka_unit_test(fingerprint_ignores_only_digest_and_time),
	        cmocka_unit_test(fingerprint_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
