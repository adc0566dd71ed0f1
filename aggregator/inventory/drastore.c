/*
 * drastore.c - DRA objects by name and the view built from them (drastore.h).
 *
 * The one idea: the store only keeps what the API said, read once into
 * facts; every decision is the view's, rebuilt from all of it, so the answer
 * never depends on the order events arrived in (level-triggered).
 */
#include "drastore.h"
#include "sorted.h"

#include "tau/error.h"
#include "tau/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct refusal {
	char *key;  /* "ResourceSlice <name>" or "DeviceClass <name>" */
	char *text; /* the key, ": ", why */
} refusal;

struct tau_dra_store {
	tau_dra_slice *slices; /* sorted by name */
	size_t n_slices, cap_slices;
	tau_dra_class *classes; /* sorted by name */
	size_t n_classes, cap_classes;
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
	*out = s;
	return 0;
}

void tau_dra_store_free(tau_dra_store *store)
{
	if (store == NULL)
		return;
	tau_dra_view_free(store->view);
	for (size_t i = 0; i < store->n_slices; i++)
		tau_dra_slice_clear(&store->slices[i]);
	for (size_t i = 0; i < store->n_classes; i++)
		tau_dra_class_clear(&store->classes[i]);
	for (size_t i = 0; i < store->n_refused; i++) {
		free(store->refused[i].key);
		free(store->refused[i].text);
	}
	tau_dra_mappings_free(store->mappings, store->n_mappings);
	free(store->slices);
	free(store->classes);
	free(store->refused);
	free(store->kueue_error);
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

/* Replace (or insert) the item named like `item` in a sorted array; `clear` frees one. */
#define STORE_PUT(s, arr, n, cap, item, clearfn)                                                   \
	do {                                                                                       \
		bool found_;                                                                       \
		size_t i_ = tau_sorted_index((s)->arr, (s)->n, sizeof(*(s)->arr), (item).name,     \
		                             &found_);                                             \
		if (found_) {                                                                      \
			clearfn(&(s)->arr[i_]);                                                    \
			(s)->arr[i_] = (item);                                                     \
			break;                                                                     \
		}                                                                                  \
		if ((s)->n == (s)->cap) {                                                          \
			size_t nc_ = (s)->cap != 0 ? (s)->cap * 2 : 16;                            \
			void *p_ = realloc((s)->arr, nc_ * sizeof(*(s)->arr));                     \
			if (p_ == NULL) {                                                          \
				clearfn(&(item));                                                  \
				return tau_error_set(TAU_ENOMEM, "out of memory in the DRA "       \
				                                 "store");                         \
			}                                                                          \
			(s)->arr = p_;                                                             \
			(s)->cap = nc_;                                                            \
		}                                                                                  \
		memmove(&(s)->arr[i_ + 1], &(s)->arr[i_], ((s)->n - i_) * sizeof(*(s)->arr));      \
		(s)->arr[i_] = (item);                                                             \
		(s)->n++;                                                                          \
	} while (0)

static int drop_slice(tau_dra_store *s, const char *name)
{
	bool found;
	size_t i = tau_sorted_index(s->slices, s->n_slices, sizeof(*s->slices), name, &found);

	if (!found)
		return -TAU_ENOTFOUND;
	tau_dra_slice_clear(&s->slices[i]);
	memmove(&s->slices[i], &s->slices[i + 1], (s->n_slices - i - 1) * sizeof(*s->slices));
	s->n_slices--;
	return 0;
}

static int drop_class(tau_dra_store *s, const char *name)
{
	bool found;
	size_t i = tau_sorted_index(s->classes, s->n_classes, sizeof(*s->classes), name, &found);

	if (!found)
		return -TAU_ENOTFOUND;
	tau_dra_class_clear(&s->classes[i]);
	memmove(&s->classes[i], &s->classes[i + 1], (s->n_classes - i - 1) * sizeof(*s->classes));
	s->n_classes--;
	return 0;
}

int tau_dra_store_slice_upsert(tau_dra_store *store, const cJSON *slice)
{
	tau_dra_slice f;
	char key[300];

	if (object_key(key, sizeof(key), "ResourceSlice", slice) < 0)
		return -TAU_EINVAL;
	changed(store);
	if (tau_dra_slice_from_json(&f, slice) < 0) {
		(void)drop_slice(store, tau_json_str(slice, "metadata.name"));
		return remember_refusal(store, key);
	}
	forget_refusal(store, key);
	STORE_PUT(store, slices, n_slices, cap_slices, f, tau_dra_slice_clear);
	return 0;
}

int tau_dra_store_slice_delete(tau_dra_store *store, const char *name)
{
	char key[300];

	snprintf(key, sizeof(key), "ResourceSlice %s", name);
	changed(store);
	forget_refusal(store, key);
	return drop_slice(store, name);
}

int tau_dra_store_class_upsert(tau_dra_store *store, const cJSON *device_class)
{
	tau_dra_class f;
	char key[300];

	if (object_key(key, sizeof(key), "DeviceClass", device_class) < 0)
		return -TAU_EINVAL;
	changed(store);
	if (tau_dra_class_from_json(&f, device_class) < 0) {
		(void)drop_class(store, tau_json_str(device_class, "metadata.name"));
		return remember_refusal(store, key);
	}
	forget_refusal(store, key);
	STORE_PUT(store, classes, n_classes, cap_classes, f, tau_dra_class_clear);
	return 0;
}

int tau_dra_store_class_delete(tau_dra_store *store, const char *name)
{
	char key[300];

	snprintf(key, sizeof(key), "DeviceClass %s", name);
	changed(store);
	forget_refusal(store, key);
	return drop_class(store, name);
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
		size_t n_classes = store->kueue_error != NULL ? 0 : store->n_classes;

		if (tau_dra_view_build(&store->view, store->classes, n_classes, store->slices,
		                       store->n_slices, store->mappings, store->n_mappings) < 0)
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
