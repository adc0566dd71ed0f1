/*
 * fake_kube.c - the in-memory API server of fake_kube.h.
 *
 * The one idea: one ordered event log is the store's history.  Every change
 * (create, update, delete) takes the next resourceVersion and appends an
 * event; the store holds the latest object per (collection, namespace,
 * name).  A watch from resourceVersion R replays the log after R and then
 * sleeps on the condition variable for more, so "list, then watch from the
 * list's RV" sees every change exactly once.  libmicrohttpd runs a thread
 * per connection, so a watch may block in its content callback.
 */
#define _POSIX_C_SOURCE 200809L
#include "fake_kube.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/selector.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BODY_MAX (8u * 1024u * 1024u)

typedef struct fk_obj {
	char *coll, *ns, *name; /* ns "" for cluster scope */
	cJSON *obj;
} fk_obj;

typedef struct fk_event {
	uint64_t rv;
	char type[10];
	char *coll, *ns;
	cJSON *obj;
} fk_event;

typedef struct fk_fault {
	char method[8];
	char coll[160]; /* "" = any */
	int code, times;
} fk_fault;

typedef struct fk_req {
	char method[8];
	char coll[160];
	bool list;
} fk_req;

typedef struct fk_hold {
	char coll[160];
} fk_hold;

struct fake_kube {
	struct MHD_Daemon *daemon;
	char url[64];
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stopping;
	uint64_t rv, uid;
	fk_obj *objs;
	size_t n_objs, cap_objs;
	fk_event *events;
	size_t n_events, cap_events;
	fk_fault faults[16];
	size_t n_faults;
	fk_req *reqs;
	size_t n_reqs, cap_reqs;
	fk_hold holds[8];
	size_t n_holds;
};

/* ------------------------------------------------------------------------------------------ */
/* Store (callers hold mu)                                                                     */

static void coll_of(char *buf, size_t cap, const tau_kube_resource *res)
{
	snprintf(buf, cap, "%s/%s", res->group != NULL ? res->group : "", res->plural);
}

static const char *str_at(const cJSON *obj, const char *path)
{
	const char *s = NULL;

	if (obj == NULL || tau_json_get_string(&s, obj, path) != 0)
		return NULL;
	return s;
}

static fk_obj *find(fake_kube *fk, const char *coll, const char *ns, const char *name)
{
	for (size_t i = 0; i < fk->n_objs; i++) {
		fk_obj *o = &fk->objs[i];

		if (strcmp(o->coll, coll) == 0 && strcmp(o->ns, ns != NULL ? ns : "") == 0 &&
		    strcmp(o->name, name) == 0)
			return o;
	}
	return NULL;
}

static void set_str(cJSON *obj, const char *key, const char *v)
{
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	cJSON_AddStringToObject(obj, key, v);
}

static cJSON *meta_of(cJSON *obj)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

	if (!cJSON_IsObject(md)) {
		cJSON_DeleteItemFromObjectCaseSensitive(obj, "metadata");
		md = cJSON_AddObjectToObject(obj, "metadata");
	}
	return md;
}

/* Take the next resourceVersion for `obj` and log the event (the log gets a copy). */
static void record(fake_kube *fk, const char *type, const char *coll, const char *ns, cJSON *obj)
{
	char rv[24];
	fk_event *e;

	fk->rv++;
	snprintf(rv, sizeof(rv), "%llu", (unsigned long long)fk->rv);
	set_str(meta_of(obj), "resourceVersion", rv);
	if (fk->n_events == fk->cap_events) {
		fk->cap_events = fk->cap_events ? fk->cap_events * 2 : 64;
		fk->events = realloc(fk->events, fk->cap_events * sizeof(*fk->events));
	}
	e = &fk->events[fk->n_events++];
	e->rv = fk->rv;
	snprintf(e->type, sizeof(e->type), "%s", type);
	e->coll = strdup(coll);
	e->ns = strdup(ns != NULL ? ns : "");
	e->obj = cJSON_Duplicate(obj, true);
	pthread_cond_broadcast(&fk->cond);
}

static void remove_obj(fake_kube *fk, fk_obj *o)
{
	record(fk, "DELETED", o->coll, o->ns, o->obj);
	cJSON_Delete(o->obj);
	free(o->coll);
	free(o->ns);
	free(o->name);
	*o = fk->objs[--fk->n_objs];
}

static bool has_finalizers(const cJSON *obj)
{
	return cJSON_GetArraySize(tau_json_find(obj, "metadata.finalizers")) > 0;
}

static void now_rfc3339(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Insert a new object (takes `obj`). */
static void insert(fake_kube *fk, const char *coll, const char *ns, cJSON *obj)
{
	cJSON *md = meta_of(obj);
	char uid[40], ts[32];
	fk_obj *o;

	fk->uid++;
	snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012llu", (unsigned long long)fk->uid);
	now_rfc3339(ts, sizeof(ts));
	set_str(md, "uid", uid);
	set_str(md, "creationTimestamp", ts);
	if (ns != NULL && ns[0] != '\0')
		set_str(md, "namespace", ns);
	cJSON_DeleteItemFromObjectCaseSensitive(md, "generation");
	cJSON_AddNumberToObject(md, "generation", 1);
	cJSON_DeleteItemFromObjectCaseSensitive(md, "deletionTimestamp");
	if (fk->n_objs == fk->cap_objs) {
		fk->cap_objs = fk->cap_objs ? fk->cap_objs * 2 : 32;
		fk->objs = realloc(fk->objs, fk->cap_objs * sizeof(*fk->objs));
	}
	o = &fk->objs[fk->n_objs++];
	o->coll = strdup(coll);
	o->ns = strdup(ns != NULL ? ns : "");
	o->name = strdup(str_at(obj, "metadata.name"));
	o->obj = obj;
	record(fk, "ADDED", coll, ns, obj);
}

/* Replace the stored object with `next` (taken); a deleting object whose last
 * finalizer went is removed. */
static void replace(fake_kube *fk, fk_obj *o, cJSON *next)
{
	const cJSON *old_spec = cJSON_GetObjectItemCaseSensitive(o->obj, "spec");
	const cJSON *new_spec = cJSON_GetObjectItemCaseSensitive(next, "spec");
	int64_t gen = 1;
	cJSON *md = meta_of(next);

	tau_json_get_int(&gen, o->obj, "metadata.generation");
	if ((old_spec != NULL || new_spec != NULL) &&
	    (old_spec == NULL || new_spec == NULL || !cJSON_Compare(old_spec, new_spec, true)))
		gen++;
	/* Server-owned metadata stays the server's. */
	set_str(md, "uid", str_at(o->obj, "metadata.uid"));
	set_str(md, "creationTimestamp", str_at(o->obj, "metadata.creationTimestamp"));
	set_str(md, "name", o->name);
	if (o->ns[0] != '\0')
		set_str(md, "namespace", o->ns);
	cJSON_DeleteItemFromObjectCaseSensitive(md, "generation");
	cJSON_AddNumberToObject(md, "generation", (double)gen);
	cJSON_DeleteItemFromObjectCaseSensitive(md, "deletionTimestamp");
	if (str_at(o->obj, "metadata.deletionTimestamp") != NULL)
		set_str(md, "deletionTimestamp", str_at(o->obj, "metadata.deletionTimestamp"));
	cJSON_Delete(o->obj);
	o->obj = next;
	if (str_at(next, "metadata.deletionTimestamp") != NULL && !has_finalizers(next)) {
		remove_obj(fk, o);
		return;
	}
	record(fk, "MODIFIED", o->coll, o->ns, next);
}

/* Delete honouring finalizers.  The caller checked preconditions. */
static void delete_obj(fake_kube *fk, fk_obj *o)
{
	char ts[32];
	cJSON *next;

	if (!has_finalizers(o->obj)) {
		remove_obj(fk, o);
		return;
	}
	if (str_at(o->obj, "metadata.deletionTimestamp") != NULL)
		return;
	now_rfc3339(ts, sizeof(ts));
	next = cJSON_Duplicate(o->obj, true);
	set_str(meta_of(o->obj), "deletionTimestamp", ts);
	set_str(meta_of(next), "deletionTimestamp", ts);
	replace(fk, o, next);
}

static void merge_patch(cJSON *target, const cJSON *patch)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, patch)
	{
		cJSON *have = cJSON_GetObjectItemCaseSensitive(target, it->string);

		if (cJSON_IsNull(it)) {
			cJSON_DeleteItemFromObjectCaseSensitive(target, it->string);
		} else if (cJSON_IsObject(it) && cJSON_IsObject(have)) {
			merge_patch(have, it);
		} else if (cJSON_IsObject(it)) {
			cJSON *fresh = cJSON_CreateObject();

			merge_patch(fresh, it);
			cJSON_DeleteItemFromObjectCaseSensitive(target, it->string);
			cJSON_AddItemToObject(target, it->string, fresh);
		} else {
			cJSON_DeleteItemFromObjectCaseSensitive(target, it->string);
			cJSON_AddItemToObject(target, it->string, cJSON_Duplicate(it, true));
		}
	}
}

/* ------------------------------------------------------------------------------------------ */
/* HTTP                                                                                        */

typedef struct fk_conn {
	char *body;
	size_t len;
	bool too_big;
} fk_conn;

/* A parsed request path. */
typedef struct fk_path {
	char coll[160];
	char ns[128];
	char name[256];
	char sub[32];
} fk_path;

static int parse_path(fk_path *p, const char *url)
{
	char copy[1024], *seg[10], *save = NULL, *s;
	size_t n = 0, i;
	const char *group = "";

	memset(p, 0, sizeof(*p));
	snprintf(copy, sizeof(copy), "%s", url);
	for (s = strtok_r(copy, "/", &save); s != NULL && n < 10; s = strtok_r(NULL, "/", &save))
		seg[n++] = s;
	if (n >= 2 && strcmp(seg[0], "api") == 0)
		i = 2;
	else if (n >= 3 && strcmp(seg[0], "apis") == 0) {
		group = seg[1];
		i = 3;
	} else
		return -1;
	if (n - i >= 3 && strcmp(seg[i], "namespaces") == 0 &&
	    !(n - i == 3 &&
	      (strcmp(seg[i + 2], "status") == 0 || strcmp(seg[i + 2], "finalize") == 0))) {
		snprintf(p->ns, sizeof(p->ns), "%s", seg[i + 1]);
		i += 2;
	}
	if (n - i < 1 || n - i > 3)
		return -1;
	snprintf(p->coll, sizeof(p->coll), "%s/%s", group, seg[i]);
	if (n - i >= 2)
		snprintf(p->name, sizeof(p->name), "%s", seg[i + 1]);
	if (n - i == 3)
		snprintf(p->sub, sizeof(p->sub), "%s", seg[i + 2]);
	return 0;
}

static const char *reason_of(int code)
{
	switch (code) {
	case 400:
		return "BadRequest";
	case 403:
		return "Forbidden";
	case 404:
		return "NotFound";
	case 409:
		return "Conflict";
	case 410:
		return "Expired";
	case 422:
		return "Invalid";
	case 429:
		return "TooManyRequests";
	default:
		return "InternalError";
	}
}

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned code, cJSON *body)
{
	char *text = cJSON_PrintUnformatted(body);
	struct MHD_Response *r;
	enum MHD_Result ret;

	cJSON_Delete(body);
	if (text == NULL)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_status(struct MHD_Connection *conn, int code, const char *reason,
                                   const char *msg)
{
	cJSON *s = cJSON_CreateObject();

	cJSON_AddStringToObject(s, "kind", "Status");
	cJSON_AddStringToObject(s, "apiVersion", "v1");
	cJSON_AddObjectToObject(s, "metadata");
	cJSON_AddStringToObject(s, "status", "Failure");
	cJSON_AddStringToObject(s, "message", msg);
	cJSON_AddStringToObject(s, "reason", reason != NULL ? reason : reason_of(code));
	cJSON_AddNumberToObject(s, "code", code);
	return send_json(conn, (unsigned)code, s);
}

static bool matches(const fk_path *p, const char *coll, const char *ns, const cJSON *obj,
                    const tau_selector *sel, const char *field)
{
	if (strcmp(coll, p->coll) != 0 || (p->ns[0] != '\0' && strcmp(ns, p->ns) != 0))
		return false;
	if (sel != NULL && !tau_selector_matches(sel, tau_json_find(obj, "metadata.labels")))
		return false;
	if (field != NULL && field[0] != '\0') {
		const char *eq = strchr(field, '=');
		char key[64];

		if (eq == NULL)
			return false;
		snprintf(key, sizeof(key), "%.*s", (int)(eq - field), field);
		if (strcmp(key, "metadata.name") == 0)
			return strcmp(str_at(obj, "metadata.name"), eq + 1) == 0;
		if (strcmp(key, "metadata.namespace") == 0)
			return strcmp(ns, eq + 1) == 0;
		return false;
	}
	return true;
}

static bool held(fake_kube *fk, const char *coll)
{
	for (size_t i = 0; i < fk->n_holds; i++)
		if (strcmp(fk->holds[i].coll, coll) == 0)
			return true;
	return false;
}

/* A watch stream's state. */
typedef struct fk_watch {
	fake_kube *fk;
	fk_path path;
	tau_selector *sel;
	char field[256];
	uint64_t from_rv;
	size_t next; /* index into the event log */
	time_t deadline;
	char *pending;
	size_t pending_len, pending_off;
} fk_watch;

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	fk_watch *w = cls;
	fake_kube *fk = w->fk;
	size_t n;

	(void)pos;
	while (w->pending == NULL) {
		pthread_mutex_lock(&fk->mu);
		for (;;) {
			while (w->next < fk->n_events) {
				fk_event *e = &fk->events[w->next++];
				cJSON *line;

				if (e->rv <= w->from_rv ||
				    !matches(&w->path, e->coll, e->ns, e->obj, w->sel, w->field))
					continue;
				line = cJSON_CreateObject();
				cJSON_AddStringToObject(line, "type", e->type);
				cJSON_AddItemToObject(line, "object",
				                      cJSON_Duplicate(e->obj, true));
				w->pending = cJSON_PrintUnformatted(line);
				cJSON_Delete(line);
				break;
			}
			if (w->pending != NULL || fk->stopping || time(NULL) >= w->deadline)
				break;
			{
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec += 1;
				pthread_cond_timedwait(&fk->cond, &fk->mu, &ts);
			}
		}
		pthread_mutex_unlock(&fk->mu);
		if (w->pending == NULL)
			return MHD_CONTENT_READER_END_OF_STREAM;
		w->pending_len = strlen(w->pending);
		w->pending[w->pending_len] = '\0';
		w->pending = realloc(w->pending, w->pending_len + 2);
		w->pending[w->pending_len++] = '\n';
		w->pending_off = 0;
	}
	n = w->pending_len - w->pending_off;
	if (n > max)
		n = max;
	memcpy(buf, w->pending + w->pending_off, n);
	w->pending_off += n;
	if (w->pending_off == w->pending_len) {
		free(w->pending);
		w->pending = NULL;
	}
	return (ssize_t)n;
}

static void watch_free(void *cls)
{
	fk_watch *w = cls;

	tau_selector_free(w->sel);
	free(w->pending);
	free(w);
}

static const char *arg_of(struct MHD_Connection *conn, const char *key)
{
	return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result do_watch(fake_kube *fk, struct MHD_Connection *conn, const fk_path *p,
                                tau_selector *sel, const char *field)
{
	const char *rv = arg_of(conn, "resourceVersion"), *to = arg_of(conn, "timeoutSeconds");
	fk_watch *w = calloc(1, sizeof(*w));
	struct MHD_Response *r;
	enum MHD_Result ret;

	w->fk = fk;
	w->path = *p;
	w->sel = sel;
	snprintf(w->field, sizeof(w->field), "%s", field != NULL ? field : "");
	w->from_rv = rv != NULL ? strtoull(rv, NULL, 10) : 0;
	w->deadline = time(NULL) + (to != NULL ? atoi(to) : 300);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, watch_read, w, watch_free);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	ret = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static int cmp_items(const void *a, const void *b)
{
	const cJSON *x = *(cJSON *const *)a, *y = *(cJSON *const *)b;
	const char *xn = str_at(x, "metadata.namespace"), *yn = str_at(y, "metadata.namespace");
	int c = strcmp(xn != NULL ? xn : "", yn != NULL ? yn : "");

	return c != 0 ? c : strcmp(str_at(x, "metadata.name"), str_at(y, "metadata.name"));
}

/* Called with mu held; returns with it held. */
static enum MHD_Result do_list(fake_kube *fk, struct MHD_Connection *conn, const fk_path *p,
                               const tau_selector *sel, const char *field)
{
	cJSON *list = cJSON_CreateObject(), *items, **arr;
	char rv[24];
	size_t n = 0;

	while (held(fk, p->coll) && !fk->stopping)
		pthread_cond_wait(&fk->cond, &fk->mu);
	arr = calloc(fk->n_objs + 1, sizeof(*arr));
	for (size_t i = 0; i < fk->n_objs; i++)
		if (matches(p, fk->objs[i].coll, fk->objs[i].ns, fk->objs[i].obj, sel, field))
			arr[n++] = fk->objs[i].obj;
	qsort(arr, n, sizeof(*arr), cmp_items);
	cJSON_AddStringToObject(list, "kind", "List");
	cJSON_AddStringToObject(list, "apiVersion", "v1");
	snprintf(rv, sizeof(rv), "%llu", (unsigned long long)fk->rv);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(list, "metadata"), "resourceVersion", rv);
	items = cJSON_AddArrayToObject(list, "items");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(items, cJSON_Duplicate(arr[i], true));
	free(arr);
	return send_json(conn, 200, list);
}

static bool take_fault(fake_kube *fk, const char *method, const char *coll, int *code)
{
	for (size_t i = 0; i < fk->n_faults; i++) {
		fk_fault *f = &fk->faults[i];

		if (f->times <= 0 || (f->method[0] != '\0' && strcmp(f->method, method) != 0) ||
		    (f->coll[0] != '\0' && strcmp(f->coll, coll) != 0))
			continue;
		f->times--;
		*code = f->code;
		return true;
	}
	return false;
}

static void log_request(fake_kube *fk, const char *method, const char *coll, bool list)
{
	fk_req *r;

	if (fk->n_reqs == fk->cap_reqs) {
		fk->cap_reqs = fk->cap_reqs ? fk->cap_reqs * 2 : 128;
		fk->reqs = realloc(fk->reqs, fk->cap_reqs * sizeof(*fk->reqs));
	}
	r = &fk->reqs[fk->n_reqs++];
	snprintf(r->method, sizeof(r->method), "%s", method);
	snprintf(r->coll, sizeof(r->coll), "%s", coll);
	r->list = list;
}

/* Preconditions of a DeleteOptions body.  @return NULL or the conflict message. */
static const char *precondition_failed(char *msg, size_t cap, const cJSON *opts, const cJSON *obj)
{
	const char *uid = str_at(opts, "preconditions.uid");
	const char *rv = str_at(opts, "preconditions.resourceVersion");
	const char *have_uid = str_at(obj, "metadata.uid");
	const char *have_rv = str_at(obj, "metadata.resourceVersion");

	if (uid != NULL && strcmp(uid, have_uid) != 0) {
		snprintf(msg, cap,
		         "Precondition failed: UID in precondition: %s, UID in object meta: %s",
		         uid, have_uid);
		return msg;
	}
	if (rv != NULL && strcmp(rv, have_rv) != 0) {
		snprintf(msg, cap,
		         "Precondition failed: ResourceVersion in precondition: %s, "
		         "ResourceVersion in object meta: %s",
		         rv, have_rv);
		return msg;
	}
	return NULL;
}

/* One non-watch request, with mu held. */
static enum MHD_Result serve(fake_kube *fk, struct MHD_Connection *conn, const char *method,
                             const fk_path *p, cJSON *body, const tau_selector *sel,
                             const char *field)
{
	fk_obj *o = p->name[0] != '\0' ? find(fk, p->coll, p->ns, p->name) : NULL;
	char msg[512];
	int code;

	log_request(fk, method, p->coll, p->name[0] == '\0' && strcmp(method, "GET") == 0);
	if (take_fault(fk, method, p->coll, &code)) {
		snprintf(msg, sizeof(msg), "injected failure %d", code);
		return send_status(conn, code, NULL, msg);
	}
	if (strcmp(method, "GET") == 0 && p->name[0] == '\0')
		return do_list(fk, conn, p, sel, field);
	if (strcmp(method, "POST") == 0) {
		const char *name = str_at(body, "metadata.name"),
		           *gen = str_at(body, "metadata.generateName");
		char generated[300];

		if ((name == NULL || name[0] == '\0') && gen != NULL && gen[0] != '\0') {
			/* generateName: the prefix and a counter (the uid's), as a server's suffix.
			 */
			snprintf(generated, sizeof(generated), "%.250s%05llu", gen,
			         (unsigned long long)fk->uid + 1);
			set_str(meta_of(body), "name", generated);
			name = str_at(body, "metadata.name");
		}

		if (p->name[0] != '\0' || name == NULL || name[0] == '\0')
			return send_status(conn, 422, NULL, "metadata.name: Required value");
		if (find(fk, p->coll, p->ns, name) != NULL) {
			snprintf(msg, sizeof(msg), "%s \"%s\" already exists",
			         strchr(p->coll, '/') + 1, name);
			return send_status(conn, 409, "AlreadyExists", msg);
		}
		cJSON_DeleteItemFromObjectCaseSensitive(body, "status");
		insert(fk, p->coll, p->ns, cJSON_Duplicate(body, true));
		return send_json(conn, 201,
		                 cJSON_Duplicate(find(fk, p->coll, p->ns, name)->obj, true));
	}
	if (o == NULL) {
		snprintf(msg, sizeof(msg), "%s \"%s\" not found", strchr(p->coll, '/') + 1,
		         p->name);
		return send_status(conn, 404, NULL, msg);
	}
	if (strcmp(method, "GET") == 0)
		return send_json(conn, 200, cJSON_Duplicate(o->obj, true));
	if (strcmp(method, "PUT") == 0) {
		const char *rv = str_at(body, "metadata.resourceVersion");
		cJSON *next;

		if (body == NULL)
			return send_status(conn, 400, NULL, "no body");
		if (rv != NULL && strcmp(rv, str_at(o->obj, "metadata.resourceVersion")) != 0) {
			snprintf(
			        msg, sizeof(msg),
			        "Operation cannot be fulfilled on %s \"%s\": the object has been "
			        "modified; please apply your changes to the latest version and try "
			        "again",
			        strchr(p->coll, '/') + 1, p->name);
			return send_status(conn, 409, NULL, msg);
		}
		if (strcmp(p->sub, "status") == 0) {
			next = cJSON_Duplicate(o->obj, true);
			cJSON_DeleteItemFromObjectCaseSensitive(next, "status");
			if (cJSON_GetObjectItemCaseSensitive(body, "status") != NULL)
				cJSON_AddItemToObject(
				        next, "status",
				        cJSON_Duplicate(
				                cJSON_GetObjectItemCaseSensitive(body, "status"),
				                true));
		} else {
			const cJSON *st = cJSON_GetObjectItemCaseSensitive(o->obj, "status");

			next = cJSON_Duplicate(body, true);
			cJSON_DeleteItemFromObjectCaseSensitive(next, "status");
			if (st != NULL)
				cJSON_AddItemToObject(next, "status", cJSON_Duplicate(st, true));
		}
		{
			cJSON *answer = cJSON_Duplicate(next, true);

			/* The answer is what was stored (or, when the last finalizer went, the
			 * object as it was deleted). */
			replace(fk, o, next);
			o = find(fk, p->coll, p->ns, p->name);
			if (o != NULL) {
				cJSON_Delete(answer);
				answer = cJSON_Duplicate(o->obj, true);
			}
			return send_json(conn, 200, answer);
		}
	}
	if (strcmp(method, "PATCH") == 0) {
		cJSON *next = cJSON_Duplicate(o->obj, true);
		char coll[160], ns[128], name[256];

		if (!cJSON_IsObject(body)) {
			cJSON_Delete(next);
			return send_status(conn, 400, NULL, "patch body is not an object");
		}
		merge_patch(next, body);
		snprintf(coll, sizeof(coll), "%s", o->coll);
		snprintf(ns, sizeof(ns), "%s", o->ns);
		snprintf(name, sizeof(name), "%s", o->name);
		replace(fk, o, next);
		o = find(fk, coll, ns, name);
		if (o == NULL)
			return send_status(conn, 200, "Success", "deleted");
		return send_json(conn, 200, cJSON_Duplicate(o->obj, true));
	}
	if (strcmp(method, "DELETE") == 0) {
		cJSON *copy = cJSON_Duplicate(o->obj, true);
		char coll[160], ns[128], name[256];

		if (precondition_failed(msg, sizeof(msg), body, o->obj) != NULL) {
			cJSON_Delete(copy);
			return send_status(conn, 409, NULL, msg);
		}
		snprintf(coll, sizeof(coll), "%s", o->coll);
		snprintf(ns, sizeof(ns), "%s", o->ns);
		snprintf(name, sizeof(name), "%s", o->name);
		delete_obj(fk, o);
		o = find(fk, coll, ns, name);
		if (o != NULL) {
			cJSON_Delete(copy);
			copy = cJSON_Duplicate(o->obj, true);
		}
		return send_json(conn, 200, copy);
	}
	return send_status(conn, 405, "MethodNotAllowed", "method not allowed");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
	fake_kube *fk = cls;
	fk_conn *c = *con_cls;
	const char *lsel, *field, *watch;
	tau_selector *sel = NULL;
	cJSON *body = NULL;
	fk_path p;
	enum MHD_Result ret;

	(void)version;
	if (c == NULL) {
		*con_cls = calloc(1, sizeof(fk_conn));
		return *con_cls != NULL ? MHD_YES : MHD_NO;
	}
	if (*upload_size > 0) {
		if (c->len + *upload_size > BODY_MAX) {
			c->too_big = true;
		} else {
			c->body = realloc(c->body, c->len + *upload_size + 1);
			memcpy(c->body + c->len, upload, *upload_size);
			c->len += *upload_size;
			c->body[c->len] = '\0';
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (c->too_big)
		return send_status(conn, 413, "RequestEntityTooLarge", "body too large");
	if (parse_path(&p, url) != 0)
		return send_status(conn, 404, NULL,
		                   "the server could not find the requested resource");
	if (c->len > 0 && tau_json_parse(&body, c->body, c->len, BODY_MAX) != 0)
		return send_status(conn, 400, NULL, "body is not JSON");
	lsel = arg_of(conn, "labelSelector");
	field = arg_of(conn, "fieldSelector");
	watch = arg_of(conn, "watch");
	if (lsel != NULL && lsel[0] != '\0' && tau_selector_parse(&sel, lsel) != 0) {
		cJSON_Delete(body);
		return send_status(conn, 400, NULL, "bad label selector");
	}
	if (watch != NULL && (strcmp(watch, "true") == 0 || strcmp(watch, "1") == 0)) {
		cJSON_Delete(body);
		return do_watch(fk, conn, &p, sel, field); /* takes sel */
	}
	pthread_mutex_lock(&fk->mu);
	ret = serve(fk, conn, method, &p, body, sel, field);
	pthread_mutex_unlock(&fk->mu);
	tau_selector_free(sel);
	cJSON_Delete(body);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
	fk_conn *c = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (c != NULL) {
		free(c->body);
		free(c);
	}
	*con_cls = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Public                                                                                      */

int fake_kube_start(fake_kube **out)
{
	fake_kube *fk = calloc(1, sizeof(*fk));
	struct sockaddr_in sa = {0};
	const union MHD_DaemonInfo *info;

	if (fk == NULL)
		return -TAU_ENOMEM;
	pthread_mutex_init(&fk->mu, NULL);
	pthread_cond_init(&fk->cond, NULL);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = 0;
	fk->daemon = MHD_start_daemon(
	        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0,
	        NULL, NULL, handle, fk, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
	        completed, fk, MHD_OPTION_CONNECTION_TIMEOUT, 0u, MHD_OPTION_END);
	if (fk->daemon == NULL) {
		free(fk);
		return -TAU_EIO;
	}
	info = MHD_get_daemon_info(fk->daemon, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(fk->url, sizeof(fk->url), "http://127.0.0.1:%u", (unsigned)info->port);
	*out = fk;
	return 0;
}

void fake_kube_stop(fake_kube *fk)
{
	if (fk == NULL)
		return;
	pthread_mutex_lock(&fk->mu);
	fk->stopping = true;
	pthread_cond_broadcast(&fk->cond);
	pthread_mutex_unlock(&fk->mu);
	MHD_stop_daemon(fk->daemon);
	for (size_t i = 0; i < fk->n_objs; i++) {
		cJSON_Delete(fk->objs[i].obj);
		free(fk->objs[i].coll);
		free(fk->objs[i].ns);
		free(fk->objs[i].name);
	}
	for (size_t i = 0; i < fk->n_events; i++) {
		cJSON_Delete(fk->events[i].obj);
		free(fk->events[i].coll);
		free(fk->events[i].ns);
	}
	free(fk->objs);
	free(fk->events);
	free(fk->reqs);
	pthread_cond_destroy(&fk->cond);
	pthread_mutex_destroy(&fk->mu);
	free(fk);
}

const char *fake_kube_url(const fake_kube *fk)
{
	return fk->url;
}

int fake_kube_client(tau_kube_client **out, const fake_kube *fk)
{
	tau_kube_config *cfg = NULL;
	int rc;

	if ((rc = tau_kube_config_new(&cfg)) != 0)
		return rc;
	free(cfg->server);
	free(cfg->namespace);
	cfg->server = strdup(fk->url);
	cfg->namespace = strdup("default");
	cfg->qps = 0;
	cfg->max_retries = 0;
	cfg->timeout_ms = 5000;
	cfg->connect_timeout_ms = 2000;
	rc = tau_kube_client_new(out, cfg);
	tau_kube_config_free(cfg);
	return rc;
}

int fake_kube_seed(fake_kube *fk, const tau_kube_resource *res, const char *json)
{
	cJSON *obj = cJSON_Parse(json);
	const char *name = str_at(obj, "metadata.name"), *ns = str_at(obj, "metadata.namespace");
	char coll[160];
	int rc = 0;

	if (obj == NULL || name == NULL || (res->namespaced && ns == NULL)) {
		cJSON_Delete(obj);
		return -TAU_EINVAL;
	}
	coll_of(coll, sizeof(coll), res);
	pthread_mutex_lock(&fk->mu);
	if (find(fk, coll, res->namespaced ? ns : "", name) != NULL) {
		cJSON_Delete(obj);
		rc = -TAU_ECONFLICT;
	} else {
		char nsb[128];

		snprintf(nsb, sizeof(nsb), "%s", res->namespaced ? ns : "");
		insert(fk, coll, nsb, obj);
	}
	pthread_mutex_unlock(&fk->mu);
	return rc;
}

cJSON *fake_kube_get(fake_kube *fk, const tau_kube_resource *res, const char *ns, const char *name)
{
	char coll[160];
	fk_obj *o;
	cJSON *copy = NULL;

	coll_of(coll, sizeof(coll), res);
	pthread_mutex_lock(&fk->mu);
	o = find(fk, coll, res->namespaced ? ns : "", name);
	if (o != NULL)
		copy = cJSON_Duplicate(o->obj, true);
	pthread_mutex_unlock(&fk->mu);
	return copy;
}

int fake_kube_patch(fake_kube *fk, const tau_kube_resource *res, const char *ns, const char *name,
                    const char *merge)
{
	char coll[160];
	cJSON *patch = cJSON_Parse(merge), *next;
	fk_obj *o;
	int rc = 0;

	coll_of(coll, sizeof(coll), res);
	pthread_mutex_lock(&fk->mu);
	o = find(fk, coll, res->namespaced ? ns : "", name);
	if (o == NULL || patch == NULL) {
		rc = o == NULL ? -TAU_ENOTFOUND : -TAU_EINVAL;
	} else {
		next = cJSON_Duplicate(o->obj, true);
		merge_patch(next, patch);
		replace(fk, o, next);
	}
	pthread_mutex_unlock(&fk->mu);
	cJSON_Delete(patch);
	return rc;
}

int fake_kube_delete(fake_kube *fk, const tau_kube_resource *res, const char *ns, const char *name)
{
	char coll[160];
	fk_obj *o;
	int rc = 0;

	coll_of(coll, sizeof(coll), res);
	pthread_mutex_lock(&fk->mu);
	o = find(fk, coll, res->namespaced ? ns : "", name);
	if (o == NULL)
		rc = -TAU_ENOTFOUND;
	else
		delete_obj(fk, o);
	pthread_mutex_unlock(&fk->mu);
	return rc;
}

size_t fake_kube_count(fake_kube *fk, const tau_kube_resource *res)
{
	char coll[160];
	size_t n = 0;

	coll_of(coll, sizeof(coll), res);
	pthread_mutex_lock(&fk->mu);
	for (size_t i = 0; i < fk->n_objs; i++)
		if (strcmp(fk->objs[i].coll, coll) == 0)
			n++;
	pthread_mutex_unlock(&fk->mu);
	return n;
}

void fake_kube_fail(fake_kube *fk, const char *method, const tau_kube_resource *res, int code,
                    int times)
{
	fk_fault *f;

	pthread_mutex_lock(&fk->mu);
	if (fk->n_faults < sizeof(fk->faults) / sizeof(fk->faults[0])) {
		f = &fk->faults[fk->n_faults++];
		snprintf(f->method, sizeof(f->method), "%s", method != NULL ? method : "");
		if (res != NULL)
			coll_of(f->coll, sizeof(f->coll), res);
		else
			f->coll[0] = '\0';
		f->code = code;
		f->times = times;
	}
	pthread_mutex_unlock(&fk->mu);
}

static uint64_t count_requests(fake_kube *fk, const char *method, const tau_kube_resource *res,
                               bool lists_only)
{
	char coll[160] = "";
	uint64_t n = 0;

	if (res != NULL)
		coll_of(coll, sizeof(coll), res);
	pthread_mutex_lock(&fk->mu);
	for (size_t i = 0; i < fk->n_reqs; i++) {
		const fk_req *r = &fk->reqs[i];

		if ((method == NULL || strcmp(r->method, method) == 0) &&
		    (res == NULL || strcmp(r->coll, coll) == 0) && (!lists_only || r->list))
			n++;
	}
	pthread_mutex_unlock(&fk->mu);
	return n;
}

uint64_t fake_kube_requests(fake_kube *fk, const char *method, const tau_kube_resource *res)
{
	return count_requests(fk, method, res, false);
}

uint64_t fake_kube_lists(fake_kube *fk, const tau_kube_resource *res)
{
	return count_requests(fk, "GET", res, true);
}

void fake_kube_hold_lists(fake_kube *fk, const tau_kube_resource *res, bool hold)
{
	char coll[160];

	coll_of(coll, sizeof(coll), res);
	pthread_mutex_lock(&fk->mu);
	if (hold && !held(fk, coll) && fk->n_holds < sizeof(fk->holds) / sizeof(fk->holds[0])) {
		snprintf(fk->holds[fk->n_holds++].coll, sizeof(fk->holds[0].coll), "%s", coll);
	} else if (!hold) {
		for (size_t i = 0; i < fk->n_holds; i++)
			if (strcmp(fk->holds[i].coll, coll) == 0)
				fk->holds[i] = fk->holds[--fk->n_holds];
	}
	pthread_cond_broadcast(&fk->cond);
	pthread_mutex_unlock(&fk->mu);
}
