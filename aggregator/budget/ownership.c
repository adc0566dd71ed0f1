/*
 * ownership.c - whose an existing object is (desired.h): the kinds the budget writes, their
 * owner-UID annotations, and the check that guards every write (our managed-by label and the
 * expected owner's UID), so nothing another owner made is changed or deleted.
 */
#include "desired.h"

#include "helpers.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/names.h"
#include "tau/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each kind's name and the annotation that holds its owner's UID. */
static const struct kind_info {
	const char *name;
	const char *owner_annotation;
} kinds[] = {
        [TAU_BUDGET_RESOURCE_FLAVOR] = {"ResourceFlavor", TAU_BUDGET_ANNOTATION_CLUSTER_UID},
        [TAU_BUDGET_COHORT] = {"Cohort", TAU_BUDGET_ANNOTATION_TEAM_UID},
        [TAU_BUDGET_CLUSTER_QUEUE] = {"ClusterQueue", TAU_BUDGET_ANNOTATION_WORKSPACE_UID},
        [TAU_BUDGET_TEAM] = {"TauTeam", TAU_BUDGET_ANNOTATION_WORKSPACE_UID},
};

const char *tau_budget_kind_name(tau_budget_kind kind)
{
	return (size_t)kind < TAU_N_ELEMENTS(kinds) ? kinds[kind].name : "?";
}

const char *tau_budget_owner_annotation(tau_budget_kind kind)
{
	return (size_t)kind < TAU_N_ELEMENTS(kinds) ? kinds[kind].owner_annotation
	                                            : TAU_BUDGET_ANNOTATION_WORKSPACE_UID;
}

const char *tau_budget_ownership_name(tau_budget_ownership ownership)
{
	static const char *const names[] = {
	        [TAU_BUDGET_OWNED] = "Owned",
	        [TAU_BUDGET_OTHER_OWNER] = "OtherOwner",
	        [TAU_BUDGET_LEGACY_OWNER] = "LegacyOwner",
	        [TAU_BUDGET_FOREIGN] = "Foreign",
	};

	return tau_str_enum_name(names, TAU_N_ELEMENTS(names), (int)ownership, "Foreign");
}

tau_budget_ownership tau_budget_ownership_of(const cJSON *observed, tau_budget_kind kind,
                                             const char *expected_uid, char *why, size_t why_len)
{
	const char *key = tau_budget_owner_annotation(kind);
	const char *mb = tau_json_label(observed, TAU_BUDGET_LABEL_MANAGED_BY);
	const char *uid = tau_json_annotation(observed, key);

	tau_str_printf(why, why_len, "%s", "");
	if (!tau_str_eq_both_set(mb, TAU_BUDGET_MANAGED_BY)) {
		if (mb == NULL)
			tau_str_printf(why, why_len, "label %s is absent: not managed by TauGrid",
			               TAU_BUDGET_LABEL_MANAGED_BY);
		else
			tau_str_printf(why, why_len, "label %s is \"%.100s\", not \"%s\"",
			               TAU_BUDGET_LABEL_MANAGED_BY, mb, TAU_BUDGET_MANAGED_BY);
		return TAU_BUDGET_FOREIGN;
	}
	if (uid == NULL) {
		tau_str_printf(
		        why, why_len,
		        "legacy ownership metadata: labelled %s=%s but no %s annotation, so its "
		        "owner "
		        "cannot be proven",
		        TAU_BUDGET_LABEL_MANAGED_BY, TAU_BUDGET_MANAGED_BY, key);
		return TAU_BUDGET_LEGACY_OWNER;
	}
	if (expected_uid == NULL || expected_uid[0] == '\0' || strcmp(uid, expected_uid) != 0) {
		tau_str_printf(why, why_len,
		               "annotation %s is \"%.100s\", not \"%.100s\": another owner", key,
		               uid, expected_uid != NULL ? expected_uid : "");
		return TAU_BUDGET_OTHER_OWNER;
	}
	return TAU_BUDGET_OWNED;
}
