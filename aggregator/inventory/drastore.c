/*
 * drastore.c - DRA objects by name and the view built from them (drastore.h).
 *
 * The one idea: the store only keeps what the API said, read once into
 * facts; every decision is the view's, rebuilt from all of it, so the answer
 * never depends on the order events arrived in (level-triggered).
 */
#include "drastore.h"
#include "sorted.h"

#include "tau/array.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct refusal {
	char *key;  /* "ResourceSlice <name>" or "DeviceClass <name>" */
	char *text; /* the key, ": ", why */
} refusal;

/*
 * One kind of object the store keeps: how to read and clear one record, and the records,
 * sorted by name (each starts with `char *name`).
 */
typedef struct shelf {
	const char *kind; /* "ResourceSlice" or "DeviceClass", as the API names it */
	size_t size;      /* of one record */
	int (*read)(void *rec, const cJSON *obj);
	void (*clear)(void *rec);
	void *items;
	size_t n, cap;
} shelf;

/* Room for one record of either kind. */
typedef union any_record {
	tau_dra_slice slice;
	tau_dra_class cls;
} any_record;

static int read_slice(void *rec, const cJSON *obj)
{
	return tau_dra_slice_from_json(rec, obj);
}

static void clear_slice(void *rec)
{
	tau_dra_slice_clear(rec);
}

static int read_class(void *rec, const cJSON *obj)
{
	return tau_dra_class_from_json(rec, obj);
}

static void clear_class(void *rec)
{
	tau_dra_class_clear(rec);
}

struct tau_dra_store {
	shelf slices;  /* tau_dra_slice records */
	shelf classes; /* tau_dra_class records */
	tau_kueue_dra_mapping *mappings;
	size_t n_mappings;
	char *kueue_error;
	refusal *refused; /* sorted by key */
	size_t n_refused;
	tau_dra_view *view; /* NULL after a change */
	uint64_t generation;
};

int tau_dra_store_new(tau_dra_store **out)
{
	tau_dra_store *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory creating the DRA store");
	s->slices = (shelf){.kind = "ResourceSlice",
	                    .size = sizeof(tau_dra_slice),
	                    .read = read_slice,
	                    .clear = clear_slice};
	s->classes = (shelf){.kind = "DeviceClass",
	                     .size = sizeof(tau_dra_class),
	                     .read = read_class,
	                     .clear = clear_class};
	*out = s;
	return 0;
}

static void *rec_at(const shelf *sh, size_t i)
{
	return (char *)sh->items + i * sh->size;
}

static void shelf_clear(shelf *sh)
{
	for (size_t i = 0; i < sh->n; i++)
		sh->clear(rec_at(sh, i));
	free(sh->items);
}

void tau_dra_store_free(tau_dra_store *store)
{
	if (store == NULL)
		return;
	tau_dra_view_free(store->view);
	shelf_clear(&store->slices);
	shelf_clear(&store->classes);
	for (size_t i = 0; i < store->n_refused; i++)
		tau_free_many(store->refused[i].key, store->refused[i].text);
	tau_dra_mappings_free(store->mappings, store->n_mappings);
	tau_free_many(store->refused, store->kueue_error);
	free(store);
}

/* The view lends from the arrays: drop it before anything in them moves. */
static void changed(tau_dra_store *s)
{
	tau_dra_view_free(s->view);
	s->view = NULL;
	s->generation++;
}

static void forget_refusal(tau_dra_store *s, const char *key)
{
	bool found;
	size_t i = tau_sorted_index(s->refused, s->n_refused, sizeof(*s->refused), key, &found);

	if (!found)
		return;
	free(s->refused[i].key);
	free(s->refused[i].text);
	memmove(&s->refused[i], &s->refused[i + 1], (s->n_refused - i - 1) * sizeof(*s->refused));
	s->n_refused--;
}

/* Remember why `key` was refused (the current error); returns the error's code. */
static int remember_refusal(tau_dra_store *s, const char *key)
{
	int code = tau_error_last()->code != 0 ? tau_error_last()->code : TAU_EINVAL;
	const char *why = tau_error_last()->msg;
	size_t n = strlen(key) + strlen(why) + 3, i;
	refusal r = {strdup(key), malloc(n)};
	refusal *p;
	bool found;

	forget_refusal(s, key);
	p = realloc(s->refused, (s->n_refused + 1) * sizeof(*p));
	if (r.key == NULL || r.text == NULL || p == NULL) {
		free(r.key);
		free(r.text);
		if (p != NULL)
			s->refused = p;
		return tau_error_set(TAU_ENOMEM, "out of memory in the DRA store");
	}
	s->refused = p;
	/* the message already names the object ("ResourceSlice x: ..."); keep it whole */
	snprintf(r.text, n, "%s", why);
	i = tau_sorted_index(s->refused, s->n_refused, sizeof(*s->refused), key, &found);
	memmove(&s->refused[i + 1], &s->refused[i], (s->n_refused - i) * sizeof(*s->refused));
	s->refused[i] = r;
	s->n_refused++;
	return -code;
}

static int object_key(char *key, size_t cap, const char *kind, const cJSON *obj)
{
	const char *name = tau_json_str(obj, "metadata.name");

	if (name == NULL)
		return tau_error_set(TAU_EINVAL, "%s without metadata.name", kind);
	snprintf(key, cap, "%s %s", kind, name);
	return 0;
}

/* Replace (or insert) the record named like `rec`; a record that cannot be stored is cleared. */
static int put(shelf *sh, void *rec)
{
	bool found;
	size_t i = tau_sorted_index(sh->items, sh->n, sh->size, *(char *const *)rec, &found);

	if (found) {
		sh->clear(rec_at(sh, i));
		memcpy(rec_at(sh, i), rec, sh->size);
		return 0;
	}
	if (tau_array_grow(&sh->items, &sh->cap, sh->n + 1, sh->size) < 0) {
		sh->clear(rec);
		return tau_error_set(TAU_ENOMEM, "out of memory in the DRA store");
	}
	memmove(rec_at(sh, i + 1), rec_at(sh, i), (sh->n - i) * sh->size);
	memcpy(rec_at(sh, i), rec, sh->size);
	sh->n++;
	return 0;
}

static int drop(shelf *sh, const char *name)
{
	bool found;
	size_t i = tau_sorted_index(sh->items, sh->n, sh->size, name, &found);

	if (!found)
		return -TAU_ENOTFOUND;
	sh->clear(rec_at(sh, i));
	memmove(rec_at(sh, i), rec_at(sh, i + 1), (sh->n - i - 1) * sh->size);
	sh->n--;
	return 0;
}

static int upsert(tau_dra_store *store, shelf *sh, const cJSON *obj)
{
	any_record rec;
	char key[300];

	if (object_key(key, sizeof(key), sh->kind, obj) < 0)
		return -TAU_EINVAL;
	changed(store);
	if (sh->read(&rec, obj) < 0) {
		(void)drop(sh, tau_json_str(obj, "metadata.name"));
		return remember_refusal(store, key);
	}
	forget_refusal(store, key);
	return put(sh, &rec);
}

static int delete (tau_dra_store *store, shelf *sh, const char *name)
{
	char key[300];

	snprintf(key, sizeof(key), "%s %s", sh->kind, name);
	changed(store);
	forget_refusal(store, key);
	return drop(sh, name);
}

int tau_dra_store_slice_upsert(tau_dra_store *store, const cJSON *slice)
{
	return upsert(store, &store->slices, slice);
}

int tau_dra_store_slice_delete(tau_dra_store *store, const char *name)
{
	return delete (store, &store->slices, name);
}

int tau_dra_store_class_upsert(tau_dra_store *store, const cJSON *device_class)
{
	return upsert(store, &store->classes, device_class);
}

int tau_dra_store_class_delete(tau_dra_store *store, const char *name)
{
	return delete (store, &store->classes, name);
}

static int copy_mappings(tau_kueue_dra_mapping **out, const tau_kueue_dra_mapping *src, size_t n)
{
	tau_kueue_dra_mapping *m = n > 0 ? calloc(n, sizeof(*m)) : NULL;

	*out = NULL;
	if (n > 0 && m == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory in the DRA store");
	for (size_t i = 0; i < n; i++) {
		m[i].name = strdup(src[i].name);
		m[i].device_classes = calloc(src[i].n_device_classes + 1, sizeof(char *));
		if (m[i].name == NULL || m[i].device_classes == NULL)
			goto fail;
		for (size_t j = 0; j < src[i].n_device_classes; j++) {
			m[i].device_classes[j] = strdup(src[i].device_classes[j]);
			if (m[i].device_classes[j] == NULL)
				goto fail;
			m[i].n_device_classes++;
		}
	}
	*out = m;
	return 0;
fail:
	tau_dra_mappings_free(m, n);
	return tau_error_set(TAU_ENOMEM, "out of memory in the DRA store");
}

int tau_dra_store_set_mappings(tau_dra_store *store, const tau_kueue_dra_mapping *mappings,
                               size_t n, const char *error)
{
	tau_kueue_dra_mapping *m = NULL;
	char *err = NULL;

	if (error != NULL && (err = strdup(error)) == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory in the DRA store");
	if (error == NULL && copy_mappings(&m, mappings, n) < 0)
		return -TAU_ENOMEM;
	changed(store);
	tau_dra_mappings_free(store->mappings, store->n_mappings);
	free(store->kueue_error);
	store->mappings = m;
	store->n_mappings = error == NULL ? n : 0;
	store->kueue_error = err;
	return 0;
}

const char *tau_dra_store_kueue_error(const tau_dra_store *store)
{
	return store->kueue_error;
}

int tau_dra_store_view(tau_dra_store *store, const tau_dra_view **out)
{
	if (store->view == NULL) {
		/* Kueue's configuration unreadable: no class may count (fail closed) */
		size_t n_classes = store->kueue_error != NULL ? 0 : store->classes.n;

		if (tau_dra_view_build(&store->view, store->classes.items, n_classes,
		                       store->slices.items, store->slices.n, store->mappings,
		                       store->n_mappings) < 0)
			return -TAU_ENOMEM;
	}
	*out = store->view;
	return 0;
}

const tau_dra_view *tau_dra_store_built_view(const tau_dra_store *store)
{
	return store->view;
}

uint64_t tau_dra_store_generation(const tau_dra_store *store)
{
	return store->generation;
}

size_t tau_dra_store_refused_count(const tau_dra_store *store)
{
	return store->n_refused;
}

const char *tau_dra_store_refused_at(const tau_dra_store *store, size_t i)
{
	return i < store->n_refused ? store->refused[i].text : NULL;
}
