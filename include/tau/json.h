/*
 * tau/json.h - small bounded helpers over cJSON.
 *
 * Parsing takes a hard size cap so a peer cannot make us allocate without
 * limit; getters walk a dotted path ("status.nodeInfo.kubeletVersion") and
 * check the type of what they find, so callers never dereference a string
 * that was really a number.
 */
#ifndef TAU_JSON_H
#define TAU_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/** Default cap for one JSON document (Kubernetes objects are <= 1.5 MiB in etcd). */
#define TAU_JSON_DEFAULT_CAP (3u * 1024u * 1024u)

/** Maximum nesting depth accepted by tau_json_parse. */
#define TAU_JSON_MAX_DEPTH 64

/**
 * Parse `len` bytes (need not be NUL-terminated) into a new cJSON tree.
 *
 * @param out  receives the tree (caller frees with cJSON_Delete); untouched on failure
 * @param buf  the bytes
 * @param len  their length
 * @param cap  maximum accepted length; 0 means TAU_JSON_DEFAULT_CAP
 * @return 0, -TAU_ETOOBIG if len > cap or nesting exceeds TAU_JSON_MAX_DEPTH,
 *         -TAU_EINVAL if the text is not one JSON value (the message gives the offset)
 *         or holds a string with a raw control character (RFC 8259 forbids them, and a
 *         raw NUL would cut the string short).
 */
int tau_json_parse(cJSON **out, const char *buf, size_t len, size_t cap);

/**
 * Find the member at a dotted path below `root`, e.g. "metadata.name".
 * Lends the item (owned by `root`); NULL when any step is absent or not an object.
 */
const cJSON *tau_json_find(const cJSON *root, const char *path);

/**
 * Get a string at a dotted path.  Lends the string (owned by `root`).
 * @return 0, -TAU_ENOTFOUND when absent or JSON null, -TAU_ETYPE when present but not a string.
 */
int tau_json_get_string(const char **out, const cJSON *root, const char *path);

/**
 * The string at a dotted path, or NULL when root is NULL or the member is
 * absent, JSON null or not a string.  Lends it.  Sets no error: for readers
 * to whom "no string there" is an answer, not a failure.
 */
const char *tau_json_str(const cJSON *root, const char *path);

/**
 * The string member `key` of an object (the key taken whole, not as a dotted
 * path: label keys hold dots), or NULL when map is not an object or the
 * member is absent or not a string.  Lends it.
 */
const char *tau_json_member_str(const cJSON *map, const char *key);

/** The label `key` of a Kubernetes object (metadata.labels), or NULL.  Lends it. */
const char *tau_json_label(const cJSON *obj, const char *key);

/** The annotation `key` of a Kubernetes object (metadata.annotations), or NULL.  Lends it. */
const char *tau_json_annotation(const cJSON *obj, const char *key);

/**
 * Get an integer at a dotted path.  Accepts JSON numbers that are exact integers
 * within int64 range.
 * @return 0, -TAU_ENOTFOUND, -TAU_ETYPE (not a number), -TAU_ERANGE (not an exact int64).
 */
int tau_json_get_int(int64_t *out, const cJSON *root, const char *path);

/** Get a boolean at a dotted path. @return 0, -TAU_ENOTFOUND, -TAU_ETYPE. */
int tau_json_get_bool(bool *out, const cJSON *root, const char *path);

/**
 * Get an object at a dotted path.  Lends it.
 * @return 0, -TAU_ENOTFOUND, -TAU_ETYPE when present but not an object.
 */
int tau_json_get_object(const cJSON **out, const cJSON *root, const char *path);

/** Like tau_json_get_object for arrays. */
int tau_json_get_array(const cJSON **out, const cJSON *root, const char *path);

/**
 * Serialise compactly into a new NUL-terminated string (caller frees with free()).
 * @return 0 or -TAU_ENOMEM.
 */
int tau_json_print(char **out, const cJSON *item);

/**
 * Make every string under `root` (values and member names) valid UTF-8, for output built
 * from untrusted bytes (sysfs, a peer): a byte that starts no valid sequence becomes U+00XX,
 * its Latin-1 reading, so nothing is lost and nothing invalid is printed.
 * @return the number of strings changed, or -TAU_ENOMEM.
 */
int tau_json_fix_utf8(cJSON *root);

#endif /* TAU_JSON_H */
