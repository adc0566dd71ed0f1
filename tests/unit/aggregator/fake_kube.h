/*
 * fake_kube.h - an in-memory Kubernetes API server for unit tests.
 *
 * It speaks the REST API over HTTP on 127.0.0.1 (an ephemeral port), so the
 * code under test runs unchanged: the real tau_kube_client, informers and
 * work queue talk to it.  It keeps objects of any resource in memory and
 * honours what controllers rely on: resourceVersion (one counter; a stale
 * one on update is 409 Conflict), 404 NotFound, 409 AlreadyExists on create,
 * DeleteOptions preconditions (uid, resourceVersion: 409), finalizers (a
 * delete sets deletionTimestamp; the object goes when the last finalizer is
 * removed), the /status subresource (the main resource does not change
 * status; /status changes only status), generation (bumped on spec change),
 * metadata.generateName on create (the prefix and a counter), merge patches,
 * label selectors and metadata.name/namespace field
 * selectors on lists, and watches from a resourceVersion with
 * ADDED/MODIFIED/DELETED events.  It does not page lists, check schemas or
 * know which kinds exist (any plural is accepted).
 *
 * Tests can also seed, read and change objects directly (the same events
 * reach watchers), inject failures, and count requests.
 *
 * Link: CMakeLists.txt builds every .c file directly in tests/unit/aggregator
 * (this one's included) into tau_unit_agg_helpers and links it into each
 * aggregator unit test; include it as "fake_kube.h" (that folder is on their
 * include path).
 */
#ifndef TAU_TEST_FAKE_KUBE_H
#define TAU_TEST_FAKE_KUBE_H

#include "tau/kube.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef struct fake_kube fake_kube;

/** Start a server.  @return 0 or a negative TAU_E* code. */
int fake_kube_start(fake_kube **out);

/** Stop (ending every watch) and free; NULL is a no-op. */
void fake_kube_stop(fake_kube *fk);

/** "http://127.0.0.1:<port>" (lent). */
const char *fake_kube_url(const fake_kube *fk);

/**
 * A client for this server: no client-side rate limit, no retries, short
 * timeouts, default namespace "default".  Free with tau_kube_client_free.
 */
int fake_kube_client(tau_kube_client **out, const fake_kube *fk);

/**
 * Store `json` (an object with metadata.name, and metadata.namespace for a
 * namespaced kind) as if created: uid, resourceVersion, creationTimestamp
 * and generation are set.  @return 0, -TAU_ECONFLICT (exists), -TAU_EINVAL.
 */
int fake_kube_seed(fake_kube *fk, const tau_kube_resource *res, const char *json);

/** A copy of a stored object (cJSON_Delete), or NULL when absent. */
cJSON *fake_kube_get(fake_kube *fk, const tau_kube_resource *res, const char *ns, const char *name);

/**
 * Apply an RFC 7386 merge patch to a stored object, as a PATCH would (status
 * included, finalizer removal completing a deletion).  @return 0 or -TAU_ENOTFOUND.
 */
int fake_kube_patch(fake_kube *fk, const tau_kube_resource *res, const char *ns, const char *name,
                    const char *merge_patch);

/** Delete as the API would (finalizers honoured).  @return 0 or -TAU_ENOTFOUND. */
int fake_kube_delete(fake_kube *fk, const tau_kube_resource *res, const char *ns, const char *name);

/** Objects stored of `res` (all namespaces). */
size_t fake_kube_count(fake_kube *fk, const tau_kube_resource *res);

/**
 * Answer the next `times` requests of `method` ("GET", "PUT", ..., NULL =
 * any) on `res` (NULL = any) with HTTP `code` and a Status of the matching
 * reason.  Watches are not affected.
 */
void fake_kube_fail(fake_kube *fk, const char *method, const tau_kube_resource *res, int code,
                    int times);

/** Requests received of `method` (NULL = any) on `res` (NULL = any), watches excluded. */
uint64_t fake_kube_requests(fake_kube *fk, const char *method, const tau_kube_resource *res);

/** List requests (not watches) received on `res`. */
uint64_t fake_kube_lists(fake_kube *fk, const tau_kube_resource *res);

/**
 * Hold every list of `res` (they block) until released with held = false;
 * lets a test keep an informer from syncing.
 */
void fake_kube_hold_lists(fake_kube *fk, const tau_kube_resource *res, bool held);

#endif /* TAU_TEST_FAKE_KUBE_H */
