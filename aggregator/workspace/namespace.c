/*
 * namespace.c - namespace resolution for TauWorkspaces, and the operator
 * allowlist.
 *
 * The one idea: there is exactly one place that turns a workspace into a
 * namespace, and it fails closed.  Static checks (name, map, reserved names)
 * come first and are permanent; checks against state that someone else owns
 * (allowlist, other workspaces, the namespace's labels, existence) come
 * after and are retryable, so a workspace waiting for the platform becomes
 * Ready by itself once the platform acts.  Nothing here talks to the API:
 * the caller observes, this file decides.
 */
#include "namespace.h"

#include "inventory/sorted.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/names.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tau_ws_allowlist {
	char **names; /* sorted, unique */
	size_t n;
};

void tau_ws_namespace_refuse(tau_ws_refusal *r, const char *reason, bool retryable, const char *fmt,
                             ...)
{
	va_list ap;

	r->reason = reason;
	r->retryable = retryable;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
}

static void refusal_clear(tau_ws_refusal *r)
{
	r->reason = NULL;
	r->message[0] = '\0';
	r->retryable = false;
}

/* ------------------------------------------------------------------------------------------ */
/* Allowlist                                                                                   */

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	if (names == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* Validate, copy, sort and deduplicate; the messages name the element index. */
static int allowlist_build(tau_ws_allowlist **out, const char *const *names, size_t n)
{
	tau_ws_allowlist *list = NULL;
	char **copy = NULL;
	size_t kept = 0;
	int rc = -1;

	if (n > TAU_WS_ALLOWLIST_MAX_NAMES)
		return tau_error_set(TAU_ETOOBIG,
		                     "namespace allowlist: %zu names exceed the limit of %u", n,
		                     TAU_WS_ALLOWLIST_MAX_NAMES);
	for (size_t i = 0; i < n; i++) {
		rc = tau_names_check_dns1123_label(names[i]);
		if (rc < 0)
			return tau_error_wrap(
			        "namespace allowlist: element %zu: invalid namespace name", i);
	}
	list = calloc(1, sizeof(*list));
	if (n > 0)
		copy = calloc(n, sizeof(*copy));
	if (list == NULL || (n > 0 && copy == NULL)) {
		rc = tau_error_set(TAU_ENOMEM, "namespace allowlist: out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		copy[i] = strdup(names[i]);
		if (copy[i] == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "namespace allowlist: out of memory");
			goto out;
		}
	}
	if (n > 0)
		qsort(copy, n, sizeof(*copy), cmp_str_ptr);
	for (size_t i = 0; i < n; i++) {
		char *name = copy[i];

		copy[i] = NULL;
		if (kept > 0 && strcmp(copy[kept - 1], name) == 0)
			free(name);
		else
			copy[kept++] = name;
	}
	list->names = copy;
	list->n = kept;
	copy = NULL;
	*out = list;
	list = NULL;
	rc = 0;
out:
	free_names(copy, n);
	free(list);
	return rc;
}

int tau_ws_namespace_allowlist_from_names(tau_ws_allowlist **out, const char *const *names,
                                          size_t n)
{
	if (out == NULL || (names == NULL && n > 0))
		return tau_error_set(TAU_EINVAL, "namespace allowlist: no names");
	for (size_t i = 0; i < n; i++)
		if (names[i] == NULL)
			return tau_error_set(TAU_EINVAL, "namespace allowlist: element %zu is NULL",
			                     i);
	return allowlist_build(out, names, n);
}

static const char *json_type_name(const cJSON *v)
{
	static const struct {
		cJSON_bool (*is)(const cJSON *);
		const char *name;
	} types[] = {
	        {cJSON_IsNull, "null"},       {cJSON_IsBool, "a boolean"},
	        {cJSON_IsNumber, "a number"}, {cJSON_IsString, "a string"},
	        {cJSON_IsArray, "an array"},  {cJSON_IsObject, "an object"},
	};

	for (size_t i = 0; i < TAU_N_ELEMENTS(types); i++)
		if (types[i].is(v))
			return types[i].name;
	return "an unknown JSON value";
}

int tau_ws_namespace_allowlist_parse(tau_ws_allowlist **out, const char *buf, size_t len)
{
	cJSON *doc = NULL;
	const char **names = NULL;
	const cJSON *item;
	size_t n = 0, i = 0;
	int rc = -1;

	if (out == NULL || (buf == NULL && len > 0))
		return tau_error_set(TAU_EINVAL, "namespace allowlist: no input");
	if (len > TAU_WS_ALLOWLIST_MAX_BYTES)
		return tau_error_set(
		        TAU_ETOOBIG,
		        "namespace allowlist: file of %zu bytes exceeds the %u byte cap", len,
		        TAU_WS_ALLOWLIST_MAX_BYTES);
	rc = tau_json_parse(&doc, buf == NULL ? "" : buf, len, TAU_WS_ALLOWLIST_MAX_BYTES);
	if (rc < 0)
		return tau_error_wrap("namespace allowlist");
	if (!cJSON_IsArray(doc)) {
		rc = tau_error_set(TAU_EINVAL,
		                   "namespace allowlist: the file holds %s, want a JSON array of "
		                   "namespace names",
		                   json_type_name(doc));
		goto out;
	}
	n = (size_t)cJSON_GetArraySize(doc);
	if (n > TAU_WS_ALLOWLIST_MAX_NAMES) {
		rc = tau_error_set(TAU_ETOOBIG,
		                   "namespace allowlist: %zu names exceed the limit of %u", n,
		                   TAU_WS_ALLOWLIST_MAX_NAMES);
		goto out;
	}
	if (n > 0) {
		names = calloc(n, sizeof(*names));
		if (names == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "namespace allowlist: out of memory");
			goto out;
		}
	}
	cJSON_ArrayForEach(item, doc)
	{
		if (!cJSON_IsString(item) || item->valuestring == NULL) {
			rc = tau_error_set(
			        TAU_ETYPE,
			        "namespace allowlist: element %zu is %s, want a namespace "
			        "name string",
			        i, json_type_name(item));
			goto out;
		}
		names[i++] = item->valuestring;
	}
	rc = allowlist_build(out, names, i);
out:
	free(names);
	cJSON_Delete(doc);
	return rc;
}

bool tau_ws_namespace_allowlist_contains(const tau_ws_allowlist *list, const char *ns)
{
	bool found = false;

	if (list == NULL || ns == NULL)
		return false;
	tau_sorted_index(list->names, list->n, sizeof(*list->names), ns, &found);
	return found;
}

size_t tau_ws_namespace_allowlist_count(const tau_ws_allowlist *list)
{
	return list == NULL ? 0 : list->n;
}

const char *tau_ws_namespace_allowlist_name(const tau_ws_allowlist *list, size_t i)
{
	if (list == NULL || i >= list->n)
		return NULL;
	return list->names[i];
}

void tau_ws_namespace_allowlist_free(tau_ws_allowlist *list)
{
	if (list == NULL)
		return;
	free_names(list->names, list->n);
	free(list);
}

/* ------------------------------------------------------------------------------------------ */
/* Age ordering                                                                                */

static bool digits(const char *s, size_t n, int *out)
{
	int v = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil algorithm). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Parse RFC 3339 "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)" into seconds and nanos. */
static bool parse_rfc3339(const char *s, int64_t *sec, int32_t *nsec)
{
	int y, mo, d, h, mi, se, oh = 0, om = 0, frac = 0, fdigits = 0;
	const char *p;
	int64_t t;

	if (s == NULL || strlen(s) < 20)
		return false;
	if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
	    !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &h) ||
	    s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &se))
		return false;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return false;
	p = s + 19;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return false;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (fdigits < 9) {
				frac = frac * 10 + (*p - '0');
				fdigits++;
			}
		}
		for (; fdigits < 9; fdigits++)
			frac *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1;

		if (strlen(p) != 6 || !digits(p + 1, 2, &oh) || p[3] != ':' ||
		    !digits(p + 4, 2, &om) || oh > 23 || om > 59)
			return false;
		oh *= sign;
		om *= sign;
		p += 6;
	} else {
		return false;
	}
	if (*p != '\0')
		return false;
	t = days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 + (int64_t)mi * 60 + se;
	t -= (int64_t)oh * 3600 + (int64_t)om * 60;
	*sec = t;
	*nsec = frac;
	return true;
}

int tau_ws_namespace_time_ms(int64_t *out, const char *rfc3339)
{
	int64_t sec;
	int32_t nsec;

	if (!parse_rfc3339(rfc3339, &sec, &nsec))
		return tau_error_set(TAU_EINVAL, "not an RFC 3339 time");
	*out = sec * 1000 + nsec / 1000000;
	return 0;
}

int tau_ws_namespace_compare_age(const char *ts_a, const char *name_a, const char *ts_b,
                                 const char *name_b)
{
	int64_t sa = 0, sb = 0;
	int32_t na = 0, nb = 0;
	bool va = parse_rfc3339(ts_a, &sa, &na);
	bool vb = parse_rfc3339(ts_b, &sb, &nb);

	if (va != vb)
		return va ? -1 : 1;
	if (va) {
		if (sa != sb)
			return sa < sb ? -1 : 1;
		if (na != nb)
			return na < nb ? -1 : 1;
	}
	if (name_a == NULL || name_b == NULL)
		return (name_a == NULL) - (name_b == NULL);
	return strcmp(name_a, name_b);
}

/* ------------------------------------------------------------------------------------------ */
/* Resolution                                                                                  */

static bool nonempty(const char *s)
{
	return s != NULL && s[0] != '\0';
}

/* The names.h message, without the thread error's code: "<quoted value>: <reasons>". */
static const char *names_detail(void)
{
	return tau_error_last()->msg;
}

/*
 * The candidate and its static checks.  *attempt receives the namespace
 * examined as soon as one is known, so a reserved-name refusal can still
 * report which namespace it refused.
 */
static int candidate(const char **out, const char **attempt, tau_ws_refusal *why,
                     const tau_ws_ns_input *in)
{
	const char *ns = NULL;
	const char *source = "spec.target.namespace";

	refusal_clear(why);
	*attempt = NULL;
	if (in == NULL || in->workspace == NULL || in->system_namespace == NULL)
		return tau_error_set(TAU_EINVAL, "namespace resolution: missing input");

	/* The workspace name is the default namespace and a label value: a DNS-1123 label. */
	if (tau_names_check_dns1123_label(in->workspace) < 0) {
		tau_ws_namespace_refuse(why, TAU_WS_REASON_INVALID_WORKSPACE_NAME, false,
		                        "workspace name is not a DNS-1123 label: %s",
		                        names_detail());
		goto refused;
	}
	if (in->map_set) {
		for (size_t i = 0; i < in->n_map; i++) {
			if (in->map[i].workspace != NULL &&
			    strcmp(in->map[i].workspace, in->workspace) == 0) {
				ns = in->map[i].namespace_name;
				break;
			}
		}
		if (ns == NULL) {
			tau_ws_namespace_refuse(
			        why, TAU_WS_REASON_WORKSPACE_NOT_MAPPED, false,
			        "workspace %s has no entry in TauCluster "
			        "spec.workspaces.namespaceMap; with a namespace map configured "
			        "an unmapped workspace gets no namespace (its name is not used "
			        "instead)",
			        in->workspace);
			goto refused;
		}
		if (nonempty(in->target_namespace) && strcmp(in->target_namespace, ns) != 0) {
			tau_ws_namespace_refuse(
			        why, TAU_WS_REASON_NAMESPACE_MAP_MISMATCH, false,
			        "spec.target.namespace is %s but TauCluster "
			        "spec.workspaces.namespaceMap maps workspace %s to %s; remove "
			        "spec.target.namespace or make the two agree",
			        in->target_namespace, in->workspace, ns);
			goto refused;
		}
		source = "the namespace map entry";
	} else if (nonempty(in->target_namespace)) {
		ns = in->target_namespace;
	} else {
		ns = in->workspace;
		source = "the workspace name (default namespace)";
	}
	if (tau_names_check_dns1123_label(ns) < 0) {
		tau_ws_namespace_refuse(why, TAU_WS_REASON_INVALID_NAMESPACE_NAME, false,
		                        "namespace from %s is not a DNS-1123 label: %s", source,
		                        names_detail());
		goto refused;
	}
	*attempt = ns;
	if (strcmp(ns, in->system_namespace) == 0) {
		tau_ws_namespace_refuse(
		        why, TAU_WS_REASON_NAMESPACE_RESERVED, false,
		        "namespace %s is the TauGrid system namespace and cannot host a "
		        "workspace",
		        ns);
		goto refused;
	}
	if (strcmp(ns, "default") == 0 || strncmp(ns, "kube-", 5) == 0) {
		tau_ws_namespace_refuse(
		        why, TAU_WS_REASON_NAMESPACE_RESERVED, false,
		        "namespace %s is reserved (default and kube-* cannot host a workspace)",
		        ns);
		goto refused;
	}
	*out = ns;
	return 0;
refused:
	return tau_error_set(TAU_EINVAL, "%s", why->message);
}

int tau_ws_namespace_candidate(const char **out, tau_ws_refusal *why, const tau_ws_ns_input *in)
{
	const char *attempt = NULL;

	return candidate(out, &attempt, why, in);
}

/*
 * Precedence for a namespace that sharing does not allow to split: the
 * workspace that already holds it (status.target.resolvedNamespace) first,
 * then the oldest, then by name.  Every workspace computes the same order,
 * so exactly one of them wins whichever reconciles first.
 */
static bool claim_before(bool est_a, const char *ts_a, const char *name_a, bool est_b,
                         const char *ts_b, const char *name_b)
{
	if (est_a != est_b)
		return est_a;
	return tau_ws_namespace_compare_age(ts_a, name_a, ts_b, name_b) < 0;
}

static const tau_ws_claim *find_claim(const tau_ws_ns_input *in, const char *workspace)
{
	for (size_t i = 0; i < in->n_claims; i++)
		if (in->claims[i].workspace != NULL &&
		    strcmp(in->claims[i].workspace, workspace) == 0)
			return &in->claims[i];
	return NULL;
}

/* Copy a (validated, <= 63 byte) namespace name; NULL copies nothing. */
static void copy_name(char dst[TAU_WS_NAMESPACE_BUF], const char *src)
{
	size_t n;

	if (src == NULL)
		return;
	n = strnlen(src, TAU_WS_NAMESPACE_BUF - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

int tau_ws_namespace_resolve(tau_ws_ns_result *out, const tau_ws_ns_input *in)
{
	const tau_ws_ns_observed *obs;
	const tau_ws_claim *winner = NULL;
	const char *ns = NULL, *attempt = NULL;
	bool managed, held;

	if (out == NULL)
		return tau_error_set(TAU_EINVAL, "namespace resolution: no result");
	memset(out, 0, sizeof(*out));
	if (in == NULL || in->workspace == NULL || in->system_namespace == NULL)
		return tau_error_set(TAU_EINVAL, "namespace resolution: missing input");
	if (candidate(&ns, &attempt, &out->refusal, in) < 0) {
		copy_name(out->namespace_name, attempt);
		tau_error_clear();
		return 0;
	}
	copy_name(out->namespace_name, ns);
	managed = in->mode == TAU_WS_NS_MANAGED;

	/* Operator mode: fail closed until the platform lists the namespace. */
	if (!managed && !tau_ws_namespace_allowlist_contains(in->allowlist, ns)) {
		tau_ws_namespace_refuse(
		        &out->refusal, TAU_WS_REASON_NAMESPACE_NOT_ALLOWED, true,
		        "namespace %s is not on the operator namespace allowlist yet; the "
		        "workspace becomes ready once the platform allows it",
		        ns);
		return 0;
	}

	obs = in->observed;
	if (obs != NULL && obs->exists && nonempty(obs->workspace) &&
	    strcmp(obs->workspace, in->workspace) != 0) {
		const tau_ws_claim *other = find_claim(in, obs->workspace);

		if (other == NULL) {
			tau_ws_namespace_refuse(
			        &out->refusal, TAU_WS_REASON_NAMESPACE_OWNED_BY_OTHER, true,
			        "namespace %s is labelled %s=%s for workspace %s, which no "
			        "longer exists; a namespace labelled for another workspace is "
			        "never adopted (remove the label to release it)",
			        ns, TAU_WS_LABEL_WORKSPACE, obs->workspace, obs->workspace);
			return 0;
		}
		if (!in->allow_shared || other->namespace_name == NULL ||
		    strcmp(other->namespace_name, ns) != 0) {
			tau_ws_namespace_refuse(
			        &out->refusal, TAU_WS_REASON_NAMESPACE_OWNED_BY_OTHER, true,
			        "namespace %s is owned by workspace %s (label %s=%s)", ns,
			        obs->workspace, TAU_WS_LABEL_WORKSPACE, obs->workspace);
			return 0;
		}
		/* Shared with the labelled owner: use it, never own it. */
	}

	/*
	 * Other workspaces resolving to the same namespace.  Our own labels on it
	 * count as holding it, even before our status records it.
	 */
	held = in->established || (obs != NULL && obs->exists && nonempty(obs->workspace) &&
	                           strcmp(obs->workspace, in->workspace) == 0);
	for (size_t i = 0; i < in->n_claims; i++) {
		const tau_ws_claim *c = &in->claims[i];

		if (c->workspace == NULL || c->namespace_name == NULL ||
		    strcmp(c->workspace, in->workspace) == 0 || strcmp(c->namespace_name, ns) != 0)
			continue;
		if (in->allow_shared) {
			out->shared = true;
			continue;
		}
		if (!claim_before(c->established, c->creation_timestamp, c->workspace, held,
		                  in->creation_timestamp, in->workspace))
			continue;
		if (winner == NULL || claim_before(c->established, c->creation_timestamp,
		                                   c->workspace, winner->established,
		                                   winner->creation_timestamp, winner->workspace))
			winner = c;
	}
	if (winner != NULL) {
		tau_ws_namespace_refuse(
		        &out->refusal, TAU_WS_REASON_NAMESPACE_CLAIMED, true,
		        "namespace %s is already claimed by workspace %s and TauCluster "
		        "spec.workspaces.allowSharedNamespaces is false",
		        ns, winner->workspace);
		return 0;
	}

	if (obs != NULL && obs->exists && obs->terminating) {
		tau_ws_namespace_refuse(
		        &out->refusal, TAU_WS_REASON_NAMESPACE_TERMINATING, true,
		        "namespace %s is being deleted; waiting for it to go before %s", ns,
		        managed && in->create_namespace ? "creating it again" : "using it");
		return 0;
	}
	if (obs == NULL || !obs->exists) {
		if (managed && in->create_namespace) {
			out->create = true;
			out->owned = true;
			out->resolved = true;
			return 0;
		}
		tau_ws_namespace_refuse(
		        &out->refusal, TAU_WS_REASON_NAMESPACE_NOT_FOUND, true,
		        managed ? "namespace %s does not exist and spec.target.createNamespace "
		                  "is false; create it or set createNamespace"
		                : "namespace %s does not exist; in Operator namespace mode the "
		                  "platform creates namespaces",
		        ns);
		return 0;
	}
	if (nonempty(obs->workspace) && strcmp(obs->workspace, in->workspace) == 0) {
		out->owned = managed;
		out->resolved = true;
		return 0;
	}
	if (nonempty(obs->workspace)) {
		/* Labelled for another workspace that shares it (allowed above). */
		out->resolved = true;
		return 0;
	}
	/* Exists without a workspace label. */
	if (managed && in->create_namespace) {
		if (!in->adopt) {
			tau_ws_namespace_refuse(
			        &out->refusal, TAU_WS_REASON_NAMESPACE_NOT_OWNED, false,
			        "namespace %s already exists without ownership labels (%s=%s, "
			        "%s=%s); it is not adopted unless spec.target.adopt is true",
			        ns, TAU_WS_LABEL_MANAGED_BY, TAU_WS_MANAGED_BY,
			        TAU_WS_LABEL_WORKSPACE, in->workspace);
			return 0;
		}
		if (out->shared) {
			/* Never take ownership of a namespace other workspaces also use. */
			out->resolved = true;
			return 0;
		}
		out->adopt = true;
		out->owned = true;
	}
	out->resolved = true;
	return 0;
}

int tau_ws_namespace_observe(tau_ws_ns_observed *out, const cJSON *ns)
{
	tau_ws_ns_observed o = {0};
	const cJSON *labels = NULL;
	const char *s = NULL;
	int rc;

	if (out == NULL)
		return tau_error_set(TAU_EINVAL, "namespace: no result");
	if (ns == NULL || cJSON_IsNull(ns)) {
		*out = o;
		return 0;
	}
	if (!cJSON_IsObject(ns))
		return tau_error_set(TAU_ETYPE, "namespace: not a JSON object");
	o.exists = true;
	rc = tau_json_get_string(&s, ns, "metadata.deletionTimestamp");
	if (rc == 0)
		o.terminating = s[0] != '\0';
	else if (rc != -TAU_ENOTFOUND)
		return tau_error_wrap("namespace");
	rc = tau_json_get_object(&labels, ns, "metadata.labels");
	if (rc < 0 && rc != -TAU_ENOTFOUND)
		return tau_error_wrap("namespace");
	if (labels != NULL) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels, TAU_WS_LABEL_MANAGED_BY);

		if (v != NULL && !cJSON_IsString(v))
			return tau_error_set(TAU_ETYPE, "namespace: label %s is not a string",
			                     TAU_WS_LABEL_MANAGED_BY);
		o.managed_by = v != NULL ? v->valuestring : NULL;
		v = cJSON_GetObjectItemCaseSensitive(labels, TAU_WS_LABEL_WORKSPACE);
		if (v != NULL && !cJSON_IsString(v))
			return tau_error_set(TAU_ETYPE, "namespace: label %s is not a string",
			                     TAU_WS_LABEL_WORKSPACE);
		o.workspace = v != NULL ? v->valuestring : NULL;
	}
	*out = o;
	return 0;
}
