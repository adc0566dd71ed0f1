/*
 * kube_metrics.c - what a Kubernetes client's requests did, by verb and code, and how long
 * they took (the REST client metrics every operator dashboard expects).
 *
 * The one idea: a client holds a small fixed table per verb (the first
 * TAU_KUBE_METRICS_CODES distinct codes it saw, then "other"), so the memory of the
 * metrics is fixed whatever a server answers; latencies are one histogram per verb.
 */
#include "kube_internal.h"

#include "tau/prom.h"

#include <stdio.h>
#include <string.h>

static const char *const verb_names[TAU_KUBE_VERBS] = {"GET", "LIST",  "WATCH", "POST",
                                                       "PUT", "PATCH", "DELETE"};

tau_kube_verb tau_kube_verb_of(const char *method)
{
	for (int v = 0; v < TAU_KUBE_VERBS; v++)
		if (strcmp(method, verb_names[v]) == 0)
			return (tau_kube_verb)v;
	return TAU_KUBE_VERB_GET; /* the methods the client sends are all named above */
}

void tau_kube_request_metrics_init(tau_kube_request_metrics *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
}

void tau_kube_request_metrics_destroy(tau_kube_request_metrics *m)
{
	pthread_mutex_destroy(&m->lock);
}

void tau_kube_request_metrics_record(tau_kube_request_metrics *m, tau_kube_verb verb, long code,
                                     uint64_t us, bool timed)
{
	tau_kube_code_count *row = m->codes[verb];
	size_t i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < TAU_KUBE_METRICS_CODES && row[i].n > 0 && row[i].code != code; i++)
		;
	if (i < TAU_KUBE_METRICS_CODES) {
		row[i].code = code;
		row[i].n++;
	} else {
		m->other[verb]++;
	}
	pthread_mutex_unlock(&m->lock);
	if (timed)
		tau_prom_histogram_observe(&m->latency[verb], us);
}

void tau_kube_request_metrics_write(tau_buf *b, const char *prefix,
                                    tau_kube_request_metrics *const *ms, const char *const *names,
                                    size_t n)
{
	char family[128];

	snprintf(family, sizeof(family), "%s_kube_requests_total", prefix);
	tau_prom_family(b, family, "counter",
	                "Kubernetes API requests sent, retries included, by client, verb and HTTP "
	                "code (<error>: no answer; other: codes past the first 8 of a verb).");
	for (size_t k = 0; k < n; k++) {
		pthread_mutex_lock(&ms[k]->lock);
		for (int v = 0; v < TAU_KUBE_VERBS; v++) {
			for (size_t i = 0; i < TAU_KUBE_METRICS_CODES && ms[k]->codes[v][i].n > 0;
			     i++) {
				char code[24];

				if (ms[k]->codes[v][i].code == 0)
					snprintf(code, sizeof(code), "<error>");
				else
					snprintf(code, sizeof(code), "%ld",
					         ms[k]->codes[v][i].code);
				tau_prom_sample(b, family,
				                (const char *const[]){"client", names[k], "verb",
				                                      verb_names[v], "code", code,
				                                      NULL},
				                ms[k]->codes[v][i].n);
			}
			if (ms[k]->other[v] > 0)
				tau_prom_sample(b, family,
				                (const char *const[]){"client", names[k], "verb",
				                                      verb_names[v], "code",
				                                      "other", NULL},
				                ms[k]->other[v]);
		}
		pthread_mutex_unlock(&ms[k]->lock);
	}
	snprintf(family, sizeof(family), "%s_kube_request_duration_seconds", prefix);
	tau_prom_family(b, family, "histogram",
	                "Kubernetes API request latency by client and verb, each try apart, until "
	                "the whole answer is read (watches are not timed).");
	for (size_t k = 0; k < n; k++)
		for (int v = 0; v < TAU_KUBE_VERBS; v++)
			if (v != TAU_KUBE_VERB_WATCH)
				tau_prom_histogram_write(b, family,
				                         (const char *const[]){"client", names[k],
				                                               "verb",
				                                               verb_names[v], NULL},
				                         &ms[k]->latency[v]);
}
