/*
 * kueueconfig.c - read the DRA parts of Kueue's manager Configuration.
 *
 * The one idea: the document is Kueue's, not ours, so everything but `apiVersion`, `kind`,
 * `featureGates.DynamicResourceAllocation` and `resources.deviceClassMappings` is ignored,
 * and what is read is refused whole when it is malformed: a budget that counts DRA devices
 * through these mappings must fail closed, never count from half a mapping.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/kueueconfig.h"

#include "tau/error.h"
#include "yaml_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WHERE "kueue configuration"

void tau_kueue_config_free(tau_kueue_config *cfg)
{
	if (cfg == NULL)
		return;
	for (size_t i = 0; i < cfg->n_mappings; i++) {
		for (size_t j = 0; j < cfg->mappings[i].n_device_classes; j++)
			free(cfg->mappings[i].device_classes[j]);
		free(cfg->mappings[i].device_classes);
		free(cfg->mappings[i].name);
	}
	free(cfg->mappings);
	free(cfg);
}

const tau_kueue_dra_mapping *tau_kueue_config_mapping_for(const tau_kueue_config *cfg,
                                                          const char *device_class)
{
	if (cfg == NULL || device_class == NULL)
		return NULL;
	for (size_t i = 0; i < cfg->n_mappings; i++)
		for (size_t j = 0; j < cfg->mappings[i].n_device_classes; j++)
			if (strcmp(cfg->mappings[i].device_classes[j], device_class) == 0)
				return &cfg->mappings[i];
	return NULL;
}

/* A scalar as a new string; `what` names the field in the error. */
static int scalar_dup(char **out, const yaml_node_t *n, const char *what)
{
	if (n == NULL || n->type != YAML_SCALAR_NODE || tau_yaml_is_null(n))
		return tau_error_set(TAU_EINVAL, WHERE ": %s must be a string", what);
	if (n->data.scalar.length == 0)
		return tau_error_set(TAU_EINVAL, WHERE ": %s must not be empty", what);
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL)
		return tau_error_set(TAU_EINVAL, WHERE ": %s holds a NUL byte", what);
	return tau_yaml_scalar_copy(out, n);
}

static bool scalar_is(const yaml_node_t *n, const char *want)
{
	return n != NULL && n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(want) &&
	       memcmp(n->data.scalar.value, want, n->data.scalar.length) == 0;
}

static int read_header(yaml_document_t *doc, yaml_node_t *root)
{
	yaml_node_t *kind = tau_yaml_map_get(doc, root, "kind");
	yaml_node_t *api = tau_yaml_map_get(doc, root, "apiVersion");

	if (!scalar_is(kind, "Configuration"))
		return tau_error_set(TAU_EINVAL, WHERE ": kind must be Configuration");
	if (!scalar_is(api, "config.kueue.x-k8s.io/v1beta1") &&
	    !scalar_is(api, "config.kueue.x-k8s.io/v1beta2"))
		return tau_error_set(TAU_EINVAL,
		                     WHERE ": apiVersion must be config.kueue.x-k8s.io/v1beta1 or "
		                           "config.kueue.x-k8s.io/v1beta2");
	return 0;
}

/* featureGates is a map of gate name to a YAML boolean. */
static int read_gate(int *out, yaml_document_t *doc, yaml_node_t *root)
{
	yaml_node_t *gates = tau_yaml_map_get(doc, root, "featureGates");
	yaml_node_t *g;
	const char *v;

	*out = -1;
	if (tau_yaml_is_null(gates))
		return 0;
	if (gates->type != YAML_MAPPING_NODE)
		return tau_error_set(TAU_EINVAL, WHERE ": featureGates must be a map");
	g = tau_yaml_map_get(doc, gates, "DynamicResourceAllocation");
	if (g == NULL)
		return 0;
	if (g->type != YAML_SCALAR_NODE || g->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		goto bad;
	v = (const char *)g->data.scalar.value;
	if (g->data.scalar.length == 4 && strncasecmp(v, "true", 4) == 0)
		*out = 1;
	else if (g->data.scalar.length == 5 && strncasecmp(v, "false", 5) == 0)
		*out = 0;
	else
		goto bad;
	return 0;
bad:
	return tau_error_set(TAU_EINVAL, WHERE
	                     ": featureGates.DynamicResourceAllocation must be true or false");
}

static int read_mapping(tau_kueue_dra_mapping *m, yaml_document_t *doc, yaml_node_t *entry,
                        size_t index)
{
	char what[96];
	yaml_node_t *classes;
	size_t n;
	int rc;

	if (entry == NULL || entry->type != YAML_MAPPING_NODE)
		return tau_error_set(TAU_EINVAL,
		                     WHERE ": resources.deviceClassMappings[%zu] must be "
		                           "a map",
		                     index);
	snprintf(what, sizeof(what), "resources.deviceClassMappings[%zu].name", index);
	if ((rc = scalar_dup(&m->name, tau_yaml_map_get(doc, entry, "name"), what)) < 0)
		return rc;
	classes = tau_yaml_map_get(doc, entry, "deviceClassNames");
	if (classes == NULL || classes->type != YAML_SEQUENCE_NODE ||
	    classes->data.sequence.items.top == classes->data.sequence.items.start)
		return tau_error_set(TAU_EINVAL,
		                     WHERE ": resources.deviceClassMappings[%zu].deviceClassNames "
		                           "must list at least one DeviceClass",
		                     index);
	n = (size_t)(classes->data.sequence.items.top - classes->data.sequence.items.start);
	if (n > TAU_KUEUE_DRA_CLASSES_MAX)
		return tau_error_set(TAU_EINVAL,
		                     WHERE ": resources.deviceClassMappings[%zu].deviceClassNames "
		                           "lists %zu classes, more than %u",
		                     index, n, TAU_KUEUE_DRA_CLASSES_MAX);
	m->device_classes = calloc(n, sizeof(*m->device_classes));
	if (m->device_classes == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (size_t j = 0; j < n; j++) {
		yaml_node_t *c = yaml_document_get_node(doc, classes->data.sequence.items.start[j]);

		snprintf(what, sizeof(what),
		         "resources.deviceClassMappings[%zu].deviceClassNames[%zu]", index, j);
		if ((rc = scalar_dup(&m->device_classes[j], c, what)) < 0)
			return rc;
		m->n_device_classes = j + 1;
	}
	return 0;
}

/* -TAU_EINVAL when class j of mapping i was already listed before it. */
static int refuse_earlier_copy(const tau_kueue_config *cfg, size_t i, size_t j)
{
	const char *c = cfg->mappings[i].device_classes[j];

	for (size_t k = 0; k <= i; k++) {
		size_t end = k == i ? j : cfg->mappings[k].n_device_classes;

		for (size_t l = 0; l < end; l++)
			if (strcmp(cfg->mappings[k].device_classes[l], c) == 0)
				return tau_error_set(
				        TAU_EINVAL,
				        WHERE ": DeviceClass %.253s is listed twice in "
				              "resources.deviceClassMappings (%.253s and "
				              "%.253s)",
				        c, cfg->mappings[k].name, cfg->mappings[i].name);
	}
	return 0;
}

static int read_mappings(tau_kueue_config *cfg, yaml_document_t *doc, yaml_node_t *root)
{
	yaml_node_t *res = tau_yaml_map_get(doc, root, "resources");
	yaml_node_t *seq;
	size_t n;
	int rc;

	if (tau_yaml_is_null(res))
		return 0;
	if (res->type != YAML_MAPPING_NODE)
		return tau_error_set(TAU_EINVAL, WHERE ": resources must be a map");
	seq = tau_yaml_map_get(doc, res, "deviceClassMappings");
	if (tau_yaml_is_null(seq))
		return 0;
	if (seq->type != YAML_SEQUENCE_NODE)
		return tau_error_set(TAU_EINVAL,
		                     WHERE ": resources.deviceClassMappings must be a list");
	n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	if (n > TAU_KUEUE_DRA_MAPPINGS_MAX)
		return tau_error_set(TAU_EINVAL,
		                     WHERE ": resources.deviceClassMappings has %zu entries, more "
		                           "than %u",
		                     n, TAU_KUEUE_DRA_MAPPINGS_MAX);
	if (n == 0)
		return 0;
	cfg->mappings = calloc(n, sizeof(*cfg->mappings));
	if (cfg->mappings == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = yaml_document_get_node(doc, seq->data.sequence.items.start[i]);

		cfg->n_mappings = i + 1;
		if ((rc = read_mapping(&cfg->mappings[i], doc, e, i)) < 0)
			return rc;
	}
	/* A class in two mappings would be counted under two names: refuse the document. */
	for (size_t i = 0; i < cfg->n_mappings; i++)
		for (size_t j = 0; j < cfg->mappings[i].n_device_classes; j++)
			if ((rc = refuse_earlier_copy(cfg, i, j)) < 0)
				return rc;
	return 0;
}

static int read_document(void *ctx, yaml_document_t *doc, yaml_node_t *root)
{
	tau_kueue_config *cfg = ctx;
	int rc;

	if (root == NULL || root->type != YAML_MAPPING_NODE)
		return tau_error_set(TAU_EINVAL, WHERE ": the document is not a map");
	if ((rc = read_header(doc, root)) < 0 || (rc = read_gate(&cfg->dra_gate, doc, root)) < 0 ||
	    (rc = read_mappings(cfg, doc, root)) < 0)
		return rc;
	return 0;
}

int tau_kueue_config_parse(tau_kueue_config **out, const char *buf, size_t len)
{
	tau_kueue_config *cfg = calloc(1, sizeof(*cfg));
	int rc;

	if (cfg == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cfg->dra_gate = -1;
	rc = tau_yaml_read(buf, len, TAU_KUEUE_CONFIG_MAX_BYTES, WHERE, read_document, cfg);
	if (rc < 0) {
		tau_kueue_config_free(cfg);
		return rc;
	}
	*out = cfg;
	return 0;
}
