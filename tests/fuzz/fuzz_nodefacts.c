/*
 * fuzz_nodefacts.c - libFuzzer target for the Node parser (tau/nodefacts).
 *
 * Any bytes go through the bounded JSON parser; whatever parses goes to
 * tau_node_facts_from_json.  Facts that come out must validate, copy, and
 * read the same after tau_node_facts_prune.  A broken property aborts.
 */
#include "tau/error.h"
#include "tau/json.h"
#include "tau/nodefacts.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_nodefacts: %s (%s)\n", what, tau_error_last()->msg);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *root = NULL;
	tau_node_facts a = {0}, b = {0}, c = {0};

	if (tau_json_parse(&root, (const char *)data, size, 1u << 20) < 0)
		return 0;
	if (tau_node_facts_from_json(&a, root) == 0) {
		check(tau_node_facts_validate(&a) == 0, "parsed facts do not validate");
		check(tau_node_facts_copy(&b, &a) == 0, "copy failed");
		check(strcmp(a.name, b.name) == 0 && a.n_allocatable == b.n_allocatable,
		      "copy differs");
		tau_node_facts_prune(root);
		check(tau_node_facts_from_json(&c, root) == 0, "pruned node no longer parses");
		check(c.ready == a.ready && c.schedulable == a.schedulable &&
		              c.deleting == a.deleting && c.n_labels == a.n_labels &&
		              c.n_allocatable == a.n_allocatable,
		      "pruned node reads differently");
	} else {
		check(a.name == NULL && a.n_labels == 0, "failed parse left facts behind");
	}
	tau_node_facts_clear(&a);
	tau_node_facts_clear(&b);
	tau_node_facts_clear(&c);
	cJSON_Delete(root);
	return 0;
}
