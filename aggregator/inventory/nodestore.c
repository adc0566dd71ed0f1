/*
 * nodestore.c - node records, their source of truth, and the sync gate.
 *
 * Records are kept in a name-sorted array: lookups are binary searches,
 * listing is in order for free, and at 10,000 nodes an insert's memmove is
 * a few tens of microseconds, paid only when a node first appears.
 *
 * The one idea: the Node object is the authority.  The pool always counts a
 * node with the API's facts (Ready, unschedulable, deletion, allocatable,
 * labels); the agent's report only decides *when* a node may enter the pool
 * (the sync gate) and adds what only the node sees: its last inventory kept
 * as bytes for GetNode, and the node-local facts decoded from it (nodetruth.h)
 * for free-now capacity, fit and health.  So a node whose agent died still follows every later Node
 * update: Ready=Unknown or a cordon takes it out of the pool at once.  Where
 * the agent's view differs from the Node's, the difference is recorded and
 * reported (ExplainNode, /metrics, the log), never counted.  A node with DRA
 * devices that count (tau_nodestore_set_dra) is lent to the pool as a merged
 * copy of its Node's facts (record.counted), the devices beside allocatable.
 */
#include "nodestore.h"

#include "truthrules.h"
#include "sorted.h"

#include "tau/error.h"
#include "tau/hmap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A record is small and holds each set of facts once: `api` is lent to the pool
 * (tau_pool_upsert_node_lent), and `agent` is the same object as `api` while the
 * agent reports exactly what the Node says (the healthy case), a copy of its own
 * only while they differ.
 */
typedef struct record {
	char *name;
	tau_node_facts *api;         /* the Node's facts; NULL when unknown or unreadable */
	tau_node_facts *agent;       /* the agent's last facts (== api when equal); NULL if none */
	const tau_pool_node *pooled; /* the pool's entry while the node is in its input */
	tau_node_facts *counted;     /* api plus its DRA devices, lent to the pool instead of api
	                                while the node has DRA devices that count (dra.h) */
	char *api_error;             /* the Node exists but could not be read: it does not count */
	char *mismatch;              /* agent vs Node difference, NULL when none */
	uint8_t *inventory;          /* opaque copy of the agent's last inventory */
	uint64_t inventory_fp;       /* its fingerprint (tau_nodestore_report_same), 0: none */
	uint32_t inventory_len;
	uint8_t inventory_elided; /* the caller's mask: what it left out of the copy */
	uint8_t truth_failed; /* its agent.* verdicts: a bit per failing rule (update_verdict) */
	tau_nodetruth *truth; /* decoded node-local facts of that inventory; NULL if none */
	int64_t last_heard_ms;
	tau_node_source source; /* what the pool holds for it now */
	bool api_known;
	bool reported;
	bool connected;
	bool mismatch_news; /* it appeared or changed since last taken */
} record;

/*
 * A string held once for all the store's facts that name it (a label key or value, a
 * resource name), counted by the facts holding it: the last one to let go frees it, so
 * a label no node carries any more is not kept.
 */
typedef struct shared_str {
	tau_hmap_node node; /* keyed by text */
	size_t refs;
	char text[];
} shared_str;

struct tau_nodestore {
	record *recs;
	size_t n, cap;
	tau_hmap strings;   /* shared_str by text */
	size_t n_mismatch;  /* records with a mismatch */
	size_t n_missing;   /* GPU nodes known from the API whose agent has not reported */
	size_t truth_bytes; /* the records' node truth, in all */
	tau_pool *pool;
	tau_dra_store *dra; /* lent (tau_nodestore_set_dra); NULL: no DRA devices count */
	int64_t deadline_ms;
	bool api_synced;
	bool timed_out;
	bool established;
};

int tau_nodestore_new(tau_nodestore **out, int64_t now_ms, int64_t sync_timeout_ms)
{
	tau_nodestore *s = calloc(1, sizeof(*s));
	int rc;

	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory creating node store");
	rc = tau_hmap_init(&s->strings, 0);
	if (rc < 0) {
		free(s);
		return rc;
	}
	rc = tau_pool_new(&s->pool);
	if (rc < 0) {
		tau_hmap_destroy(&s->strings);
		free(s);
		return rc;
	}
	s->deadline_ms = now_ms + sync_timeout_ms;
	*out = s;
	return 0;
}

/*
 * The store's copy of `text` (NULL for NULL), held once for every facts object that
 * names it: a new holder counts one more.  @return false when out of memory.
 */
static bool str_hold(tau_nodestore *s, const char *text, char **out)
{
	tau_hmap_node *n;
	shared_str *e;
	size_t len;

	*out = NULL;
	if (text == NULL)
		return true;
	n = tau_hmap_get(&s->strings, text);
	if (n != NULL) {
		e = TAU_HMAP_ENTRY(n, shared_str, node);
		e->refs++;
		*out = e->text;
		return true;
	}
	len = strlen(text) + 1;
	e = malloc(sizeof(*e) + len);
	if (e == NULL)
		return false;
	memcpy(e->text, text, len);
	e->refs = 1;
	tau_hmap_insert(&s->strings, &e->node, e->text);
	*out = e->text;
	return true;
}

/* A holder of `text` (from str_hold; NULL is a no-op) lets go: the last one frees it. */
static void str_release(tau_nodestore *s, char *text)
{
	shared_str *e;

	if (text == NULL)
		return;
	e = (shared_str *)(void *)(text - offsetof(shared_str, text));
	if (--e->refs > 0)
		return;
	tau_hmap_remove(&s->strings, &e->node);
	free(e);
}

/*
 * The store's facts are packed: one allocation holds the struct, its arrays and
 * the node's own strings (about half the memory of a copy made string by string,
 * which pays a malloc header and rounding per label), so they are freed with
 * facts_free, never with tau_node_facts_clear.  Label keys and values and
 * resource names, which most nodes share ("kubernetes.io/os", "linux",
 * "nvidia.com/gpu"), are held once across the store (str_hold); a label value
 * equal to the node's name (the hostname label) is its name.
 */
static void facts_free(tau_nodestore *s, tau_node_facts *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->n_labels; i++) {
		str_release(s, f->label_keys[i]);
		if (f->label_values[i] != f->name)
			str_release(s, f->label_values[i]);
	}
	for (size_t i = 0; i < f->n_allocatable; i++)
		str_release(s, f->allocatable[i].name);
	free(f);
}

/* Room for `str` and its NUL (0 for NULL), added to *total; false on overflow. */
static bool add_str(size_t *total, const char *str)
{
	size_t len = str != NULL ? strlen(str) + 1 : 0;

	if (*total > SIZE_MAX - len)
		return false;
	*total += len;
	return true;
}

/* Copy `str` to *at and move *at past it; NULL stays NULL. */
static char *put_str(char **at, const char *str)
{
	char *dst = *at;
	size_t len;

	if (str == NULL)
		return NULL;
	len = strlen(str) + 1;
	memcpy(dst, str, len);
	*at += len;
	return dst;
}

/* A packed copy of `src` (validated by the caller, so its counts are bounded).  NULL: OOM. */
static tau_node_facts *facts_dup(tau_nodestore *s, const tau_node_facts *src)
{
	size_t head = sizeof(tau_node_facts), total;
	size_t res_bytes = src->n_allocatable * sizeof(tau_node_resource);
	size_t ptr_bytes = 2 * src->n_labels * sizeof(char *);
	tau_node_facts *f;
	char *at;
	bool ok;

	if (src->n_labels > TAU_NODE_MAX_LABELS || src->n_allocatable > TAU_NODE_MAX_RESOURCES)
		return NULL;
	total = head + res_bytes + ptr_bytes;
	ok = add_str(&total, src->name) && add_str(&total, src->uid) &&
	     add_str(&total, src->resource_version) && add_str(&total, src->os) &&
	     add_str(&total, src->gpu_class) && add_str(&total, src->provider_id);
	if (!ok || (f = malloc(total)) == NULL)
		return NULL;
	/* Resources first (their quantities want 8-byte alignment, as does the struct). */
	*f = *src;
	at = (char *)f + head;
	f->allocatable = src->n_allocatable > 0 ? (tau_node_resource *)(void *)at : NULL;
	at += res_bytes;
	f->label_keys = src->n_labels > 0 ? (char **)(void *)at : NULL;
	f->label_values = src->n_labels > 0 ? (char **)(void *)(at + ptr_bytes / 2) : NULL;
	at += ptr_bytes;
	f->name = put_str(&at, src->name);
	f->uid = put_str(&at, src->uid);
	f->resource_version = put_str(&at, src->resource_version);
	f->os = put_str(&at, src->os);
	f->gpu_class = put_str(&at, src->gpu_class);
	f->provider_id = put_str(&at, src->provider_id);
	/* Nothing held yet: facts_free lets go of what was taken when one fails. */
	if (src->n_labels > 0)
		memset(f->label_keys, 0, ptr_bytes);
	for (size_t i = 0; i < src->n_allocatable; i++) {
		f->allocatable[i].value = src->allocatable[i].value;
		f->allocatable[i].name = NULL;
	}
	ok = true;
	for (size_t i = 0; ok && i < src->n_labels; i++) {
		const char *v = src->label_values[i];

		ok = str_hold(s, src->label_keys[i], &f->label_keys[i]);
		if (ok && v != NULL && f->name != NULL && strcmp(v, f->name) == 0)
			f->label_values[i] = f->name;
		else if (ok)
			ok = str_hold(s, v, &f->label_values[i]);
	}
	for (size_t i = 0; ok && i < src->n_allocatable; i++)
		ok = str_hold(s, src->allocatable[i].name, &f->allocatable[i].name);
	if (!ok) {
		facts_free(s, f);
		return NULL;
	}
	return f;
}

static void record_clear(tau_nodestore *s, record *r)
{
	if (r->truth != NULL)
		s->truth_bytes -= r->truth->bytes;
	tau_nodetruth_free(r->truth);
	free(r->name);
	free(r->api_error);
	free(r->mismatch);
	if (r->agent != r->api)
		facts_free(s, r->agent);
	facts_free(s, r->api);
	tau_node_facts_clear(r->counted);
	free(r->counted);
	free(r->inventory);
	memset(r, 0, sizeof(*r));
}

void tau_nodestore_free(tau_nodestore *s)
{
	if (s == NULL)
		return;
	/* The pool goes first: it borrows the records' facts. */
	tau_pool_free(s->pool);
	for (size_t i = 0; i < s->n; i++)
		record_clear(s, &s->recs[i]);
	free(s->recs);
	tau_hmap_destroy(&s->strings); /* empty: every holder has let go */
	free(s);
}

const tau_pool *tau_nodestore_pool(const tau_nodestore *s)
{
	return s->pool;
}

int tau_nodestore_set_selector(tau_nodestore *s, tau_selector *sel)
{
	return tau_pool_set_selector(s->pool, sel);
}

int tau_nodestore_set_selector_error(tau_nodestore *s, const char *reason)
{
	return tau_pool_set_selector_error(s->pool, reason);
}

static size_t find(const tau_nodestore *s, const char *name, bool *found)
{
	return tau_sorted_index(s->recs, s->n, sizeof(*s->recs), name, found);
}

static record *get_or_add(tau_nodestore *s, const char *name)
{
	void *r = NULL;

	if (tau_sorted_add(&r, (void **)&s->recs, &s->n, &s->cap, sizeof(*s->recs), name) < 0)
		return NULL;
	return r;
}

static bool api_readable(const record *r)
{
	return r->api != NULL;
}

static bool is_gpu_node(const record *r)
{
	return api_readable(r) && r->api->gpu_class != NULL && r->api->gpu_class[0] != '\0';
}

/* Known from the API as a GPU node, and its agent has not reported. */
static bool is_missing(const record *r)
{
	return is_gpu_node(r) && !r->reported;
}

/* Keep n_missing true after a change of `r` that found it missing or not (`was`). */
static void account_missing(tau_nodestore *s, const record *r, bool was)
{
	if (was && !is_missing(r))
		s->n_missing--;
	else if (!was && is_missing(r))
		s->n_missing++;
}

static const char *yes_no(bool b)
{
	return b ? "true" : "false";
}

/*
 * Describe the first difference between what the agent reported and what
 * the Node object says, into m ("" when they agree on every fact the pool
 * decides on).  An agent lags its Node by one watch event at most, so a
 * difference that persists means the agent reads something else.
 */
static void describe_mismatch(const record *r, char *m, size_t cap)
{
	const tau_node_facts *a = r->agent, *n = r->api;

	m[0] = '\0';
	if (!r->reported || a == NULL || n == NULL || a == n)
		return;
	if (strcmp(a->gpu_class != NULL ? a->gpu_class : "",
	           n->gpu_class != NULL ? n->gpu_class : "") != 0) {
		snprintf(m, cap, "gpu class: agent reports \"%s\", the Node says \"%s\"",
		         a->gpu_class != NULL ? a->gpu_class : "",
		         n->gpu_class != NULL ? n->gpu_class : "");
		return;
	}
	if (a->ready != n->ready || a->schedulable != n->schedulable ||
	    a->deleting != n->deleting) {
		snprintf(m, cap,
		         "ready/schedulable/deleting: agent reports %s/%s/%s, the Node says "
		         "%s/%s/%s",
		         yes_no(a->ready), yes_no(a->schedulable), yes_no(a->deleting),
		         yes_no(n->ready), yes_no(n->schedulable), yes_no(n->deleting));
		return;
	}
	/* Both lists are sorted by name: one merge walk finds the first difference. */
	for (size_t i = 0, j = 0; i < a->n_allocatable || j < n->n_allocatable;) {
		const tau_node_resource *ra = i < a->n_allocatable ? &a->allocatable[i] : NULL;
		const tau_node_resource *rn = j < n->n_allocatable ? &n->allocatable[j] : NULL;
		int c = ra == NULL ? 1 : rn == NULL ? -1 : strcmp(ra->name, rn->name);
		char qa[TAU_QUANTITY_STR_MAX] = "none", qn[TAU_QUANTITY_STR_MAX] = "none";

		if (c == 0 && tau_quantity_cmp(&ra->value, &rn->value) == 0) {
			i++;
			j++;
			continue;
		}
		if (c <= 0)
			(void)tau_quantity_format(qa, sizeof(qa), &ra->value);
		if (c >= 0)
			(void)tau_quantity_format(qn, sizeof(qn), &rn->value);
		snprintf(m, cap, "allocatable %s: agent reports %s, the Node says %s",
		         c <= 0 ? ra->name : rn->name, qa, qn);
		return;
	}
}

/* Bring r->mismatch (and its news flag and the count) in line with the two views. */
static void compare_views(tau_nodestore *s, record *r)
{
	char m[TAU_NODE_MISMATCH_MAX];
	bool had = r->mismatch != NULL;

	describe_mismatch(r, m, sizeof(m));
	if (m[0] == '\0') {
		free(r->mismatch);
		r->mismatch = NULL;
		r->mismatch_news = false;
	} else if (r->mismatch == NULL || strcmp(r->mismatch, m) != 0) {
		char *copy = strdup(m);

		/* Out of memory: the difference goes unrecorded until the next change. */
		free(r->mismatch);
		r->mismatch = copy;
		r->mismatch_news = copy != NULL;
	}
	if (had && r->mismatch == NULL)
		s->n_mismatch--;
	else if (!had && r->mismatch != NULL)
		s->n_mismatch++;
}

/*
 * The agent's facts equal the Node's: hold them once.  Called after either
 * side changed.
 */
static void share_if_equal(tau_nodestore *s, record *r)
{
	if (r->agent != NULL && r->api != NULL && r->agent != r->api &&
	    tau_node_facts_equal(r->agent, r->api)) {
		facts_free(s, r->agent);
		r->agent = r->api;
	}
}

/*
 * The facts the pool counts for `r`: its Node's, plus the node's DRA devices
 * when it has some that count (*fresh then receives the merged copy, owned by
 * the caller until it becomes r->counted).
 */
static int facts_to_count(tau_nodestore *s, record *r, tau_node_facts **fresh)
{
	const tau_dra_view *view = NULL;
	const tau_dra_node *dra;
	tau_node_facts *merged;
	int rc;

	*fresh = NULL;
	if (s->dra == NULL || r->api == NULL)
		return 0;
	rc = tau_dra_store_view(s->dra, &view);
	if (rc < 0)
		return rc;
	dra = tau_dra_view_node(view, r->name);
	if (dra == NULL || dra->n_resources == 0)
		return 0;
	merged = calloc(1, sizeof(*merged));
	if (merged == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory counting node %s", r->name);
	rc = tau_dra_merge_facts(merged, r->api, dra, NULL);
	if (rc < 0) {
		free(merged);
		return rc;
	}
	*fresh = merged;
	return 0;
}

/*
 * Bring the pool in line with this record (`api_changed`: r->api is a new
 * object, lent to the pool now; the one it replaces must still be alive): it
 * counts with the Node object's facts once its agent has reported, or once
 * the gate opened on time-out; it is out of the pool's input when the Node is
 * unknown or unreadable.
 */
static int refresh(tau_nodestore *s, record *r, bool api_changed)
{
	tau_node_source want = TAU_NODE_SOURCE_NONE;
	int rc = 0;

	if (api_readable(r) && r->reported)
		want = TAU_NODE_SOURCE_AGENT;
	else if (api_readable(r) && s->timed_out)
		want = TAU_NODE_SOURCE_API;
	/* The pool holds the Node's facts already unless they changed: a report changes no sum. */
	if (want == TAU_NODE_SOURCE_NONE) {
		if (r->pooled != NULL) {
			rc = tau_pool_remove_node(s->pool, r->name);
			r->pooled = NULL; /* removed even when a recount failed */
		}
		tau_node_facts_clear(r->counted);
		free(r->counted);
		r->counted = NULL;
	} else if (api_changed || r->pooled == NULL) {
		tau_node_facts *fresh = NULL, *old = r->counted;

		rc = facts_to_count(s, r, &fresh);
		if (rc == 0)
			rc = tau_pool_upsert_node_lent(s->pool, fresh != NULL ? fresh : r->api,
			                               &r->pooled);
		if (rc == 0) {
			r->counted = fresh; /* the pool has let go of `old` */
			fresh = old;
		}
		tau_node_facts_clear(fresh);
		free(fresh);
	}
	if (rc < 0)
		return rc;
	r->source = want;
	compare_views(s, r);
	return 0;
}

static void update_gate(tau_nodestore *s)
{
	if (s->established || !s->api_synced)
		return;
	if (s->n_missing > 0 && !s->timed_out)
		return;
	s->established = true;
}

/* The facts the agent.* rules compare the node truth with (as tau_node_status.facts). */
static const tau_node_facts *rule_facts(const record *r)
{
	return api_readable(r) ? r->api : r->reported ? r->agent : NULL;
}

/*
 * Keep r's agent.* verdicts (truthrules.h) as a mask of failing rules, so a scan over every
 * node (snapshots, metrics) reads them instead of evaluating the rules.  Called after its
 * facts or its node truth changed.
 */
static void update_verdict(record *r)
{
	bool failed[TAU_TRUTH_RULE_COUNT];

	r->truth_failed = 0;
	if (r->truth == NULL)
		return;
	(void)tau_truth_rules_failing(rule_facts(r), r->truth, failed);
	for (int i = 0; i < TAU_TRUTH_RULE_COUNT; i++)
		if (failed[i])
			r->truth_failed |= (uint8_t)(1u << i);
}

/*
 * Replace the Node's facts of `r` with `fresh` (owned; NULL: none readable).
 * The old object goes only after the pool has let go of it, and stays as the
 * agent's facts when they were shared.
 */
static int set_api(tau_nodestore *s, record *r, tau_node_facts *fresh)
{
	tau_node_facts *old = r->api;
	bool was = is_missing(r);
	int rc;

	r->api = fresh;
	rc = refresh(s, r, true);
	if (old != r->agent)
		facts_free(s, old);
	share_if_equal(s, r);
	compare_views(s, r);
	account_missing(s, r, was);
	update_verdict(r);
	return rc;
}

int tau_nodestore_api_upsert(tau_nodestore *s, const tau_node_facts *facts)
{
	tau_node_facts *copy;
	record *r;
	int rc = tau_node_facts_validate(facts);

	if (rc < 0)
		return rc;
	copy = facts_dup(s, facts);
	r = copy != NULL ? get_or_add(s, facts->name) : NULL;
	if (r == NULL) {
		facts_free(s, copy);
		return tau_error_set(TAU_ENOMEM, "out of memory adding node %s", facts->name);
	}
	r->api_known = true;
	free(r->api_error);
	r->api_error = NULL;
	rc = set_api(s, r, copy);
	update_gate(s);
	return rc;
}

int tau_nodestore_api_unreadable(tau_nodestore *s, const char *name, const char *reason)
{
	record *r = get_or_add(s, name);
	char *copy = strdup(reason != NULL ? reason : "unreadable");
	int rc;

	if (r == NULL || copy == NULL) {
		free(copy);
		return tau_error_set(TAU_ENOMEM, "out of memory adding node %s", name);
	}
	free(r->api_error);
	r->api_error = copy;
	r->api_known = true;
	rc = set_api(s, r, NULL);
	update_gate(s);
	return rc;
}

int tau_nodestore_api_delete(tau_nodestore *s, const char *name)
{
	bool found;
	size_t i = find(s, name, &found);
	record *r;

	if (!found)
		return tau_error_set(TAU_ENOTFOUND, "node %s is not known", name);
	r = &s->recs[i];
	if (r->pooled != NULL)
		(void)tau_pool_remove_node(s->pool, name);
	if (r->mismatch != NULL)
		s->n_mismatch--;
	if (is_missing(r))
		s->n_missing--;
	record_clear(s, r);
	memmove(&s->recs[i], &s->recs[i + 1], (s->n - i - 1) * sizeof(*s->recs));
	s->n--;
	update_gate(s);
	return 0;
}

void tau_nodestore_api_synced(tau_nodestore *s)
{
	s->api_synced = true;
	update_gate(s);
}

int tau_nodestore_report(tau_nodestore *s, const tau_node_facts *facts, int64_t now_ms)
{
	tau_node_facts *fresh, *previous;
	record *r;
	bool found, was, was_reported;
	size_t i = find(s, facts->name, &found);
	int rc;

	/* A connected agent repeating what it reported last (a new digest or observation time
	 * only) changes nothing but liveness: those facts were validated when first stored. */
	if (found && s->recs[i].reported && s->recs[i].connected &&
	    tau_node_facts_equal(s->recs[i].agent, facts)) {
		s->recs[i].last_heard_ms = now_ms;
		return 1;
	}
	rc = tau_node_facts_validate(facts);
	if (rc < 0)
		return rc;
	if (found)
		s->recs[i].inventory_fp = 0; /* it stands for facts about to be replaced */
	r = get_or_add(s, facts->name);
	if (r == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory adding node %s", facts->name);
	/* What the Node says already (the healthy case) is not copied again. */
	fresh = r->api != NULL && tau_node_facts_equal(r->api, facts) ? r->api
	                                                              : facts_dup(s, facts);
	if (fresh == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory adding node %s", facts->name);
	was = is_missing(r);
	was_reported = r->reported;
	previous = r->agent;
	r->agent = fresh;
	r->reported = true;
	if (api_readable(r)) {
		rc = refresh(s, r, false);
		if (rc < 0) {
			/* The pool could not take the Node's facts (out of memory): keep the old
			 * state. */
			r->agent = previous;
			r->reported = was_reported;
			if (fresh != r->api)
				facts_free(s, fresh);
			compare_views(s, r);
			update_verdict(r);
			return rc;
		}
	}
	if (previous != NULL && previous != r->api && previous != fresh)
		facts_free(s, previous);
	compare_views(s, r);
	account_missing(s, r, was);
	update_verdict(r);
	r->connected = true;
	r->last_heard_ms = now_ms;
	update_gate(s);
	return 0;
}

/* Replace the record's kept inventory; on failure it has none (and no fingerprint). */
static int keep_inventory(record *r, const uint8_t *bytes, size_t len, uint8_t elided,
                          uint64_t fingerprint)
{
	uint8_t *copy = NULL;

	r->inventory_fp = 0;
	if (len > 0 && len == r->inventory_len) {
		/* the usual case: same shape, new digest and time; no allocation */
		memcpy(r->inventory, bytes, len);
		r->inventory_elided = elided;
		r->inventory_fp = fingerprint;
		return 0;
	}
	/* The old copy goes whatever happens: it may lean on facts the last report replaced. */
	free(r->inventory);
	r->inventory = NULL;
	r->inventory_len = 0;
	r->inventory_elided = 0;
	if (len > UINT32_MAX)
		return tau_error_set(TAU_ETOOBIG, "inventory of %s is %zu bytes", r->name, len);
	if (len > 0) {
		copy = malloc(len);
		if (copy == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory keeping inventory of %s",
			                     r->name);
		memcpy(copy, bytes, len);
	}
	r->inventory = copy;
	r->inventory_len = (uint32_t)len;
	r->inventory_elided = copy != NULL ? elided : 0;
	r->inventory_fp = copy != NULL ? fingerprint : 0;
	return 0;
}

int tau_nodestore_set_inventory(tau_nodestore *s, const char *name, const uint8_t *bytes,
                                size_t len, uint8_t elided, uint64_t fingerprint)
{
	bool found;
	size_t i = find(s, name, &found);

	if (!found)
		return tau_error_set(TAU_ENOTFOUND, "node %s is not known", name);
	return keep_inventory(&s->recs[i], bytes, len, elided, fingerprint);
}

int tau_nodestore_report_same(tau_nodestore *s, const char *name, uint64_t fingerprint,
                              const uint8_t *bytes, size_t len, uint8_t elided, int64_t now_ms)
{
	bool found;
	size_t i = find(s, name, &found);
	record *r = found ? &s->recs[i] : NULL;

	if (r == NULL || fingerprint == 0 || !r->reported || !r->connected ||
	    r->inventory_fp != fingerprint || r->inventory_elided != elided)
		return 0;
	r->last_heard_ms = now_ms;
	if (keep_inventory(r, bytes, len, elided, fingerprint) < 0)
		return -TAU_ENOMEM;
	return 1;
}

int tau_nodestore_set_truth(tau_nodestore *s, const char *name, tau_nodetruth *truth)
{
	bool found;
	size_t i = find(s, name, &found);
	record *r;

	if (!found) {
		tau_nodetruth_free(truth);
		return tau_error_set(TAU_ENOTFOUND, "node %s is not known", name);
	}
	r = &s->recs[i];
	if (r->truth != NULL)
		s->truth_bytes -= r->truth->bytes;
	tau_nodetruth_free(r->truth);
	r->truth = truth;
	if (truth != NULL)
		s->truth_bytes += truth->bytes;
	update_verdict(r);
	return 0;
}

size_t tau_nodestore_truth_bytes(const tau_nodestore *s)
{
	return s->truth_bytes;
}

size_t tau_nodestore_shared_strings(const tau_nodestore *s)
{
	return s->strings.len;
}

int tau_nodestore_heartbeat(tau_nodestore *s, const char *name, int64_t now_ms)
{
	bool found;
	size_t i = find(s, name, &found);

	if (!found || !s->recs[i].reported)
		return tau_error_set(TAU_ENOTFOUND, "node %s has not reported", name);
	s->recs[i].last_heard_ms = now_ms;
	s->recs[i].connected = true;
	return 0;
}

void tau_nodestore_set_connected(tau_nodestore *s, const char *name, bool connected, int64_t now_ms)
{
	bool found;
	size_t i = find(s, name, &found);

	if (!found)
		return;
	s->recs[i].connected = connected;
	if (connected)
		s->recs[i].last_heard_ms = now_ms;
}

int tau_nodestore_set_dra(tau_nodestore *s, tau_dra_store *dra)
{
	const tau_dra_view *view = NULL;
	int rc = 0;

	s->dra = dra;
	if (dra != NULL && tau_dra_store_view(dra, &view) < 0)
		return -TAU_ENOMEM;
	/* only nodes that had or now have DRA devices change */
	for (size_t i = 0; i < s->n; i++) {
		record *r = &s->recs[i];
		const tau_dra_node *n = view != NULL ? tau_dra_view_node(view, r->name) : NULL;
		int one;

		if (r->pooled == NULL || (r->counted == NULL && (n == NULL || n->n_resources == 0)))
			continue;
		one = refresh(s, r, true);
		if (one < 0 && rc == 0)
			rc = one;
	}
	return rc;
}

const tau_dra_view *tau_nodestore_dra_view(const tau_nodestore *s)
{
	return s->dra != NULL ? tau_dra_store_built_view(s->dra) : NULL;
}

const char *tau_nodestore_dra_kueue_error(const tau_nodestore *s)
{
	return s->dra != NULL ? tau_dra_store_kueue_error(s->dra) : NULL;
}

void tau_nodestore_tick(tau_nodestore *s, int64_t now_ms)
{
	if (s->timed_out || now_ms < s->deadline_ms)
		return;
	s->timed_out = true;
	for (size_t i = 0; i < s->n; i++)
		(void)refresh(s, &s->recs[i], false);
	update_gate(s);
}

bool tau_nodestore_established(const tau_nodestore *s)
{
	return s->established;
}

size_t tau_nodestore_count(const tau_nodestore *s)
{
	return s->n;
}

size_t tau_nodestore_mismatch_count(const tau_nodestore *s)
{
	return s->n_mismatch;
}

bool tau_nodestore_take_mismatch(tau_nodestore *s, const char *name, char *buf, size_t cap)
{
	bool found;
	size_t i = find(s, name, &found);

	if (!found || !s->recs[i].mismatch_news || s->recs[i].mismatch == NULL)
		return false;
	s->recs[i].mismatch_news = false;
	snprintf(buf, cap, "%s", s->recs[i].mismatch);
	return true;
}

static void fill_status(const record *r, tau_node_status *out)
{
	out->name = r->name;
	out->api_known = r->api_known;
	out->api_error = r->api_error;
	out->mismatch = r->mismatch;
	out->gpu_node = is_gpu_node(r);
	out->reported = r->reported;
	out->connected = r->connected;
	out->stale = r->reported && !r->connected;
	out->last_heard_ms = r->last_heard_ms;
	out->source = r->source;
	out->counted = tau_pool_node_is_counted(r->pooled);
	/* The Node's facts whenever there is a readable Node: they are what counts. */
	out->facts = rule_facts(r);
	out->agent_facts = r->reported ? r->agent : NULL;
	/* A copy with parts left out is only whole with the facts that give them back. */
	out->inventory = r->inventory_elided == 0 || out->agent_facts != NULL ? r->inventory : NULL;
	out->inventory_len = out->inventory != NULL ? r->inventory_len : 0;
	out->inventory_elided = out->inventory != NULL ? r->inventory_elided : 0;
	out->truth = r->truth;
	out->truth_failed = r->truth_failed;
}

int tau_nodestore_at(const tau_nodestore *s, size_t i, tau_node_status *out)
{
	if (i >= s->n)
		return tau_error_set(TAU_ENOTFOUND, "no record %zu", i);
	fill_status(&s->recs[i], out);
	return 0;
}

size_t tau_nodestore_index_after(const tau_nodestore *s, const char *name)
{
	bool found;
	size_t i = find(s, name, &found);

	return found ? i + 1 : i;
}

int tau_nodestore_get(const tau_nodestore *s, const char *name, tau_node_status *out)
{
	bool found;
	size_t i = find(s, name, &found);

	if (!found)
		return tau_error_set(TAU_ENOTFOUND, "node %s is not known", name);
	fill_status(&s->recs[i], out);
	return 0;
}

size_t tau_nodestore_missing(const tau_nodestore *s, const char **names, size_t cap)
{
	size_t want = cap < s->n_missing ? cap : s->n_missing, got = 0;

	/* The count is kept as records change; only the names asked for cost a walk. */
	for (size_t i = 0; i < s->n && got < want; i++) {
		if (is_missing(&s->recs[i]))
			names[got++] = s->recs[i].name;
	}
	return s->n_missing;
}
