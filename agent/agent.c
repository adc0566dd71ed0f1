/*
 * agent.c - the event loop of tau-node-agent (the daemon; --once is once.c).
 *
 * The one idea: one thread decides everything.  Three helpers feed it and
 * never decide anything themselves: the kube loop thread (informers on the
 * agent's own Node, its CSINode and the pods on the node) and the rpc CQ
 * thread (the Report stream) only set a flag or queue an event and write an
 * eventfd; the plugin registry arrives as an inotify fd.  The main thread
 * polls those fds plus a signalfd, with a timeout equal to the next timer
 * (heartbeat, ack watchdog, periodic re-probe), so it is idle between events.
 *
 * After anything changes the inventory is rebuilt (build.h) and its digest
 * compared with the last one; the report session (report.h) then decides
 * whether a new report goes out.  The host probe is rerun only when the
 * registry changed or the periodic timer fired (or the CSI driver names
 * changed, build.c); a pod event on the node re-asks only kubelet's
 * pod-resources (two local calls).  With --node-conditions every rebuild also
 * publishes the conditions the agent owns (nodeconditions_publish.h).
 */
#include "daemon.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/log.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#ifndef TAU_VERSION_STRING
#define TAU_VERSION_STRING "0.0.0"
#endif

/* How long to wait for CSINode and pods to list before reporting without them. */
#define SYNC_GRACE_MS 10000
/* While an informer has not listed yet, re-check this often after the grace period
 * (before it, each informer's on_synced wakes the loop). */
#define SYNC_CHECK_SLOW_MS 5000

static void rebuild(tau_agent_daemon *a)
{
	char node_problem[512], csinode_problem[512], pods_problem[512];
	cJSON *node, *csinode, *pods = NULL;
	tau_agent_inputs in;
	bool reprobe = a->host_dirty;
	bool probed = false;
	char digest[65];
	int rc;

	atomic_store(&a->kube_dirty, false);
	a->host_dirty = false;
	memset(&in, 0, sizeof(in));
	node = tau_agent_daemon_cached(a->node_inf, a->cfg->node_name, "Node", node_problem,
	                               sizeof(node_problem), &in.node_problem);
	csinode = tau_agent_daemon_cached(a->csinode_inf, a->cfg->node_name, "CSINode",
	                                  csinode_problem, sizeof(csinode_problem),
	                                  &in.csinode_problem);
	in.node = node;
	in.csinode = csinode;
	if (!tau_kube_informer_has_synced(a->pods_inf)) {
		snprintf(pods_problem, sizeof(pods_problem),
		         "pods on node %s not listed from the API yet", a->cfg->node_name);
		in.pods_problem = pods_problem;
	} else if (tau_kube_informer_snapshot(&pods, a->pods_inf) < 0) {
		snprintf(pods_problem, sizeof(pods_problem), "cannot copy the pods on node %s",
		         a->cfg->node_name);
		in.pods_problem = pods_problem;
	}
	in.pods = pods;

	/*
	 * A pod change between host probes: only kubelet's pod-resources is asked again (two
	 * local calls, deadline-bounded), so a pod taking a device is reported at once rather
	 * than at the next --probe-interval; NVML and the CSI drivers wait for their probe.
	 */
	if (atomic_exchange(&a->pods_dirty, false) && !reprobe && a->cache.valid &&
	    tau_agent_podres_probe(&a->cache.probe.podres, a->cfg->host_root,
	                           TAU_AGENT_PODRESOURCES_TIMEOUT_MS) < 0)
		reprobe = true; /* out of memory: the full probe below starts afresh */
	rc = tau_agent_build(&a->inv, &in, a->cfg->host_root, &a->cache, reprobe, &probed);
	if (rc == 0)
		rc = tau_agent_inventory_digest(digest, &a->inv);
	if (rc == 0 && a->cfg->node_conditions)
		tau_agent_conditions_publish(&a->conditions, a->kc, a->cfg->node_name, &a->metrics,
		                             &a->inv, node);
	cJSON_Delete(node);
	cJSON_Delete(csinode);
	cJSON_Delete(pods);
	atomic_fetch_add(&a->metrics.inventory_builds, 1);
	if (probed)
		atomic_fetch_add(&a->metrics.host_probes, 1);
	if (rc < 0) {
		/* Out of memory: keep the last good digest; the next change retries. */
		tau_log_error("cannot build the inventory", "node", a->cfg->node_name, "error",
		              tau_error_last()->msg, NULL);
		a->host_dirty = a->host_dirty || reprobe;
		return;
	}
	atomic_store(&a->metrics.problems, (uint_fast64_t)a->inv.problems.n);
	if (a->built && strcmp(digest, a->digest) == 0)
		return;
	/* Log each problem once, when it appears (it stays in every report), and once when it
	 * goes: a new digest for another reason does not repeat the problems that stayed. */
	for (size_t i = 0; i < a->inv.problems.n; i++)
		if (!tau_agent_problem_list_has(&a->logged, a->inv.problems.items[i]))
			tau_log_warn("inventory problem", "node", a->cfg->node_name, "problem",
			             a->inv.problems.items[i], NULL);
	for (size_t i = 0; i < a->logged.n; i++)
		if (!tau_agent_problem_list_has(&a->inv.problems, a->logged.items[i]))
			tau_log_info("inventory problem resolved", "node", a->cfg->node_name,
			             "problem", a->logged.items[i], NULL);
	(void)tau_agent_problem_list_copy(&a->logged, &a->inv.problems); /* short: re-logged */
	memcpy(a->digest, digest, sizeof(a->digest));
	a->observed_ms = (int64_t)tau_clock_wall_ms();
	a->built = true;
	tau_log_info("inventory changed", "node", a->cfg->node_name, "digest", a->digest,
	             "resource_version", a->inv.resource_version, NULL);
}

static bool informers_synced(tau_agent_daemon *a)
{
	bool node = tau_kube_informer_has_synced(a->node_inf);

	atomic_store(&a->metrics.node_synced, node);
	return node && tau_kube_informer_has_synced(a->csinode_inf) &&
	       tau_kube_informer_has_synced(a->pods_inf);
}

/* Poll timeout: the earliest timer, or -1. */
static int next_timeout(tau_agent_daemon *a, int64_t now)
{
	int64_t t = a->next_probe_ms - now;
	int64_t s = tau_agent_session_wait_ms(&a->session, now);

	if (s >= 0 && s < t)
		t = s;
	if (!a->synced_all) {
		int64_t c = now - a->start_ms < SYNC_GRACE_MS ? a->start_ms + SYNC_GRACE_MS - now
		                                              : SYNC_CHECK_SLOW_MS;

		if (c < t)
			t = c;
	}
	if (a->conditions.retry_ms != 0 && a->conditions.retry_ms - now < t)
		t = a->conditions.retry_ms - now;
	if (a->stopping && a->stop_deadline_ms - now < t)
		t = a->stop_deadline_ms - now;
	if (t < 0)
		t = 0;
	if (t > INT_MAX)
		t = INT_MAX;
	return (int)t;
}

static int setup(tau_agent_daemon *a)
{
	tau_agent_stream_opts so;
	int rc;

	rc = tau_agent_kube_client_new(&a->kc, a->cfg);
	if (rc < 0) {
		a->config_error = rc != -TAU_ENOMEM;
		return rc;
	}
	rc = tau_kube_loop_new(&a->loop, a->kc);
	if (rc < 0)
		goto fail;
	rc = tau_agent_daemon_watch(a);
	if (rc < 0)
		goto fail;
	rc = tau_kube_loop_start_thread(a->loop);
	if (rc < 0)
		goto fail;

	rc = tau_agent_registry_watch_open(&a->regw, a->cfg->host_root);
	if (rc < 0) {
		/* Not fatal: the periodic re-probe still notices sockets, only later. */
		tau_log_warn("cannot watch the plugin registry; relying on the periodic probe",
		             "error", tau_error_last()->msg, NULL);
		a->regw = NULL;
	}

	memset(&so, 0, sizeof(so));
	so.target = a->cfg->aggregator;
	so.ca_file = a->cfg->insecure ? NULL : a->cfg->ca_file;
	so.token_file = a->cfg->token_file;
	so.wake_fd = a->wake_fd;
	rc = tau_agent_stream_open(&a->stream, &so);
	if (rc < 0) {
		/* An unreadable CA or token file, a CA without a certificate. */
		a->config_error = rc == -TAU_EINVAL || rc == -TAU_EIO || rc == -TAU_ETOOBIG;
		tau_log_error("cannot open the stream to the aggregator", "aggregator",
		              a->cfg->aggregator, "error", tau_error_last()->msg, NULL);
		return rc;
	}
	if (a->cfg->http_listen != NULL) {
		int port = 0;
		char portbuf[16];

		rc = tau_agent_http_start(&a->http, a->cfg->http_listen, &a->metrics, &port);
		if (rc < 0) {
			a->config_error = rc != -TAU_ENOMEM;
			tau_log_error("cannot serve HTTP", "listen", a->cfg->http_listen, "error",
			              tau_error_last()->msg, NULL);
			return rc;
		}
		snprintf(portbuf, sizeof(portbuf), "%d", port);
		tau_log_info("serving /healthz and /metrics", "listen", a->cfg->http_listen, "port",
		             portbuf, NULL);
	}
	return 0;
fail:
	tau_log_error("cannot start the Kubernetes watches", "error", tau_error_last()->msg, NULL);
	return rc;
}

static void teardown(tau_agent_daemon *a)
{
	tau_http_server_stop(a->http);
	tau_agent_stream_free(a->stream);
	tau_kube_loop_free_all(a->loop);
	tau_kube_client_free(a->kc);
	tau_agent_registry_watch_free(a->regw);
	tau_agent_inventory_free(&a->inv);
	tau_agent_problem_list_free(&a->logged);
	tau_agent_probe_cache_free(&a->cache);
	tau_agent_conditions_publisher_free(&a->conditions);
	if (a->sig_fd >= 0)
		close(a->sig_fd);
	if (a->wake_fd >= 0)
		close(a->wake_fd);
}

static void read_fd(int fd, void *buf, size_t len)
{
	while (read(fd, buf, len) < 0 && errno == EINTR)
		;
}

int tau_agent_run(const tau_agent_config *cfg)
{
	tau_agent_daemon *a;
	sigset_t mask;
	int exit_code = 1;

	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		tau_log_error("out of memory", NULL);
		return 1;
	}
	a->cfg = cfg;
	a->sig_fd = -1;
	a->wake_fd = -1;
	tau_agent_inventory_init(&a->inv);
	tau_agent_session_init(&a->session);

	/* Block before any thread starts, so only the signalfd sees these. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	a->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	a->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (a->sig_fd < 0 || a->wake_fd < 0) {
		tau_log_error("cannot create the event loop fds", "error", strerror(errno), NULL);
		goto out;
	}
	a->start_ms = (int64_t)tau_clock_mono_ms();
	a->next_probe_ms = a->start_ms + (int64_t)cfg->probe_interval_s * 1000;
	a->host_dirty = true;
	tau_log_info("tau-node-agent starting", "version", TAU_VERSION_STRING, "node",
	             cfg->node_name, "aggregator", cfg->aggregator, "host_root", cfg->host_root,
	             "node_conditions", cfg->node_conditions ? "on" : "off", NULL);
	if (setup(a) < 0) {
		if (a->config_error)
			exit_code = 2;
		goto out;
	}

	for (;;) {
		struct pollfd pfd[3];
		nfds_t n = 2;
		int64_t now = (int64_t)tau_clock_mono_ms();
		int ready;

		if (a->stopping && (a->stop_closed || now >= a->stop_deadline_ms))
			break;
		pfd[0].fd = a->sig_fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = a->wake_fd;
		pfd[1].events = POLLIN;
		if (a->regw != NULL && !a->stopping) {
			pfd[2].fd = tau_agent_registry_watch_fd(a->regw);
			pfd[2].events = POLLIN;
			n = 3;
		}
		ready = poll(pfd, n, next_timeout(a, now));
		if (ready < 0 && errno != EINTR) {
			tau_log_error("poll failed", "error", strerror(errno), NULL);
			goto out;
		}
		if (ready > 0 && (pfd[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			read_fd(a->sig_fd, &si, sizeof(si));
			if (!a->stopping)
				tau_agent_daemon_begin_stop(a, si.ssi_signo == SIGINT ? "SIGINT"
				                                                      : "SIGTERM");
		}
		if (ready > 0 && (pfd[1].revents & POLLIN)) {
			uint64_t v;

			read_fd(a->wake_fd, &v, sizeof(v));
		}
		tau_agent_daemon_stream_events(a);
		if (a->stopping)
			continue;
		if (n == 3 && (pfd[2].revents & POLLIN)) {
			int r = tau_agent_registry_watch_drain(a->regw);

			if (r < 0)
				tau_log_warn("plugin registry watch failed", "error",
				             tau_error_last()->msg, NULL);
			if (r != 0)
				a->host_dirty = true;
		}
		now = (int64_t)tau_clock_mono_ms();
		if (now >= a->next_probe_ms) {
			a->host_dirty = true;
			a->next_probe_ms = now + (int64_t)cfg->probe_interval_s * 1000;
		}
		if (a->conditions.retry_ms != 0 && now >= a->conditions.retry_ms)
			atomic_store(&a->kube_dirty, true); /* retry the node conditions */
		if (!a->synced_all) {
			bool all = informers_synced(a);

			if (all || (now - a->start_ms >= SYNC_GRACE_MS &&
			            tau_kube_informer_has_synced(a->node_inf))) {
				/* Newly synced: rebuild even if no object arrived (empty lists). */
				if (all)
					a->synced_all = true;
				if (all || !a->built)
					atomic_store(&a->kube_dirty, true);
			}
		}
		if ((atomic_load(&a->kube_dirty) || a->host_dirty) &&
		    tau_kube_informer_has_synced(a->node_inf) &&
		    (a->synced_all || now - a->start_ms >= SYNC_GRACE_MS))
			rebuild(a);
		tau_agent_daemon_send_due(a);
	}
	exit_code = 0;
out:
	teardown(a);
	free(a);
	return exit_code;
}
