/*
 * report.c - validation of agent inventories and the Report sequence rules.
 *
 * The one idea: nothing an agent sends reaches the node store unless it
 * converts cleanly into tau_node_facts here, with every name, quantity and
 * count checked against the same rules the API server applies.  A refused
 * inventory changes nothing; the error names the first bad field so the
 * agent's operator can find it in the aggregator's log and the ack message.
 */
#include "report.h"
#include "pbmsg.h"

#include "tau/error.h"
#include "tau/names.h"
#include "tau/quantity.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static int check_text(const char *s, size_t max, const char *field)
{
	size_t n = s != NULL ? strlen(s) : 0;

	if (n > max)
		return tau_error_set(TAU_ETOOBIG, "%s is %zu bytes, over the limit of %zu", field,
		                     n, max);
	return 0;
}

/* A borrowed string field: NULL when absent or empty, as the owned facts have it. */
static char *nonempty(const char *src)
{
	return src != NULL && src[0] != '\0' ? (char *)src : NULL;
}

/* Sort labels by key (insertion sort on an index: n <= 512 and usually ~40). */
static void sort_labels(tau_node_facts *f)
{
	for (size_t i = 1; i < f->n_labels; i++) {
		char *k = f->label_keys[i], *v = f->label_values[i];
		size_t j = i;

		while (j > 0 && strcmp(f->label_keys[j - 1], k) > 0) {
			f->label_keys[j] = f->label_keys[j - 1];
			f->label_values[j] = f->label_values[j - 1];
			j--;
		}
		f->label_keys[j] = k;
		f->label_values[j] = v;
	}
}

static void sort_resources(tau_node_facts *f)
{
	for (size_t i = 1; i < f->n_allocatable; i++) {
		tau_node_resource r = f->allocatable[i];
		size_t j = i;

		while (j > 0 && strcmp(f->allocatable[j - 1].name, r.name) > 0) {
			f->allocatable[j] = f->allocatable[j - 1];
			j--;
		}
		f->allocatable[j] = r;
	}
}

static int check_limits(const Tau__Inventory__V1__NodeInventory *inv)
{
	int rc;

	if (inv->n_labels > TAU_REPORT_MAX_LABELS)
		return tau_error_set(TAU_ETOOBIG, "labels: %zu over the limit of %d", inv->n_labels,
		                     TAU_REPORT_MAX_LABELS);
	if (inv->n_allocatable > TAU_REPORT_MAX_RESOURCES)
		return tau_error_set(TAU_ETOOBIG, "allocatable: %zu resources over the limit of %d",
		                     inv->n_allocatable, TAU_REPORT_MAX_RESOURCES);
	if (inv->n_csi_drivers > TAU_REPORT_MAX_CSI)
		return tau_error_set(TAU_ETOOBIG, "csi_drivers: %zu over the limit of %d",
		                     inv->n_csi_drivers, TAU_REPORT_MAX_CSI);
	if (inv->n_problems > TAU_REPORT_MAX_PROBLEMS)
		return tau_error_set(TAU_ETOOBIG, "problems: %zu over the limit of %d",
		                     inv->n_problems, TAU_REPORT_MAX_PROBLEMS);
	if ((rc = check_text(inv->node_uid, TAU_REPORT_MAX_ID, "node_uid")) < 0 ||
	    (rc = check_text(inv->resource_version, TAU_REPORT_MAX_ID, "resource_version")) < 0 ||
	    (rc = check_text(inv->agent_version, TAU_REPORT_MAX_ID, "agent_version")) < 0 ||
	    (rc = check_text(inv->digest, TAU_REPORT_MAX_ID, "digest")) < 0 ||
	    (rc = check_text(inv->os, 63, "os")) < 0 ||
	    (rc = check_text(inv->provider_id, TAU_REPORT_MAX_TEXT, "provider_id")) < 0)
		return rc;
	for (size_t i = 0; i < inv->n_problems; i++) {
		if ((rc = check_text(inv->problems[i], TAU_REPORT_MAX_TEXT, "problems[]")) < 0)
			return rc;
	}
	for (size_t i = 0; i < inv->n_csi_drivers; i++) {
		const Tau__Inventory__V1__CsiDriver *d = inv->csi_drivers[i];

		if ((rc = check_text(d->name, TAU_REPORT_MAX_ID, "csi_drivers[].name")) < 0 ||
		    (rc = check_text(d->detail, TAU_REPORT_MAX_TEXT, "csi_drivers[].detail")) < 0)
			return rc;
	}
	return 0;
}

static int convert_labels(tau_node_facts *f, const Tau__Inventory__V1__NodeInventory *inv)
{
	for (size_t i = 0; i < inv->n_labels; i++) {
		const char *k = inv->labels[i]->key != NULL ? inv->labels[i]->key : "";
		const char *v = inv->labels[i]->value != NULL ? inv->labels[i]->value : "";

		if (tau_names_check_label_key(k) < 0)
			return tau_error_wrap("labels: invalid key");
		if (tau_names_check_label_value(v) < 0)
			return tau_error_wrap("labels[%s]: invalid value", k);
		f->label_keys[i] = (char *)k;
		f->label_values[i] = (char *)v;
		f->n_labels = i + 1;
	}
	sort_labels(f);
	for (size_t i = 1; i < f->n_labels; i++) {
		if (strcmp(f->label_keys[i - 1], f->label_keys[i]) == 0)
			return tau_error_set(TAU_EINVAL, "labels: key %s listed twice",
			                     f->label_keys[i]);
	}
	return 0;
}

static int convert_resources(tau_node_facts *f, const Tau__Inventory__V1__NodeInventory *inv)
{
	for (size_t i = 0; i < inv->n_allocatable; i++) {
		const Tau__Inventory__V1__ResourceQuantity *r = inv->allocatable[i];
		const char *name = r->name != NULL ? r->name : "";
		tau_node_resource *out = &f->allocatable[i];

		if (tau_names_check_label_key(name) < 0)
			return tau_error_wrap("allocatable: invalid resource name");
		if (tau_quantity_parse_str(&out->value, r->quantity != NULL ? r->quantity : "") < 0)
			return tau_error_wrap("allocatable[%s]", name);
		if (tau_quantity_sign(&out->value) < 0)
			return tau_error_set(TAU_EINVAL, "allocatable[%s]: negative quantity %s",
			                     name, r->quantity);
		out->name = (char *)name;
		f->n_allocatable = i + 1;
	}
	sort_resources(f);
	for (size_t i = 1; i < f->n_allocatable; i++) {
		if (strcmp(f->allocatable[i - 1].name, f->allocatable[i].name) == 0)
			return tau_error_set(TAU_EINVAL, "allocatable: resource %s listed twice",
			                     f->allocatable[i].name);
	}
	return 0;
}

/*
 * The arrays of a view in one block: label keys, label values, resources. Every check the
 * store's tau_node_facts_validate makes is made here already (name, label keys and values,
 * resource names, signs, duplicates), so a view is not validated twice.
 */
int tau_report_view_facts(tau_report_view *out, const Tau__Inventory__V1__NodeInventory *inv)
{
	tau_node_facts *f = &out->facts;
	const char *label_class;
	size_t bytes;
	int rc;

	memset(out, 0, sizeof(*out));
	if (inv->node_name == NULL || inv->node_name[0] == '\0')
		return tau_error_set(TAU_EINVAL, "node_name: Required value");
	if (tau_names_check_dns1123_subdomain(inv->node_name) < 0)
		return tau_error_wrap("node_name: Invalid value");
	if ((rc = check_limits(inv)) < 0)
		return rc;
	bytes = inv->n_labels * 2 * sizeof(char *) + inv->n_allocatable * sizeof(tau_node_resource);
	if (bytes > 0) {
		out->block = malloc(bytes);
		if (out->block == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		f->allocatable = out->block;
		f->label_keys = (char **)(void *)(f->allocatable + inv->n_allocatable);
		f->label_values = f->label_keys + inv->n_labels;
	}
	f->name = nonempty(inv->node_name);
	f->uid = nonempty(inv->node_uid);
	f->resource_version = nonempty(inv->resource_version);
	f->os = nonempty(inv->os);
	f->gpu_class = nonempty(inv->gpu_class);
	f->provider_id = nonempty(inv->provider_id);
	if ((rc = convert_labels(f, inv)) < 0 || (rc = convert_resources(f, inv)) < 0)
		goto fail;
	label_class = tau_node_facts_label(f, TAU_GPU_CLASS_LABEL);
	if ((f->gpu_class != NULL) != (label_class != NULL) ||
	    (f->gpu_class != NULL && strcmp(f->gpu_class, label_class) != 0)) {
		rc = tau_error_set(
		        TAU_EINVAL,
		        "gpu_class: \"%s\" does not match label " TAU_GPU_CLASS_LABEL " \"%s\"",
		        f->gpu_class ? f->gpu_class : "", label_class ? label_class : "");
		goto fail;
	}
	f->ready = inv->ready;
	f->schedulable = inv->schedulable;
	f->deleting = inv->deleting;
	return 0;
fail:
	tau_report_view_clear(out);
	return rc;
}

void tau_report_view_clear(tau_report_view *v)
{
	free(v->block);
	memset(v, 0, sizeof(*v));
}

int tau_report_to_facts(tau_node_facts *out, const Tau__Inventory__V1__NodeInventory *inv)
{
	tau_report_view v;
	int rc = tau_report_view_facts(&v, inv);

	if (rc < 0)
		return rc;
	rc = tau_node_facts_copy(out, &v.facts);
	tau_report_view_clear(&v);
	if (rc < 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

static bool str_same(const char *a, const char *b)
{
	return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

unsigned tau_report_inventory_elidable(const Tau__Inventory__V1__NodeInventory *inv,
                                       const tau_node_facts *facts)
{
	unsigned mask = 0;
	bool same = inv->n_labels == facts->n_labels;

	for (size_t i = 0; same && i < inv->n_labels; i++)
		same = str_same(inv->labels[i]->key, facts->label_keys[i]) &&
		       str_same(inv->labels[i]->value, facts->label_values[i]);
	if (same && inv->n_labels > 0)
		mask |= TAU_REPORT_ELIDED_LABELS;
	same = inv->n_allocatable == facts->n_allocatable;
	for (size_t i = 0; same && i < inv->n_allocatable; i++) {
		char q[TAU_QUANTITY_STR_MAX];

		same = str_same(inv->allocatable[i]->name, facts->allocatable[i].name) &&
		       tau_quantity_format(q, sizeof(q), &facts->allocatable[i].value) == 0 &&
		       str_same(inv->allocatable[i]->quantity, q);
	}
	if (same && inv->n_allocatable > 0)
		mask |= TAU_REPORT_ELIDED_ALLOCATABLE;
	return mask;
}

void tau_report_inventory_kept(Tau__Inventory__V1__NodeInventory *out,
                               const Tau__Inventory__V1__NodeInventory *inv, unsigned elided)
{
	*out = *inv;
	if (elided & TAU_REPORT_ELIDED_LABELS) {
		out->n_labels = 0;
		out->labels = NULL;
	}
	if (elided & TAU_REPORT_ELIDED_ALLOCATABLE) {
		out->n_allocatable = 0;
		out->allocatable = NULL;
	}
}

/* Entry i of a restored repeated field, filled from the facts: 0, or -1 when out of memory. */
typedef int (*restore_fill)(void *entry, const tau_node_facts *f, size_t i);

static int fill_label(void *entry, const tau_node_facts *f, size_t i)
{
	Tau__Inventory__V1__NodeInventory__LabelsEntry *l = entry;

	l->key = strdup(f->label_keys[i]);
	l->value = strdup(f->label_values[i]);
	return l->key == NULL || l->value == NULL ? -1 : 0;
}

static int fill_allocatable(void *entry, const tau_node_facts *f, size_t i)
{
	Tau__Inventory__V1__ResourceQuantity *r = entry;
	char q[TAU_QUANTITY_STR_MAX];

	(void)tau_quantity_format(q, sizeof(q), &f->allocatable[i].value);
	r->name = strdup(f->allocatable[i].name);
	r->quantity = strdup(q);
	return r->name == NULL || r->quantity == NULL ? -1 : 0;
}

/*
 * A repeated field (`field`, *n_field) of `n` new `d` messages, each filled by `fill`.  The
 * free routine skips NULL strings, so a half-filled entry frees cleanly.
 */
static int restore(void *field, size_t *n_field, size_t n, const ProtobufCMessageDescriptor *d,
                   restore_fill fill, const tau_node_facts *f)
{
	if (tau_pb_new_repeated(field, n_field, n, d) < 0)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (fill((*(void ***)field)[i], f, i) < 0)
			return tau_error_set(TAU_ENOMEM, "out of memory");
	return 0;
}

int tau_report_inventory_restore(Tau__Inventory__V1__NodeInventory *inv,
                                 const tau_node_facts *facts, unsigned elided)
{
	int rc = 0;

	if ((elided & TAU_REPORT_ELIDED_LABELS) && facts->n_labels > 0 && inv->n_labels == 0)
		rc = restore(&inv->labels, &inv->n_labels, facts->n_labels,
		             &tau__inventory__v1__node_inventory__labels_entry__descriptor,
		             fill_label, facts);
	if (rc == 0 && (elided & TAU_REPORT_ELIDED_ALLOCATABLE) && facts->n_allocatable > 0 &&
	    inv->n_allocatable == 0)
		rc = restore(&inv->allocatable, &inv->n_allocatable, facts->n_allocatable,
		             &tau__inventory__v1__resource_quantity__descriptor, fill_allocatable,
		             facts);
	return rc;
}

/* ---- fingerprint of an inventory as received ---------------------------------------------- */

/* SipHash-2-4 (Aumasson and Bernstein), fed in pieces: whole 8-byte words, the rest kept. */
typedef struct siphash {
	uint64_t v0, v1, v2, v3;
	uint64_t tail; /* up to 7 bytes not yet in a word */
	size_t n;      /* bytes fed so far */
} siphash;

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(siphash *h)
{
	h->v0 += h->v1;
	h->v1 = ROTL(h->v1, 13);
	h->v1 ^= h->v0;
	h->v0 = ROTL(h->v0, 32);
	h->v2 += h->v3;
	h->v3 = ROTL(h->v3, 16);
	h->v3 ^= h->v2;
	h->v0 += h->v3;
	h->v3 = ROTL(h->v3, 21);
	h->v3 ^= h->v0;
	h->v2 += h->v1;
	h->v1 = ROTL(h->v1, 17);
	h->v1 ^= h->v2;
	h->v2 = ROTL(h->v2, 32);
}

static void sip_word(siphash *h, uint64_t m)
{
	h->v3 ^= m;
	sip_round(h);
	sip_round(h);
	h->v0 ^= m;
}

static void sip_init(siphash *h, const uint64_t key[2])
{
	h->v0 = key[0] ^ 0x736f6d6570736575ull;
	h->v1 = key[1] ^ 0x646f72616e646f6dull;
	h->v2 = key[0] ^ 0x6c7967656e657261ull;
	h->v3 = key[1] ^ 0x7465646279746573ull;
	h->tail = 0;
	h->n = 0;
}

static void sip_feed(siphash *h, const uint8_t *p, size_t len)
{
	/* Whole words straight from the bytes while nothing waits in the tail (SipHash's own
	 * little-endian reading on x86-64 and arm64; elsewhere still the same value for the same
	 * bytes, which is all a fingerprint needs). */
	if (h->n % 8 == 0) {
		while (len >= 8) {
			uint64_t m;

			memcpy(&m, p, 8);
			sip_word(h, m);
			h->n += 8;
			p += 8;
			len -= 8;
		}
	}
	for (size_t i = 0; i < len; i++) {
		h->tail |= (uint64_t)p[i] << (8 * (h->n % 8));
		if (++h->n % 8 == 0) {
			sip_word(h, h->tail);
			h->tail = 0;
		}
	}
}

static uint64_t sip_final(siphash *h)
{
	sip_word(h, h->tail | ((uint64_t)(h->n & 0xff) << 56));
	h->v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(h);
	return h->v0 ^ h->v1 ^ h->v2 ^ h->v3;
}

static uint64_t fp_key[2];
static bool fp_keyed;
static pthread_once_t fp_once = PTHREAD_ONCE_INIT;

static void fp_key_init(void)
{
	fp_keyed = getrandom(fp_key, sizeof(fp_key), 0) == (ssize_t)sizeof(fp_key);
}

/* One field of protobuf wire bytes at *p: its number, and where its value ends. */
static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			*out = v;
			return true;
		}
	}
	return false;
}

/*
 * Step over the field at *p: its number in *field, its wire type in *type, its value's bytes
 * (a length-delimited one's without the length) in [*val, *p).
 */
static bool wire_field(const uint8_t **p, const uint8_t *end, uint32_t *field, unsigned *type,
                       const uint8_t **val)
{
	uint64_t tag, n;

	if (!wire_varint(p, end, &tag) || tag >> 3 == 0 || tag >> 3 > UINT32_MAX)
		return false;
	*field = (uint32_t)(tag >> 3);
	*type = (unsigned)(tag & 7);
	*val = *p;
	switch (tag & 7) {
	case 0:
		return wire_varint(p, end, &n);
	case 1:
		n = 8;
		break;
	case 2:
		if (!wire_varint(p, end, &n))
			return false;
		*val = *p;
		break;
	case 5:
		n = 4;
		break;
	default: /* groups: not in our schemas, and their bytes do not stand alone */
		return false;
	}
	if (n > (size_t)(end - *p))
		return false;
	*p += n;
	return true;
}

#define FIELD_REPORT_INVENTORY   2
#define FIELD_REPORT_HEARTBEAT   3
#define FIELD_REPORT_STOPPING    4
#define FIELD_INVENTORY_OBSERVED 16
#define FIELD_INVENTORY_DIGEST   18

uint64_t tau_report_fingerprint(const uint8_t *wire, size_t len)
{
	const uint8_t *p = wire, *end = wire + len, *inv = NULL, *inv_end = NULL, *val;
	uint32_t field;
	unsigned type;
	siphash h;
	uint64_t fp;

	pthread_once(&fp_once, fp_key_init);
	if (!fp_keyed || wire == NULL)
		return 0;
	while (p < end) {
		if (!wire_field(&p, end, &field, &type, &val))
			return 0;
		if (field == FIELD_REPORT_HEARTBEAT || field == FIELD_REPORT_STOPPING)
			return 0;
		if (field == FIELD_REPORT_INVENTORY) {
			/* A second one would be merged into the first by the decoder. */
			if (inv != NULL || type != 2)
				return 0;
			inv = val;
			inv_end = p;
		}
	}
	if (inv == NULL)
		return 0;
	sip_init(&h, fp_key);
	for (p = inv; p < inv_end;) {
		const uint8_t *start = p;

		if (!wire_field(&p, inv_end, &field, &type, &val))
			return 0;
		if (field == FIELD_INVENTORY_DIGEST && p - val > TAU_REPORT_MAX_ID)
			return 0;
		if (field != FIELD_INVENTORY_OBSERVED && field != FIELD_INVENTORY_DIGEST)
			sip_feed(&h, start, (size_t)(p - start));
	}
	fp = sip_final(&h);
	return fp != 0 ? fp : 1;
}

tau_report_action tau_report_seq_classify(const tau_report_seq *st, uint64_t seq,
                                          Tau__Inventory__V1__AgentReport__BodyCase body)
{
	if (seq == 0 || body == TAU__INVENTORY__V1__AGENT_REPORT__BODY__NOT_SET)
		return TAU_REPORT_INVALID_SEQ;
	if (st->have_full && seq <= st->last)
		return TAU_REPORT_DUPLICATE;
	switch (body) {
	case TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY:
		return TAU_REPORT_PROCESS;
	case TAU__INVENTORY__V1__AGENT_REPORT__BODY_HEARTBEAT:
		if (!st->have_full || seq != st->last + 1)
			return TAU_REPORT_NEED_FULL;
		return TAU_REPORT_PROCESS;
	default: /* Stopping: liveness only, valid in any position */
		return TAU_REPORT_PROCESS;
	}
}

void tau_report_seq_accept(tau_report_seq *st, uint64_t seq,
                           Tau__Inventory__V1__AgentReport__BodyCase body)
{
	if (body == TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY)
		st->have_full = true;
	if (seq > st->last)
		st->last = seq;
}

bool tau_report_ack_supersedes(const tau_report_seq *st, uint64_t seq, tau_report_action act)
{
	return act == TAU_REPORT_PROCESS && seq == st->last;
}
