/*
 * kube_path.c - where an API object lives.
 *
 * The well-known resources (group, version, plural, scope), the REST path
 * of a collection, object or subresource built from one (each segment
 * checked so a name cannot escape its path), and the query string of list
 * and watch requests.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/kube.h"

#include "kube_internal.h"
#include "tau/buf.h"
#include "tau/error.h"

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const tau_kube_resource tau_kube_res_nodes = {"", "v1", "nodes", false};
const tau_kube_resource tau_kube_res_csinodes = {"storage.k8s.io", "v1", "csinodes", false};
const tau_kube_resource tau_kube_res_namespaces = {"", "v1", "namespaces", false};
const tau_kube_resource tau_kube_res_pods = {"", "v1", "pods", true};
const tau_kube_resource tau_kube_res_configmaps = {"", "v1", "configmaps", true};
const tau_kube_resource tau_kube_res_leases = {"coordination.k8s.io", "v1", "leases", true};
const tau_kube_resource tau_kube_res_crds = {"apiextensions.k8s.io", "v1",
                                             "customresourcedefinitions", false};
const tau_kube_resource tau_kube_res_tokenreviews = {"authentication.k8s.io", "v1", "tokenreviews",
                                                     false};
const tau_kube_resource tau_kube_res_subjectaccessreviews = {"authorization.k8s.io", "v1",
                                                             "subjectaccessreviews", false};

static int check_segment(const char *what, const char *s)
{
	if (s == NULL || s[0] == '\0')
		return tau_error_set(TAU_EINVAL, "empty %s", what);
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return tau_error_set(TAU_EINVAL, "%s may not be \"%s\"", what, s);
	if (strlen(s) > 253 && strcmp(what, "name") != 0)
		return tau_error_set(TAU_EINVAL, "%s is longer than 253 bytes", what);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p == '/' || *p == '?' || *p == '#' || *p == '%' || *p < 0x21 || *p == 0x7f)
			return tau_error_set(TAU_EINVAL,
			                     "%s \"%.100s\" holds a forbidden character", what, s);
	return 0;
}

int tau_kube_path(char **out, const tau_kube_resource *res, const char *ns, const char *name,
                  const char *sub)
{
	tau_buf b = {.max = 4096};
	int rc;
	bool core = res->group == NULL || res->group[0] == '\0';

	if ((rc = check_segment("version", res->version)) < 0 ||
	    (rc = check_segment("resource", res->plural)) < 0 ||
	    (!core && (rc = check_segment("group", res->group)) < 0))
		return rc;
	if (ns != NULL && ns[0] != '\0') {
		if (!res->namespaced)
			return tau_error_set(TAU_EINVAL,
			                     "%s are cluster-scoped; no namespace allowed",
			                     res->plural);
		if ((rc = check_segment("namespace", ns)) < 0)
			return rc;
	}
	if (name != NULL && (rc = check_segment("name", name)) < 0)
		return rc;
	if (sub != NULL && (rc = check_segment("subresource", sub)) < 0)
		return rc;
	if (sub != NULL && name == NULL)
		return tau_error_set(TAU_EINVAL, "a subresource needs an object name");
	if (core)
		rc = tau_buf_printf(&b, "/api/%s", res->version);
	else
		rc = tau_buf_printf(&b, "/apis/%s/%s", res->group, res->version);
	if (rc == 0 && ns != NULL && ns[0] != '\0')
		rc = tau_buf_printf(&b, "/namespaces/%s", ns);
	if (rc == 0)
		rc = tau_buf_printf(&b, "/%s", res->plural);
	if (rc == 0 && name != NULL)
		rc = tau_buf_printf(&b, "/%s", name);
	if (rc == 0 && sub != NULL)
		rc = tau_buf_printf(&b, "/%s", sub);
	if (rc < 0) {
		tau_buf_free(&b);
		return rc == -TAU_ETOOBIG ? tau_error_set(TAU_EINVAL, "path too long") : rc;
	}
	*out = b.p;
	return 0;
}

static int add_param(tau_buf *b, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc;

	rc = tau_buf_printf(b, "%s%s=", b->len ? "&" : "", key);
	for (const unsigned char *p = (const unsigned char *)value; rc == 0 && *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			rc = tau_buf_append(b, p, 1);
		} else {
			char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};

			rc = tau_buf_append(b, enc, 3);
		}
	}
	return rc;
}

/* How a list option becomes a parameter: its kind says when it is set and how it is written. */
typedef enum { PARAM_FLAG, PARAM_TEXT, PARAM_TEXT_NONEMPTY, PARAM_NUMBER } param_kind;

/* The list and watch parameters, in the fixed order the query string has them. */
static const struct {
	const char *name;
	param_kind kind;
	size_t offset; /* of the field in tau_kube_list_options */
} list_params[] = {
        {"allowWatchBookmarks", PARAM_FLAG, offsetof(tau_kube_list_options, allow_bookmarks)},
        {"continue", PARAM_TEXT_NONEMPTY, offsetof(tau_kube_list_options, continue_token)},
        {"fieldSelector", PARAM_TEXT_NONEMPTY, offsetof(tau_kube_list_options, field_selector)},
        {"labelSelector", PARAM_TEXT_NONEMPTY, offsetof(tau_kube_list_options, label_selector)},
        {"limit", PARAM_NUMBER, offsetof(tau_kube_list_options, limit)},
        {"resourceVersion", PARAM_TEXT, offsetof(tau_kube_list_options, resource_version)},
        {"resourceVersionMatch", PARAM_TEXT_NONEMPTY,
         offsetof(tau_kube_list_options, resource_version_match)},
        {"timeoutSeconds", PARAM_NUMBER, offsetof(tau_kube_list_options, timeout_seconds)},
        {"watch", PARAM_FLAG, offsetof(tau_kube_list_options, watch)},
};

/* Append one list option when it is set (rc 0 and nothing written when it is not). */
static int add_list_param(tau_buf *b, const tau_kube_list_options *o, size_t i)
{
	const char *field = (const char *)o + list_params[i].offset;
	const char *text;
	char num[32];
	int64_t n;

	switch (list_params[i].kind) {
	case PARAM_FLAG:
		return *(const bool *)(const void *)field
		               ? add_param(b, list_params[i].name, "true")
		               : 0;
	case PARAM_TEXT:
	case PARAM_TEXT_NONEMPTY:
		text = *(const char *const *)(const void *)field;
		if (text == NULL || (list_params[i].kind == PARAM_TEXT_NONEMPTY && text[0] == '\0'))
			return 0;
		return add_param(b, list_params[i].name, text);
	case PARAM_NUMBER:
		n = *(const int64_t *)(const void *)field;
		if (n <= 0)
			return 0;
		snprintf(num, sizeof(num), "%lld", (long long)n);
		return add_param(b, list_params[i].name, num);
	}
	return 0;
}

int tau_kube_list_query(char **out, const tau_kube_list_options *o)
{
	tau_buf b = {0};
	int rc = 0;

	for (size_t i = 0; o != NULL && rc == 0 && i < sizeof(list_params) / sizeof(list_params[0]);
	     i++)
		rc = add_list_param(&b, o, i);
	if (rc == 0 && b.p == NULL)
		rc = tau_buf_append(&b, "", 0);
	if (rc < 0) {
		tau_buf_free(&b);
		return rc;
	}
	*out = b.p;
	return 0;
}
