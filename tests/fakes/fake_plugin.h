/*
 * fake_plugin.h - what every fake node plugin under tests/fakes shares: read its JSON config
 * (on every call, so tests change answers by rewriting the file) and serve a set of unary
 * methods on unix sockets until SIGTERM, printing "ready" once listening.  Test-only,
 * header-only (each fake is one program).
 */
#ifndef TAU_TEST_FAKE_PLUGIN_H
#define TAU_TEST_FAKE_PLUGIN_H

#include "tau/error.h"
#include "tau/file.h"
#include "tau/json.h"
#include "tau/rpc_server.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define FAKE_PLUGIN_CONFIG_MAX (1u << 20)

/* The config as a tree, or NULL (the call is then finished INTERNAL). */
static inline cJSON *fake_plugin_config(tau_rpc_call *call, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	cJSON *root = NULL;

	if (tau_file_read(&text, &len, path, FAKE_PLUGIN_CONFIG_MAX, "fake plugin config") == 0)
		(void)tau_json_parse(&root, text, len, FAKE_PLUGIN_CONFIG_MAX);
	free(text);
	if (root == NULL)
		tau_rpc_call_finish(call, TAU_RPC_INTERNAL, "fake plugin: config unreadable");
	return root;
}

/* Serve `methods` on each of the `n_sockets` unix socket paths until SIGTERM or SIGINT. */
static inline int fake_plugin_serve(const char *name, const tau_rpc_method *methods, size_t n,
                                    const char *const *sockets, size_t n_sockets)
{
	tau_rpc_server *srv = NULL;
	char addr[4200];
	sigset_t set;
	int sig = 0, rc;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = tau_rpc_server_new(&srv, NULL);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = tau_rpc_server_add_method(srv, &methods[i]);
	for (size_t i = 0; rc == 0 && i < n_sockets; i++) {
		snprintf(addr, sizeof(addr), "unix:%s", sockets[i]);
		rc = tau_rpc_server_listen(srv, addr, NULL, NULL);
	}
	if (rc == 0)
		rc = tau_rpc_server_start(srv);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", name, tau_error_last()->msg);
		tau_rpc_server_free(srv);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	tau_rpc_server_shutdown(srv, 0);
	tau_rpc_server_free(srv);
	return 0;
}

#endif /* TAU_TEST_FAKE_PLUGIN_H */
