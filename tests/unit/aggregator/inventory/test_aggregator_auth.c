/* Unit tests of the agent authentication decision table, token expiry and the review cache. */
#include "inventory/auth.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define AGENT "system:serviceaccount:tau-system:tau-node-agent"

static tau_auth_review review(bool ok, const char *user, const char *node, const char *err)
{
	tau_auth_review r;

	assert_int_equal(tau_auth_review_set(&r, ok, user, node, err), 0);
	return r;
}

static void sa_user(void **state)
{
	char u[128];

	(void)state;
	assert_int_equal(tau_auth_sa_user(u, sizeof(u), "tau-system:tau-node-agent"), 0);
	assert_string_equal(u, AGENT);
	assert_int_equal(tau_auth_sa_user(u, sizeof(u), "no-colon"), -TAU_EINVAL);
	assert_int_equal(tau_auth_sa_user(u, sizeof(u), ":name"), -TAU_EINVAL);
	assert_int_equal(tau_auth_sa_user(u, sizeof(u), "ns:"), -TAU_EINVAL);
	assert_int_equal(tau_auth_sa_user(u, sizeof(u), "a:b:c"), -TAU_EINVAL);
}

static void decision_table(void **state)
{
	struct {
		bool present, expired;
		tau_auth_review r;
		const char *node;
		tau_rpc_code user_code, node_code;
		const char *needle;
	} rows[] = {
	        /* missing token */
	        {false, false, review(false, "", "", ""), "n1", TAU_RPC_UNAUTHENTICATED, 0,
	         "missing"},
	        /* unknown token (TokenReview says no) */
	        {true, false, review(false, "", "", "invalid bearer token"), "n1",
	         TAU_RPC_UNAUTHENTICATED, 0, "invalid bearer token"},
	        /* wrong audience: lib/kube resets authenticated and says why */
	        {true, false,
	         review(false, "", "", "token is not valid for the requested audiences"), "n1",
	         TAU_RPC_UNAUTHENTICATED, 0, "audiences"},
	        /* expired by its own exp claim, whatever the review said */
	        {true, true, review(true, AGENT, "n1", ""), "n1", TAU_RPC_UNAUTHENTICATED, 0,
	         "expired"},
	        /* another user */
	        {true, false, review(true, "system:serviceaccount:default:x", "n1", ""), "n1",
	         TAU_RPC_PERMISSION_DENIED, 0, "not the agent service account"},
	        /* not bound to a node */
	        {true, false, review(true, AGENT, "", ""), "n1", TAU_RPC_PERMISSION_DENIED, 0,
	         "not bound to a node"},
	        /* node mismatch (spoofed report) */
	        {true, false, review(true, AGENT, "n1", ""), "n2", TAU_RPC_OK,
	         TAU_RPC_PERMISSION_DENIED, "may not report for node n2"},
	        /* all good */
	        {true, false, review(true, AGENT, "n1", ""), "n1", TAU_RPC_OK, TAU_RPC_OK, ""},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char msg[512];
		tau_rpc_code c = tau_auth_decide_user(msg, sizeof(msg), rows[i].present,
		                                      rows[i].expired, &rows[i].r, AGENT);

		assert_int_equal(c, rows[i].user_code);
		if (c == TAU_RPC_OK) {
			c = tau_auth_decide_node(msg, sizeof(msg), rows[i].r.node_name,
			                         rows[i].node);
			assert_int_equal(c, rows[i].node_code);
		}
		if (strstr(msg, rows[i].needle) == NULL)
			fail_msg("row %zu: \"%s\" lacks \"%s\"", i, msg, rows[i].needle);
	}
}

static void token_expiry(void **state)
{
	int64_t exp = 0;

	(void)state;
	/* {"alg":"none"} . {"exp":1700000000,"sub":"x"} . sig */
	assert_int_equal(tau_auth_token_expiry(&exp, "eyJhbGciOiJub25lIn0."
	                                             "eyJleHAiOjE3MDAwMDAwMDAsInN1YiI6IngifQ.c2ln"),
	                 0);
	assert_int_equal(exp, 1700000000);
	assert_int_equal(tau_auth_token_expiry(&exp, "opaque-token"), -TAU_ENOTFOUND);
	assert_int_equal(tau_auth_token_expiry(&exp, "a.!!!.c"), -TAU_ENOTFOUND);
	/* {"sub":"x"}: no exp */
	assert_int_equal(tau_auth_token_expiry(&exp, "e30.eyJzdWIiOiJ4In0.c2ln"), -TAU_ENOTFOUND);
}

static void token_subject(void **state)
{
	char sub[8];

	(void)state;
	/* {"alg":"none"} . {"exp":1700000000,"sub":"x"} . sig */
	assert_int_equal(tau_auth_token_subject(sub, sizeof(sub),
	                                        "eyJhbGciOiJub25lIn0."
	                                        "eyJleHAiOjE3MDAwMDAwMDAsInN1YiI6IngifQ.c2ln"),
	                 0);
	assert_string_equal(sub, "x");
	assert_int_equal(tau_auth_token_subject(sub, sizeof(sub), "opaque-token"), -TAU_ENOTFOUND);
	/* {} : no sub */
	assert_int_equal(tau_auth_token_subject(sub, sizeof(sub), "e30.e30.c2ln"), -TAU_ENOTFOUND);
	/* {"sub":5}: not a string */
	assert_int_equal(tau_auth_token_subject(sub, sizeof(sub), "e30.eyJzdWIiOjV9.c2ln"),
	                 -TAU_ENOTFOUND);
	/* [1]: claims that are not an object */
	assert_int_equal(tau_auth_token_subject(sub, sizeof(sub), "e30.WzFd.c2ln"), -TAU_ENOTFOUND);
}

static void token_precheck(void **state)
{
	static const char user[] = "system:serviceaccount:tau-system:tau-node-agent";
	/* header {"alg":"RS256"}; claims in the comment; signature "sig" (never checked here) */
	static const struct {
		const char *token;
		tau_rpc_code code;
		const char *needle;
	} rows[] = {
	        /* {"sub":"system:serviceaccount:tau-system:tau-node-agent"} */
	        {"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGF1LXN5c3RlbTp0YX"
	         "Utbm9kZS1hZ2VudCJ9.c2ln",
	         TAU_RPC_OK, ""},
	        /* the same sub, kubernetes.io {namespace tau-system, serviceaccount tau-node-agent,
	         * node n1} */
	        {"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGF1LXN5c3RlbTp0YX"
	         "Utbm9kZS1hZ2VudCIsImt1YmVybmV0ZXMuaW8iOnsibmFtZXNwYWNlIjoidGF1LXN5c3RlbSIsInNlcnZ"
	         "p"
	         "Y2VhY2NvdW50Ijp7Im5hbWUiOiJ0YXUtbm9kZS1hZ2VudCJ9LCJub2RlIjp7Im5hbWUiOiJuMSJ9fX0."
	         "c2ln",
	         TAU_RPC_OK, ""},
	        {"opaque-token", TAU_RPC_UNAUTHENTICATED, "not a JWT"},
	        {"a.b", TAU_RPC_UNAUTHENTICATED, "not a JWT"},
	        {"a.b.c.d", TAU_RPC_UNAUTHENTICATED, "not a JWT"},
	        {"eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjF9.", TAU_RPC_UNAUTHENTICATED, "not a JWT"},
	        {"eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjF9.si*g", TAU_RPC_UNAUTHENTICATED, "not a JWT"},
	        /* header [1], then "hello": not a JSON object */
	        {"WzFd.eyJzdWIiOiAic3lzdGVtOnNlcnZpY2VhY2NvdW50OnRhdS1zeXN0ZW06dGF1LW5vZGUtYWdlbn"
	         "QifQ.c2ln",
	         TAU_RPC_UNAUTHENTICATED, "not a JWT"},
	        {"aGVsbG8.eyJzdWIiOiAic3lzdGVtOnNlcnZpY2VhY2NvdW50OnRhdS1zeXN0ZW06dGF1LW5vZGUtYWdl"
	         "bnQifQ.c2ln",
	         TAU_RPC_UNAUTHENTICATED, "not a JWT"},
	        /* {"exp":1}: no sub */
	        {"eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjF9.c2ln", TAU_RPC_UNAUTHENTICATED, "no subject"},
	        /* {"sub":"system:serviceaccount:default:intruder"} */
	        {"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZGVmYXVsdDppbnRydW"
	         "RlciJ9.c2ln",
	         TAU_RPC_PERMISSION_DENIED, "no TokenReview made"},
	        /* the agent's sub, kubernetes.io namespace "default" */
	        {"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGF1LXN5c3RlbTp0YX"
	         "Utbm9kZS1hZ2VudCIsImt1YmVybmV0ZXMuaW8iOnsibmFtZXNwYWNlIjoiZGVmYXVsdCIsInNlcnZpY2V"
	         "h"
	         "Y2NvdW50Ijp7Im5hbWUiOiJ0YXUtbm9kZS1hZ2VudCJ9fX0.c2ln",
	         TAU_RPC_UNAUTHENTICATED, "kubernetes.io claims"},
	        /* the agent's sub, kubernetes.io serviceaccount "other" */
	        {"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGF1LXN5c3RlbTp0YX"
	         "Utbm9kZS1hZ2VudCIsImt1YmVybmV0ZXMuaW8iOnsibmFtZXNwYWNlIjoidGF1LXN5c3RlbSIsInNlcnZ"
	         "p"
	         "Y2VhY2NvdW50Ijp7Im5hbWUiOiJvdGhlciJ9fX0.c2ln",
	         TAU_RPC_UNAUTHENTICATED, "kubernetes.io claims"},
	};
	char msg[512];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tau_rpc_code code = tau_auth_token_precheck(msg, sizeof(msg), rows[i].token, user);

		if (code != rows[i].code)
			fail_msg("row %zu: code %d, want %d (%s)", i, (int)code, (int)rows[i].code,
			         msg);
		if (strstr(msg, rows[i].needle) == NULL)
			fail_msg("row %zu: \"%s\" lacks \"%s\"", i, msg, rows[i].needle);
	}
}

static void cache(void **state)
{
	tau_auth_cache *c = NULL;
	tau_auth_review r = review(true, AGENT, "n1", ""), got;
	char h1[65], h2[65], h3[65];

	(void)state;
	tau_auth_token_hash(h1, "t1");
	tau_auth_token_hash(h2, "t2");
	tau_auth_token_hash(h3, "t3");
	assert_int_equal(strlen(h1), 64);
	assert_string_not_equal(h1, h2);
	assert_int_equal(tau_auth_cache_new(&c, 2), 0);
	assert_false(tau_auth_cache_get(c, h1, 0, &got));
	tau_auth_cache_put(c, h1, &r, 1000, 0);
	assert_true(tau_auth_cache_get(c, h1, 999, &got));
	assert_string_equal(got.node_name, "n1");
	assert_false(tau_auth_cache_get(c, h1, 1000, &got)); /* expired */
	tau_auth_cache_put(c, h2, &r, 2000, 0);
	/* Full: the entry closest to expiry (h1) makes room. */
	tau_auth_cache_put(c, h3, &r, 3000, 0);
	assert_int_equal(tau_auth_cache_size(c), 2);
	assert_false(tau_auth_cache_get(c, h1, 10, &got));
	assert_true(tau_auth_cache_get(c, h3, 10, &got));
	/* Already expired: not stored. */
	tau_auth_cache_put(c, h1, &r, 5, 10);
	assert_false(tau_auth_cache_get(c, h1, 10, &got));
	tau_auth_cache_free(c);
}

/*
 * Every field of a review comes back as it was put, whatever the key's form, and each user
 * name is held once for all the entries naming it, until the last goes.
 */
static void cache_holds_user_names_once(void **state)
{
	tau_auth_cache *c = NULL;
	tau_auth_review agent = review(true, AGENT, "n1", ""), other = review(true, "bob", "", ""),
	                refused = review(false, "", "", "token has expired"), got;
	char h[4][65];

	(void)state;
	for (int i = 0; i < 4; i++) {
		char token[8];

		snprintf(token, sizeof(token), "t%d", i);
		tau_auth_token_hash(h[i], token);
	}
	assert_int_equal(tau_auth_cache_new(&c, 8), 0);
	tau_auth_cache_put(c, h[0], &agent, 1000, 0);
	agent = review(true, AGENT, "n2", "");
	tau_auth_cache_put(c, h[1], &agent, 1000, 0);
	tau_auth_cache_put(c, h[2], &other, 1000, 0);
	tau_auth_cache_put(c, h[3], &refused, 1000, 0);
	assert_int_equal(tau_auth_cache_size(c), 4);
	assert_int_equal(tau_auth_cache_users(c), 2); /* AGENT once, bob; none for "" */
	assert_true(tau_auth_cache_get(c, h[0], 1, &got));
	assert_true(got.authenticated);
	assert_string_equal(got.username, AGENT);
	assert_string_equal(got.node_name, "n1");
	assert_string_equal(got.error, "");
	assert_true(tau_auth_cache_get(c, h[1], 1, &got));
	assert_string_equal(got.node_name, "n2");
	assert_true(tau_auth_cache_get(c, h[3], 1, &got));
	assert_false(got.authenticated);
	assert_string_equal(got.username, "");
	assert_string_equal(got.error, "token has expired");
	/* the same key in upper-case hex is the same entry; another text is a key of its own */
	for (char *p = h[2]; *p != '\0'; p++)
		*p = (char)(*p >= 'a' && *p <= 'f' ? *p - 'a' + 'A' : *p);
	assert_true(tau_auth_cache_get(c, h[2], 1, &got));
	assert_string_equal(got.username, "bob");
	assert_false(tau_auth_cache_get(c, "not-a-hash", 1, &got));
	tau_auth_cache_put(c, "not-a-hash", &other, 1000, 0);
	assert_true(tau_auth_cache_get(c, "not-a-hash", 1, &got));
	assert_false(tau_auth_cache_get(c, "not-a-hasH", 1, &got));
	/* replacing bob's entries lets go of his name */
	tau_auth_cache_put(c, h[2], &agent, 1000, 0);
	assert_int_equal(tau_auth_cache_users(c), 2);
	tau_auth_cache_put(c, "not-a-hash", &agent, 1000, 0);
	assert_int_equal(tau_auth_cache_users(c), 1);
	assert_int_equal(tau_auth_cache_size(c), 5);
	/* all expired: the next put past the cap drops them, names with them */
	tau_auth_cache_free(c);
	assert_int_equal(tau_auth_cache_new(&c, 2), 0);
	tau_auth_cache_put(c, h[0], &other, 10, 0);
	tau_auth_cache_put(c, h[1], &other, 10, 0);
	tau_auth_cache_put(c, h[3], &agent, 100, 20);
	assert_int_equal(tau_auth_cache_size(c), 1);
	assert_int_equal(tau_auth_cache_users(c), 1);
	tau_auth_cache_free(c);
}

/* A name too long for its field is refused, never cut to something that could match. */
static void long_names_refused(void **state)
{
	char node[400], user[400], msg[512];
	tau_auth_review r;

	(void)state;
	/* A node name of 253 bytes fits; one byte more would have been cut to it. */
	memset(node, 'a', 253);
	node[253] = '\0';
	assert_int_equal(tau_auth_review_set(&r, true, AGENT, node, NULL), 0);
	assert_true(r.authenticated);
	assert_string_equal(r.node_name, node);
	assert_int_equal(tau_auth_decide_node(msg, sizeof(msg), r.node_name, node), TAU_RPC_OK);

	memcpy(node + 253, "-b", 3);
	assert_int_equal(tau_auth_review_set(&r, true, AGENT, node, NULL), -TAU_EINVAL);
	assert_false(r.authenticated);
	assert_string_equal(r.node_name, "");
	assert_string_equal(r.error,
	                    "TokenReview answered a node name of 255 bytes (at most 253); refused");
	assert_int_equal(tau_auth_decide_user(msg, sizeof(msg), true, false, &r, AGENT),
	                 TAU_RPC_UNAUTHENTICATED);
	assert_non_null(strstr(msg, "node name of 255 bytes"));

	memset(user, 'u', 300);
	user[300] = '\0';
	assert_int_equal(tau_auth_review_set(&r, true, user, "n1", NULL), -TAU_EINVAL);
	assert_false(r.authenticated);
	assert_string_equal(r.username, "");
	assert_string_equal(r.error,
	                    "TokenReview answered a user name of 300 bytes (at most 255); refused");

	/* The error text is only shown: cut to fit. */
	memset(user, 'e', 399);
	user[399] = '\0';
	assert_int_equal(tau_auth_review_set(&r, false, NULL, NULL, user), 0);
	assert_int_equal(strlen(r.error), sizeof(r.error) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(sa_user),
	        cmocka_unit_test(decision_table),
	        cmocka_unit_test(token_expiry),
	        cmocka_unit_test(token_subject),
	        cmocka_unit_test(token_precheck),
	        cmocka_unit_test(cache),
	        cmocka_unit_test(cache_holds_user_names_once),
	        cmocka_unit_test(long_names_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
