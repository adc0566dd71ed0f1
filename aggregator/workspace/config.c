/*
 * config.c - the configuration one reconcile pass works with: the flags,
 * else the cached TauCluster.
 *
 * The one idea: every source of a setting is read in every pass, so a
 * change to the TauCluster takes effect on the next pass without a restart,
 * and contradicting sources are refused rather than silently ranked.  The
 * namespace allowlist has four possible sources (flag selector, flag file,
 * TauCluster selector, TauCluster file); exactly one may be set.  Files are
 * followed (allowlist_file.h) whichever source names them.
 */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "tau/error.h"
#include "tau/file.h"
#include "tau/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAP_FILE_MAX (1024u * 1024u)

void tau_ws_config_clear(ws_config *c)
{
	free(c->map);
	tau_ws_namespace_allowlist_free(c->allowlist);
	cJSON_Delete(c->cluster);
	cJSON_Delete(c->namespaces);
	memset(c, 0, sizeof(*c));
}

int tau_ws_map_parse(cJSON **out, const char *buf, size_t len)
{
	cJSON *map = NULL;
	const cJSON *it;
	int rc;

	if ((rc = tau_json_parse(&map, buf, len, MAP_FILE_MAX)) != 0)
		return tau_error_wrap("namespace map");
	if (!cJSON_IsObject(map)) {
		cJSON_Delete(map);
		return tau_error_set(TAU_EINVAL, "namespace map: not a JSON object");
	}
	cJSON_ArrayForEach(it, map)
	{
		if (!cJSON_IsString(it)) {
			rc = tau_error_set(TAU_EINVAL, "namespace map: entry %s is not a string",
			                   it->string);
			cJSON_Delete(map);
			return rc;
		}
	}
	*out = map;
	return 0;
}

int tau_ws_map_load(cJSON **out, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if ((rc = tau_file_read(&buf, &len, path, MAP_FILE_MAX, "namespace map")) != 0)
		return rc == -TAU_ENOMEM ? rc : -TAU_EINVAL;
	rc = tau_ws_map_parse(out, buf, len);
	free(buf);
	return rc;
}

static int map_entries(ws_config *c, const cJSON *map)
{
	size_t n = (size_t)cJSON_GetArraySize(map), i = 0;
	const cJSON *it;

	c->map_set = true;
	if (n == 0)
		return 0;
	c->map = calloc(n, sizeof(*c->map));
	if (c->map == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, map)
	{
		if (!cJSON_IsString(it) || it->string == NULL)
			continue;
		c->map[i].workspace = it->string;
		c->map[i].namespace_name = it->valuestring;
		i++;
	}
	c->n_map = i;
	return 0;
}

/* The allowlist of the namespaces (cached) whose labels `sel` matches. */
static int selector_allowlist(ws_config *c, tau_ws_controller *ctl, const tau_selector *sel)
{
	const char **names = NULL;
	size_t n = 0;
	const cJSON *it;
	int rc;

	if ((rc = tau_kube_informer_snapshot(&c->namespaces, ctl->inf[WS_INF_NAMESPACES])) != 0)
		return rc;
	names = calloc((size_t)cJSON_GetArraySize(c->namespaces) + 1, sizeof(*names));
	if (names == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, c->namespaces)
	{
		const cJSON *md = cJSON_GetObjectItemCaseSensitive(it, "metadata");
		const char *name = tau_ws_str(it, "metadata.name");

		if (name != NULL &&
		    tau_selector_matches(sel, cJSON_GetObjectItemCaseSensitive(md, "labels")))
			names[n++] = name;
	}
	rc = tau_ws_namespace_allowlist_from_names(&c->allowlist, names, n);
	free(names);
	return rc;
}

/* Operator mode: the one allowlist source, or a conflict. */
static int allowlist_load(ws_config *c, tau_ws_controller *ctl, const cJSON *spec_ws)
{
	const cJSON *tc_sel =
	        spec_ws != NULL ? tau_json_find(spec_ws, "namespaceAllowlist.selector") : NULL;
	const char *tc_file =
	        spec_ws != NULL ? tau_ws_str(spec_ws, "namespaceAllowlist.file") : NULL;
	const char *flag = ctl->allowlist_selector != NULL    ? "--allowlist-selector"
	                   : ctl->flag_allowlist_file != NULL ? "--allowlist-file"
	                                                      : NULL;
	const char *tc = tc_sel != NULL && tc_file != NULL ? "selector and file"
	                 : tc_sel != NULL                  ? "selector"
	                 : tc_file != NULL                 ? "file"
	                                                   : NULL;
	const char *file = NULL;
	int rc;

	if (flag != NULL && tc != NULL)
		snprintf(c->conflict, sizeof(c->conflict),
		         "the namespace allowlist is set twice: by the aggregator flag %s and by "
		         "TauCluster spec.workspaces.namespaceAllowlist.%s; remove one of them",
		         flag, tc);
	else if (tc_sel != NULL && tc_file != NULL)
		snprintf(c->conflict, sizeof(c->conflict),
		         "TauCluster spec.workspaces.namespaceAllowlist sets both selector and "
		         "file; "
		         "set exactly one");
	if (c->conflict[0] != '\0') {
		/* Fail closed: nothing is allowed while the sources contradict. */
		(void)tau_ws_allowlist_file_follow(ctl->allowlist_file, NULL);
		return 0;
	}
	file = ctl->flag_allowlist_file != NULL ? ctl->flag_allowlist_file : tc_file;
	if ((rc = tau_ws_allowlist_file_follow(ctl->allowlist_file, file)) != 0)
		return rc;
	if (file != NULL)
		return tau_ws_allowlist_file_copy(&c->allowlist, NULL, ctl->allowlist_file);
	if (ctl->allowlist_selector != NULL)
		return selector_allowlist(c, ctl, ctl->allowlist_selector);
	if (tc_sel != NULL) {
		tau_selector *sel = NULL;

		if ((rc = tau_selector_from_json(&sel, tc_sel)) != 0) {
			snprintf(c->conflict, sizeof(c->conflict),
			         "TauCluster spec.workspaces.namespaceAllowlist.selector is "
			         "unusable: %s",
			         tau_error_last()->msg);
			return 0;
		}
		rc = selector_allowlist(c, ctl, sel);
		tau_selector_free(sel);
		return rc;
	}
	return 0; /* Operator mode with no source: nothing is allowed (fail closed). */
}

int tau_ws_config_load(ws_config *c, tau_ws_controller *ctl)
{
	const cJSON *spec_ws = NULL, *map = NULL;
	const char *mode;
	int rc;

	memset(c, 0, sizeof(*c));
	if (tau_kube_informer_get(&c->cluster, ctl->inf[WS_INF_CLUSTER], NULL, "cluster") != 0)
		c->cluster = NULL;
	if (c->cluster != NULL)
		tau_json_get_object(&spec_ws, c->cluster, "spec.workspaces");
	mode = spec_ws != NULL ? tau_ws_str(spec_ws, "namespaceMode") : NULL;
	if (ctl->ns_mode_set)
		c->mode = ctl->ns_mode;
	else
		c->mode = mode != NULL && strcmp(mode, "Operator") == 0 ? TAU_WS_NS_OPERATOR
		                                                        : TAU_WS_NS_MANAGED;
	if (spec_ws != NULL) {
		c->allow_shared = cJSON_IsTrue(
		        cJSON_GetObjectItemCaseSensitive(spec_ws, "allowSharedNamespaces"));
		map = cJSON_GetObjectItemCaseSensitive(spec_ws, "namespaceMap");
	}
	c->default_queue = tau_ws_str(c->cluster, "spec.workspaceDefaults.defaultQueue");
	if (ctl->map != NULL)
		map = ctl->map;
	if (cJSON_IsObject(map) && (rc = map_entries(c, map)) != 0)
		return rc;
	if (c->mode != TAU_WS_NS_OPERATOR)
		return 0;
	return allowlist_load(c, ctl, spec_ws);
}
