/*
 * daemon_send.c - the reports tau-node-agent sends on its stream, and the stream's answers.
 *
 * The one idea: the report session (report.h) decides what is due; this file does it on the
 * event loop: an inventory when the digest changed or the aggregator asked for it, a
 * heartbeat when the interval passed, a reconnect when acks stopped, Stopping on a signal;
 * and it takes the stream's events (connected, ack, closed) back into the session.
 */
#include "daemon.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#ifndef TAU_VERSION_STRING
#define TAU_VERSION_STRING "0.0.0"
#endif

/* SIGTERM: how long to wait for the server to close the stream after Stopping. */
#define STOP_WAIT_MS 1200
/* Most reports sent in one loop turn (a RESEND_FULL loop must not spin). */
#define MAX_SENDS_PER_TURN 4

static void note_sent(tau_agent_daemon *a, tau_agent_action what, const char *digest, int64_t now)
{
	tau_agent_session_sent(&a->session, what, digest, now);
	atomic_store(&a->metrics.last_report_ms, (int64_t)tau_clock_wall_ms());
}

static int send_inventory(tau_agent_daemon *a, int64_t now)
{
	Tau__Inventory__V1__NodeInventory *msg = NULL;
	Tau__Inventory__V1__AgentReport report;
	uint64_t seq = tau_agent_session_next_seq(&a->session);
	char seqbuf[24];
	int rc;

	rc = tau_agent_inventory_to_proto(&msg, &a->inv, a->digest, a->observed_ms,
	                                  TAU_VERSION_STRING);
	if (rc < 0)
		return rc;
	tau_agent_report_init_inventory(&report, seq, msg);
	rc = tau_agent_stream_send(a->stream, &report);
	tau_agent_node_inventory_free(msg);
	if (rc < 0)
		return rc;
	note_sent(a, TAU_AGENT_ACTION_INVENTORY, a->digest, now);
	atomic_fetch_add(&a->metrics.inventories_sent, 1);
	snprintf(seqbuf, sizeof(seqbuf), "%" PRIu64, seq);
	tau_log_info("inventory sent", "node", a->cfg->node_name, "seq", seqbuf, "digest",
	             a->digest, NULL);
	return 0;
}

static int send_heartbeat(tau_agent_daemon *a, int64_t now)
{
	Tau__Inventory__V1__Heartbeat hb = TAU__INVENTORY__V1__HEARTBEAT__INIT;
	Tau__Inventory__V1__AgentReport report;
	char seqbuf[24];
	int rc;

	hb.sent_unix_ms = (int64_t)tau_clock_wall_ms();
	hb.digest = a->session.sent_digest;
	tau_agent_report_init_heartbeat(&report, tau_agent_session_next_seq(&a->session), &hb);
	rc = tau_agent_stream_send(a->stream, &report);
	if (rc < 0)
		return rc;
	snprintf(seqbuf, sizeof(seqbuf), "%" PRIu64, report.seq);
	note_sent(a, TAU_AGENT_ACTION_HEARTBEAT, NULL, now);
	atomic_fetch_add(&a->metrics.heartbeats_sent, 1);
	tau_log_debug("heartbeat sent", "seq", seqbuf, NULL);
	return 0;
}

void tau_agent_daemon_send_due(tau_agent_daemon *a)
{
	for (int i = 0; i < MAX_SENDS_PER_TURN && !a->stopping; i++) {
		int64_t now = (int64_t)tau_clock_mono_ms();
		tau_agent_action act =
		        tau_agent_session_next(&a->session, now, a->built ? a->digest : NULL);
		int rc = 0;

		if (act == TAU_AGENT_ACTION_INVENTORY && strcmp(a->digest, a->failed_digest) == 0)
			act = TAU_AGENT_ACTION_NONE; /* already failed to send this one */
		switch (act) {
		case TAU_AGENT_ACTION_NONE:
			return;
		case TAU_AGENT_ACTION_INVENTORY:
			rc = send_inventory(a, now);
			if (rc < 0 && rc != -TAU_EAGAIN) {
				tau_log_error("cannot send the inventory", "node",
				              a->cfg->node_name, "error", tau_error_last()->msg,
				              NULL);
				memcpy(a->failed_digest, a->digest, sizeof(a->failed_digest));
			}
			break;
		case TAU_AGENT_ACTION_HEARTBEAT:
			rc = send_heartbeat(a, now);
			break;
		case TAU_AGENT_ACTION_RECONNECT: {
			char secs[24];

			snprintf(secs, sizeof(secs), "%u",
			         a->session.heartbeat_s * TAU_AGENT_ACK_TIMEOUT_INTERVALS);
			tau_log_warn("no ack from the aggregator; reconnecting", "waited_s", secs,
			             NULL);
			tau_agent_session_closed(&a->session);
			atomic_store(&a->metrics.connected, false);
			if (tau_agent_stream_restart(a->stream) < 0)
				tau_log_error("cannot reopen the stream", "error",
				              tau_error_last()->msg, NULL);
			return;
		}
		}
		if (rc < 0)
			return; /* -TAU_EAGAIN: the stream just ended; its CLOSED event follows */
	}
}

void tau_agent_daemon_stream_events(tau_agent_daemon *a)
{
	tau_agent_stream_event ev;

	while (tau_agent_stream_poll(a->stream, &ev)) {
		char b1[24], b2[24];

		switch (ev.type) {
		case TAU_AGENT_EV_CONNECTED:
			if (a->stopping)
				break;
			tau_agent_session_connected(&a->session, (int64_t)tau_clock_mono_ms());
			a->failed_digest[0] = '\0';
			if (atomic_fetch_add(&a->metrics.connects, 1) > 0)
				atomic_fetch_add(&a->metrics.reconnects, 1);
			atomic_store(&a->metrics.connected, true);
			tau_log_info("connected to the aggregator", "aggregator",
			             a->cfg->aggregator, NULL);
			break;
		case TAU_AGENT_EV_ACK: {
			tau_agent_ack_result r =
			        tau_agent_session_ack(&a->session, ev.seq, ev.interval_s, ev.status,
			                              (int64_t)tau_clock_mono_ms());

			snprintf(b1, sizeof(b1), "%" PRIu64, ev.seq);
			if (r == TAU_AGENT_ACK_REJECTED)
				tau_log_warn("aggregator rejected a report", "seq", b1, "reason",
				             ev.message, NULL);
			else if (r == TAU_AGENT_ACK_RESEND)
				tau_log_info("aggregator asked for the full inventory", "seq", b1,
				             "reason", ev.message, NULL);
			else if (r == TAU_AGENT_ACK_IGNORED)
				tau_log_debug("ack ignored", "seq", b1, NULL);
			break;
		}
		case TAU_AGENT_EV_CLOSED:
			snprintf(b1, sizeof(b1), "%d", ev.status);
			snprintf(b2, sizeof(b2), "%d", ev.retry_ms);
			if (ev.token_error)
				tau_log_error(
				        "cannot re-read the token file; keeping the old token",
				        "error", ev.message, NULL);
			else if (a->stopping)
				tau_log_info("stream closed", "code", b1, "message", ev.message,
				             NULL);
			else
				tau_log_warn("stream to the aggregator ended", "aggregator",
				             a->cfg->aggregator, "code", b1, "message", ev.message,
				             "retry_in_ms", b2, NULL);
			tau_agent_session_closed(&a->session);
			atomic_store(&a->metrics.connected, false);
			if (a->stopping)
				a->stop_closed = true;
			break;
		}
	}
}

void tau_agent_daemon_begin_stop(tau_agent_daemon *a, const char *reason)
{
	Tau__Inventory__V1__Stopping st = TAU__INVENTORY__V1__STOPPING__INIT;
	Tau__Inventory__V1__AgentReport report;
	char sig[32];

	snprintf(sig, sizeof(sig), "%s", reason);
	a->stopping = true;
	a->stop_deadline_ms = (int64_t)tau_clock_mono_ms() + STOP_WAIT_MS;
	tau_log_info("stopping", "reason", reason, NULL);
	if (a->stream == NULL || !a->session.connected) {
		a->stop_closed = true;
		return;
	}
	st.reason = sig;
	tau_agent_report_init_stopping(&report, tau_agent_session_next_seq(&a->session), &st);
	if (tau_agent_stream_send(a->stream, &report) < 0 ||
	    tau_agent_stream_close_send(a->stream) < 0) {
		a->stop_closed = true;
		return;
	}
	note_sent(a, TAU_AGENT_ACTION_NONE, NULL, (int64_t)tau_clock_mono_ms());
	atomic_fetch_add(&a->metrics.stopping_sent, 1);
}
