/*
 * kube_review.c - asking the API server who a caller is and what it may do.
 *
 * TokenReview (authentication.k8s.io): submit a bearer token, decode the
 * user it names (username, uid, groups, extra, audiences).
 * SubjectAccessReview (authorization.k8s.io): ask whether that user may do
 * one thing.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/kube.h"

#include "kube_internal.h"
#include "tau/error.h"
#include "tau/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* TokenReview                                                         */

void tau_kube_token_review_free(tau_kube_token_review *r)
{
	if (r == NULL)
		return;
	free(r->username);
	free(r->uid);
	for (size_t i = 0; i < r->n_groups; i++)
		free(r->groups[i]);
	free(r->groups);
	for (size_t i = 0; i < r->n_extra; i++) {
		free(r->extra[i].key);
		for (size_t j = 0; j < r->extra[i].n_values; j++)
			free(r->extra[i].values[j]);
		free(r->extra[i].values);
	}
	free(r->extra);
	for (size_t i = 0; i < r->n_audiences; i++)
		free(r->audiences[i]);
	free(r->audiences);
	free(r->error);
	free(r);
}

/* Copy a JSON array of strings (NULL/absent = empty). */
static int string_array(char ***out, size_t *n, const cJSON *arr, const char *what)
{
	size_t count = 0, i = 0;
	const cJSON *it;
	char **v;

	*out = NULL;
	*n = 0;
	if (arr == NULL || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr))
		return tau_error_set(TAU_EINVAL, "TokenReview: %s is not an array", what);
	cJSON_ArrayForEach(it, arr)
	{
		if (!cJSON_IsString(it))
			return tau_error_set(TAU_EINVAL, "TokenReview: %s holds a non-string",
			                     what);
		count++;
	}
	if (count == 0)
		return 0;
	v = calloc(count, sizeof(*v));
	if (v == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, arr)
	{
		v[i] = tau_kube_strdup(it->valuestring);
		if (v[i++] == NULL) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return tau_error_set(TAU_ENOMEM, "out of memory");
		}
	}
	*out = v;
	*n = count;
	return 0;
}

int tau_kube_token_review_decode(tau_kube_token_review **out, const cJSON *review)
{
	const cJSON *status = NULL, *user, *extra, *it;
	tau_kube_token_review *r;
	const char *s;
	bool b;
	int rc;

	if (tau_json_get_object(&status, review, "status") < 0)
		return tau_error_set(TAU_EINVAL, "TokenReview: no status in the response");
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	rc = tau_json_get_bool(&b, status, "authenticated");
	if (rc == -TAU_ETYPE) {
		rc = tau_error_set(TAU_EINVAL,
		                   "TokenReview: status.authenticated is not a boolean");
		goto fail;
	}
	r->authenticated = rc == 0 && b;
	if (tau_json_get_string(&s, status, "error") == 0 && s[0] != '\0' &&
	    (r->error = tau_kube_strdup(s)) == NULL)
		goto nomem;
	user = cJSON_GetObjectItemCaseSensitive(status, "user");
	if (cJSON_IsObject(user)) {
		if (tau_json_get_string(&s, user, "username") == 0 &&
		    (r->username = tau_kube_strdup(s)) == NULL)
			goto nomem;
		if (tau_json_get_string(&s, user, "uid") == 0 &&
		    (r->uid = tau_kube_strdup(s)) == NULL)
			goto nomem;
		rc = string_array(&r->groups, &r->n_groups,
		                  cJSON_GetObjectItemCaseSensitive(user, "groups"), "user.groups");
		if (rc < 0)
			goto fail;
		extra = cJSON_GetObjectItemCaseSensitive(user, "extra");
		if (cJSON_IsObject(extra)) {
			size_t count = (size_t)cJSON_GetArraySize(extra), i = 0;

			r->extra = count ? calloc(count, sizeof(*r->extra)) : NULL;
			if (count && r->extra == NULL)
				goto nomem;
			cJSON_ArrayForEach(it, extra)
			{
				tau_kube_extra *e = &r->extra[i++];

				r->n_extra = i;
				e->key = tau_kube_strdup(it->string);
				if (e->key == NULL)
					goto nomem;
				rc = string_array(&e->values, &e->n_values, it, "user.extra");
				if (rc < 0)
					goto fail;
				if (e->n_values > 0 &&
				    strcmp(e->key, "authentication.kubernetes.io/pod-name") == 0)
					r->pod_name = e->values[0];
				if (e->n_values > 0 &&
				    strcmp(e->key, "authentication.kubernetes.io/node-name") == 0)
					r->node_name = e->values[0];
			}
		}
	}
	rc = string_array(&r->audiences, &r->n_audiences,
	                  cJSON_GetObjectItemCaseSensitive(status, "audiences"),
	                  "status.audiences");
	if (rc < 0)
		goto fail;
	if (!r->authenticated) {
		/* Only trust identity fields of an authenticated review. */
		free(r->username);
		r->username = NULL;
	}
	tau_error_clear();
	*out = r;
	return 0;
nomem:
	rc = tau_error_set(TAU_ENOMEM, "out of memory");
fail:
	tau_kube_token_review_free(r);
	return rc;
}

int tau_kube_token_review_submit(tau_kube_token_review **out, tau_kube_client *c, const char *token,
                                 const char *const *audiences, size_t n_audiences)
{
	cJSON *req = NULL, *resp = NULL, *spec, *aud;
	tau_kube_token_review *r = NULL;
	char *path = NULL, *body = NULL;
	int rc;

	if (token == NULL || token[0] == '\0')
		return tau_error_set(TAU_EINVAL, "TokenReview: empty token");
	req = cJSON_CreateObject();
	if (req == NULL ||
	    !cJSON_AddStringToObject(req, "apiVersion", "authentication.k8s.io/v1") ||
	    !cJSON_AddStringToObject(req, "kind", "TokenReview") ||
	    (spec = cJSON_AddObjectToObject(req, "spec")) == NULL ||
	    !cJSON_AddStringToObject(spec, "token", token))
		goto nomem;
	if (n_audiences > 0) {
		aud = cJSON_AddArrayToObject(spec, "audiences");
		if (aud == NULL)
			goto nomem;
		for (size_t i = 0; i < n_audiences; i++) {
			cJSON *s = cJSON_CreateString(audiences[i]);

			if (s == NULL)
				goto nomem;
			cJSON_AddItemToArray(aud, s);
		}
	}
	rc = tau_kube_path(&path, &tau_kube_res_tokenreviews, NULL, NULL, NULL);
	if (rc == 0)
		rc = tau_json_print(&body, req);
	if (rc == 0)
		rc = tau_kube_request_json(&resp, c, "POST", path, NULL, body, "application/json");
	if (rc == 0)
		rc = tau_kube_token_review_decode(&r, resp);
	if (rc < 0)
		goto out;
	if (r->authenticated && n_audiences > 0) {
		bool match = false;

		for (size_t i = 0; i < r->n_audiences && !match; i++)
			for (size_t j = 0; j < n_audiences && !match; j++)
				match = strcmp(r->audiences[i], audiences[j]) == 0;
		if (!match) {
			r->authenticated = false;
			if (r->error == NULL)
				r->error = tau_kube_strdup("token is not valid for the requested "
				                           "audiences");
		}
	}
	*out = r;
	r = NULL;
	goto out;
nomem:
	rc = tau_error_set(TAU_ENOMEM, "out of memory");
out:
	if (body)
		memset(body, 0, strlen(body));
	free(body);
	free(path);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	tau_kube_token_review_free(r);
	return rc;
}

/* ------------------------------------------------------------------ */
/* SubjectAccessReview                                                 */

/* spec.user/uid/groups/extra of a SubjectAccessReview, from a TokenReview's user. */
static int sar_user(cJSON *spec, const tau_kube_token_review *user)
{
	cJSON *groups, *extra;

	if (!cJSON_AddStringToObject(spec, "user", user->username))
		return -1;
	if (user->uid != NULL && !cJSON_AddStringToObject(spec, "uid", user->uid))
		return -1;
	if ((groups = cJSON_AddArrayToObject(spec, "groups")) == NULL)
		return -1;
	for (size_t i = 0; i < user->n_groups; i++) {
		cJSON *g = cJSON_CreateString(user->groups[i]);

		if (g == NULL)
			return -1;
		cJSON_AddItemToArray(groups, g);
	}
	if (user->n_extra == 0)
		return 0;
	if ((extra = cJSON_AddObjectToObject(spec, "extra")) == NULL)
		return -1;
	for (size_t i = 0; i < user->n_extra; i++) {
		cJSON *vals = cJSON_AddArrayToObject(extra, user->extra[i].key);

		if (vals == NULL)
			return -1;
		for (size_t j = 0; j < user->extra[i].n_values; j++) {
			cJSON *v = cJSON_CreateString(user->extra[i].values[j]);

			if (v == NULL)
				return -1;
			cJSON_AddItemToArray(vals, v);
		}
	}
	return 0;
}

int tau_kube_subject_access_review(bool *allowed, char *reason, size_t cap, tau_kube_client *c,
                                   const tau_kube_token_review *user, const char *verb,
                                   const char *group, const char *resource)
{
	cJSON *req = NULL, *resp = NULL, *spec, *attrs;
	char *path = NULL, *body = NULL;
	const char *s;
	bool b = false;
	int rc;

	*allowed = false;
	if (cap > 0)
		reason[0] = '\0';
	if (user == NULL || !user->authenticated || user->username == NULL)
		return tau_error_set(TAU_EINVAL, "SubjectAccessReview: no authenticated user");
	req = cJSON_CreateObject();
	if (req == NULL || !cJSON_AddStringToObject(req, "apiVersion", "authorization.k8s.io/v1") ||
	    !cJSON_AddStringToObject(req, "kind", "SubjectAccessReview") ||
	    (spec = cJSON_AddObjectToObject(req, "spec")) == NULL || sar_user(spec, user) < 0 ||
	    (attrs = cJSON_AddObjectToObject(spec, "resourceAttributes")) == NULL ||
	    !cJSON_AddStringToObject(attrs, "verb", verb) ||
	    !cJSON_AddStringToObject(attrs, "group", group) ||
	    !cJSON_AddStringToObject(attrs, "resource", resource)) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto out;
	}
	rc = tau_kube_path(&path, &tau_kube_res_subjectaccessreviews, NULL, NULL, NULL);
	if (rc == 0)
		rc = tau_json_print(&body, req);
	if (rc == 0)
		rc = tau_kube_request_json(&resp, c, "POST", path, NULL, body, "application/json");
	if (rc < 0)
		goto out;
	rc = tau_json_get_bool(&b, resp, "status.allowed");
	if (rc == -TAU_ETYPE) {
		rc = tau_error_set(TAU_EINVAL,
		                   "SubjectAccessReview: status.allowed is not a boolean");
		goto out;
	}
	rc = 0;
	*allowed = b;
	if (tau_json_get_string(&s, resp, "status.reason") == 0 && cap > 0)
		snprintf(reason, cap, "%s", s);
	else if (tau_json_get_string(&s, resp, "status.evaluationError") == 0 && cap > 0)
		snprintf(reason, cap, "%s", s);
out:
	free(body);
	free(path);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return rc;
}
