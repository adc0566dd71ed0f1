/*
 * test_workspace_namespace.c - namespace resolution, one table row per
 * rule of docs/workspaces.md "Namespace resolution", plus the allowlist parser and
 * the age order.
 */
#include "workspace/namespace.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define T0 "2024-05-01T10:00:00Z"
#define T1 "2024-05-02T10:00:00Z"

enum { ABSENT = 0, EXISTS = 1 };

typedef struct ns_case {
	const char *rule;
	/* input */
	const char *workspace;
	const char *target;
	bool create, adopt;
	tau_ws_ns_mode mode;
	const char *allow[3]; /* Operator allowlist, NULL-terminated; allow_null: no list */
	bool allow_null;
	bool map_set;
	tau_ws_ns_map_entry map[3];
	size_t n_map;
	bool share;
	int obs;
	bool terminating;
	const char *obs_managed_by, *obs_workspace;
	tau_ws_claim claims[3];
	size_t n_claims;
	const char *ts;
	bool established;
	/* expected */
	bool resolved;
	const char *ns;
	const char *reason;
	bool retryable;
	bool create_out, adopt_out, owned_out, shared_out;
	const char *msg_has;
} ns_case;

#define OTHER(ws, ns, ts, est)                                                                     \
	{                                                                                          \
		(ws), (ns), (ts), (est)                                                            \
	}

static const ns_case cases[] = {
        /* Defaults and names. */
        {.rule = "default namespace is the workspace name, created when asked",
         .workspace = "alpha",
         .create = true,
         .resolved = true,
         .ns = "alpha",
         .create_out = true,
         .owned_out = true},
        {.rule = "spec.target.namespace differs from the workspace name",
         .workspace = "alpha",
         .target = "ml-alpha",
         .create = true,
         .resolved = true,
         .ns = "ml-alpha",
         .create_out = true,
         .owned_out = true},
        {.rule = "empty target means the default",
         .workspace = "alpha",
         .target = "",
         .create = true,
         .resolved = true,
         .ns = "alpha",
         .create_out = true,
         .owned_out = true},
        {.rule = "workspace name must be a DNS-1123 label",
         .workspace = "Alpha",
         .reason = "InvalidWorkspaceName",
         .msg_has = "\"Alpha\""},
        {.rule = "target must be a DNS-1123 label",
         .workspace = "alpha",
         .target = "ml_alpha",
         .reason = "InvalidNamespaceName",
         .msg_has = "\"ml_alpha\""},
        {.rule = "target longer than 63 bytes",
         .workspace = "alpha",
         .target = "a123456789012345678901234567890123456789012345678901234567890123",
         .reason = "InvalidNamespaceName",
         .msg_has = "no more than 63 characters"},
        /* Reserved targets. */
        {.rule = "the system namespace is reserved",
         .workspace = "alpha",
         .target = "tau-system",
         .reason = "NamespaceReserved",
         .ns = "tau-system",
         .msg_has = "system namespace"},
        {.rule = "kube-system is reserved",
         .workspace = "alpha",
         .target = "kube-system",
         .reason = "NamespaceReserved",
         .msg_has = "kube-*"},
        {.rule = "any kube-* is reserved",
         .workspace = "alpha",
         .target = "kube-node-lease",
         .reason = "NamespaceReserved"},
        {.rule = "default is reserved",
         .workspace = "alpha",
         .target = "default",
         .reason = "NamespaceReserved"},
        {.rule = "a workspace named default does not default into it",
         .workspace = "default",
         .create = true,
         .reason = "NamespaceReserved"},
        {.rule = "kubex is not kube-*",
         .workspace = "alpha",
         .target = "kubex",
         .create = true,
         .resolved = true,
         .ns = "kubex",
         .create_out = true,
         .owned_out = true},
        /* Explicit map. */
        {.rule = "map decides the namespace",
         .workspace = "alpha",
         .create = true,
         .map_set = true,
         .map = {{"alpha", "team1-prod-alpha"}, {"beta", "team1-beta"}},
         .n_map = 2,
         .resolved = true,
         .ns = "team1-prod-alpha",
         .create_out = true,
         .owned_out = true},
        {.rule = "unmapped workspace fails closed",
         .workspace = "gamma",
         .create = true,
         .map_set = true,
         .map = {{"alpha", "team1-alpha"}},
         .n_map = 1,
         .reason = "WorkspaceNotMapped",
         .msg_has = "workspace gamma"},
        {.rule = "an empty map maps nothing",
         .workspace = "alpha",
         .create = true,
         .map_set = true,
         .reason = "WorkspaceNotMapped"},
        {.rule = "spec target disagreeing with the map",
         .workspace = "alpha",
         .target = "elsewhere",
         .map_set = true,
         .map = {{"alpha", "team1-alpha"}},
         .n_map = 1,
         .reason = "NamespaceMapMismatch",
         .msg_has = "team1-alpha"},
        {.rule = "spec target agreeing with the map",
         .workspace = "alpha",
         .target = "team1-alpha",
         .create = true,
         .map_set = true,
         .map = {{"alpha", "team1-alpha"}},
         .n_map = 1,
         .resolved = true,
         .ns = "team1-alpha",
         .create_out = true,
         .owned_out = true},
        {.rule = "mapped value is validated",
         .workspace = "alpha",
         .map_set = true,
         .map = {{"alpha", "Team1"}},
         .n_map = 1,
         .reason = "InvalidNamespaceName",
         .msg_has = "namespace map"},
        {.rule = "mapped value cannot be reserved",
         .workspace = "alpha",
         .map_set = true,
         .map = {{"alpha", "kube-public"}},
         .n_map = 1,
         .reason = "NamespaceReserved"},
        /* Operator mode. */
        {.rule = "operator: not on the allowlist yet is retryable",
         .workspace = "alpha",
         .target = "ml-alpha",
         .mode = TAU_WS_NS_OPERATOR,
         .allow = {"ml-beta"},
         .obs = EXISTS,
         .reason = "NamespaceNotAllowed",
         .retryable = true,
         .ns = "ml-alpha",
         .msg_has = "not on the operator namespace allowlist yet"},
        {.rule = "operator: no allowlist loaded means nothing allowed",
         .workspace = "alpha",
         .mode = TAU_WS_NS_OPERATOR,
         .allow_null = true,
         .obs = EXISTS,
         .reason = "NamespaceNotAllowed",
         .retryable = true},
        {.rule = "operator: allowed and present is used, never owned",
         .workspace = "alpha",
         .target = "ml-alpha",
         .create = true,
         .mode = TAU_WS_NS_OPERATOR,
         .allow = {"ml-alpha"},
         .obs = EXISTS,
         .resolved = true,
         .ns = "ml-alpha"},
        {.rule = "operator: allowed but absent is never created",
         .workspace = "alpha",
         .target = "ml-alpha",
         .create = true,
         .mode = TAU_WS_NS_OPERATOR,
         .allow = {"ml-alpha"},
         .reason = "NamespaceNotFound",
         .retryable = true,
         .msg_has = "Operator namespace mode"},
        {.rule = "operator: labelled for this workspace is still not owned",
         .workspace = "alpha",
         .mode = TAU_WS_NS_OPERATOR,
         .allow = {"alpha"},
         .obs = EXISTS,
         .obs_managed_by = TAU_WS_MANAGED_BY,
         .obs_workspace = "alpha",
         .resolved = true,
         .ns = "alpha"},
        {.rule = "operator: reserved beats the allowlist",
         .workspace = "alpha",
         .target = "default",
         .mode = TAU_WS_NS_OPERATOR,
         .allow = {"default"},
         .obs = EXISTS,
         .reason = "NamespaceReserved"},
        {.rule = "operator: labelled for another workspace is refused",
         .workspace = "alpha",
         .target = "shared",
         .mode = TAU_WS_NS_OPERATOR,
         .allow = {"shared"},
         .obs = EXISTS,
         .obs_workspace = "beta",
         .claims = {OTHER("beta", "shared", T0, true)},
         .n_claims = 1,
         .reason = "NamespaceOwnedByOtherWorkspace",
         .retryable = true,
         .msg_has = "owned by workspace beta"},
        /* Two workspaces, one namespace. */
        {.rule = "second claimant is refused without sharing",
         .workspace = "alpha",
         .target = "ml",
         .create = true,
         .ts = T1,
         .claims = {OTHER("beta", "ml", T0, false)},
         .n_claims = 1,
         .reason = "NamespaceClaimed",
         .retryable = true,
         .msg_has = "claimed by workspace beta"},
        {.rule = "the older claimant wins",
         .workspace = "alpha",
         .target = "ml",
         .create = true,
         .ts = T0,
         .claims = {OTHER("beta", "ml", T1, false)},
         .n_claims = 1,
         .resolved = true,
         .ns = "ml",
         .create_out = true,
         .owned_out = true},
        {.rule = "same age: the name decides",
         .workspace = "beta",
         .target = "ml",
         .create = true,
         .ts = T0,
         .claims = {OTHER("alpha", "ml", T0, false)},
         .n_claims = 1,
         .reason = "NamespaceClaimed",
         .retryable = true,
         .msg_has = "workspace alpha"},
        {.rule = "the established holder wins over an older newcomer",
         .workspace = "alpha",
         .target = "ml",
         .create = true,
         .ts = T0,
         .claims = {OTHER("beta", "ml", T1, true)},
         .n_claims = 1,
         .reason = "NamespaceClaimed",
         .retryable = true},
        {.rule = "the established holder keeps it",
         .workspace = "beta",
         .target = "ml",
         .ts = T1,
         .established = true,
         .obs = EXISTS,
         .claims = {OTHER("alpha", "ml", T0, false)},
         .n_claims = 1,
         .resolved = true,
         .ns = "ml"},
        {.rule = "our own labels count as holding it before status does",
         .workspace = "beta",
         .target = "ml",
         .ts = T1,
         .obs = EXISTS,
         .obs_workspace = "beta",
         .obs_managed_by = TAU_WS_MANAGED_BY,
         .claims = {OTHER("alpha", "ml", T0, false)},
         .n_claims = 1,
         .resolved = true,
         .ns = "ml",
         .owned_out = true},
        {.rule = "the oldest of several winners is named",
         .workspace = "delta",
         .target = "ml",
         .ts = T1,
         .claims = {OTHER("gamma", "ml", T1, false), OTHER("beta", "ml", T0, false),
                    OTHER("alpha", "ml", T1, false)},
         .n_claims = 3,
         .reason = "NamespaceClaimed",
         .retryable = true,
         .msg_has = "claimed by workspace beta"},
        {.rule = "sharing allowed: both resolve",
         .workspace = "alpha",
         .target = "ml",
         .create = true,
         .ts = T1,
         .share = true,
         .claims = {OTHER("beta", "ml", T0, false)},
         .n_claims = 1,
         .resolved = true,
         .ns = "ml",
         .create_out = true,
         .owned_out = true,
         .shared_out = true},
        {.rule = "sharing: the labelled owner's partner uses it, never owns it",
         .workspace = "alpha",
         .target = "ml",
         .create = true,
         .share = true,
         .obs = EXISTS,
         .obs_managed_by = TAU_WS_MANAGED_BY,
         .obs_workspace = "beta",
         .claims = {OTHER("beta", "ml", T0, true)},
         .n_claims = 1,
         .resolved = true,
         .ns = "ml",
         .shared_out = true},
        {.rule = "claims of other namespaces do not matter",
         .workspace = "alpha",
         .create = true,
         .claims = {OTHER("beta", "beta", T0, true), OTHER("gamma", NULL, T0, false)},
         .n_claims = 2,
         .resolved = true,
         .ns = "alpha",
         .create_out = true,
         .owned_out = true},
        /* Ownership labels. */
        {.rule = "labelled for another live workspace: refused, naming it",
         .workspace = "alpha",
         .target = "ml",
         .create = true,
         .adopt = true,
         .obs = EXISTS,
         .obs_managed_by = TAU_WS_MANAGED_BY,
         .obs_workspace = "beta",
         .claims = {OTHER("beta", "ml-beta", T0, true)},
         .n_claims = 1,
         .reason = "NamespaceOwnedByOtherWorkspace",
         .retryable = true,
         .msg_has = "namespace ml is owned by workspace beta"},
        {.rule = "labelled for a workspace that is gone: never adopted",
         .workspace = "alpha",
         .target = "ml",
         .create = true,
         .adopt = true,
         .obs = EXISTS,
         .obs_managed_by = TAU_WS_MANAGED_BY,
         .obs_workspace = "old",
         .reason = "NamespaceOwnedByOtherWorkspace",
         .retryable = true,
         .msg_has = "no longer exists"},
        {.rule = "sharing does not cover a labelled namespace the owner does not use",
         .workspace = "alpha",
         .target = "ml",
         .share = true,
         .obs = EXISTS,
         .obs_workspace = "beta",
         .claims = {OTHER("beta", "ml-beta", T0, true)},
         .n_claims = 1,
         .reason = "NamespaceOwnedByOtherWorkspace",
         .retryable = true},
        {.rule = "AlreadyExists with our labels: proceed as owner",
         .workspace = "alpha",
         .create = true,
         .obs = EXISTS,
         .obs_managed_by = TAU_WS_MANAGED_BY,
         .obs_workspace = "alpha",
         .resolved = true,
         .ns = "alpha",
         .owned_out = true},
        {.rule = "AlreadyExists unlabelled: not adopted by default",
         .workspace = "alpha",
         .create = true,
         .obs = EXISTS,
         .reason = "NamespaceNotOwned",
         .msg_has = "spec.target.adopt"},
        {.rule = "AlreadyExists unlabelled with adopt: adopted",
         .workspace = "alpha",
         .create = true,
         .adopt = true,
         .obs = EXISTS,
         .resolved = true,
         .ns = "alpha",
         .adopt_out = true,
         .owned_out = true},
        {.rule = "managed-by alone does not name this workspace",
         .workspace = "alpha",
         .create = true,
         .obs = EXISTS,
         .obs_managed_by = TAU_WS_MANAGED_BY,
         .reason = "NamespaceNotOwned"},
        {.rule = "pre-provisioned namespace used without owning it",
         .workspace = "alpha",
         .target = "ml",
         .obs = EXISTS,
         .resolved = true,
         .ns = "ml"},
        {.rule = "absent without createNamespace waits",
         .workspace = "alpha",
         .target = "ml",
         .reason = "NamespaceNotFound",
         .retryable = true,
         .msg_has = "createNamespace is false"},
        {.rule = "terminating namespace waits",
         .workspace = "alpha",
         .create = true,
         .obs = EXISTS,
         .terminating = true,
         .obs_workspace = "alpha",
         .obs_managed_by = TAU_WS_MANAGED_BY,
         .reason = "NamespaceTerminating",
         .retryable = true,
         .msg_has = "being deleted"},
};

static void test_resolve_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const ns_case *c = &cases[i];
		tau_ws_allowlist *allow = NULL;
		tau_ws_ns_observed obs = {.exists = c->obs == EXISTS,
		                          .terminating = c->terminating,
		                          .managed_by = c->obs_managed_by,
		                          .workspace = c->obs_workspace};
		tau_ws_ns_input in = {
		        .workspace = c->workspace,
		        .creation_timestamp = c->ts != NULL ? c->ts : T0,
		        .established = c->established,
		        .target_namespace = c->target,
		        .create_namespace = c->create,
		        .adopt = c->adopt,
		        .system_namespace = "tau-system",
		        .mode = c->mode,
		        .map_set = c->map_set,
		        .map = c->map,
		        .n_map = c->n_map,
		        .allow_shared = c->share,
		        .observed = c->obs == EXISTS ? &obs : NULL,
		        .claims = c->claims,
		        .n_claims = c->n_claims,
		};
		tau_ws_ns_result r;
		size_t n_allow = 0;

		while (n_allow < ARRAY_LEN(c->allow) && c->allow[n_allow] != NULL)
			n_allow++;
		if (!c->allow_null)
			assert_int_equal(
			        tau_ws_namespace_allowlist_from_names(&allow, c->allow, n_allow),
			        0);
		in.allowlist = allow;
		print_message("rule: %s\n", c->rule);
		assert_int_equal(tau_ws_namespace_resolve(&r, &in), 0);
		if (c->resolved != r.resolved)
			fail_msg("%s: resolved=%d (%s: %s)", c->rule, r.resolved,
			         r.refusal.reason ? r.refusal.reason : "-", r.refusal.message);
		if (c->resolved) {
			assert_null(r.refusal.reason);
			assert_string_equal(r.namespace_name, c->ns);
			assert_int_equal(r.create, c->create_out);
			assert_int_equal(r.adopt, c->adopt_out);
			assert_int_equal(r.owned, c->owned_out);
			assert_int_equal(r.shared, c->shared_out);
		} else {
			assert_non_null(r.refusal.reason);
			assert_string_equal(r.refusal.reason, c->reason);
			assert_int_equal(r.refusal.retryable, c->retryable);
			assert_false(r.create || r.owned || r.adopt);
			if (c->ns != NULL)
				assert_string_equal(r.namespace_name, c->ns);
			assert_true(strlen(r.refusal.message) > 0);
		}
		if (c->msg_has != NULL && strstr(r.refusal.message, c->msg_has) == NULL)
			fail_msg("%s: message \"%s\" lacks \"%s\"", c->rule, r.refusal.message,
			         c->msg_has);
		tau_ws_namespace_allowlist_free(allow);
	}
}

/* Every rule's reason appears in the table (and so in docs/workspaces.md). */
static void test_every_reason_covered(void **state)
{
	static const char *const reasons[] = {
	        "InvalidWorkspaceName", "WorkspaceNotMapped",
	        "NamespaceMapMismatch", "InvalidNamespaceName",
	        "NamespaceReserved",    "NamespaceNotAllowed",
	        "NamespaceClaimed",     "NamespaceOwnedByOtherWorkspace",
	        "NamespaceNotOwned",    "NamespaceNotFound",
	        "NamespaceTerminating"};
	char path[4096];
	FILE *f;
	char *doc;
	long len;

	(void)state;
	for (size_t r = 0; r < ARRAY_LEN(reasons); r++) {
		bool found = false;

		for (size_t i = 0; i < ARRAY_LEN(cases) && !found; i++)
			found = cases[i].reason != NULL && strcmp(cases[i].reason, reasons[r]) == 0;
		if (!found)
			fail_msg("no table row for %s", reasons[r]);
	}
#ifdef TAU_SOURCE_DIR
	snprintf(path, sizeof(path), "%s/docs/workspaces.md", TAU_SOURCE_DIR);
#else
	snprintf(path, sizeof(path), "docs/workspaces.md");
#endif
	f = fopen(path, "rb");
	if (f == NULL) {
		print_message("skip doc check: %s not found\n", path);
		return;
	}
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	doc = calloc(1, (size_t)len + 1);
	assert_non_null(doc);
	assert_int_equal(fread(doc, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	for (size_t r = 0; r < ARRAY_LEN(reasons); r++)
		if (strstr(doc, reasons[r]) == NULL)
			fail_msg("docs/workspaces.md does not list %s", reasons[r]);
	free(doc);
}

static void test_candidate_is_shared_rule(void **state)
{
	tau_ws_ns_map_entry map[] = {{"alpha", "m-alpha"}};
	tau_ws_ns_input in = {.workspace = "alpha", .system_namespace = "tau-system"};
	tau_ws_refusal why;
	const char *ns = NULL;

	(void)state;
	assert_int_equal(tau_ws_namespace_candidate(&ns, &why, &in), 0);
	assert_string_equal(ns, "alpha");
	assert_null(why.reason);
	in.target_namespace = "ml-alpha";
	assert_int_equal(tau_ws_namespace_candidate(&ns, &why, &in), 0);
	assert_string_equal(ns, "ml-alpha");
	in.target_namespace = NULL;
	in.map_set = true;
	in.map = map;
	in.n_map = 1;
	assert_int_equal(tau_ws_namespace_candidate(&ns, &why, &in), 0);
	assert_string_equal(ns, "m-alpha");
	in.workspace = "beta";
	ns = "untouched";
	assert_int_equal(tau_ws_namespace_candidate(&ns, &why, &in), -TAU_EINVAL);
	assert_string_equal(ns, "untouched");
	assert_string_equal(why.reason, "WorkspaceNotMapped");
	assert_non_null(strstr(tau_error_last()->msg, "namespaceMap"));
}

static void test_resolve_bad_input(void **state)
{
	tau_ws_ns_input in = {.workspace = NULL, .system_namespace = "tau-system"};
	tau_ws_ns_result r;

	(void)state;
	assert_int_equal(tau_ws_namespace_resolve(&r, &in), -TAU_EINVAL);
	assert_int_equal(tau_ws_namespace_resolve(&r, NULL), -TAU_EINVAL);
	assert_int_equal(tau_ws_namespace_resolve(NULL, &in), -TAU_EINVAL);
}

static void test_observe(void **state)
{
	static const char doc[] =
	        "{\"metadata\":{\"name\":\"ml\",\"deletionTimestamp\":\"2024-05-01T00:00:00Z\","
	        "\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","
	        "\"tau.azure.com/workspace\":\"alpha\",\"other\":\"x\"}}}";
	cJSON *ns = cJSON_Parse(doc);
	cJSON *bad = cJSON_Parse("{\"metadata\":{\"labels\":{\"tau.azure.com/workspace\":3}}}");
	tau_ws_ns_observed o;

	(void)state;
	assert_int_equal(tau_ws_namespace_observe(&o, ns), 0);
	assert_true(o.exists);
	assert_true(o.terminating);
	assert_string_equal(o.managed_by, "taugrid");
	assert_string_equal(o.workspace, "alpha");
	assert_int_equal(tau_ws_namespace_observe(&o, NULL), 0);
	assert_false(o.exists);
	assert_null(o.workspace);
	assert_int_equal(tau_ws_namespace_observe(&o, bad), -TAU_ETYPE);
	cJSON_Delete(ns);
	cJSON_Delete(bad);
}

/* ------------------------------------------------------------------------------------------ */
/* Allowlist                                                                                   */

typedef struct allow_case {
	const char *text;
	int rc;
	size_t count;
	const char *first, *last;
	const char *msg_has;
} allow_case;

static const allow_case allow_cases[] = {
        {"[\"ml-beta\", \"ml-alpha\", \"ml-beta\"]", 0, 2, "ml-alpha", "ml-beta", NULL},
        {"[]", 0, 0, NULL, NULL, NULL},
        {" \n[ \"a\" ]\n", 0, 1, "a", "a", NULL},
        {"", -TAU_EINVAL, 0, NULL, NULL, "namespace allowlist"},
        {"[\"a\",", -TAU_EINVAL, 0, NULL, NULL, "malformed JSON"},
        {"{\"a\": 1}", -TAU_EINVAL, 0, NULL, NULL, "holds an object, want a JSON array"},
        {"\"ml-alpha\"", -TAU_EINVAL, 0, NULL, NULL, "holds a string"},
        {"null", -TAU_EINVAL, 0, NULL, NULL, "holds null"},
        {"[\"a\", 7]", -TAU_ETYPE, 0, NULL, NULL, "element 1 is a number"},
        {"[\"a\", [\"b\"]]", -TAU_ETYPE, 0, NULL, NULL, "element 1 is an array"},
        {"[\"ok\", \"Not_OK\"]", -TAU_EINVAL, 0, NULL, NULL, "element 1: invalid namespace name"},
        {"[\"\"]", -TAU_EINVAL, 0, NULL, NULL, "element 0"},
        {"[\"a\"] x", -TAU_EINVAL, 0, NULL, NULL, "namespace allowlist"},
};

static void test_allowlist_parse_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(allow_cases); i++) {
		const allow_case *c = &allow_cases[i];
		tau_ws_allowlist *l = (tau_ws_allowlist *)&allow_cases; /* sentinel */
		int rc = tau_ws_namespace_allowlist_parse(&l, c->text, strlen(c->text));

		print_message("allowlist: %s\n", c->text);
		assert_int_equal(rc, c->rc);
		if (rc < 0) {
			assert_ptr_equal(l, (tau_ws_allowlist *)&allow_cases);
			if (strstr(tau_error_last()->msg, c->msg_has) == NULL)
				fail_msg("message \"%s\" lacks \"%s\"", tau_error_last()->msg,
				         c->msg_has);
			continue;
		}
		assert_int_equal(tau_ws_namespace_allowlist_count(l), c->count);
		if (c->count > 0) {
			assert_string_equal(tau_ws_namespace_allowlist_name(l, 0), c->first);
			assert_string_equal(tau_ws_namespace_allowlist_name(l, c->count - 1),
			                    c->last);
			assert_true(tau_ws_namespace_allowlist_contains(l, c->first));
			assert_true(tau_ws_namespace_allowlist_contains(l, c->last));
		}
		assert_false(tau_ws_namespace_allowlist_contains(l, "zzz"));
		assert_null(tau_ws_namespace_allowlist_name(l, c->count));
		tau_ws_namespace_allowlist_free(l);
	}
}

static void test_allowlist_caps(void **state)
{
	size_t n = TAU_WS_ALLOWLIST_MAX_NAMES + 1, cap = n * 16 + 16, used = 0;
	char *buf = malloc(cap);
	tau_ws_allowlist *l = NULL;

	(void)state;
	assert_non_null(buf);
	buf[used++] = '[';
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s\"n%zu\"", i ? "," : "", i);
	buf[used++] = ']';
	assert_int_equal(tau_ws_namespace_allowlist_parse(&l, buf, used), -TAU_ETOOBIG);
	assert_null(l);
	assert_non_null(strstr(tau_error_last()->msg, "exceed the limit"));
	assert_int_equal(tau_ws_namespace_allowlist_parse(&l, buf, TAU_WS_ALLOWLIST_MAX_BYTES + 1),
	                 -TAU_ETOOBIG);
	free(buf);
	assert_int_equal(tau_ws_namespace_allowlist_parse(NULL, "[]", 2), -TAU_EINVAL);
	assert_int_equal(tau_ws_namespace_allowlist_parse(&l, NULL, 3), -TAU_EINVAL);
	assert_int_equal(tau_ws_namespace_allowlist_parse(&l, NULL, 0), -TAU_EINVAL);
}

static void test_allowlist_from_names(void **state)
{
	const char *good[] = {"b", "a", "c", "a"};
	const char *bad[] = {"a", "kube_system"};
	tau_ws_allowlist *l = NULL;

	(void)state;
	assert_int_equal(tau_ws_namespace_allowlist_from_names(&l, good, 4), 0);
	assert_int_equal(tau_ws_namespace_allowlist_count(l), 3);
	assert_true(tau_ws_namespace_allowlist_contains(l, "b"));
	assert_false(tau_ws_namespace_allowlist_contains(l, "d"));
	assert_false(tau_ws_namespace_allowlist_contains(l, NULL));
	tau_ws_namespace_allowlist_free(l);
	l = NULL;
	assert_int_equal(tau_ws_namespace_allowlist_from_names(&l, bad, 2), -TAU_EINVAL);
	assert_null(l);
	assert_non_null(strstr(tau_error_last()->msg, "element 1"));
	assert_int_equal(tau_ws_namespace_allowlist_from_names(&l, NULL, 0), 0);
	assert_int_equal(tau_ws_namespace_allowlist_count(l), 0);
	tau_ws_namespace_allowlist_free(l);
	assert_false(tau_ws_namespace_allowlist_contains(NULL, "a"));
	assert_int_equal(tau_ws_namespace_allowlist_count(NULL), 0);
	tau_ws_namespace_allowlist_free(NULL);
}

static void test_compare_age(void **state)
{
	(void)state;
	assert_true(tau_ws_namespace_compare_age(T0, "b", T1, "a") < 0);
	assert_true(tau_ws_namespace_compare_age(T1, "a", T0, "b") > 0);
	assert_true(tau_ws_namespace_compare_age(T0, "a", T0, "b") < 0);
	assert_int_equal(tau_ws_namespace_compare_age(T0, "a", T0, "a"), 0);
	/* Fractions and offsets compare by instant. */
	assert_true(tau_ws_namespace_compare_age("2024-05-01T10:00:00.5Z", "a",
	                                         "2024-05-01T10:00:00.25Z", "b") > 0);
	assert_true(tau_ws_namespace_compare_age("2024-05-01T12:00:00+02:00", "b",
	                                         "2024-05-01T10:00:01Z", "a") < 0);
	assert_true(tau_ws_namespace_compare_age("2024-05-01T09:00:00-02:00", "a",
	                                         "2024-05-01T10:00:00Z", "b") > 0);
	/* Across a leap day and a year. */
	assert_true(tau_ws_namespace_compare_age("2024-02-29T23:59:59Z", "b",
	                                         "2024-03-01T00:00:00Z", "a") < 0);
	assert_true(tau_ws_namespace_compare_age("1999-12-31T23:59:59Z", "b",
	                                         "2000-01-01T00:00:00Z", "a") < 0);
	/* Missing or malformed timestamps sort last. */
	assert_true(tau_ws_namespace_compare_age(NULL, "a", T1, "b") > 0);
	assert_true(tau_ws_namespace_compare_age("yesterday", "a", T1, "b") > 0);
	assert_true(tau_ws_namespace_compare_age("2024-13-01T00:00:00Z", "a", T1, "b") > 0);
	assert_true(tau_ws_namespace_compare_age("2024-05-01T10:00:00", "a", T1, "b") > 0);
	assert_true(tau_ws_namespace_compare_age(NULL, "a", NULL, "b") < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_resolve_table),
	        cmocka_unit_test(test_every_reason_covered),
	        cmocka_unit_test(test_candidate_is_shared_rule),
	        cmocka_unit_test(test_resolve_bad_input),
	        cmocka_unit_test(test_observe),
	        cmocka_unit_test(test_allowlist_parse_table),
	        cmocka_unit_test(test_allowlist_caps),
	        cmocka_unit_test(test_allowlist_from_names),
	        cmocka_unit_test(test_compare_age),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
