/*
 * stream.c - the Report stream, handed over from lib/rpc's CQ thread to the event loop.
 *
 * The one idea: rpc callbacks never decide anything.  They copy the event
 * (connected, ack, closed) into a mutex-protected queue and write the
 * loop's eventfd; the loop pops events and runs the report session.  The one
 * exception is the bearer token: lib/rpc starts the next attempt on its own
 * thread after the backoff, so the token file is re-read in on_closed (a
 * small local file, never the network) and set on the channel before that
 * attempt, which is how a rotated projected token applies on the next connect.
 *
 * The queue is bounded; a run of OK acks collapses into the newest one
 * (acks are cumulative), so only a loop stuck for a very long time loses
 * events, and that is counted.
 */
#include "stream.h"

#include "tau/error.h"
#include "tau/file.h"
#include "tau/pem.h"
#include "tau/rpc_client.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tau_agent_stream {
	tau_rpc_channel *ch;
	tau_rpc_stream *rpc;
	tau_agent_stream_opts o;
	char *target;
	char *token_file;

	pthread_mutex_t mu; /* the queue */
	tau_agent_stream_event *queue;
	size_t q_head, q_len;
};

int tau_agent_read_token(char **out, const char *path)
{
	char *buf = NULL;
	size_t n = 0, start = 0, end;
	int rc = tau_file_read(&buf, &n, path, TAU_AGENT_TOKEN_MAX, "token file");

	if (rc < 0)
		return rc;
	end = n;
	while (start < end && isspace((unsigned char)buf[start]))
		start++;
	while (end > start && isspace((unsigned char)buf[end - 1]))
		end--;
	if (start == end) {
		free(buf);
		return tau_error_set(TAU_EINVAL, "token file %s is empty", path);
	}
	memmove(buf, buf + start, end - start);
	buf[end - start] = '\0';
	*out = buf;
	return 0;
}

/* Re-read the token file and set it on the channel.  0 or a negative code. */
static int refresh_token(tau_agent_stream *s)
{
	char *token = NULL;
	int rc;

	if (s->token_file == NULL)
		return 0;
	rc = tau_agent_read_token(&token, s->token_file);
	if (rc < 0)
		return rc;
	rc = tau_rpc_channel_set_bearer_token(s->ch, token);
	free(token);
	return rc;
}

static void wake(tau_agent_stream *s)
{
	uint64_t one = 1;
	ssize_t n;

	if (s->o.wake_fd < 0)
		return;
	do {
		n = write(s->o.wake_fd, &one, sizeof(one));
	} while (n < 0 && errno == EINTR);
	/* EAGAIN: the counter is already non-zero, the loop will wake anyway. */
}

static bool is_ok_ack(const tau_agent_stream_event *ev)
{
	return ev->type == TAU_AGENT_EV_ACK &&
	       (ev->status == TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK ||
	        ev->status == TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_UNSPECIFIED);
}

static void push(tau_agent_stream *s, const tau_agent_stream_event *ev)
{
	pthread_mutex_lock(&s->mu);
	if (s->q_len > 0 && is_ok_ack(ev)) {
		tau_agent_stream_event *tail =
		        &s->queue[(s->q_head + s->q_len - 1) % TAU_AGENT_STREAM_QUEUE_MAX];

		if (is_ok_ack(tail)) {
			*tail = *ev; /* cumulative: the newest OK ack says all */
			pthread_mutex_unlock(&s->mu);
			wake(s);
			return;
		}
	}
	if (s->q_len < TAU_AGENT_STREAM_QUEUE_MAX) { /* full: dropped (OK acks merge above) */
		s->queue[(s->q_head + s->q_len) % TAU_AGENT_STREAM_QUEUE_MAX] = *ev;
		s->q_len++;
	}
	pthread_mutex_unlock(&s->mu);
	wake(s);
}

static void on_connected(tau_rpc_stream *rs, void *ud)
{
	tau_agent_stream_event ev;

	(void)rs;
	memset(&ev, 0, sizeof(ev));
	ev.type = TAU_AGENT_EV_CONNECTED;
	push(ud, &ev);
}

static void on_message(tau_rpc_stream *rs, ProtobufCMessage *msg, void *ud)
{
	const Tau__Inventory__V1__ReportAck *ack = (const Tau__Inventory__V1__ReportAck *)msg;
	tau_agent_stream_event ev;

	(void)rs;
	memset(&ev, 0, sizeof(ev));
	ev.type = TAU_AGENT_EV_ACK;
	ev.seq = ack->seq;
	ev.interval_s = ack->heartbeat_interval_seconds;
	ev.status = (int)ack->status;
	snprintf(ev.message, sizeof(ev.message), "%s", ack->message != NULL ? ack->message : "");
	tau_rpc_message_free(msg);
	push(ud, &ev);
}

static void on_closed(tau_rpc_stream *rs, const tau_rpc_status *st, int retry_in_ms, void *ud)
{
	tau_agent_stream *s = ud;
	tau_agent_stream_event ev;

	(void)rs;
	memset(&ev, 0, sizeof(ev));
	ev.type = TAU_AGENT_EV_CLOSED;
	ev.status = (int)st->code;
	ev.retry_ms = retry_in_ms;
	snprintf(ev.message, sizeof(ev.message), "%.250s", st->message);
	if (retry_in_ms >= 0 && refresh_token(s) < 0) {
		ev.token_error = true;
		snprintf(ev.message, sizeof(ev.message), "%.250s", tau_error_last()->msg);
	}
	push(s, &ev);
}

static int open_rpc(tau_agent_stream *s)
{
	tau_rpc_stream_opts so;

	memset(&so, 0, sizeof(so));
	so.path = TAU_AGENT_REPORT_PATH;
	so.response = &tau__inventory__v1__report_ack__descriptor;
	so.reconnect = true;
	so.backoff_initial_ms = s->o.backoff_initial_ms;
	so.backoff_max_ms = s->o.backoff_max_ms;
	/* While the aggregator is unreachable (no Ready replica behind the Service during a
	 * failover) an attempt waits for the connection instead of failing: the channel's short
	 * reconnect backoff alone decides when the agent is back, not the stream's 30 s one on top
	 * of it (docs/agent.md, "Protocol behaviour"). */
	so.wait_for_ready = true;
	so.on_connected = on_connected;
	so.on_message = on_message;
	so.on_closed = on_closed;
	so.ud = s;
	return tau_rpc_stream_open(&s->rpc, s->ch, &so);
}

int tau_agent_stream_open(tau_agent_stream **out, const tau_agent_stream_opts *opts)
{
	tau_agent_stream *s = NULL;
	tau_rpc_channel_opts co;
	char *ca = NULL;
	int rc = -TAU_ENOMEM;

	if (opts == NULL || opts->target == NULL)
		return tau_error_set(TAU_EINVAL, "no aggregator address");
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	pthread_mutex_init(&s->mu, NULL);
	s->o = *opts;
	s->queue = calloc(TAU_AGENT_STREAM_QUEUE_MAX, sizeof(*s->queue));
	s->target = strdup(opts->target);
	s->token_file = opts->token_file != NULL ? strdup(opts->token_file) : NULL;
	if (s->queue == NULL || s->target == NULL ||
	    (opts->token_file != NULL && s->token_file == NULL)) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto out;
	}
	s->o.target = s->target;
	s->o.token_file = s->token_file;
	s->o.ca_file = NULL;

	if (opts->ca_file != NULL) {
		size_t ca_len = 0;

		char what[300];

		snprintf(what, sizeof(what), "--ca-file %.256s", opts->ca_file);
		rc = tau_file_read(&ca, &ca_len, opts->ca_file, TAU_AGENT_CA_MAX, "--ca-file");
		if (rc == 0 && (rc = tau_pem_check_certificates(ca, ca_len, what)) > 0)
			rc = 0;
		if (rc < 0)
			goto out;
	}
	memset(&co, 0, sizeof(co));
	co.target = s->target;
	co.ca_pem = ca;
	co.reconnect_max_ms = TAU_AGENT_RECONNECT_MAX_MS;
	rc = tau_rpc_channel_new(&s->ch, &co);
	if (rc < 0)
		goto out;
	rc = refresh_token(s);
	if (rc < 0)
		goto out;
	rc = open_rpc(s);
	if (rc < 0)
		goto out;
	*out = s;
	s = NULL;
	rc = 0;
out:
	free(ca);
	tau_agent_stream_free(s);
	return rc;
}

bool tau_agent_stream_poll(tau_agent_stream *s, tau_agent_stream_event *ev)
{
	bool got = false;

	pthread_mutex_lock(&s->mu);
	if (s->q_len > 0) {
		*ev = s->queue[s->q_head];
		s->q_head = (s->q_head + 1) % TAU_AGENT_STREAM_QUEUE_MAX;
		s->q_len--;
		got = true;
	}
	pthread_mutex_unlock(&s->mu);
	return got;
}

int tau_agent_stream_send(tau_agent_stream *s, const Tau__Inventory__V1__AgentReport *report)
{
	if (s->rpc == NULL)
		return tau_error_set(TAU_EAGAIN, "not connected");
	return tau_rpc_stream_send(s->rpc, &report->base);
}

int tau_agent_stream_close_send(tau_agent_stream *s)
{
	if (s->rpc == NULL)
		return tau_error_set(TAU_EAGAIN, "not connected");
	return tau_rpc_stream_close_send(s->rpc);
}

int tau_agent_stream_restart(tau_agent_stream *s)
{
	tau_rpc_stream_free(s->rpc);
	s->rpc = NULL;
	/* A failed re-read keeps the previous token; the CLOSED event above already went. */
	(void)refresh_token(s);
	return open_rpc(s);
}

void tau_agent_stream_free(tau_agent_stream *s)
{
	if (s == NULL)
		return;
	tau_rpc_stream_free(s->rpc);
	tau_rpc_channel_free(s->ch);
	pthread_mutex_destroy(&s->mu);
	free(s->queue);
	free(s->target);
	free(s->token_file);
	free(s);
}
