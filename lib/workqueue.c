/*
 * workqueue.c - deduplicating, rate-limited work queue (client-go semantics).
 *
 * The one idea: every key has a single record in a hash table holding all
 * of its state (queued/dirty, processing, failures, delayed-until).  The
 * FIFO and the delay heap point at those records, so "queued once" and
 * "never processed twice at once" are checks on one struct, and a record
 * is freed as soon as it has no state left.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/clock.h"
#include "tau/workqueue.h"

#include "tau/backoff.h"
#include "tau/error.h"
#include "tau/hmap.h"
#include "tau/sync.h"
#include "tau/thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct wq_entry {
	tau_hmap_node node; /* in tau_workqueue.entries, keyed by key */
	bool dirty;         /* queued or to be queued when processing ends */
	bool queued;        /* in the FIFO */
	bool processing;    /* handed to a worker */
	unsigned failures;  /* rate-limiter count */
	uint64_t dirty_us;  /* when it last became dirty (monotonic): its time in queue starts */
	uint64_t ready_ms;  /* delayed until (monotonic); valid when heap_idx != SIZE_MAX */
	size_t heap_idx;
	char key[];
} wq_entry;

struct tau_workqueue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	tau_workqueue_options opts;
	tau_backoff_bucket bucket;
	tau_hmap entries; /* every key with state */
	wq_entry **fifo;  /* ring */
	size_t fifo_cap, fifo_head, fifo_len;
	wq_entry **heap;
	size_t heap_len, heap_cap;
	bool shutting_down;
	uint64_t adds, retries;
	tau_prom_histogram queue_latency;
};

static uint64_t clock_ms(tau_workqueue *q)
{
	return q->opts.now_ms ? q->opts.now_ms(q->opts.clock_arg) : tau_clock_mono_ms();
}

static wq_entry *lookup(tau_workqueue *q, const char *key)
{
	tau_hmap_node *n = tau_hmap_get(&q->entries, key);

	return n != NULL ? TAU_HMAP_ENTRY(n, wq_entry, node) : NULL;
}

static wq_entry *lookup_or_add(tau_workqueue *q, const char *key)
{
	wq_entry *e = lookup(q, key);
	size_t len;

	if (e)
		return e;
	len = strlen(key);
	e = calloc(1, sizeof(*e) + len + 1);
	if (e == NULL)
		return NULL;
	memcpy(e->key, key, len + 1);
	e->heap_idx = SIZE_MAX;
	tau_hmap_insert(&q->entries, &e->node, e->key);
	return e;
}

/* Free `e` if it holds no state any more. */
static void maybe_drop(tau_workqueue *q, wq_entry *e)
{
	if (e->dirty || e->queued || e->processing || e->failures || e->heap_idx != SIZE_MAX)
		return;
	tau_hmap_remove(&q->entries, &e->node);
	free(e);
}

/* ---- delay heap (min by ready_ms) ---- */

static void heap_swap(tau_workqueue *q, size_t a, size_t b)
{
	wq_entry *t = q->heap[a];

	q->heap[a] = q->heap[b];
	q->heap[b] = t;
	q->heap[a]->heap_idx = a;
	q->heap[b]->heap_idx = b;
}

static void heap_up(tau_workqueue *q, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (q->heap[p]->ready_ms <= q->heap[i]->ready_ms)
			break;
		heap_swap(q, p, i);
		i = p;
	}
}

static void heap_down(tau_workqueue *q, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < q->heap_len && q->heap[l]->ready_ms < q->heap[m]->ready_ms)
			m = l;
		if (r < q->heap_len && q->heap[r]->ready_ms < q->heap[m]->ready_ms)
			m = r;
		if (m == i)
			return;
		heap_swap(q, i, m);
		i = m;
	}
}

static void heap_remove(tau_workqueue *q, wq_entry *e)
{
	size_t i = e->heap_idx;

	e->heap_idx = SIZE_MAX;
	q->heap_len--;
	if (i != q->heap_len) {
		q->heap[i] = q->heap[q->heap_len];
		q->heap[i]->heap_idx = i;
		heap_down(q, i);
		heap_up(q, i);
	}
}

/* ---- FIFO ---- */

static int fifo_push(tau_workqueue *q, wq_entry *e)
{
	if (q->fifo_len == q->fifo_cap) {
		size_t cap = q->fifo_cap ? q->fifo_cap * 2 : 64;
		wq_entry **n = malloc(cap * sizeof(*n));

		if (n == NULL)
			return -1;
		for (size_t i = 0; i < q->fifo_len; i++)
			n[i] = q->fifo[(q->fifo_head + i) % q->fifo_cap];
		free(q->fifo);
		q->fifo = n;
		q->fifo_cap = cap;
		q->fifo_head = 0;
	}
	q->fifo[(q->fifo_head + q->fifo_len) % q->fifo_cap] = e;
	q->fifo_len++;
	e->queued = true;
	return 0;
}

static wq_entry *fifo_pop(tau_workqueue *q)
{
	wq_entry *e;

	if (q->fifo_len == 0)
		return NULL;
	e = q->fifo[q->fifo_head];
	q->fifo_head = (q->fifo_head + 1) % q->fifo_cap;
	q->fifo_len--;
	e->queued = false;
	return e;
}

/* Mark dirty and queue unless queued already or being processed. */
static int add_locked(tau_workqueue *q, wq_entry *e)
{
	if (e->dirty)
		return 0;
	e->dirty = true;
	e->dirty_us = tau_clock_mono_us();
	q->adds++;
	if (e->processing)
		return 0;
	if (fifo_push(q, e) < 0) {
		e->dirty = false;
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	pthread_cond_signal(&q->cond);
	return 0;
}

/* Move every delayed key whose time has come into the FIFO. */
static void promote_due(tau_workqueue *q)
{
	uint64_t now = tau_clock_mono_ms();

	while (q->heap_len > 0 && q->heap[0]->ready_ms <= now) {
		wq_entry *e = q->heap[0];

		heap_remove(q, e);
		if (add_locked(q, e) < 0) {
			/* Put it back for a later try rather than lose it. */
			e->ready_ms = now + 10;
			break;
		}
	}
}

int tau_workqueue_new(tau_workqueue **out, const tau_workqueue_options *opts)
{
	tau_workqueue *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	if (opts)
		q->opts = *opts;
	if (q->opts.base_delay_ms == 0)
		q->opts.base_delay_ms = 5;
	if (q->opts.max_delay_ms == 0)
		q->opts.max_delay_ms = 1000u * 1000u;
	if (q->opts.qps == 0)
		q->opts.qps = 10;
	if (q->opts.burst == 0)
		q->opts.burst = 100;
	if (tau_hmap_init(&q->entries, 64) < 0) {
		free(q);
		return -TAU_ENOMEM;
	}
	tau_backoff_bucket_init(&q->bucket, q->opts.qps, q->opts.burst, clock_ms(q));
	pthread_mutex_init(&q->lock, NULL);
	tau_thread_cond_init_monotonic(&q->cond);
	*out = q;
	return 0;
}

void tau_workqueue_free(tau_workqueue *q)
{
	if (q == NULL)
		return;
	tau_hmap_destroy_free(&q->entries, offsetof(wq_entry, node));
	free(q->fifo);
	free(q->heap);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

static int check_key(const char *key)
{
	size_t n;

	if (key == NULL || key[0] == '\0')
		return tau_error_set(TAU_EINVAL, "work queue: empty key");
	n = strnlen(key, TAU_WORKQUEUE_KEY_MAX + 1);
	if (n > TAU_WORKQUEUE_KEY_MAX)
		return tau_error_set(TAU_EINVAL, "work queue: key longer than %d bytes",
		                     TAU_WORKQUEUE_KEY_MAX);
	return 0;
}

/*
 * For the calls that act on a known key: false (error set, nothing locked) for a bad key,
 * else true with q->lock held and *e the key's entry or NULL.
 */
static bool lock_entry(tau_workqueue *q, const char *key, wq_entry **e)
{
	if (check_key(key) < 0)
		return false;
	pthread_mutex_lock(&q->lock);
	*e = lookup(q, key);
	return true;
}

int tau_workqueue_add(tau_workqueue *q, const char *key)
{
	wq_entry *e;
	int rc;

	if ((rc = check_key(key)) < 0)
		return rc;
	pthread_mutex_lock(&q->lock);
	if (q->shutting_down) {
		rc = tau_error_set(TAU_EAGAIN, "work queue is shutting down");
	} else if ((e = lookup_or_add(q, key)) == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
	} else {
		rc = add_locked(q, e);
		maybe_drop(q, e);
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int tau_workqueue_add_after(tau_workqueue *q, const char *key, uint64_t delay_ms)
{
	wq_entry *e;
	uint64_t ready;
	int rc = 0;

	if (delay_ms == 0)
		return tau_workqueue_add(q, key);
	if ((rc = check_key(key)) < 0)
		return rc;
	ready = tau_clock_mono_ms() + delay_ms;
	pthread_mutex_lock(&q->lock);
	if (q->shutting_down) {
		rc = tau_error_set(TAU_EAGAIN, "work queue is shutting down");
		goto out;
	}
	e = lookup_or_add(q, key);
	if (e == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto out;
	}
	if (e->heap_idx != SIZE_MAX) {
		if (ready < e->ready_ms) {
			e->ready_ms = ready;
			heap_up(q, e->heap_idx);
			pthread_cond_broadcast(&q->cond);
		}
		goto out;
	}
	if (q->heap_len == q->heap_cap) {
		size_t cap = q->heap_cap ? q->heap_cap * 2 : 64;
		wq_entry **h = realloc(q->heap, cap * sizeof(*h));

		if (h == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "out of memory");
			maybe_drop(q, e);
			goto out;
		}
		q->heap = h;
		q->heap_cap = cap;
	}
	e->ready_ms = ready;
	e->heap_idx = q->heap_len;
	q->heap[q->heap_len++] = e;
	heap_up(q, e->heap_idx);
	/* Waiting workers may need to wake earlier now. */
	pthread_cond_broadcast(&q->cond);
out:
	pthread_mutex_unlock(&q->lock);
	return rc;
}

uint64_t tau_workqueue_when(tau_workqueue *q, const char *key)
{
	uint64_t item = 0, bucket;
	wq_entry *e;

	if (check_key(key) < 0)
		return 0;
	pthread_mutex_lock(&q->lock);
	e = lookup_or_add(q, key);
	if (e != NULL) {
		unsigned f = e->failures;
		double d = (double)q->opts.base_delay_ms;

		if (e->failures < UINT32_MAX)
			e->failures++;
		for (unsigned i = 0; i < f && d < (double)q->opts.max_delay_ms; i++)
			d *= 2.0;
		item = d >= (double)q->opts.max_delay_ms ? q->opts.max_delay_ms : (uint64_t)d;
	}
	bucket = tau_backoff_bucket_reserve(&q->bucket, clock_ms(q));
	pthread_mutex_unlock(&q->lock);
	return item > bucket ? item : bucket;
}

int tau_workqueue_add_rate_limited(tau_workqueue *q, const char *key)
{
	int rc = check_key(key);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&q->lock);
	q->retries++;
	pthread_mutex_unlock(&q->lock);
	return tau_workqueue_add_after(q, key, tau_workqueue_when(q, key));
}

void tau_workqueue_forget(tau_workqueue *q, const char *key)
{
	wq_entry *e;

	if (!lock_entry(q, key, &e))
		return;
	if (e) {
		e->failures = 0;
		maybe_drop(q, e);
	}
	pthread_mutex_unlock(&q->lock);
}

unsigned tau_workqueue_requeues(tau_workqueue *q, const char *key)
{
	unsigned n = 0;
	wq_entry *e;

	if (!lock_entry(q, key, &e))
		return 0;
	if (e)
		n = e->failures;
	pthread_mutex_unlock(&q->lock);
	return n;
}

static void deadline_ts(struct timespec *ts, uint64_t at_ms)
{
	ts->tv_sec = (time_t)(at_ms / 1000);
	ts->tv_nsec = (long)(at_ms % 1000) * 1000000L;
}

int tau_workqueue_get(tau_workqueue *q, char **out, int64_t timeout_ms)
{
	uint64_t deadline = timeout_ms >= 0 ? tau_clock_mono_ms() + (uint64_t)timeout_ms : 0;
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		wq_entry *e;
		uint64_t wake = 0, now;

		promote_due(q);
		e = fifo_pop(q);
		if (e != NULL) {
			char *copy = malloc(strlen(e->key) + 1);

			if (copy == NULL) {
				/* Put it back at the front is not possible; requeue at the end. */
				fifo_push(q, e);
				rc = tau_error_set(TAU_ENOMEM, "out of memory");
				break;
			}
			strcpy(copy, e->key);
			tau_prom_histogram_observe(&q->queue_latency,
			                           tau_clock_mono_us() - e->dirty_us);
			e->dirty = false;
			e->processing = true;
			*out = copy;
			break;
		}
		if (q->shutting_down) {
			rc = tau_error_set(TAU_EAGAIN, "work queue is shut down");
			break;
		}
		now = tau_clock_mono_ms();
		if (timeout_ms >= 0 && now >= deadline) {
			rc = tau_error_set(TAU_ETIMEOUT, "work queue: nothing to do");
			break;
		}
		if (q->heap_len > 0)
			wake = q->heap[0]->ready_ms;
		if (timeout_ms >= 0 && (wake == 0 || deadline < wake))
			wake = deadline;
		if (wake == 0) {
			pthread_cond_wait(&q->cond, &q->lock);
		} else {
			struct timespec ts;

			deadline_ts(&ts, wake);
			pthread_cond_timedwait(&q->cond, &q->lock, &ts);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

void tau_workqueue_done(tau_workqueue *q, const char *key)
{
	wq_entry *e;

	if (!lock_entry(q, key, &e))
		return;
	if (e != NULL && e->processing) {
		e->processing = false;
		if (e->dirty && fifo_push(q, e) == 0)
			pthread_cond_signal(&q->cond);
		else if (e->dirty)
			e->dirty = false; /* out of memory: the key is lost, as a failed add */
		maybe_drop(q, e);
	}
	pthread_mutex_unlock(&q->lock);
}

void tau_workqueue_shutdown(tau_workqueue *q)
{
	tau_thread_raise(&q->lock, &q->cond, &q->shutting_down);
}

size_t tau_workqueue_len(tau_workqueue *q)
{
	size_t n;

	pthread_mutex_lock(&q->lock);
	promote_due(q);
	n = q->fifo_len;
	pthread_mutex_unlock(&q->lock);
	return n;
}

size_t tau_workqueue_delayed(tau_workqueue *q)
{
	size_t n;

	tau_locked_copy(&q->lock, &n, &q->heap_len, sizeof(n));
	return n;
}

void tau_workqueue_stats_get(tau_workqueue *q, tau_workqueue_stats *out)
{
	pthread_mutex_lock(&q->lock);
	promote_due(q);
	out->adds = q->adds;
	out->retries = q->retries;
	out->depth = q->fifo_len;
	out->delayed = q->heap_len;
	pthread_mutex_unlock(&q->lock);
}

const tau_prom_histogram *tau_workqueue_queue_latency(const tau_workqueue *q)
{
	return &q->queue_latency;
}
