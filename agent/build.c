/*
 * build.c - one build of the inventory, the same for the daemon and --once.
 *
 * The one idea: the inventory is rebuilt from scratch each time (level-triggered) from the
 * Kubernetes objects and the host probe.  The host probe is cached and rerun only when asked
 * (the plugin registry changed, the periodic timer fired) or when the set of CSI driver names
 * changed, because NVML init is slow on real GPU hosts and Node status updates are frequent.
 */
#include "build.h"

#include "tau/error.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tau_agent_probe_cache_free(tau_agent_probe_cache *cache)
{
	if (cache == NULL)
		return;
	tau_agent_host_probe_free(&cache->probe);
	for (size_t i = 0; i < cache->n_names; i++)
		free(cache->names[i]);
	free(cache->names);
	cache->names = NULL;
	cache->n_names = 0;
	cache->valid = false;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

#define SOCKET_SUFFIX     "-reg.sock"
#define SOCKET_SUFFIX_LEN (sizeof(SOCKET_SUFFIX) - 1)

int tau_agent_registry_socket_names(char ***out, size_t *n, const char *host_root)
{
	char dir[PATH_MAX];
	char **names;
	size_t count = 0;
	struct dirent *de;
	DIR *d;
	int len;

	*out = NULL;
	*n = 0;
	if (host_root == NULL || host_root[0] == '\0')
		host_root = "/";
	len = snprintf(dir, sizeof(dir), "%s%s%s", host_root,
	               host_root[strlen(host_root) - 1] == '/' ? "" : "/",
	               &TAU_AGENT_PLUGIN_REGISTRY[1]);
	if (len < 0 || (size_t)len >= sizeof(dir))
		return 0;
	names = calloc(TAU_AGENT_PROBE_MAX_DRIVERS, sizeof(*names));
	if (names == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	d = opendir(dir);
	if (d == NULL) {
		free(names);
		return 0;
	}
	while ((de = readdir(d)) != NULL && count < TAU_AGENT_PROBE_MAX_DRIVERS) {
		size_t l = strlen(de->d_name);

		if (l <= SOCKET_SUFFIX_LEN || de->d_name[0] == '.' ||
		    strcmp(de->d_name + l - SOCKET_SUFFIX_LEN, SOCKET_SUFFIX) != 0)
			continue;
		names[count] = strndup(de->d_name, l - SOCKET_SUFFIX_LEN);
		if (names[count] == NULL) {
			closedir(d);
			free_names(names, count);
			return tau_error_set(TAU_ENOMEM, "out of memory");
		}
		count++;
	}
	closedir(d);
	*out = names;
	*n = count;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Inventory drivers plus registry sockets, sorted, without duplicates. */
static int probe_names(char ***out, size_t *n, const tau_agent_inventory *inv,
                       const char *host_root)
{
	char **sockets = NULL, **names;
	size_t n_sockets = 0, count = 0, total;
	int rc;

	rc = tau_agent_registry_socket_names(&sockets, &n_sockets, host_root);
	if (rc < 0)
		return rc;
	total = inv->n_csi_drivers + n_sockets;
	names = calloc(total ? total : 1, sizeof(*names));
	if (names == NULL) {
		free_names(sockets, n_sockets);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < inv->n_csi_drivers; i++) {
		names[count] = strdup(inv->csi_drivers[i].name);
		if (names[count] == NULL)
			goto nomem;
		count++;
	}
	for (size_t i = 0; i < n_sockets; i++) {
		names[count++] = sockets[i];
		sockets[i] = NULL;
	}
	free_names(sockets, n_sockets);
	sockets = NULL;
	qsort(names, count, sizeof(*names), name_cmp);
	for (size_t i = 1; i < count;) {
		if (strcmp(names[i], names[i - 1]) == 0) {
			free(names[i]);
			memmove(&names[i], &names[i + 1], (count - i - 1) * sizeof(*names));
			count--;
		} else {
			i++;
		}
	}
	*out = names;
	*n = count;
	return 0;
nomem:
	free_names(names, count);
	free_names(sockets, n_sockets);
	return tau_error_set(TAU_ENOMEM, "out of memory");
}

static bool same_names(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

int tau_agent_build(tau_agent_inventory *inv, const tau_agent_inputs *in, const char *host_root,
                    tau_agent_probe_cache *cache, bool reprobe, bool *probed)
{
	char **names = NULL;
	size_t n_names = 0;
	int rc;

	if (probed != NULL)
		*probed = false;
	if (in->node != NULL) {
		rc = tau_agent_inventory_from_node(inv, in->node);
	} else {
		tau_agent_inventory_free(inv);
		rc = tau_agent_inventory_add_problem(
		        inv, "%s", in->node_problem != NULL ? in->node_problem : "Node unknown");
	}
	if (rc == -TAU_ENOMEM)
		return rc;
	if (in->csinode_problem != NULL &&
	    tau_agent_inventory_add_problem(inv, "%s", in->csinode_problem) < 0)
		return -TAU_ENOMEM;
	if (tau_agent_inventory_apply_csinode(inv, in->csinode) == -TAU_ENOMEM)
		return -TAU_ENOMEM;
	if (in->pods_problem != NULL) {
		if (tau_agent_inventory_add_problem(inv, "%s", in->pods_problem) < 0)
			return -TAU_ENOMEM;
	} else if (in->pods != NULL &&
	           tau_agent_inventory_apply_pods(inv, in->pods) == -TAU_ENOMEM) {
		return -TAU_ENOMEM;
	}

	rc = probe_names(&names, &n_names, inv, host_root);
	if (rc < 0)
		return rc;
	if (reprobe || !cache->valid || !same_names(names, n_names, cache->names, cache->n_names)) {
		tau_agent_probe_cache_free(cache);
		tau_agent_host_probe_init(&cache->probe);
		rc = tau_agent_probe_host(&cache->probe, host_root, (const char *const *)names,
		                          n_names);
		if (rc < 0) {
			free_names(names, n_names);
			tau_agent_probe_cache_free(cache);
			return rc;
		}
		cache->names = names;
		cache->n_names = n_names;
		cache->valid = true;
		names = NULL;
		if (probed != NULL)
			*probed = true;
	} else {
		free_names(names, n_names);
	}
	rc = tau_agent_inventory_apply_host(inv, &cache->probe);
	if (rc < 0)
		return rc;
	return tau_agent_inventory_check_consistency(inv);
}
