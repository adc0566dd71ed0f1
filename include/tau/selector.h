/*
 * tau/selector.h - Kubernetes label selectors.
 *
 * A selector is an AND of requirements on an object's labels, built from
 * either form Kubernetes uses:
 *
 *   - the string form of `?labelSelector=` and kubectl -l, parsed as
 *     apimachinery's labels.Parse does:
 *       k=v  k==v  k!=v  k in (v1,v2)  k notin (v1,v2)  k  !k  k>5  k<5
 *     joined by ',', with blanks (space, tab, CR, LF) allowed around tokens;
 *   - metav1.LabelSelector JSON: {"matchLabels": {...}, "matchExpressions":
 *     [{"key", "operator": In|NotIn|Exists|DoesNotExist, "values"}]}.
 *
 * Meaning of each requirement (note the two that match a MISSING key):
 *   k=v, k==v, k in (...)   k present and its value is one of the values
 *   k!=v, k notin (...)     k absent, or its value is none of the values
 *   k / !k                  k present / k absent
 *   k>n, k<n                k present, its value parses as a base-10 int64,
 *                           and compares greater / less than n
 *
 * Everything and nothing.  As in Kubernetes, a selector with no
 * requirements (the string "", the JSON {}) matches every object, and a
 * *missing* LabelSelector (LabelSelectorAsSelector(nil)) matches none.
 * tau_selector_from_json() follows that rule for a NULL pointer or a JSON
 * null; tau_selector_everything() and tau_selector_nothing() build either
 * one explicitly, so a caller whose config field is absent decides which it
 * means.  The nothing selector has no string form.
 *
 * Limits on input a peer controls: a string of at most
 * TAU_SELECTOR_MAX_STRING bytes, at most TAU_SELECTOR_MAX_REQUIREMENTS
 * requirements, at most TAU_SELECTOR_MAX_VALUES values in one requirement.
 * Going over any of them gives -TAU_ETOOBIG.
 *
 * A selector is immutable once built; it may be shared by threads for
 * matching and printing.
 */
#ifndef TAU_SELECTOR_H
#define TAU_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/** Longest selector string accepted, in bytes (the NUL not counted). */
#define TAU_SELECTOR_MAX_STRING (64 * 1024)
/** Most requirements in one selector (matchLabels + matchExpressions). */
#define TAU_SELECTOR_MAX_REQUIREMENTS 256
/** Most values in one requirement (as written, before duplicates go). */
#define TAU_SELECTOR_MAX_VALUES 256

/** An immutable label selector. */
typedef struct tau_selector tau_selector;

/**
 * Parse the string form.  Keys are checked as label keys and values as
 * label values (tau/names.h); the values of `>` and `<` must be base-10
 * int64.  The empty (or all-blank) string gives a selector that matches
 * everything.  Duplicate values in a set collapse, as in Kubernetes.
 *
 * Error messages follow apimachinery, e.g.
 *   "unable to parse requirement: found '(', expected: identifier"
 *   "found ',', expected: ',' or 'end of string'"
 *   "unable to parse requirement: key: Invalid value: \"-x\": name part must ..."
 *
 * @param out  receives the new selector on success, untouched on failure;
 *             the caller owns it (tau_selector_free).
 * @param s    NUL-terminated selector string; must not be NULL.
 * @return 0; -TAU_EINVAL for a syntax or validation error; -TAU_ETOOBIG over
 *         a limit; -TAU_ENOMEM.
 */
int tau_selector_parse(tau_selector **out, const char *s);

/**
 * Build a selector from a metav1.LabelSelector JSON value, with the
 * semantics of metav1.LabelSelectorAsSelector and the messages of the API
 * server's ValidateLabelSelector, e.g.
 *   "matchExpressions[0].values: Required value: must be specified when
 *    `operator` is 'In' or 'NotIn'"
 *   "matchExpressions[1].operator: Invalid value: \"Gt\": not a valid selector operator"
 *   "matchLabels: Invalid value: \"a b\": a valid label must be ..."
 * The first problem found is reported.  Unknown members are ignored; a
 * JSON null member counts as absent (as Go's decoder treats it).  A key
 * repeated in matchLabels keeps its last value (as Go's decoder does).
 *
 * @param out             receives the new selector on success, untouched on
 *                        failure; the caller owns it.
 * @param label_selector  the LabelSelector object, borrowed.  NULL or a JSON
 *                        null gives the NOTHING selector (matches no object);
 *                        {} gives EVERYTHING.
 * @return 0; -TAU_ETYPE when a member has the wrong JSON type; -TAU_EINVAL
 *         for an invalid key, value or operator; -TAU_ETOOBIG over a limit;
 *         -TAU_ENOMEM.
 */
int tau_selector_from_json(tau_selector **out, const cJSON *label_selector);

/**
 * Build the selector that matches every object (no requirements; its
 * string form is "").
 *
 * @param out  receives the new selector; the caller owns it.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_selector_everything(tau_selector **out);

/**
 * Build the selector that matches no object.
 *
 * @param out  receives the new selector; the caller owns it.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_selector_nothing(tau_selector **out);

/** True if sel has no requirements and so matches every object.  sel != NULL. */
bool tau_selector_is_everything(const tau_selector *sel);

/** True if sel is the nothing selector.  sel != NULL. */
bool tau_selector_is_nothing(const tau_selector *sel);

/**
 * Match a JSON labels object (an object's metadata.labels).
 *
 * @param sel     the selector, must not be NULL.
 * @param labels  borrowed; NULL, a JSON null or a non-object means "no
 *                labels".  Members whose value is not a string are skipped
 *                (treated as absent); a repeated key uses its last value.
 * @return true if every requirement holds.
 */
bool tau_selector_matches(const tau_selector *sel, const cJSON *labels);

/**
 * Match labels given as n key/value pairs (keys[i] has value values[i]),
 * for callers that do not hold JSON.  A repeated key uses its last value.
 *
 * @param sel     the selector, must not be NULL.
 * @param keys    n NUL-terminated keys (may be NULL when n == 0).
 * @param values  n NUL-terminated values (may be NULL when n == 0).
 * @param n       number of pairs.
 * @return true if every requirement holds.
 */
bool tau_selector_matches_pairs(const tau_selector *sel, const char *const *keys,
                                const char *const *values, size_t n);

/**
 * Print the canonical string form, as apimachinery's Selector.String():
 * requirements sorted by key (ties keep their order), each set's values
 * sorted, operators written as parsed ("=" and "==" both kept).  Parsing
 * the result gives a selector that matches exactly the same objects (the
 * form is never longer than a string it was parsed from, but one built from
 * a large JSON selector can exceed TAU_SELECTOR_MAX_STRING).  The string is
 * not URL-encoded.
 *
 * @param out  receives a malloc'd NUL-terminated string on success,
 *             untouched on failure; the caller frees it with free().
 * @param sel  the selector, must not be NULL.
 * @return 0; -TAU_EINVAL for the nothing selector (which has no string
 *         form: sending "" would select everything); -TAU_ENOMEM.
 */
int tau_selector_to_string(char **out, const tau_selector *sel);

/** Free a selector; NULL is a no-op. */
void tau_selector_free(tau_selector *sel);

#endif /* TAU_SELECTOR_H */
