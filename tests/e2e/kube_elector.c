/*
 * kube_elector.c - one leader-election candidate, for the two-process test
 * in tests/e2e/test_kube_client.py.
 *
 *   kube_elector --kubeconfig F --identity ID [--lease NAME] [--namespace NS]
 *                [--lease-ms N] [--renew-ms N] [--retry-ms N] [--release]
 *
 * Prints one line per transition on stdout (flushed): "started ID",
 * "leading ID" while it leads (every retry period), "stopped ID" when it
 * loses the lease, and "new-leader ID HOLDER" when it sees a new holder.
 * Exits 0 on SIGTERM, 3 after losing the lease (as controller-runtime does).
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/kube.h"
#include "tau/kube_leader.h"
#include "tau/log.h"

static volatile sig_atomic_t terminate;
static atomic_bool stopped;
static const char *identity;

static void on_signal(int sig)
{
	(void)sig;
	terminate = 1;
}

static void started(void *arg)
{
	(void)arg;
	printf("started %s\n", identity);
	fflush(stdout);
}

static void lost(void *arg)
{
	(void)arg;
	printf("stopped %s\n", identity);
	fflush(stdout);
	atomic_store(&stopped, true);
}

static void new_leader(void *arg, const char *holder)
{
	(void)arg;
	printf("new-leader %s %s\n", identity, holder);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	tau_kube_config_options copts = {0};
	tau_kube_leader_config lc = {.namespace = "default",
	                             .name = "tau-e2e",
	                             .on_started = started,
	                             .on_stopped = lost,
	                             .on_new_leader = new_leader};
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;
	tau_kube_leader *le = NULL;
	struct sigaction sa;
	int rc = 2;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--kubeconfig") == 0)
			copts.kubeconfig = argv[i + 1];
		else if (strcmp(argv[i], "--identity") == 0)
			lc.identity = argv[i + 1];
		else if (strcmp(argv[i], "--lease") == 0)
			lc.name = argv[i + 1];
		else if (strcmp(argv[i], "--namespace") == 0)
			lc.namespace = argv[i + 1];
		else if (strcmp(argv[i], "--lease-ms") == 0)
			lc.lease_duration_ms = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--renew-ms") == 0)
			lc.renew_deadline_ms = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--retry-ms") == 0)
			lc.retry_period_ms = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--release") == 0) {
			lc.release_on_cancel = strcmp(argv[i + 1], "true") == 0;
		} else {
			fprintf(stderr, "kube_elector: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	identity = lc.identity;
	if (identity == NULL) {
		fprintf(stderr, "kube_elector: --identity is required\n");
		return 2;
	}
	tau_log_init_from_env();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (tau_kube_config_load(&cfg, &copts) < 0 || tau_kube_client_new(&c, cfg) < 0 ||
	    tau_kube_leader_new(&le, c, &lc) < 0 || tau_kube_leader_start(le) < 0) {
		fprintf(stderr, "kube_elector: %s\n", tau_error_last()->msg);
		goto out;
	}
	/* The "work": report leadership every retry period while leading. */
	while (!terminate && !atomic_load(&stopped)) {
		if (tau_kube_leader_is_leader(le)) {
			printf("leading %s\n", identity);
			fflush(stdout);
		}
		tau_clock_sleep_ms(lc.retry_period_ms ? lc.retry_period_ms : 2000);
	}
	rc = tau_kube_leader_lost(le) ? 3 : 0;
out:
	tau_kube_leader_free(le);
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
	return rc;
}
