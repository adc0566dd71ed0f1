/*
 * kube_informer.c - the shared event loop and list+watch informers.
 *
 * The one idea: an informer is a small state machine (IDLE -> LISTING ->
 * WATCHING, with WAITING for backoff or the rate limiter) whose every
 * transition happens on the loop thread, driven either by a curl transfer
 * finishing or by its own due time.  The loop is curl_multi_poll with a
 * timeout equal to the earliest of the informers' due times and curl's own
 * timer; curl_multi_wakeup makes it notice starts and stops from other
 * threads, so there is no sleeping, no periodic tick when idle and no thread
 * per watch.
 *
 * Watch bodies arrive in arbitrary chunks; bytes are buffered until '\n'
 * (the API server's json.Encoder framing) under a hard line cap, and each
 * complete line is applied to the cache at once.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/clock.h"
#include "tau/kube_informer.h"

#include "kube_internal.h"
#include "tau/backoff.h"
#include "tau/error.h"
#include "tau/hmap.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/mem.h"
#include "tau/sync.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The longest an idle loop waits when neither an informer nor curl has anything due: an
 * hour, only a backstop (every start, stop and transfer wakes the loop itself). */
#define LOOP_IDLE_WAIT_MS (3600u * 1000u)

typedef enum inf_state {
	ST_IDLE = 0,
	ST_LIST_DUE,  /* a list request should be sent at due_ms */
	ST_LISTING,   /* a list page is in flight */
	ST_WATCH_DUE, /* a watch request should be sent at due_ms */
	ST_WATCHING,  /* a watch stream is open */
} inf_state;

typedef struct cache_entry {
	tau_hmap_node node; /* in the informer's cache, keyed by key */
	cJSON *obj;
	bool seen; /* relist marking */
	char key[];
} cache_entry;

typedef struct transfer {
	CURL *h;
	struct curl_slist *headers;
	tau_buf body; /* list body, or pending watch bytes */
	int retry_after;
	uint64_t started_us; /* monotonic, for the request metrics */
	bool watch;
	bool too_big;
} transfer;

struct tau_kube_informer {
	tau_kube_loop *loop;
	tau_kube_informer *next_in_loop;
	tau_kube_resource res;
	char *group, *version, *plural; /* owned copies behind res */
	char *ns, *label_selector, *field_selector;
	tau_kube_informer_options opts;
	tau_kube_handlers handlers;

	/* loop-thread state */
	inf_state state;
	uint64_t due_ms;
	bool token_held; /* a limiter token was already taken for the due request */
	bool start_requested;
	tau_backoff backoff;
	transfer *xfer;
	cJSON *staging;   /* items gathered across list pages */
	char *staging_rv; /* the list's resourceVersion */
	char *continue_token;
	bool unpaged;        /* relist without limit (continue expired) */
	bool quorum_relist;  /* next list without resourceVersion */
	bool need_relist;    /* the watch saw something that requires a list */
	bool relist_backoff; /* ...after a backoff (error events other than 410) */
	uint64_t watch_started_ms;
	uint64_t watch_events;

	/* shared with readers */
	pthread_mutex_t lock;
	tau_hmap cache; /* cache_entry by "ns/name" */
	char last_rv[128];
	atomic_bool synced;
	tau_kube_informer_stats stats;
};

struct tau_kube_loop {
	tau_kube_client *client;
	CURLM *multi;
	pthread_mutex_t lock; /* guards informers list and the flags below */
	tau_kube_informer *informers;
	atomic_bool stop;
	atomic_uint_fast64_t wakeups; /* returns from curl_multi_poll */
	bool pending_starts;
	pthread_t thread;
	bool thread_running;
};

/* ------------------------------------------------------------------ */
/* Cache                                                               */

static cache_entry *cache_find(tau_kube_informer *inf, const char *key)
{
	tau_hmap_node *n = tau_hmap_get(&inf->cache, key);

	return n != NULL ? TAU_HMAP_ENTRY(n, cache_entry, node) : NULL;
}

/* Insert a new entry owning `obj`; caller holds the lock and checked absence. */
static cache_entry *cache_insert(tau_kube_informer *inf, const char *key, cJSON *obj)
{
	size_t len = strlen(key);
	cache_entry *e = malloc(sizeof(*e) + len + 1);

	if (e == NULL)
		return NULL;
	memcpy(e->key, key, len + 1);
	e->obj = obj;
	e->seen = true;
	tau_hmap_insert(&inf->cache, &e->node, e->key);
	return e;
}

/* Unlink `e`; returns its object (caller frees). */
static cJSON *cache_remove(tau_kube_informer *inf, cache_entry *e)
{
	cJSON *obj = e->obj;

	tau_hmap_remove(&inf->cache, &e->node);
	free(e);
	return obj;
}

/* Every entry, one by one: `while ((e = cache_next(&it)) != NULL)`; removal is allowed. */
static cache_entry *cache_next(tau_hmap_iter *it)
{
	tau_hmap_node *n = tau_hmap_iter_next(it);

	return n != NULL ? TAU_HMAP_ENTRY(n, cache_entry, node) : NULL;
}

/* "ns/name" or "name"; @return 0 or -1 when the object has no name. */
static int object_key(char *buf, size_t cap, const cJSON *obj)
{
	const char *name = NULL, *ns = NULL;
	int n;

	if (tau_json_get_string(&name, obj, "metadata.name") < 0 || name[0] == '\0')
		return -1;
	if (tau_json_get_string(&ns, obj, "metadata.namespace") < 0)
		ns = NULL;
	if (ns && ns[0])
		n = snprintf(buf, cap, "%s/%s", ns, name);
	else
		n = snprintf(buf, cap, "%s", name);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/*
 * Find obj's cache entry: false when obj has no usable key (obj is deleted, nothing locked),
 * else true with inf->lock held, key filled and *e the entry or NULL.
 */
static bool lock_entry(tau_kube_informer *inf, cJSON *obj, char *key, size_t cap, cache_entry **e)
{
	if (object_key(key, cap, obj) < 0) {
		cJSON_Delete(obj);
		return false;
	}
	pthread_mutex_lock(&inf->lock);
	*e = cache_find(inf, key);
	return true;
}

static const char *object_rv(const cJSON *obj)
{
	const char *rv = NULL;

	if (tau_json_get_string(&rv, obj, "metadata.resourceVersion") < 0)
		return NULL;
	return rv;
}

static void set_last_rv(tau_kube_informer *inf, const char *rv)
{
	if (rv == NULL || rv[0] == '\0')
		return;
	pthread_mutex_lock(&inf->lock);
	snprintf(inf->last_rv, sizeof(inf->last_rv), "%s", rv);
	pthread_mutex_unlock(&inf->lock);
}

/* Apply an added/modified object (owned); delivers add or update. */
static void apply_upsert(tau_kube_informer *inf, cJSON *obj)
{
	char key[600];
	cache_entry *e;
	cJSON *old = NULL;
	bool added = false;

	if (inf->opts.transform != NULL)
		inf->opts.transform(inf->handlers.arg, obj);
	if (!lock_entry(inf, obj, key, sizeof(key), &e))
		return;
	if (e) {
		old = e->obj;
		e->obj = obj;
		e->seen = true;
	} else if (cache_insert(inf, key, obj) != NULL) {
		added = true;
	} else {
		pthread_mutex_unlock(&inf->lock);
		/* Out of memory: the cache is now wrong; relist later. */
		inf->need_relist = true;
		cJSON_Delete(obj);
		return;
	}
	pthread_mutex_unlock(&inf->lock);
	/* The new object stays alive: only the loop thread replaces or frees it. */
	if (added && inf->handlers.on_add)
		inf->handlers.on_add(inf->handlers.arg, obj);
	else if (!added && inf->handlers.on_update)
		inf->handlers.on_update(inf->handlers.arg, old, obj);
	cJSON_Delete(old);
}

static void apply_delete(tau_kube_informer *inf, cJSON *obj)
{
	char key[600];
	cache_entry *e;
	cJSON *old = NULL;

	if (!lock_entry(inf, obj, key, sizeof(key), &e))
		return;
	if (e)
		old = cache_remove(inf, e);
	pthread_mutex_unlock(&inf->lock);
	if (inf->handlers.on_delete)
		inf->handlers.on_delete(inf->handlers.arg, obj);
	cJSON_Delete(old);
	cJSON_Delete(obj);
}

/* Replace the cache with the staged list, delivering the differences. */
static void apply_replace(tau_kube_informer *inf)
{
	cJSON *items = inf->staging;
	tau_hmap_iter it;
	cache_entry *e;

	pthread_mutex_lock(&inf->lock);
	tau_hmap_iter_init(&it, &inf->cache);
	while ((e = cache_next(&it)) != NULL)
		e->seen = false;
	pthread_mutex_unlock(&inf->lock);
	while (items && items->child) {
		cJSON *obj = cJSON_DetachItemViaPointer(items, items->child);
		char key[600];
		const char *nrv, *orv;
		bool same = false;

		if (!lock_entry(inf, obj, key, sizeof(key), &e))
			continue;
		if (e) {
			e->seen = true;
			nrv = object_rv(obj);
			orv = object_rv(e->obj);
			same = nrv && orv && strcmp(nrv, orv) == 0;
		}
		pthread_mutex_unlock(&inf->lock);
		if (same)
			cJSON_Delete(obj); /* unchanged: keep the cached copy, no event */
		else
			apply_upsert(inf, obj);
	}
	/* Whatever was not in the list vanished while we were not watching: unlink all of
	 * it under the lock, then tell the handlers without it. */
	{
		cJSON **gone = NULL;
		size_t n_gone = 0;

		size_t held;

		pthread_mutex_lock(&inf->lock);
		held = inf->cache.len;
		gone = held ? malloc(held * sizeof(*gone)) : NULL;
		tau_hmap_iter_init(&it, &inf->cache);
		while (gone != NULL && (e = cache_next(&it)) != NULL)
			if (!e->seen)
				gone[n_gone++] = cache_remove(inf, e);
		inf->stats.synthetic_deletes += n_gone;
		pthread_mutex_unlock(&inf->lock);
		if (held && gone == NULL)
			inf->need_relist = true; /* out of memory: try again later */
		for (size_t i = 0; i < n_gone; i++) {
			if (inf->handlers.on_delete)
				inf->handlers.on_delete(inf->handlers.arg, gone[i]);
			cJSON_Delete(gone[i]);
		}
		free(gone);
	}
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */

static void transfer_free(tau_kube_loop *loop, transfer *t)
{
	if (t == NULL)
		return;
	if (t->h) {
		curl_multi_remove_handle(loop->multi, t->h);
		curl_easy_cleanup(t->h);
	}
	curl_slist_free_all(t->headers);
	tau_buf_free(&t->body);
	free(t);
}

static void watch_line(void *arg, const char *line, size_t len);

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	tau_kube_informer *inf = arg;
	transfer *t = inf->xfer;
	size_t n = size * nmemb;
	long code = 0;

	if (t == NULL)
		return 0;
	if (tau_buf_append(&t->body, ptr, n) < 0) {
		t->too_big = true;
		return 0;
	}
	if (!t->watch)
		return n;
	curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200)
		return n; /* an error Status body: decoded when the transfer ends */
	/* Apply every complete line now; keep the tail for the next chunk. */
	tau_buf_consume(&t->body, tau_kube_watch_split(t->body.p, t->body.len, watch_line, inf));
	/* Expired: stop reading; the completion handler relists. */
	return inf->need_relist ? 0 : n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *arg)
{
	tau_kube_informer *inf = arg;
	size_t n = size * nmemb;

	if (inf->xfer && n > 12 && strncasecmp(ptr, "Retry-After:", 12) == 0) {
		long v = strtol(ptr + 12, NULL, 10);

		if (v >= 0 && v < 86400)
			inf->xfer->retry_after = (int)v;
	}
	return n;
}

static int start_transfer(tau_kube_informer *inf, bool watch)
{
	tau_kube_loop *loop = inf->loop;
	const tau_kube_config *cfg = tau_kube_client_config(loop->client);
	tau_kube_list_options lo = {.label_selector = inf->label_selector,
	                            .field_selector = inf->field_selector};
	char *path = NULL, *query = NULL, *url = NULL;
	transfer *t = NULL;
	uint64_t timeout_ms;
	char rv[128];
	int rc;

	pthread_mutex_lock(&inf->lock);
	snprintf(rv, sizeof(rv), "%s", inf->last_rv);
	pthread_mutex_unlock(&inf->lock);
	if (watch) {
		int64_t span = inf->opts.watch_timeout_max_s - inf->opts.watch_timeout_min_s;

		lo.watch = true;
		lo.allow_bookmarks = true;
		lo.resource_version = rv;
		lo.timeout_seconds = inf->opts.watch_timeout_min_s +
		                     (span > 0 ? (int64_t)(tau_backoff_rand() * (double)span) : 0);
		/* Guard against a hung stream: the server should end it by then. */
		timeout_ms = (uint64_t)lo.timeout_seconds * 1000u + 30000u;
	} else {
		lo.limit = inf->unpaged ? 0 : inf->opts.page_size;
		lo.continue_token = inf->continue_token;
		timeout_ms = cfg->timeout_ms * 4;
	}
	rc = tau_kube_path(&path, &inf->res, inf->ns, NULL, NULL);
	if (rc == 0)
		rc = tau_kube_list_query(&query, &lo);
	if (rc < 0)
		goto out;
	url = tau_kube_client_url(loop->client, path, query);
	t = calloc(1, sizeof(*t));
	if (url == NULL || t == NULL || (t->h = curl_easy_init()) == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto out;
	}
	t->watch = watch;
	t->retry_after = -1;
	t->body.max = watch ? cfg->watch_line_cap : cfg->body_cap;
	rc = tau_kube_client_prepare(loop->client, t->h, "GET", url, NULL, &t->headers, timeout_ms);
	if (rc < 0)
		goto out;
	curl_easy_setopt(t->h, CURLOPT_PRIVATE, inf);
	curl_easy_setopt(t->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(t->h, CURLOPT_WRITEDATA, inf);
	curl_easy_setopt(t->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(t->h, CURLOPT_HEADERDATA, inf);
	if (curl_multi_add_handle(loop->multi, t->h) != CURLM_OK) {
		rc = tau_error_set(TAU_EIO, "curl_multi_add_handle failed");
		goto out;
	}
	tau_kube_client_count_request(loop->client, false);
	t->started_us = tau_clock_mono_us();
	inf->xfer = t;
	t = NULL;
	if (watch) {
		inf->state = ST_WATCHING;
		inf->watch_started_ms = tau_clock_mono_ms();
		inf->watch_events = 0;
		inf->need_relist = false;
		pthread_mutex_lock(&inf->lock);
		inf->stats.watches++;
		pthread_mutex_unlock(&inf->lock);
	} else {
		inf->state = ST_LISTING;
	}
	tau_log_debug(watch ? "kube informer: watch" : "kube informer: list", "resource",
	              inf->res.plural, "resource_version", rv, NULL);
out:
	transfer_free(loop, t);
	free(path);
	free(query);
	free(url);
	return rc;
}

/* Schedule the next list or watch after `delay_ms`. */
static void schedule(tau_kube_informer *inf, inf_state st, uint64_t delay_ms)
{
	inf->state = st;
	inf->due_ms = tau_clock_mono_ms() + delay_ms;
	inf->token_held = false;
}

static void schedule_backoff(tau_kube_informer *inf, inf_state st, int retry_after)
{
	uint64_t now = tau_clock_mono_ms();
	uint64_t d = tau_backoff_next(&inf->backoff, now, tau_backoff_rand());

	if (retry_after > 0 && (uint64_t)retry_after * 1000u > d)
		d = (uint64_t)retry_after * 1000u;
	if (d > inf->opts.backoff_cap_ms && retry_after <= 0)
		d = inf->opts.backoff_cap_ms;
	pthread_mutex_lock(&inf->lock);
	inf->stats.failures++;
	pthread_mutex_unlock(&inf->lock);
	schedule(inf, st, d);
}

static void reset_list_state(tau_kube_informer *inf)
{
	cJSON_Delete(inf->staging);
	inf->staging = NULL;
	free(inf->staging_rv);
	inf->staging_rv = NULL;
	free(inf->continue_token);
	inf->continue_token = NULL;
}

/* Issue the due request (taking a limiter token first). */
static void informer_fire(tau_kube_informer *inf)
{
	bool watch = inf->state == ST_WATCH_DUE;
	int rc;

	if (!inf->token_held) {
		uint64_t wait = tau_kube_client_reserve(inf->loop->client);

		inf->token_held = true;
		if (wait > 0) {
			inf->due_ms = tau_clock_mono_ms() + wait;
			return;
		}
	}
	inf->token_held = false;
	inf->due_ms = 0;
	rc = start_transfer(inf, watch);
	if (rc < 0) {
		tau_log_debug("kube informer: cannot start request", "resource", inf->res.plural,
		              "error", tau_error_last()->msg, NULL);
		schedule_backoff(inf, watch ? ST_WATCH_DUE : ST_LIST_DUE, -1);
	}
}

/* One watch event line. */
size_t tau_kube_watch_split(const char *buf, size_t len,
                            void (*fn)(void *arg, const char *line, size_t len), void *arg)
{
	size_t start = 0;
	const char *nl;

	while (start < len && (nl = memchr(buf + start, '\n', len - start)) != NULL) {
		size_t end = (size_t)(nl - buf);

		fn(arg, buf + start, end - start);
		start = end + 1;
	}
	return start;
}

static const struct {
	const char *name;
	tau_kube_watch_type type;
} watch_types[] = {
        {"ADDED", TAU_KUBE_WATCH_ADDED},     {"MODIFIED", TAU_KUBE_WATCH_MODIFIED},
        {"DELETED", TAU_KUBE_WATCH_DELETED}, {"BOOKMARK", TAU_KUBE_WATCH_BOOKMARK},
        {"ERROR", TAU_KUBE_WATCH_ERROR},
};

int tau_kube_watch_decode(tau_kube_watch_event *out, const char *line, size_t len)
{
	cJSON *ev = NULL, *obj;
	const char *type = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return 1;
	if ((rc = tau_json_parse(&ev, line, len, 0)) < 0)
		return rc;
	if ((rc = tau_json_get_string(&type, ev, "type")) < 0) {
		cJSON_Delete(ev);
		return rc;
	}
	obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
	if (!cJSON_IsObject(obj)) {
		cJSON_Delete(ev);
		return tau_error_set(obj == NULL ? TAU_ENOTFOUND : TAU_ETYPE,
		                     "watch event without an object");
	}
	out->type = TAU_KUBE_WATCH_OTHER;
	for (size_t i = 0; i < sizeof(watch_types) / sizeof(watch_types[0]); i++)
		if (strcmp(type, watch_types[i].name) == 0)
			out->type = watch_types[i].type;
	if (out->type == TAU_KUBE_WATCH_ERROR) {
		char *text = NULL;

		if (tau_json_print(&text, obj) == 0)
			tau_kube_api_error_decode(&out->error, 0, text, strlen(text), "GET", -1);
		free(text);
	}
	out->object = cJSON_DetachItemViaPointer(ev, obj);
	cJSON_Delete(ev);
	return 0;
}

static void watch_line(void *arg, const char *line, size_t len)
{
	tau_kube_informer *inf = arg;
	tau_kube_watch_event ev;
	int rc;

	if (inf->need_relist)
		return; /* the stream is being abandoned: nothing after this counts */
	rc = tau_kube_watch_decode(&ev, line, len);
	if (rc == 1)
		return;
	if (rc < 0) {
		/* An event we cannot read means the cache may miss it: relist. */
		tau_log_debug("kube informer: undecodable watch event", "resource", inf->res.plural,
		              NULL);
		inf->need_relist = true;
		return;
	}
	if (ev.type == TAU_KUBE_WATCH_ERROR) {
		tau_log_debug("kube informer: watch error event", "resource", inf->res.plural,
		              "reason", ev.error.reason, "message", ev.error.message, NULL);
		pthread_mutex_lock(&inf->lock);
		if (ev.error.http_code == 410 || tau_kube_api_error_is(&ev.error, "Expired"))
			inf->stats.expired++;
		else
			inf->relist_backoff = true;
		pthread_mutex_unlock(&inf->lock);
		/* Expired needs a relist; client-go also relists on other error events. */
		inf->need_relist = true;
		cJSON_Delete(ev.object);
		return;
	}
	set_last_rv(inf, object_rv(ev.object));
	if (ev.type == TAU_KUBE_WATCH_BOOKMARK) {
		pthread_mutex_lock(&inf->lock);
		inf->stats.bookmarks++;
		pthread_mutex_unlock(&inf->lock);
		cJSON_Delete(ev.object);
		return;
	}
	inf->watch_events++;
	pthread_mutex_lock(&inf->lock);
	inf->stats.events++;
	pthread_mutex_unlock(&inf->lock);
	if (ev.type == TAU_KUBE_WATCH_ADDED || ev.type == TAU_KUBE_WATCH_MODIFIED)
		apply_upsert(inf, ev.object);
	else if (ev.type == TAU_KUBE_WATCH_DELETED)
		apply_delete(inf, ev.object);
	else
		cJSON_Delete(ev.object);
}

/* A list page finished with HTTP 200. */
static void list_page_done(tau_kube_informer *inf, transfer *t)
{
	cJSON *page = NULL, *items;
	const char *rv = NULL, *cont = NULL;

	if (tau_json_parse(&page, t->body.p ? t->body.p : "", t->body.len, t->body.max) < 0 ||
	    tau_json_get_string(&rv, page, "metadata.resourceVersion") < 0) {
		tau_log_debug("kube informer: bad list response", "resource", inf->res.plural,
		              "error", tau_error_last()->msg, NULL);
		cJSON_Delete(page);
		reset_list_state(inf);
		schedule_backoff(inf, ST_LIST_DUE, -1);
		return;
	}
	items = cJSON_GetObjectItemCaseSensitive(page, "items");
	if (inf->staging == NULL) {
		inf->staging = cJSON_CreateArray();
		inf->staging_rv = tau_kube_strdup(rv);
	}
	if (inf->staging == NULL || inf->staging_rv == NULL) {
		cJSON_Delete(page);
		reset_list_state(inf);
		schedule_backoff(inf, ST_LIST_DUE, -1);
		return;
	}
	while (cJSON_IsArray(items) && items->child)
		cJSON_AddItemToArray(inf->staging, cJSON_DetachItemViaPointer(items, items->child));
	pthread_mutex_lock(&inf->lock);
	inf->stats.list_pages++;
	pthread_mutex_unlock(&inf->lock);
	free(inf->continue_token);
	inf->continue_token = NULL;
	if (tau_json_get_string(&cont, page, "metadata.continue") == 0 && cont[0] != '\0' &&
	    !inf->unpaged) {
		inf->continue_token = tau_kube_strdup(cont);
		cJSON_Delete(page);
		if (inf->continue_token == NULL) {
			reset_list_state(inf);
			schedule_backoff(inf, ST_LIST_DUE, -1);
			return;
		}
		schedule(inf, ST_LIST_DUE, 0);
		return;
	}
	cJSON_Delete(page);
	/* Complete: swap the cache, then watch from the list's version. */
	apply_replace(inf);
	set_last_rv(inf, inf->staging_rv);
	reset_list_state(inf);
	inf->unpaged = false;
	pthread_mutex_lock(&inf->lock);
	inf->stats.lists++;
	pthread_mutex_unlock(&inf->lock);
	atomic_store(&inf->synced, true);
	if (inf->opts.on_synced != NULL)
		inf->opts.on_synced(inf->handlers.arg);
	tau_backoff_reset(&inf->backoff);
	schedule(inf, ST_WATCH_DUE, 0);
}

/*
 * The kind is not served (404 on the list) and the owner asked to take that as "none": an
 * empty list completes (vanished objects get their deletes), then the list is retried later.
 */
static void not_served(tau_kube_informer *inf)
{
	reset_list_state(inf);
	inf->staging = cJSON_CreateArray();
	if (inf->staging == NULL) {
		schedule_backoff(inf, ST_LIST_DUE, -1);
		return;
	}
	apply_replace(inf);
	reset_list_state(inf);
	atomic_store(&inf->synced, true);
	if (inf->opts.on_synced != NULL)
		inf->opts.on_synced(inf->handlers.arg);
	schedule_backoff(inf, ST_LIST_DUE, -1);
}

static void transfer_done(tau_kube_informer *inf, CURLcode cc)
{
	transfer *t = inf->xfer;
	long code = 0;

	inf->xfer = NULL;
	curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &code);
	/* A watch lasts as long as the server keeps it: counted, not timed. */
	tau_kube_request_metrics_record(tau_kube_client_request_metrics(inf->loop->client),
	                                t->watch ? TAU_KUBE_VERB_WATCH : TAU_KUBE_VERB_LIST, code,
	                                tau_clock_mono_us() - t->started_us, !t->watch);
	if (!t->watch) {
		if (cc == CURLE_OK && code == 200) {
			list_page_done(inf, t);
		} else if (cc == CURLE_OK) {
			tau_kube_api_error e;

			tau_kube_api_error_decode(&e, (int)code, t->body.p, t->body.len, "GET",
			                          t->retry_after);
			tau_log_debug("kube informer: list failed", "resource", inf->res.plural,
			              "reason", e.reason, "message", e.message, NULL);
			if (code == 404 && inf->opts.not_served_is_empty) {
				not_served(inf);
			} else if (code == 410 && inf->continue_token != NULL) {
				/* Continue token expired: one unpaged list, as client-go. */
				reset_list_state(inf);
				inf->unpaged = true;
				schedule(inf, ST_LIST_DUE, 0);
			} else {
				reset_list_state(inf);
				schedule_backoff(inf, ST_LIST_DUE, e.retry_after_s);
			}
		} else {
			tau_log_debug("kube informer: list transport error", "resource",
			              inf->res.plural, "error", curl_easy_strerror(cc), NULL);
			reset_list_state(inf);
			schedule_backoff(inf, ST_LIST_DUE, -1);
		}
		transfer_free(inf->loop, t);
		return;
	}
	/* Watch ended. */
	if (inf->need_relist) {
		/* 410 or a lost event: list again now (quorum read, no RV). */
		inf->need_relist = false;
		if (inf->relist_backoff)
			schedule_backoff(inf, ST_LIST_DUE, -1);
		else
			schedule(inf, ST_LIST_DUE, 0);
		inf->relist_backoff = false;
	} else if (cc == CURLE_OK && code == 200) {
		uint64_t lived = tau_clock_mono_ms() - inf->watch_started_ms;

		/* A normal end re-watches at once; a stream that ends instantly backs off. */
		if (inf->watch_events > 0 || lived >= 1000) {
			if (inf->watch_events > 0)
				tau_backoff_reset(&inf->backoff);
			schedule(inf, ST_WATCH_DUE, 0);
		} else {
			schedule_backoff(inf, ST_WATCH_DUE, -1);
		}
	} else if (cc == CURLE_OK || cc == CURLE_WRITE_ERROR) {
		tau_kube_api_error e;

		tau_kube_api_error_decode(&e, (int)code, t->body.p, t->body.len, "GET",
		                          t->retry_after);
		tau_log_debug("kube informer: watch failed", "resource", inf->res.plural, "reason",
		              e.reason, "message", e.message, NULL);
		if (t->too_big) {
			/* An event over the line cap was lost: relist. */
			schedule(inf, ST_LIST_DUE, 0);
		} else if (code == 410 || tau_kube_api_error_is(&e, "Expired")) {
			pthread_mutex_lock(&inf->lock);
			inf->stats.expired++;
			pthread_mutex_unlock(&inf->lock);
			schedule(inf, ST_LIST_DUE, 0);
		} else if (code == 504 || strstr(e.message, "Too large resource version")) {
			schedule_backoff(inf, ST_LIST_DUE, e.retry_after_s);
		} else {
			schedule_backoff(inf, ST_WATCH_DUE, e.retry_after_s);
		}
	} else {
		tau_log_debug("kube informer: watch transport error", "resource", inf->res.plural,
		              "error", curl_easy_strerror(cc), NULL);
		if (cc == CURLE_OPERATION_TIMEDOUT && inf->watch_events > 0)
			schedule(inf, ST_WATCH_DUE, 0);
		else
			schedule_backoff(inf, ST_WATCH_DUE, -1);
	}
	transfer_free(inf->loop, t);
}

/* ------------------------------------------------------------------ */
/* Informer lifecycle                                                  */

static char *dup_opt(const char *s, bool *bad)
{
	char *d;

	if (s == NULL || s[0] == '\0')
		return NULL;
	d = tau_kube_strdup(s);
	if (d == NULL)
		*bad = true;
	return d;
}

/* Free the cache (its entries already gone), the copied names and selectors, and `inf`. */
static void release(tau_kube_informer *inf)
{
	tau_hmap_destroy(&inf->cache);
	tau_free_many(inf->group, inf->version, inf->plural, inf->ns, inf->label_selector,
	              inf->field_selector);
	free(inf);
}

int tau_kube_informer_new(tau_kube_informer **out, tau_kube_loop *loop,
                          const tau_kube_resource *res, const tau_kube_informer_options *opts,
                          const tau_kube_handlers *handlers)
{
	tau_kube_informer *inf;
	bool bad = false;

	if (opts && opts->namespace && opts->namespace[0] && !res->namespaced)
		return tau_error_set(TAU_EINVAL, "%s are cluster-scoped; no namespace allowed",
		                     res->plural);
	inf = calloc(1, sizeof(*inf));
	if (inf == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	inf->loop = loop;
	if (opts)
		inf->opts = *opts;
	if (handlers)
		inf->handlers = *handlers;
	if (inf->opts.page_size <= 0)
		inf->opts.page_size = 500;
	if (inf->opts.watch_timeout_min_s <= 0)
		inf->opts.watch_timeout_min_s = 300;
	if (inf->opts.watch_timeout_max_s < inf->opts.watch_timeout_min_s)
		inf->opts.watch_timeout_max_s =
		        inf->opts.watch_timeout_min_s == 300 ? 600 : inf->opts.watch_timeout_min_s;
	if (inf->opts.backoff_initial_ms == 0)
		inf->opts.backoff_initial_ms = 800;
	if (inf->opts.backoff_cap_ms == 0)
		inf->opts.backoff_cap_ms = 30000;
	if (inf->opts.backoff_reset_ms == 0)
		inf->opts.backoff_reset_ms = 120000;
	tau_backoff_init(&inf->backoff, inf->opts.backoff_initial_ms, inf->opts.backoff_cap_ms, 2.0,
	                 1.0);
	inf->backoff.reset_after_ms = inf->opts.backoff_reset_ms;
	inf->group = tau_kube_strdup(res->group ? res->group : "");
	inf->version = tau_kube_strdup(res->version);
	inf->plural = tau_kube_strdup(res->plural);
	bad = inf->group == NULL || inf->version == NULL || inf->plural == NULL;
	inf->ns = dup_opt(opts ? opts->namespace : NULL, &bad);
	inf->label_selector = dup_opt(opts ? opts->label_selector : NULL, &bad);
	inf->field_selector = dup_opt(opts ? opts->field_selector : NULL, &bad);
	inf->opts.namespace = inf->ns;
	inf->opts.label_selector = inf->label_selector;
	inf->opts.field_selector = inf->field_selector;
	inf->res.group = inf->group;
	inf->res.version = inf->version;
	inf->res.plural = inf->plural;
	inf->res.namespaced = res->namespaced;
	if (!bad && tau_hmap_init(&inf->cache, 1024) < 0)
		bad = true;
	if (bad) {
		release(inf);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&inf->lock, NULL);
	atomic_init(&inf->synced, false);
	pthread_mutex_lock(&loop->lock);
	inf->next_in_loop = loop->informers;
	loop->informers = inf;
	pthread_mutex_unlock(&loop->lock);
	*out = inf;
	return 0;
}

void tau_kube_informer_start(tau_kube_informer *inf)
{
	pthread_mutex_lock(&inf->loop->lock);
	inf->start_requested = true;
	inf->loop->pending_starts = true;
	pthread_mutex_unlock(&inf->loop->lock);
	curl_multi_wakeup(inf->loop->multi);
}

void tau_kube_informer_free(tau_kube_informer *inf)
{
	tau_kube_loop *loop;

	if (inf == NULL)
		return;
	loop = inf->loop;
	pthread_mutex_lock(&loop->lock);
	for (tau_kube_informer **pp = &loop->informers; *pp; pp = &(*pp)->next_in_loop) {
		if (*pp == inf) {
			*pp = inf->next_in_loop;
			break;
		}
	}
	pthread_mutex_unlock(&loop->lock);
	transfer_free(loop, inf->xfer);
	reset_list_state(inf);
	{
		tau_hmap_iter it;
		cache_entry *e;

		tau_hmap_iter_init(&it, &inf->cache);
		while ((e = cache_next(&it)) != NULL) {
			cJSON_Delete(e->obj);
			free(e);
		}
	}
	pthread_mutex_destroy(&inf->lock);
	release(inf);
}

bool tau_kube_informer_has_synced(tau_kube_informer *inf)
{
	return atomic_load(&inf->synced);
}

size_t tau_kube_informer_count(tau_kube_informer *inf)
{
	size_t n;

	tau_locked_copy(&inf->lock, &n, &inf->cache.len, sizeof(n));
	return n;
}

int tau_kube_informer_get(cJSON **out, tau_kube_informer *inf, const char *ns, const char *name)
{
	char key[600];
	cache_entry *e;
	cJSON *copy = NULL;
	int n;

	if (ns && ns[0])
		n = snprintf(key, sizeof(key), "%s/%s", ns, name);
	else
		n = snprintf(key, sizeof(key), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(key))
		return tau_error_set(TAU_ENOTFOUND, "no such object (name too long)");
	pthread_mutex_lock(&inf->lock);
	e = cache_find(inf, key);
	if (e)
		copy = cJSON_Duplicate(e->obj, 1);
	pthread_mutex_unlock(&inf->lock);
	if (e == NULL)
		return tau_error_set(TAU_ENOTFOUND, "%s %s is not in the cache", inf->res.plural,
		                     key);
	if (copy == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	*out = copy;
	return 0;
}

static int cmp_entries(const void *a, const void *b)
{
	const cache_entry *x = *(const cache_entry *const *)a, *y = *(const cache_entry *const *)b;

	return strcmp(x->key, y->key);
}

int tau_kube_informer_snapshot(cJSON **out, tau_kube_informer *inf)
{
	cache_entry **all = NULL;
	cJSON *arr = cJSON_CreateArray();
	size_t n = 0;
	int rc = 0;

	if (arr == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	pthread_mutex_lock(&inf->lock);
	all = malloc((inf->cache.len + 1) * sizeof(*all));
	if (all == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
	} else {
		tau_hmap_iter it;
		cache_entry *e;

		tau_hmap_iter_init(&it, &inf->cache);
		while ((e = cache_next(&it)) != NULL)
			all[n++] = e;
		qsort(all, n, sizeof(*all), cmp_entries);
		for (size_t i = 0; i < n && rc == 0; i++) {
			cJSON *d = cJSON_Duplicate(all[i]->obj, 1);

			if (d == NULL)
				rc = tau_error_set(TAU_ENOMEM, "out of memory");
			else
				cJSON_AddItemToArray(arr, d);
		}
	}
	pthread_mutex_unlock(&inf->lock);
	free(all);
	if (rc < 0) {
		cJSON_Delete(arr);
		return rc;
	}
	*out = arr;
	return 0;
}

void tau_kube_informer_last_rv(tau_kube_informer *inf, char *buf, size_t cap)
{
	pthread_mutex_lock(&inf->lock);
	snprintf(buf, cap, "%s", inf->last_rv);
	pthread_mutex_unlock(&inf->lock);
}

void tau_kube_informer_stats_get(tau_kube_informer *inf, tau_kube_informer_stats *out)
{
	tau_locked_copy(&inf->lock, out, &inf->stats, sizeof(*out));
}

/* ------------------------------------------------------------------ */
/* Loop                                                                */

int tau_kube_loop_new(tau_kube_loop **out, tau_kube_client *client)
{
	tau_kube_loop *loop = calloc(1, sizeof(*loop));

	if (loop == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	loop->client = client;
	loop->multi = curl_multi_init();
	if (loop->multi == NULL) {
		free(loop);
		return tau_error_set(TAU_EIO, "curl_multi_init failed");
	}
	/* Many watches to one server: let them share connections over HTTP/1.1. */
	curl_multi_setopt(loop->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
	pthread_mutex_init(&loop->lock, NULL);
	atomic_init(&loop->stop, false);
	atomic_init(&loop->wakeups, 0);
	*out = loop;
	return 0;
}

void tau_kube_loop_free(tau_kube_loop *loop)
{
	if (loop == NULL)
		return;
	tau_kube_loop_join(loop);
	curl_multi_cleanup(loop->multi);
	pthread_mutex_destroy(&loop->lock);
	free(loop);
}

void tau_kube_loop_free_all(tau_kube_loop *loop)
{
	if (loop == NULL)
		return;
	tau_kube_loop_join(loop);
	while (loop->informers != NULL)
		tau_kube_informer_free(loop->informers);
	tau_kube_loop_free(loop);
}

uint64_t tau_kube_loop_wakeups(tau_kube_loop *loop)
{
	return atomic_load(&loop->wakeups);
}

void tau_kube_loop_stop(tau_kube_loop *loop)
{
	atomic_store(&loop->stop, true);
	curl_multi_wakeup(loop->multi);
}

/* Start informers whose start was requested; @return the earliest due time (0 = none). */
static uint64_t run_due(tau_kube_loop *loop)
{
	uint64_t now = tau_clock_mono_ms(), earliest = 0;
	tau_kube_informer *first;

	pthread_mutex_lock(&loop->lock);
	if (loop->pending_starts) {
		loop->pending_starts = false;
		for (tau_kube_informer *inf = loop->informers; inf; inf = inf->next_in_loop) {
			if (inf->start_requested && inf->state == ST_IDLE) {
				inf->start_requested = false;
				schedule(inf, ST_LIST_DUE, 0);
			}
		}
	}
	first = loop->informers;
	pthread_mutex_unlock(&loop->lock);
	/* _new only prepends (under the lock) and _free is not allowed while the loop
	 * runs, so the list behind `first` is stable. */
	for (tau_kube_informer *inf = first; inf; inf = inf->next_in_loop) {
		if ((inf->state == ST_LIST_DUE || inf->state == ST_WATCH_DUE) && inf->due_ms <= now)
			informer_fire(inf);
		if ((inf->state == ST_LIST_DUE || inf->state == ST_WATCH_DUE) &&
		    (earliest == 0 || inf->due_ms < earliest))
			earliest = inf->due_ms ? inf->due_ms : 1;
	}
	return earliest;
}

/*
 * One turn of the loop.  The wait ends at the earliest of: an informer's due
 * time, curl's own next timer (curl_multi_timeout: connect and transfer
 * timeouts, keep-alive and retry timers of the transfers in flight), @max_wait_ms,
 * or a curl_multi_wakeup from another thread.  With nothing due and nothing
 * timed inside curl, an idle loop sleeps until a socket or a wakeup needs it;
 * there is no periodic tick of our own.
 */
static int loop_iterate(tau_kube_loop *loop, uint64_t max_wait_ms)
{
	uint64_t due = run_due(loop), now, wait = max_wait_ms;
	int running = 0, timeout, msgs;
	long curl_ms = -1;
	CURLMsg *msg;

	now = tau_clock_mono_ms();
	if (due)
		wait = due <= now ? 0 : (due - now < wait ? due - now : wait);
	if (curl_multi_timeout(loop->multi, &curl_ms) == CURLM_OK && curl_ms >= 0 &&
	    (uint64_t)curl_ms < wait)
		wait = (uint64_t)curl_ms;
	timeout = wait > INT_MAX ? INT_MAX : (int)wait;
	if (curl_multi_poll(loop->multi, NULL, 0, timeout, NULL) != CURLM_OK)
		return tau_error_set(TAU_EIO, "curl_multi_poll failed");
	atomic_fetch_add(&loop->wakeups, 1);
	if (curl_multi_perform(loop->multi, &running) != CURLM_OK)
		return tau_error_set(TAU_EIO, "curl_multi_perform failed");
	while ((msg = curl_multi_info_read(loop->multi, &msgs)) != NULL) {
		tau_kube_informer *inf = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&inf);
		if (inf && inf->xfer && inf->xfer->h == msg->easy_handle)
			transfer_done(inf, msg->data.result);
	}
	return 0;
}

int tau_kube_loop_run_for(tau_kube_loop *loop, uint64_t ms)
{
	uint64_t end = tau_clock_mono_ms() + ms;
	int rc = 0;

	while (!atomic_load(&loop->stop) && rc == 0) {
		uint64_t now = tau_clock_mono_ms();

		if (now >= end)
			break;
		rc = loop_iterate(loop, end - now);
	}
	return rc;
}

int tau_kube_loop_run(tau_kube_loop *loop)
{
	int rc = 0;

	while (!atomic_load(&loop->stop) && rc == 0)
		rc = loop_iterate(loop, LOOP_IDLE_WAIT_MS);
	atomic_store(&loop->stop, false);
	return rc;
}

static void *loop_thread(void *arg)
{
	tau_kube_loop_run(arg);
	return NULL;
}

int tau_kube_loop_start_thread(tau_kube_loop *loop)
{
	if (loop->thread_running)
		return 0;
	atomic_store(&loop->stop, false);
	if (pthread_create(&loop->thread, NULL, loop_thread, loop) != 0)
		return tau_error_set(TAU_EIO, "cannot start the kube loop thread");
	loop->thread_running = true;
	return 0;
}

void tau_kube_loop_join(tau_kube_loop *loop)
{
	if (!loop->thread_running)
		return;
	tau_kube_loop_stop(loop);
	pthread_join(loop->thread, NULL);
	loop->thread_running = false;
	atomic_store(&loop->stop, false);
}
