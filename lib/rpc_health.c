/*
 * rpc_health.c - grpc.health.v1.Health (Check and Watch) on top of the tau_rpc server.
 *
 * A small table of service -> status, and the list of open Watch calls. Setting a status
 * sends the new value to every watcher of that service whose last sent value differs. It is
 * built only on the public server API; the one idea to know is lock order: health mutex, then
 * (inside tau_rpc_call_send) the call's mutex, never the reverse. Watch calls leave the list
 * in on_done, which the server runs before it frees the call.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "tau/error.h"
#include "tau/rpc_server.h"

#include "grpc/health/v1/health.pb-c.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SERVICES     64
#define MAX_SERVICE_NAME 256
/* Watch answer for a service that is not (yet) known; not part of tau_rpc_health_status. */
#define SERVICE_UNKNOWN 3

struct health_entry {
	char *name;
	tau_rpc_health_status status;
};

struct watcher {
	tau_rpc_call *call;
	char *service;
	int last_sent; /* -1: nothing sent yet */
	struct watcher *next;
};

struct tau_rpc_health {
	pthread_mutex_t mu;
	struct health_entry services[MAX_SERVICES];
	size_t n_services;
	struct watcher *watchers;
};

static struct health_entry *find_locked(tau_rpc_health *h, const char *service)
{
	for (size_t i = 0; i < h->n_services; i++)
		if (strcmp(h->services[i].name, service) == 0)
			return &h->services[i];
	return NULL;
}

static void send_status_locked(struct watcher *w, int status)
{
	Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;

	if (w->last_sent == status)
		return;
	resp.status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)status;
	/* A watcher whose queue is full misses this value; the next change retries. */
	if (tau_rpc_call_send(w->call, &resp.base) == 0)
		w->last_sent = status;
}

static void check_on_message(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_rpc_health *h = ud;
	Grpc__Health__V1__HealthCheckRequest *req = (Grpc__Health__V1__HealthCheckRequest *)msg;
	Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
	struct health_entry *e;
	bool found;

	pthread_mutex_lock(&h->mu);
	e = find_locked(h, req->service);
	found = e != NULL;
	if (found)
		resp.status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)e->status;
	pthread_mutex_unlock(&h->mu);
	if (found)
		tau_rpc_call_reply(call, &resp.base);
	else
		tau_rpc_call_finish(call, TAU_RPC_NOT_FOUND, "unknown service");
	tau_rpc_message_free(msg);
}

static void watch_on_message(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_rpc_health *h = ud;
	Grpc__Health__V1__HealthCheckRequest *req = (Grpc__Health__V1__HealthCheckRequest *)msg;
	struct watcher *w = calloc(1, sizeof(*w));
	struct health_entry *e;

	if (w == NULL || strlen(req->service) > MAX_SERVICE_NAME ||
	    (w->service = strdup(req->service)) == NULL) {
		free(w);
		tau_rpc_call_finish(call, TAU_RPC_RESOURCE_EXHAUSTED, "cannot watch");
		tau_rpc_message_free(msg);
		return;
	}
	tau_rpc_message_free(msg);
	w->call = call;
	w->last_sent = -1;
	tau_rpc_call_set_user(call, w);
	pthread_mutex_lock(&h->mu);
	w->next = h->watchers;
	h->watchers = w;
	e = find_locked(h, w->service);
	send_status_locked(w, e ? (int)e->status : SERVICE_UNKNOWN);
	pthread_mutex_unlock(&h->mu);
}

static void watch_on_done(tau_rpc_call *call, tau_rpc_end end, void *ud)
{
	tau_rpc_health *h = ud;
	struct watcher *w = tau_rpc_call_user(call);

	(void)end;
	if (w == NULL)
		return;
	pthread_mutex_lock(&h->mu);
	for (struct watcher **pp = &h->watchers; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&h->mu);
	free(w->service);
	free(w);
}

int tau_rpc_health_new(tau_rpc_health **out)
{
	tau_rpc_health *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return tau_error_set(TAU_ENOMEM, "health");
	pthread_mutex_init(&h->mu, NULL);
	h->services[0].name = strdup("");
	if (h->services[0].name == NULL) {
		free(h);
		return tau_error_set(TAU_ENOMEM, "health");
	}
	h->services[0].status = TAU_RPC_HEALTH_SERVING;
	h->n_services = 1;
	*out = h;
	return 0;
}

int tau_rpc_health_register(tau_rpc_health *h, tau_rpc_server *srv)
{
	tau_rpc_method check = {
	        .path = "/grpc.health.v1.Health/Check",
	        .kind = TAU_RPC_UNARY,
	        .request = &grpc__health__v1__health_check_request__descriptor,
	        .response = &grpc__health__v1__health_check_response__descriptor,
	        .on_message = check_on_message,
	        .ud = h,
	};
	tau_rpc_method watch = {
	        .path = "/grpc.health.v1.Health/Watch",
	        .kind = TAU_RPC_SERVER_STREAM,
	        .request = &grpc__health__v1__health_check_request__descriptor,
	        .response = &grpc__health__v1__health_check_response__descriptor,
	        .on_message = watch_on_message,
	        .on_done = watch_on_done,
	        .ud = h,
	};
	int rc = tau_rpc_server_add_method(srv, &check);

	if (rc < 0)
		return rc;
	return tau_rpc_server_add_method(srv, &watch);
}

int tau_rpc_health_set(tau_rpc_health *h, const char *service, tau_rpc_health_status status)
{
	struct health_entry *e;
	int rc = 0;

	if (service == NULL || strlen(service) > MAX_SERVICE_NAME ||
	    !tau_rpc_utf8_valid(service, strlen(service)))
		return tau_error_set(TAU_EINVAL, "bad health service name");
	if (status != TAU_RPC_HEALTH_UNKNOWN && status != TAU_RPC_HEALTH_SERVING &&
	    status != TAU_RPC_HEALTH_NOT_SERVING)
		return tau_error_set(TAU_EINVAL, "bad health status %d", (int)status);
	pthread_mutex_lock(&h->mu);
	e = find_locked(h, service);
	if (e == NULL) {
		if (h->n_services == MAX_SERVICES) {
			rc = tau_error_set(TAU_ETOOBIG, "more than %d health services",
			                   MAX_SERVICES);
			goto out;
		}
		e = &h->services[h->n_services];
		e->name = strdup(service);
		if (e->name == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "health service");
			goto out;
		}
		h->n_services++;
	}
	e->status = status;
	for (struct watcher *w = h->watchers; w != NULL; w = w->next)
		if (strcmp(w->service, service) == 0)
			send_status_locked(w, (int)status);
out:
	pthread_mutex_unlock(&h->mu);
	return rc;
}

void tau_rpc_health_set_all_not_serving(tau_rpc_health *h)
{
	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < h->n_services; i++)
		h->services[i].status = TAU_RPC_HEALTH_NOT_SERVING;
	for (struct watcher *w = h->watchers; w != NULL; w = w->next)
		send_status_locked(w, TAU_RPC_HEALTH_NOT_SERVING);
	pthread_mutex_unlock(&h->mu);
}

void tau_rpc_health_free(tau_rpc_health *h)
{
	if (h == NULL)
		return;
	/* Watchers are gone: the server ran every on_done before it was freed. */
	for (size_t i = 0; i < h->n_services; i++)
		free(h->services[i].name);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
