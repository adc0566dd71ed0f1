/*
 * kube_verbs.c - the verbs of the API: get, list, create, update, patch,
 * delete.
 *
 * Each builds the object's path (kube_path.c) and a JSON body, and runs
 * them as one request (kube_request.c).  tau_kube_list_all follows continue
 * tokens until the collection is complete.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/kube.h"

#include "kube_internal.h"
#include "tau/buf.h"
#include "tau/error.h"
#include "tau/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tau_kube_get(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                 const char *name)
{
	char *path = NULL;
	int rc;

	if (name == NULL)
		return tau_error_set(TAU_EINVAL, "get: no name");
	rc = tau_kube_path(&path, res, ns, name, NULL);
	if (rc == 0)
		rc = tau_kube_request_json(out, c, "GET", path, NULL, NULL, NULL);
	free(path);
	return rc;
}

int tau_kube_list(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                  const tau_kube_list_options *opts)
{
	char *path = NULL, *query = NULL;
	int rc;

	if (opts != NULL && opts->watch)
		return tau_error_set(TAU_EINVAL, "list: use an informer to watch");
	rc = tau_kube_path(&path, res, ns, NULL, NULL);
	if (rc == 0)
		rc = tau_kube_list_query(&query, opts);
	if (rc == 0)
		rc = tau_kube_request_json(out, c, "GET", path, query, NULL, NULL);
	free(path);
	free(query);
	return rc;
}

int tau_kube_list_all(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                      const tau_kube_list_options *opts)
{
	tau_kube_list_options o = {0};
	cJSON *acc = NULL, *page = NULL, *items;
	char *cont = NULL;
	int rc;

	if (opts)
		o = *opts;
	if (o.limit <= 0)
		o.limit = 500;
	for (;;) {
		const char *next = NULL;
		cJSON *page_items;

		o.continue_token = cont;
		if (cont)
			o.resource_version = NULL; /* forbidden together with continue */
		rc = tau_kube_list(&page, c, res, ns, &o);
		if (rc < 0 && cont != NULL &&
		    tau_kube_api_error_is(tau_kube_api_error_last(), "Expired")) {
			/* Token expired mid-way: one unpaged list, as client-go's pager. */
			cJSON_Delete(acc);
			acc = NULL;
			free(cont);
			cont = NULL;
			o.limit = 0;
			o.resource_version = opts ? opts->resource_version : NULL;
			rc = tau_kube_list(&page, c, res, ns, &o);
		}
		if (rc < 0)
			goto out;
		page_items = cJSON_GetObjectItemCaseSensitive(page, "items");
		if (page_items != NULL && !cJSON_IsArray(page_items) && !cJSON_IsNull(page_items)) {
			rc = tau_error_set(TAU_ETYPE, "list %s: items is not an array",
			                   res->plural);
			goto out;
		}
		if (acc == NULL) {
			acc = page;
			page = NULL;
			items = cJSON_GetObjectItemCaseSensitive(acc, "items");
			if (!cJSON_IsArray(items)) {
				cJSON_DeleteItemFromObjectCaseSensitive(acc, "items");
				items = cJSON_AddArrayToObject(acc, "items");
				if (items == NULL) {
					rc = tau_error_set(TAU_ENOMEM, "out of memory");
					goto out;
				}
			}
		} else {
			items = cJSON_GetObjectItemCaseSensitive(acc, "items");
			while (page_items && page_items->child) {
				cJSON *it =
				        cJSON_DetachItemViaPointer(page_items, page_items->child);

				cJSON_AddItemToArray(items, it);
			}
		}
		free(cont);
		cont = NULL;
		if (tau_json_get_string(&next, page ? page : acc, "metadata.continue") == 0 &&
		    next[0] != '\0' && o.limit > 0) {
			cont = tau_kube_strdup(next);
			if (cont == NULL) {
				rc = tau_error_set(TAU_ENOMEM, "out of memory");
				goto out;
			}
		}
		cJSON_Delete(page);
		page = NULL;
		if (cont == NULL)
			break;
	}
	{
		cJSON *md = cJSON_GetObjectItemCaseSensitive(acc, "metadata");

		if (cJSON_IsObject(md)) {
			cJSON_DeleteItemFromObjectCaseSensitive(md, "continue");
			cJSON_DeleteItemFromObjectCaseSensitive(md, "remainingItemCount");
		}
	}
	tau_error_clear();
	*out = acc;
	acc = NULL;
	rc = 0;
out:
	free(cont);
	cJSON_Delete(page);
	cJSON_Delete(acc);
	return rc;
}

/* Namespace and name of `obj` for a write; `ns` overrides metadata.namespace. */
static int object_target(const char **ns_out, const char **name_out, tau_kube_client *c,
                         const tau_kube_resource *res, const char *ns, const cJSON *obj,
                         bool need_name)
{
	const char *name = NULL, *ons = NULL;

	if (!cJSON_IsObject(obj))
		return tau_error_set(TAU_EINVAL, "%s: the object is not a JSON object",
		                     res->plural);
	if (tau_json_get_string(&name, obj, "metadata.name") < 0)
		name = NULL;
	if (need_name && (name == NULL || name[0] == '\0'))
		return tau_error_set(TAU_EINVAL, "%s: the object has no metadata.name",
		                     res->plural);
	if (res->namespaced) {
		if (ns == NULL || ns[0] == '\0') {
			if (tau_json_get_string(&ons, obj, "metadata.namespace") == 0 && ons[0])
				ns = ons;
			else
				ns = tau_kube_client_config(c)->namespace;
		}
	} else {
		ns = NULL;
	}
	tau_error_clear();
	*ns_out = ns;
	*name_out = name;
	return 0;
}

static int write_object(cJSON **out, tau_kube_client *c, const tau_kube_resource *res,
                        const char *ns, const cJSON *obj, const char *method, const char *sub)
{
	const char *name = NULL;
	char *path = NULL, *body = NULL;
	bool create = strcmp(method, "POST") == 0;
	int rc;

	rc = object_target(&ns, &name, c, res, ns, obj, !create);
	if (rc == 0)
		rc = tau_kube_path(&path, res, ns, create ? NULL : name, sub);
	if (rc == 0)
		rc = tau_json_print(&body, obj);
	if (rc == 0)
		rc = tau_kube_request_json(out, c, method, path, NULL, body, "application/json");
	free(path);
	free(body);
	return rc;
}

int tau_kube_create(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                    const cJSON *obj)
{
	return write_object(out, c, res, ns, obj, "POST", NULL);
}

int tau_kube_update(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                    const cJSON *obj)
{
	return write_object(out, c, res, ns, obj, "PUT", NULL);
}

int tau_kube_update_status(cJSON **out, tau_kube_client *c, const tau_kube_resource *res,
                           const char *ns, const cJSON *obj)
{
	return write_object(out, c, res, ns, obj, "PUT", "status");
}

int tau_kube_patch(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                   const char *name, const char *sub, tau_kube_patch_type type, const char *patch)
{
	static const char *const ctypes[] = {
	        [TAU_KUBE_PATCH_MERGE] = "application/merge-patch+json",
	        [TAU_KUBE_PATCH_JSON] = "application/json-patch+json",
	        [TAU_KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
	};
	char *path = NULL;
	int rc;

	if (name == NULL || patch == NULL)
		return tau_error_set(TAU_EINVAL, "patch: no name or no patch");
	if ((unsigned)type > TAU_KUBE_PATCH_STRATEGIC)
		return tau_error_set(TAU_EINVAL, "patch: unknown patch type %d", (int)type);
	if (res->namespaced && (ns == NULL || ns[0] == '\0'))
		ns = tau_kube_client_config(c)->namespace;
	rc = tau_kube_path(&path, res, res->namespaced ? ns : NULL, name, sub);
	if (rc == 0)
		rc = tau_kube_request_json(out, c, "PATCH", path, NULL, patch, ctypes[type]);
	free(path);
	return rc;
}

int tau_kube_delete(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                    const char *name, const tau_kube_delete_options *opts)
{
	cJSON *body = NULL;
	char *path = NULL, *text = NULL;
	int rc;

	if (name == NULL)
		return tau_error_set(TAU_EINVAL, "delete: no name");
	if (res->namespaced && (ns == NULL || ns[0] == '\0'))
		ns = tau_kube_client_config(c)->namespace;
	rc = tau_kube_path(&path, res, res->namespaced ? ns : NULL, name, NULL);
	if (rc < 0)
		return rc;
	body = cJSON_CreateObject();
	if (body == NULL || !cJSON_AddStringToObject(body, "kind", "DeleteOptions") ||
	    !cJSON_AddStringToObject(body, "apiVersion", "v1"))
		goto nomem;
	if (opts != NULL) {
		if (opts->propagation_policy &&
		    !cJSON_AddStringToObject(body, "propagationPolicy", opts->propagation_policy))
			goto nomem;
		if (opts->grace_period_seconds >= 0 &&
		    !cJSON_AddNumberToObject(body, "gracePeriodSeconds",
		                             (double)opts->grace_period_seconds))
			goto nomem;
		if (opts->uid || opts->resource_version) {
			cJSON *pre = cJSON_AddObjectToObject(body, "preconditions");

			if (pre == NULL ||
			    (opts->uid && !cJSON_AddStringToObject(pre, "uid", opts->uid)) ||
			    (opts->resource_version &&
			     !cJSON_AddStringToObject(pre, "resourceVersion",
			                              opts->resource_version)))
				goto nomem;
		}
	}
	rc = tau_json_print(&text, body);
	if (rc == 0)
		rc = tau_kube_request_json(out, c, "DELETE", path, NULL, text, "application/json");
	goto out;
nomem:
	rc = tau_error_set(TAU_ENOMEM, "out of memory");
out:
	cJSON_Delete(body);
	free(text);
	free(path);
	return rc;
}
