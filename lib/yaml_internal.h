/*
 * yaml_internal.h - libyaml document helpers shared by libtau's YAML readers
 * (kubeconfig.c, kueueconfig.c); not installed.
 */
#ifndef TAU_YAML_INTERNAL_H
#define TAU_YAML_INTERNAL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "tau/error.h"

/* The value under scalar key `key` of mapping `map`; NULL when absent or `map` is no mapping. */
static inline yaml_node_t *tau_yaml_map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (map == NULL || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);

		if (k != NULL && k->type == YAML_SCALAR_NODE &&
		    strlen(key) == k->data.scalar.length &&
		    memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}

/* A plain null ("", "~", "null") or a missing node counts as absent. */
static inline bool tau_yaml_is_null(const yaml_node_t *n)
{
	const char *v;
	size_t len;

	if (n == NULL)
		return true;
	if (n->type != YAML_SCALAR_NODE)
		return false;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	return len == 0 || (len == 1 && v[0] == '~') ||
	       (len == 4 && (strncmp(v, "null", 4) == 0 || strncmp(v, "Null", 4) == 0 ||
	                     strncmp(v, "NULL", 4) == 0));
}

/* Set *out to a new NUL-terminated copy of scalar n; -TAU_ENOMEM when out of memory. */
static inline int tau_yaml_scalar_copy(char **out, const yaml_node_t *n)
{
	char *s = malloc(n->data.scalar.length + 1);

	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	memcpy(s, n->data.scalar.value, n->data.scalar.length);
	s[n->data.scalar.length] = '\0';
	*out = s;
	return 0;
}

/*
 * Load the one document of `buf` into `doc` with `parser` (both initialised here).  On
 * success both must be freed (yaml_document_delete, yaml_parser_delete); on failure nothing
 * is left to free and the error names `what`: "<what>: invalid YAML at line N: ...".
 */
static inline int tau_yaml_load(yaml_parser_t *parser, yaml_document_t *doc, const char *buf,
                                size_t len, const char *what)
{
	if (!yaml_parser_initialize(parser))
		return tau_error_set(TAU_ENOMEM, "cannot initialise the YAML parser");
	yaml_parser_set_input_string(parser, (const unsigned char *)(buf ? buf : ""), len);
	if (!yaml_parser_load(parser, doc)) {
		int rc = tau_error_set(TAU_EINVAL, "%s: invalid YAML at line %zu: %s", what,
		                       parser->problem_mark.line + 1,
		                       parser->problem ? parser->problem : "syntax error");

		yaml_parser_delete(parser);
		return rc;
	}
	return 0;
}

/* Free what a successful tau_yaml_load left. */
static inline void tau_yaml_unload(yaml_parser_t *parser, yaml_document_t *doc)
{
	yaml_document_delete(doc);
	yaml_parser_delete(parser);
}

/* Reads a loaded document from its root (NULL for an empty document) into ctx. */
typedef int (*tau_yaml_read_fn)(void *ctx, yaml_document_t *doc, yaml_node_t *root);

/*
 * Read the one document of `buf` (at most `cap` bytes, else TAU_ETOOBIG "<what> of N bytes
 * exceeds the CAP byte cap"): load it as tau_yaml_load does, hand its root to read(ctx, ...)
 * and free the document again.  Returns what read returns, or the load's error.
 */
static inline int tau_yaml_read(const char *buf, size_t len, unsigned cap, const char *what,
                                tau_yaml_read_fn read, void *ctx)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	int rc;

	if (len > cap)
		return tau_error_set(TAU_ETOOBIG, "%s of %zu bytes exceeds the %u byte cap", what,
		                     len, cap);
	if ((rc = tau_yaml_load(&parser, &doc, buf, len, what)) < 0)
		return rc;
	rc = read(ctx, &doc, yaml_document_get_root_node(&doc));
	tau_yaml_unload(&parser, &doc);
	return rc;
}

#endif /* TAU_YAML_INTERNAL_H */
