/*
 * tau/names.h - Kubernetes name and label syntax checks.
 *
 * The rules and messages are those of k8s.io/apimachinery util/validation
 * (1.32 wording): IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName (label
 * and annotation keys) and IsValidLabelValue.  Every check takes a
 * NUL-terminated string and returns 0 or -TAU_EINVAL.  On failure the
 * thread's error message is the offending value quoted (Go %q style,
 * non-printable bytes as \xNN, values longer than about 150 bytes shortened
 * with "...") followed by the Kubernetes reasons joined with "; ", e.g.
 *
 *   "Ab": a lowercase RFC 1123 label must consist of lower case alphanumeric
 *   characters or '-', and must start and end with an alphanumeric character
 *   (e.g. 'my-name',  or '123-abc', regex used for validation is
 *   '[a-z0-9]([-a-z0-9]*[a-z0-9])?')
 *
 * so a caller can prefix the field: tau_error_wrap("metadata.name: Invalid value").
 */
#ifndef TAU_NAMES_H
#define TAU_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/** Longest DNS-1123 label (namespace names), in bytes. */
#define TAU_NAMES_DNS1123_LABEL_MAX 63
/** Longest DNS-1123 subdomain (most object names), in bytes. */
#define TAU_NAMES_DNS1123_SUBDOMAIN_MAX 253
/** Longest name part of a label key (after the optional "prefix/"). */
#define TAU_NAMES_LABEL_KEY_NAME_MAX 63
/** Longest label key prefix (a DNS-1123 subdomain). */
#define TAU_NAMES_LABEL_KEY_PREFIX_MAX TAU_NAMES_DNS1123_SUBDOMAIN_MAX
/** Longest label value. */
#define TAU_NAMES_LABEL_VALUE_MAX 63

/**
 * Check a DNS-1123 label: at most 63 bytes of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
 * Used for namespace names.
 *
 * @param s  NUL-terminated candidate; must not be NULL.
 * @return 0 if valid, -TAU_EINVAL otherwise (message set as described above).
 */
int tau_names_check_dns1123_label(const char *s);

/**
 * Check a DNS-1123 subdomain: at most 253 bytes of dot-separated labels,
 * `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`.
 * Used for most object names (pods, nodes, custom resources).
 *
 * @param s  NUL-terminated candidate; must not be NULL.
 * @return 0 if valid, -TAU_EINVAL otherwise.
 */
int tau_names_check_dns1123_subdomain(const char *s);

/**
 * Check a label (or annotation, or finalizer) key, Kubernetes' "qualified
 * name": an optional DNS-1123 subdomain prefix and '/', then a name part of
 * 1..63 bytes matching `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.  More
 * than one '/' is invalid.
 *
 * @param s  NUL-terminated candidate; must not be NULL.
 * @return 0 if valid, -TAU_EINVAL otherwise.
 */
int tau_names_check_label_key(const char *s);

/**
 * Check a label value: empty, or at most 63 bytes matching
 * `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
 *
 * @param s  NUL-terminated candidate; must not be NULL.
 * @return 0 if valid, -TAU_EINVAL otherwise.
 */
int tau_names_check_label_value(const char *s);

/**
 * Show bytes in a message the way Go's %q does for ASCII: in double quotes, '"' and '\\'
 * escaped, tab, newline and carriage return as \\t \\n \\r, other control and non-ASCII
 * bytes as \\xNN.  With `quotes` false there are no surrounding quotes and '"' and '\\' stay
 * as they are (a token shown inside '...').  Output that would pass `cap` is cut and ends in
 * "..." (before the closing quote).  The one quoting function of libtau: every message that
 * shows a value from outside uses it.
 *
 * @param out     receives the NUL-terminated text.
 * @param cap     size of out; at least 8.
 * @param p       the bytes (need not be NUL-terminated); may be NULL when len is 0.
 * @param len     how many.
 * @param quotes  true for Go's %q, false for the bare form.
 * @return out.
 */
const char *tau_names_quote(char *out, size_t cap, const char *p, size_t len, bool quotes);

#endif /* TAU_NAMES_H */
