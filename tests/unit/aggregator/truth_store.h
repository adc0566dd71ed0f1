/*
 * truth_store.h - store a Node and, optionally, its agent's node truth in a node store, for
 * the aggregator's unit tests that read node truth from the store (capacity, snapshots).
 * Header-only: only those tests link the inventory.
 */
#ifndef TAU_TEST_TRUTH_STORE_H
#define TAU_TEST_TRUTH_STORE_H

#include "inventory/nodestore.h"
#include "truth_fixture.h"

#include <stdbool.h>
#include <stdlib.h>

/*
 * Add Node `name` of class `cls` advertising `gpus` nvidia.com/gpu (Ready as `ready` says);
 * with `f`, its agent reports and its truth is decoded from f, which is then freed.  Aborts
 * on any failure.
 */
static inline void truth_store_node_gpus(tau_nodestore *s, const char *name, const char *cls,
                                         int gpus, truth_fixture *f, bool ready)
{
	tau_node_facts nf = truth_fixture_facts(name, cls, gpus);

	nf.ready = ready;
	if (tau_nodestore_api_upsert(s, &nf) != 0)
		abort();
	if (f != NULL) {
		tau_nodetruth *t = NULL;

		if (tau_nodestore_report(s, &nf, 1000) < 0 ||
		    tau_nodetruth_decode(&t, &f->inv) != 0 ||
		    tau_nodestore_set_truth(s, name, t) != 0)
			abort();
		free(f);
	}
	tau_node_facts_clear(&nf);
}

/* truth_store_node_gpus with 8 GPUs. */
static inline void truth_store_node(tau_nodestore *s, const char *name, const char *cls,
                                    truth_fixture *f, bool ready)
{
	truth_store_node_gpus(s, name, cls, 8, f, ready);
}

#endif /* TAU_TEST_TRUTH_STORE_H */
