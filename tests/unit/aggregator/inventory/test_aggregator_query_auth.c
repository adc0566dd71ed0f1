/*
 * Unit tests of aggregator/inventory/query_auth.c: the decision table, and a guarded unary method
 * on a real rpc server (loopback) with a fake review: allowed, unauthenticated, denied,
 * unavailable, the decision cache, and the handler never run for a refused call.
 */
#include "inventory/query_auth.h"

#include "tau/error.h"

#include "tau/inventory/v1/query.pb-c.h"
#include "tau/rpc_client.h"
#include "tau/rpc_server.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define PATH "/tau.inventory.v1.QueryService/GetNode"

static void decision_table(void **state)
{
	tau_auth_review r;
	char msg[512];

	(void)state;
	assert_int_equal(tau_query_auth_decide(msg, sizeof(msg), false, NULL, "inventory"),
	                 TAU_RPC_UNAUTHENTICATED);
	assert_non_null(strstr(msg, "missing bearer token"));
	assert_non_null(strstr(msg, "inventory.tau.azure.com"));
	tau_auth_review_set(&r, false, NULL, NULL, "token expired");
	assert_int_equal(tau_query_auth_decide(msg, sizeof(msg), true, &r, "inventory"),
	                 TAU_RPC_UNAUTHENTICATED);
	assert_string_equal(msg, "bearer token rejected by TokenReview: token expired");
	tau_auth_review_set(&r, true, "bob", NULL, "no RBAC rule allows it");
	assert_int_equal(tau_query_auth_decide(msg, sizeof(msg), true, &r, "workspaces"),
	                 TAU_RPC_PERMISSION_DENIED);
	assert_string_equal(
	        msg, "user bob may not get workspaces.tau.azure.com: no RBAC rule allows it");
	tau_auth_review_set(&r, true, "alice", NULL, NULL);
	assert_int_equal(tau_query_auth_decide(msg, sizeof(msg), true, &r, "inventory"),
	                 TAU_RPC_OK);
	assert_string_equal(msg, "");
}

/* ---- a guarded method on a real server ---- */

static atomic_int reviews, handled;

static int fake_review(void *ud, const char *token, const char *resource, tau_auth_review *out)
{
	(void)ud;
	atomic_fetch_add(&reviews, 1);
	assert_string_equal(resource, "inventory");
	if (strcmp(token, "down") == 0)
		return tau_error_set(TAU_EIO, "API server unreachable");
	if (strcmp(token, "alice") == 0)
		return tau_auth_review_set(out, true, "alice", NULL, NULL);
	if (strcmp(token, "bob") == 0)
		return tau_auth_review_set(out, true, "bob", NULL, "no RBAC rule allows it");
	return tau_auth_review_set(out, false, NULL, NULL, "invalid bearer token");
}

static void on_get_node(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__GetNodeResponse resp = TAU__INVENTORY__V1__GET_NODE_RESPONSE__INIT;

	(void)ud;
	atomic_fetch_add(&handled, 1);
	tau_rpc_message_free(msg);
	tau_rpc_call_reply(call, &resp.base);
}

typedef struct fixture {
	tau_query_auth *q;
	tau_rpc_server *srv;
	tau_rpc_channel *ch;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	tau_query_auth_config cfg = {.review = fake_review, .threads = 2, .ttl_ms = 60000};
	tau_rpc_method m = {.path = PATH,
	                    .kind = TAU_RPC_UNARY,
	                    .request = &tau__inventory__v1__get_node_request__descriptor,
	                    .response = &tau__inventory__v1__get_node_response__descriptor,
	                    .on_message = on_get_node};
	char target[64];
	int port = 0;
	tau_rpc_channel_opts co = {0};

	assert_non_null(f);
	assert_int_equal(tau_query_auth_new(&f->q, &cfg), 0);
	assert_int_equal(tau_query_auth_guard(f->q, &m, "inventory"), 0);
	assert_int_equal(tau_rpc_server_new(&f->srv, NULL), 0);
	assert_int_equal(tau_rpc_server_add_method(f->srv, &m), 0);
	assert_int_equal(tau_rpc_server_listen(f->srv, "127.0.0.1:0", NULL, &port), 0);
	assert_int_equal(tau_rpc_server_start(f->srv), 0);
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	co.target = target;
	assert_int_equal(tau_rpc_channel_new(&f->ch, &co), 0);
	atomic_store(&reviews, 0);
	atomic_store(&handled, 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	tau_rpc_channel_free(f->ch);
	tau_rpc_server_free(f->srv);
	tau_query_auth_free(f->q);
	free(f);
	return 0;
}

static tau_rpc_code call_with(fixture *f, const char *token, tau_rpc_status *st)
{
	Tau__Inventory__V1__GetNodeRequest req = TAU__INVENTORY__V1__GET_NODE_REQUEST__INIT;
	ProtobufCMessage *out = NULL;

	req.name = (char *)"n";
	assert_int_equal(tau_rpc_channel_set_bearer_token(f->ch, token), 0);
	memset(st, 0, sizeof(*st));
	if (tau_rpc_unary(&out, f->ch, PATH, &req.base,
	                  &tau__inventory__v1__get_node_response__descriptor, 10000, st) == 0) {
		tau_rpc_message_free(out);
		return TAU_RPC_OK;
	}
	return st->code;
}

static void guarded_calls(void **state)
{
	fixture *f = *state;
	tau_rpc_status st;
	tau_query_auth_counts c;

	assert_int_equal(call_with(f, NULL, &st), TAU_RPC_UNAUTHENTICATED);
	assert_non_null(strstr(st.message, "missing bearer token"));
	assert_int_equal(atomic_load(&reviews), 0); /* refused before any review */
	assert_int_equal(call_with(f, "garbage", &st), TAU_RPC_UNAUTHENTICATED);
	assert_non_null(strstr(st.message, "invalid bearer token"));
	assert_int_equal(call_with(f, "bob", &st), TAU_RPC_PERMISSION_DENIED);
	assert_non_null(strstr(st.message, "user bob may not get inventory.tau.azure.com"));
	assert_int_equal(call_with(f, "down", &st), TAU_RPC_UNAVAILABLE);
	assert_non_null(strstr(st.message, "API server unreachable"));
	assert_int_equal(atomic_load(&handled), 0); /* no refused call reached the handler */
	assert_int_equal(call_with(f, "alice", &st), TAU_RPC_OK);
	assert_int_equal(atomic_load(&handled), 1);
	assert_int_equal(atomic_load(&reviews), 4);
	/* Cached: allowed and refused decisions alike; an unavailable API is not cached. */
	assert_int_equal(call_with(f, "alice", &st), TAU_RPC_OK);
	assert_int_equal(call_with(f, "bob", &st), TAU_RPC_PERMISSION_DENIED);
	assert_int_equal(atomic_load(&reviews), 4);
	assert_int_equal(call_with(f, "down", &st), TAU_RPC_UNAVAILABLE);
	assert_int_equal(atomic_load(&reviews), 5);
	assert_int_equal(atomic_load(&handled), 2);
	tau_query_auth_counts_get(f->q, &c);
	assert_int_equal(c.allowed, 2);
	assert_int_equal(c.unauthenticated, 2);
	assert_int_equal(c.denied, 2);
	assert_int_equal(c.unavailable, 2);
	assert_int_equal(c.reviews, 5);
	assert_int_equal(c.pending, 0);
}

static void only_unary_and_server_streaming(void **state)
{
	tau_query_auth *q = NULL;
	tau_query_auth_config cfg = {.review = fake_review};
	tau_rpc_method m = {.path = PATH, .kind = TAU_RPC_BIDI};

	(void)state;
	assert_int_equal(tau_query_auth_new(&q, &cfg), 0);
	assert_int_equal(tau_query_auth_guard(q, &m, "inventory"), -TAU_EINVAL);
	assert_int_equal(tau_query_auth_guard(q, &(tau_rpc_method){.kind = TAU_RPC_UNARY},
	                                      "a-resource-name-far-too-long-to-hold"),
	                 -TAU_EINVAL);
	tau_query_auth_free(q);
	cfg.review = NULL;
	assert_int_equal(tau_query_auth_new(&q, &cfg), -TAU_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(decision_table),
	        cmocka_unit_test_setup_teardown(guarded_calls, setup, teardown),
	        cmocka_unit_test(only_unary_and_server_streaming),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
