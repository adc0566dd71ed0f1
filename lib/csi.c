/*
 * csi.c - who deployed each CSI driver on a node (tau/csi.h),
 * read from the pods there.
 *
 * Two passes over the pods: the first finds every driver a pod serves (so a
 * registration directory served by an earlier pod counts as known), the
 * second records each pod's verdict (add-on or self-deployed) per driver.
 * A driver gets a verdict only when no pod contradicts it.  Input is never
 * trusted: every list read from a pod has a cap, and strings are bounded.
 */
#include "tau/csi.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Drivers one pod may serve before we stop listening to it. */
#define MAX_DRIVERS_PER_POD 8
/* Longest problem text handed to the caller (bytes, with the NUL). */
#define PROBLEM_MAX 512

const char *tau_csi_managed_by_name(tau_csi_managed_by managed_by)
{
	static const char *const names[] = {
	        [TAU_CSI_MANAGED_AKS_ADDON] = "AKSAddon",
	        [TAU_CSI_MANAGED_DEPLOYMENT] = "Deployment",
	};

	return tau_str_enum_name(names, TAU_N_ELEMENTS(names), (int)managed_by, "Unknown");
}

/* One served driver and the first pod of each verdict (names lent from the list). */
typedef struct entry {
	char *name;
	const char *addon_pod;
	const char *deployment_pod;
} entry;

typedef struct scan {
	entry drivers[TAU_CSI_MAX_DRIVERS];
	size_t n;
	tau_csi_known_fn known;
	void *known_ctx;
	tau_csi_problem_fn problem_fn;
	void *problem_ctx;
	const char *node_name;
	/* the pod being read */
	bool daemonset_pod;
	size_t visited;
	bool voting; /* second pass */
	const char *pod_name;
	tau_csi_managed_by verdict;
} scan;

static int problem(scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int problem(scan *s, const char *fmt, ...)
{
	char text[PROBLEM_MAX];
	va_list ap;

	if (s->problem_fn == NULL)
		return 0;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return s->problem_fn(s->problem_ctx, text);
}

static entry *find(scan *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->drivers[i].name, name) == 0)
			return &s->drivers[i];
	return NULL;
}

/* First pass: make sure the driver has an entry (dropped with a problem beyond the cap). */
static int add(scan *s, const char *name)
{
	if (find(s, name) != NULL)
		return 0;
	if (s->n == TAU_CSI_MAX_DRIVERS)
		return problem(s, "more than %d CSI drivers; %.200s dropped", TAU_CSI_MAX_DRIVERS,
		               name);
	s->drivers[s->n].name = strdup(name);
	if (s->drivers[s->n].name == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory for CSI drivers");
	s->n++;
	return 0;
}

/* Second pass: record the pod's verdict for a driver it serves. */
static void vote(scan *s, const char *name)
{
	entry *e = find(s, name);

	if (e == NULL)
		return;
	if (s->verdict == TAU_CSI_MANAGED_AKS_ADDON && e->addon_pod == NULL)
		e->addon_pod = s->pod_name;
	if (s->verdict == TAU_CSI_MANAGED_DEPLOYMENT && e->deployment_pod == NULL)
		e->deployment_pod = s->pod_name;
}

static int visit(scan *s, const char *driver)
{
	if (s->visited >= MAX_DRIVERS_PER_POD)
		return 0;
	s->visited++;
	if (s->voting) {
		vote(s, driver);
		return 0;
	}
	return add(s, driver);
}

static bool label_is(const cJSON *labels, const char *key, const char *value)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels, key);

	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return false;
	return value == NULL || strcasecmp(v->valuestring, value) == 0;
}

/*
 * Expand Kubernetes $(VAR) references from the container env ("$$" is a
 * literal '$'; unknown names stay as written).  Output is truncated to cap.
 */
static void expand_env(char *out, size_t cap, const char *in, const cJSON *env)
{
	size_t o = 0;

	while (*in != '\0' && o + 1 < cap) {
		if (in[0] == '$' && in[1] == '$') {
			out[o++] = '$';
			in += 2;
			continue;
		}
		if (in[0] == '$' && in[1] == '(') {
			const char *close = strchr(in + 2, ')');
			const cJSON *e;

			if (close != NULL) {
				size_t nlen = (size_t)(close - (in + 2));
				const char *val = NULL;

				cJSON_ArrayForEach(e, env)
				{
					const cJSON *n =
					        cJSON_GetObjectItemCaseSensitive(e, "name");
					const cJSON *v =
					        cJSON_GetObjectItemCaseSensitive(e, "value");

					if (cJSON_IsString(n) && cJSON_IsString(v) &&
					    strlen(n->valuestring) == nlen &&
					    memcmp(n->valuestring, in + 2, nlen) == 0)
						val = v->valuestring;
				}
				if (val != NULL) {
					while (*val != '\0' && o + 1 < cap)
						out[o++] = *val++;
					in = close + 1;
					continue;
				}
			}
		}
		out[o++] = *in++;
	}
	out[o] = '\0';
}

/* The driver directory in ".../plugins/<driver>/csi.sock", copied to out; false if none. */
static bool driver_from_registration_path(char *out, size_t cap, const char *path)
{
	const char *p = strstr(path, "/plugins/");
	const char *end;
	size_t len;

	if (p == NULL)
		return false;
	p += strlen("/plugins/");
	end = strchr(p, '/');
	if (end == NULL || end == p)
		return false;
	len = (size_t)(end - p);
	if (len >= cap)
		return false;
	memcpy(out, p, len);
	out[len] = '\0';
	return true;
}

/* Value of "--flag=value" or "--flag value" at args[i]; NULL if args[i] is not the flag. */
static const char *flag_value(const cJSON *arg, const cJSON *next, const char *flag)
{
	size_t flen = strlen(flag);
	const char *s;

	if (!cJSON_IsString(arg) || arg->valuestring == NULL)
		return NULL;
	s = arg->valuestring;
	if (strncmp(s, flag, flen) != 0)
		return NULL;
	if (s[flen] == '=')
		return s + flen + 1;
	if (s[flen] == '\0' && cJSON_IsString(next))
		return next->valuestring;
	return NULL;
}

/*
 * A registration path's directory is the driver name in the usual layout
 * (.../plugins/disk.csi.azure.com/csi.sock) but not always
 * (.../plugins/csi-nfsplugin/csi.sock).  Accept it when the driver is already
 * known, or when it has the domain-name form CSI requires of driver names.
 */
static bool plausible_driver(scan *s, const char *name)
{
	return (s->known != NULL && s->known(s->known_ctx, name)) || find(s, name) != NULL ||
	       strchr(name, '.') != NULL;
}

/* The AKS add-on and the upstream manifests name their node DaemonSets alike. */
static const char *driver_of_app_label(const char *app)
{
	static const struct {
		const char *app;
		const char *driver;
	} known[] = {
	        {"csi-azuredisk-node", "disk.csi.azure.com"},
	        {"csi-azurefile-node", "file.csi.azure.com"},
	        {"csi-blob-node", "blob.csi.azure.com"},
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(app, known[i].app) == 0)
			return known[i].driver;
	return NULL;
}

/* Visit the args of one argv array (command or args) of a container. */
static int visit_argv(scan *s, const cJSON *argv, const cJSON *env)
{
	const cJSON *a;
	size_t i = 0;

	if (!cJSON_IsArray(argv))
		return 0;
	for (a = argv->child; a != NULL && i < TAU_CSI_MAX_CONTAINER_ARGS; a = a->next, i++) {
		char expanded[TAU_CSI_MAX_NAME + 1];
		char driver[TAU_CSI_MAX_NAME + 1];
		const char *v;
		int rc;

		v = flag_value(a, a->next, "--kubelet-registration-path");
		if (v != NULL) {
			expand_env(expanded, sizeof(expanded), v, env);
			if (driver_from_registration_path(driver, sizeof(driver), expanded) &&
			    plausible_driver(s, driver)) {
				rc = visit(s, driver);
				if (rc < 0)
					return rc;
			}
			continue;
		}
		/* Controller Deployments pass --drivername too; only node pods count. */
		if (!s->daemonset_pod)
			continue;
		v = flag_value(a, a->next, "--drivername");
		if (v == NULL)
			v = flag_value(a, a->next, "--driver-name");
		if (v != NULL) {
			expand_env(expanded, sizeof(expanded), v, env);
			if (expanded[0] != '\0' && strchr(expanded, '$') == NULL) {
				rc = visit(s, expanded);
				if (rc < 0)
					return rc;
			}
		}
	}
	return 0;
}

/* Visit each CSI driver a pod serves on this node (a driver may come twice). */
static int pod_for_each_driver(scan *s, const cJSON *pod)
{
	const cJSON *owners = NULL, *containers = NULL;
	const cJSON *o, *c;
	const char *app = NULL;
	size_t nc = 0;
	int rc;

	s->daemonset_pod = false;
	s->visited = 0;
	if (tau_json_get_array(&owners, pod, "metadata.ownerReferences") == 0) {
		cJSON_ArrayForEach(o, owners)
		{
			const char *kind = NULL;

			if (tau_json_get_string(&kind, o, "kind") == 0 &&
			    strcmp(kind, "DaemonSet") == 0)
				s->daemonset_pod = true;
		}
	}
	if (s->daemonset_pod) {
		const cJSON *labels = tau_json_find(pod, "metadata.labels");
		const cJSON *v = cJSON_IsObject(labels)
		                         ? cJSON_GetObjectItemCaseSensitive(labels, "app")
		                         : NULL;

		if (cJSON_IsString(v) && v->valuestring != NULL)
			app = driver_of_app_label(v->valuestring);
		if (app != NULL && (rc = visit(s, app)) < 0)
			return rc;
	}
	if (tau_json_get_array(&containers, pod, "spec.containers") < 0)
		return 0;
	for (c = containers->child; c != NULL && nc < TAU_CSI_MAX_POD_CONTAINERS;
	     c = c->next, nc++) {
		const cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env");

		if (!cJSON_IsObject(c))
			continue;
		if (!cJSON_IsArray(env))
			env = NULL;
		rc = visit_argv(s, cJSON_GetObjectItemCaseSensitive(c, "command"), env);
		if (rc == 0)
			rc = visit_argv(s, cJSON_GetObjectItemCaseSensitive(c, "args"), env);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Does any container arg say --user-agent-suffix=<prefix>...? */
static bool pod_has_user_agent_suffix(const cJSON *pod, const char *prefix, bool exact)
{
	const cJSON *containers = NULL;
	const cJSON *c;

	if (tau_json_get_array(&containers, pod, "spec.containers") < 0)
		return false;
	cJSON_ArrayForEach(c, containers)
	{
		static const char *const lists[] = {"command", "args"};

		for (size_t l = 0; l < 2; l++) {
			const cJSON *argv = cJSON_GetObjectItemCaseSensitive(c, lists[l]);
			const cJSON *a;
			size_t i = 0;

			if (!cJSON_IsArray(argv))
				continue;
			for (a = argv->child; a != NULL && i < TAU_CSI_MAX_CONTAINER_ARGS;
			     a = a->next, i++) {
				const char *v = flag_value(a, a->next, "--user-agent-suffix");

				if (v == NULL)
					continue;
				if (exact ? strcmp(v, prefix) == 0
				          : strncmp(v, prefix, strlen(prefix)) == 0)
					return true;
			}
		}
	}
	return false;
}

/* Who deployed this pod, from its labels and args; *conflict when both marks are there. */
static tau_csi_managed_by classify_pod(const cJSON *pod, bool *conflict)
{
	const cJSON *labels = tau_json_find(pod, "metadata.labels");
	bool addon = false, deployment = false;

	if (!cJSON_IsObject(labels))
		labels = NULL;
	if (labels != NULL) {
		addon = label_is(labels, "kubernetes.azure.com/managedby", "aks") ||
		        label_is(labels, "addonmanager.kubernetes.io/mode", NULL) ||
		        label_is(labels, "kubernetes.io/cluster-service", "true") ||
		        label_is(labels, "app.kubernetes.io/managed-by", "aks");
		deployment = (label_is(labels, "app.kubernetes.io/managed-by", NULL) &&
		              !label_is(labels, "app.kubernetes.io/managed-by", "aks")) ||
		             label_is(labels, "helm.sh/chart", NULL);
	}
	if (pod_has_user_agent_suffix(pod, "AKS", true))
		addon = true;
	if (pod_has_user_agent_suffix(pod, "OSS-", false))
		deployment = true;
	*conflict = addon && deployment;
	if (*conflict || (!addon && !deployment))
		return TAU_CSI_MANAGED_UNKNOWN;
	return addon ? TAU_CSI_MANAGED_AKS_ADDON : TAU_CSI_MANAGED_DEPLOYMENT;
}

/* Is this pod one to look at?  A pod of another node adds a problem (first pass). */
static bool pod_counts(scan *s, const cJSON *pod, int *rc)
{
	const char *node = NULL, *phase = NULL, *name = NULL;

	*rc = 0;
	if (!cJSON_IsObject(pod))
		return false;
	if (tau_json_get_string(&node, pod, "spec.nodeName") < 0)
		return false; /* not scheduled: not on this node */
	if (s->node_name != NULL && strcmp(node, s->node_name) != 0) {
		if (!s->voting) {
			(void)tau_json_get_string(&name, pod, "metadata.name");
			*rc = problem(s, "pod %.128s runs on node %.128s, not on %s; ignored",
			              name != NULL ? name : "(unnamed)", node, s->node_name);
		}
		return false;
	}
	if (tau_json_get_string(&phase, pod, "status.phase") == 0 &&
	    (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return false;
	return true;
}

static int read_pods(scan *s, const cJSON *items)
{
	const cJSON *pod;
	size_t n = 0;
	int rc;

	/* Pass 1: an entry for every served driver (no insertions after this). */
	for (pod = items->child; pod != NULL; pod = pod->next) {
		if (n++ == TAU_CSI_MAX_PODS) {
			rc = problem(s, "more than %d pods on this node; the rest are ignored",
			             TAU_CSI_MAX_PODS);
			if (rc < 0)
				return rc;
			break;
		}
		if (!pod_counts(s, pod, &rc)) {
			if (rc < 0)
				return rc;
			continue;
		}
		rc = pod_for_each_driver(s, pod);
		if (rc < 0)
			return rc;
	}

	/* Pass 2: each pod's verdict for the drivers it serves. */
	s->voting = true;
	n = 0;
	for (pod = items->child; pod != NULL && n < TAU_CSI_MAX_PODS; pod = pod->next, n++) {
		bool conflict = false;

		if (!pod_counts(s, pod, &rc))
			continue;
		s->pod_name = NULL;
		(void)tau_json_get_string(&s->pod_name, pod, "metadata.name");
		if (s->pod_name == NULL)
			s->pod_name = "(unnamed)";
		s->verdict = classify_pod(pod, &conflict);
		if (conflict) {
			rc = problem(
			        s,
			        "pod %.128s carries both AKS add-on and self-deployment marks; "
			        "who deployed it is unknown",
			        s->pod_name);
			if (rc < 0)
				return rc;
		}
		rc = pod_for_each_driver(s, pod);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int tau_csi_origins_from_pods(tau_csi_origin **out, size_t *n_out, const cJSON *pod_list,
                              const char *node_name, tau_csi_known_fn known, void *known_ctx,
                              tau_csi_problem_fn problem_fn, void *problem_ctx)
{
	const cJSON *items = NULL;
	tau_csi_origin *origins = NULL;
	scan *s;
	int rc;

	if (out == NULL || n_out == NULL)
		return tau_error_set(TAU_EINVAL, "no output for the CSI driver origins");
	*out = NULL;
	*n_out = 0;
	if (cJSON_IsArray(pod_list)) {
		items = pod_list;
	} else if (cJSON_IsObject(pod_list)) {
		rc = tau_json_get_array(&items, pod_list, "items");
		if (rc == -TAU_ENOTFOUND)
			return 0;
		if (rc < 0)
			items = NULL;
	}
	if (items == NULL)
		return tau_error_set(TAU_EINVAL, "pod list is malformed");

	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory reading pods");
	s->known = known;
	s->known_ctx = known_ctx;
	s->problem_fn = problem_fn;
	s->problem_ctx = problem_ctx;
	s->node_name = node_name;
	rc = read_pods(s, items);
	if (rc == 0 && s->n > 0) {
		origins = calloc(s->n, sizeof(*origins));
		if (origins == NULL)
			rc = tau_error_set(TAU_ENOMEM, "out of memory for CSI drivers");
	}
	for (size_t i = 0; rc == 0 && i < s->n; i++) {
		entry *e = &s->drivers[i];

		origins[i].managed_by = TAU_CSI_MANAGED_UNKNOWN;
		if (e->addon_pod != NULL && e->deployment_pod != NULL)
			rc = problem(
			        s,
			        "CSI driver %s: pod %.128s is the AKS add-on but pod %.128s is "
			        "self-deployed; who deployed it is unknown",
			        e->name, e->addon_pod, e->deployment_pod);
		else if (e->addon_pod != NULL)
			origins[i].managed_by = TAU_CSI_MANAGED_AKS_ADDON;
		else if (e->deployment_pod != NULL)
			origins[i].managed_by = TAU_CSI_MANAGED_DEPLOYMENT;
		origins[i].name = e->name;
		e->name = NULL;
	}
	if (rc < 0) {
		tau_csi_origins_free(origins, s->n);
		origins = NULL;
	}
	for (size_t i = 0; i < s->n; i++)
		free(s->drivers[i].name);
	if (rc == 0) {
		*out = origins;
		*n_out = s->n;
	}
	free(s);
	return rc;
}

const tau_csi_origin *tau_csi_origins_find(const tau_csi_origin *origins, size_t n,
                                           const char *name)
{
	for (size_t i = 0; origins != NULL && name != NULL && i < n; i++)
		if (strcmp(origins[i].name, name) == 0)
			return &origins[i];
	return NULL;
}

void tau_csi_origins_free(tau_csi_origin *origins, size_t n)
{
	if (origins == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(origins[i].name);
	free(origins);
}
