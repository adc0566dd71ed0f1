/*
 * fuzz_allowlist.c - libFuzzer target for the namespace allowlist parser.
 *
 * Any bytes, as the allowlist file (a ConfigMap an operator, or anyone who can
 * write it, controls) holds, go to tau_ws_namespace_allowlist_parse
 * (aggregator/workspace/namespace.c).  It must either refuse them with a
 * documented code or return a list of valid, sorted, distinct DNS-1123 labels
 * within the caps, each of which the list then contains; and never read or
 * write out of bounds.
 */
#include "workspace/namespace.h"

#include "tau/error.h"
#include "tau/names.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tau_ws_allowlist *list = NULL;
	size_t n;
	int rc = tau_ws_namespace_allowlist_parse(&list, (const char *)data, size);

	if (rc != 0) {
		if (rc != -TAU_EINVAL && rc != -TAU_ETOOBIG && rc != -TAU_ETYPE &&
		    rc != -TAU_ENOMEM) {
			fprintf(stderr, "fuzz_allowlist: undocumented return %d\n", rc);
			abort();
		}
		if (list != NULL) {
			fprintf(stderr, "fuzz_allowlist: out set on failure\n");
			abort();
		}
		return 0;
	}
	n = tau_ws_namespace_allowlist_count(list);
	if (n > TAU_WS_ALLOWLIST_MAX_NAMES) {
		fprintf(stderr, "fuzz_allowlist: %zu names over the cap\n", n);
		abort();
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = tau_ws_namespace_allowlist_name(list, i);

		if (tau_names_check_dns1123_label(name) != 0 ||
		    !tau_ws_namespace_allowlist_contains(list, name) ||
		    (i > 0 && strcmp(tau_ws_namespace_allowlist_name(list, i - 1), name) >= 0)) {
			fprintf(stderr, "fuzz_allowlist: bad entry %zu\n", i);
			abort();
		}
	}
	tau_ws_namespace_allowlist_free(list);
	return 0;
}
