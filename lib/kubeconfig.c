/*
 * kubeconfig.c - parse kubeconfig YAML, merge files, resolve a context.
 *
 * The one idea: the YAML is read once into small arrays of named clusters,
 * users and contexts with every path already made absolute, so merging is
 * "append names not yet present" and resolving is three lookups by name.
 * Nothing here performs I/O except tau_kubeconfig_load_file and
 * tau_kube_config_read_files, which are thin wrappers at the edges.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/kubeconfig.h"

#include "kube_internal.h"
#include "yaml_internal.h"
#include "tau/base64.h"
#include "tau/error.h"
#include "tau/mem.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

typedef struct kc_cluster {
	char *name;
	char *server;
	char *ca_file;
	char *ca_data; /* base64 as written */
	char *tls_server_name;
	bool insecure;
} kc_cluster;

typedef struct kc_user {
	char *name;
	char *token;
	char *token_file;
	char *cert_file;
	char *cert_data;
	char *key_file;
	char *key_data;
	char *username;
	char *password;
	bool has_exec;
	bool has_auth_provider;
} kc_user;

typedef struct kc_context {
	char *name;
	char *cluster;
	char *user;
	char *namespace;
} kc_context;

struct tau_kubeconfig {
	kc_cluster *clusters;
	size_t n_clusters;
	kc_user *users;
	size_t n_users;
	kc_context *contexts;
	size_t n_contexts;
	char *current_context;
};

/* Hard caps on what one document may declare. */
#define KC_MAX_ENTRIES 4096

static void cluster_clear(kc_cluster *c)
{
	tau_free_many(c->name, c->server, c->ca_file, c->ca_data, c->tls_server_name);
}

static void user_clear(kc_user *u)
{
	tau_free_many(u->name, u->token, u->token_file, u->cert_file, u->cert_data, u->key_file,
	              u->key_data, u->username, u->password);
}

static void context_clear(kc_context *c)
{
	tau_free_many(c->name, c->cluster, c->user, c->namespace);
}

void tau_kubeconfig_free(tau_kubeconfig *kc)
{
	if (kc == NULL)
		return;
	for (size_t i = 0; i < kc->n_clusters; i++)
		cluster_clear(&kc->clusters[i]);
	for (size_t i = 0; i < kc->n_users; i++)
		user_clear(&kc->users[i]);
	for (size_t i = 0; i < kc->n_contexts; i++)
		context_clear(&kc->contexts[i]);
	tau_free_many(kc->clusters, kc->users, kc->contexts, kc->current_context);
	free(kc);
}

/* ---- YAML document helpers (tau_yaml_map_get, tau_yaml_is_null: yaml_internal.h) ---- */

/* Copy scalar `key` of `map` into *out (NULL when absent). */
static int get_str(char **out, yaml_document_t *doc, yaml_node_t *map, const char *key,
                   const char *where)
{
	yaml_node_t *n = tau_yaml_map_get(doc, map, key);

	*out = NULL;
	if (tau_yaml_is_null(n))
		return 0;
	if (n->type != YAML_SCALAR_NODE)
		return tau_error_set(TAU_EINVAL, "kubeconfig: %s: \"%s\" must be a string", where,
		                     key);
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL)
		return tau_error_set(TAU_EINVAL, "kubeconfig: %s: \"%s\" holds a NUL byte", where,
		                     key);
	return tau_yaml_scalar_copy(out, n);
}

static int get_bool(bool *out, yaml_document_t *doc, yaml_node_t *map, const char *key,
                    const char *where)
{
	char *s = NULL;
	int rc = get_str(&s, doc, map, key, where);

	*out = false;
	if (rc < 0 || s == NULL)
		return rc;
	if (strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0 || strcasecmp(s, "on") == 0)
		*out = true;
	else if (strcasecmp(s, "false") == 0 || strcasecmp(s, "no") == 0 ||
	         strcasecmp(s, "off") == 0)
		*out = false;
	else
		rc = tau_error_set(TAU_EINVAL,
		                   "kubeconfig: %s: \"%s\" must be true or false, not %.40s", where,
		                   key, s);
	free(s);
	return rc;
}

/* Make a path absolute against dir (in place). */
static int absolutize(char **path, const char *dir)
{
	char *joined;
	size_t n;

	if (*path == NULL || dir == NULL || (*path)[0] == '/' || (*path)[0] == '\0')
		return 0;
	n = strlen(dir) + strlen(*path) + 2;
	joined = malloc(n);
	if (joined == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	snprintf(joined, n, "%s/%s", dir, *path);
	free(*path);
	*path = joined;
	return 0;
}

/* Walk a sequence of {name: X, <field>: {...}}, calling fn for each entry. */
typedef int (*entry_fn)(tau_kubeconfig *kc, yaml_document_t *doc, const char *name,
                        yaml_node_t *body, const char *dir);

static int walk_list(tau_kubeconfig *kc, yaml_document_t *doc, yaml_node_t *root, const char *list,
                     const char *field, entry_fn fn, const char *dir)
{
	yaml_node_t *seq = tau_yaml_map_get(doc, root, list);
	size_t count = 0;

	if (tau_yaml_is_null(seq))
		return 0;
	if (seq->type != YAML_SEQUENCE_NODE)
		return tau_error_set(TAU_EINVAL, "kubeconfig: \"%s\" must be a list", list);
	for (yaml_node_item_t *it = seq->data.sequence.items.start;
	     it < seq->data.sequence.items.top; it++) {
		yaml_node_t *entry = yaml_document_get_node(doc, *it);
		char where[96];
		char *name = NULL;
		int rc;

		if (++count > KC_MAX_ENTRIES)
			return tau_error_set(TAU_ETOOBIG, "kubeconfig: more than %d %s",
			                     KC_MAX_ENTRIES, list);
		snprintf(where, sizeof(where), "%s[%zu]", list, count - 1);
		if (entry == NULL || entry->type != YAML_MAPPING_NODE)
			return tau_error_set(TAU_EINVAL, "kubeconfig: %s must be a mapping", where);
		rc = get_str(&name, doc, entry, "name", where);
		if (rc < 0)
			return rc;
		if (name == NULL || name[0] == '\0') {
			free(name);
			return tau_error_set(TAU_EINVAL, "kubeconfig: %s has no name", where);
		}
		rc = fn(kc, doc, name, tau_yaml_map_get(doc, entry, field), dir);
		free(name);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static bool has_cluster(const tau_kubeconfig *kc, const char *name)
{
	for (size_t i = 0; i < kc->n_clusters; i++)
		if (strcmp(kc->clusters[i].name, name) == 0)
			return true;
	return false;
}

static bool has_user(const tau_kubeconfig *kc, const char *name)
{
	for (size_t i = 0; i < kc->n_users; i++)
		if (strcmp(kc->users[i].name, name) == 0)
			return true;
	return false;
}

static bool has_context(const tau_kubeconfig *kc, const char *name)
{
	for (size_t i = 0; i < kc->n_contexts; i++)
		if (strcmp(kc->contexts[i].name, name) == 0)
			return true;
	return false;
}

/* Grow an array of `size`-byte entries by one; @return pointer to the new zeroed slot. */
static void *grow(void **arr, size_t *n, size_t size)
{
	void *p;

	if (*n >= KC_MAX_ENTRIES)
		return NULL;
	p = realloc(*arr, (*n + 1) * size);
	if (p == NULL)
		return NULL;
	*arr = p;
	memset((char *)p + *n * size, 0, size);
	return (char *)p + (*n)++ * size;
}

static int on_cluster(tau_kubeconfig *kc, yaml_document_t *doc, const char *name, yaml_node_t *b,
                      const char *dir)
{
	char where[320];
	kc_cluster c = {0};
	kc_cluster *slot;
	int rc;

	snprintf(where, sizeof(where), "cluster \"%.256s\"", name);
	if (has_cluster(kc, name)) /* first definition wins, within a file too */
		return 0;
	if (b != NULL && b->type != YAML_MAPPING_NODE && !tau_yaml_is_null(b))
		return tau_error_set(TAU_EINVAL, "kubeconfig: %s: \"cluster\" must be a mapping",
		                     where);
	if ((rc = get_str(&c.server, doc, b, "server", where)) < 0 ||
	    (rc = get_str(&c.ca_file, doc, b, "certificate-authority", where)) < 0 ||
	    (rc = get_str(&c.ca_data, doc, b, "certificate-authority-data", where)) < 0 ||
	    (rc = get_str(&c.tls_server_name, doc, b, "tls-server-name", where)) < 0 ||
	    (rc = get_bool(&c.insecure, doc, b, "insecure-skip-tls-verify", where)) < 0 ||
	    (rc = absolutize(&c.ca_file, dir)) < 0)
		goto fail;
	c.name = tau_kube_strdup(name);
	slot = c.name ? grow((void **)&kc->clusters, &kc->n_clusters, sizeof(*slot)) : NULL;
	if (slot == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "kubeconfig: too many clusters or out of memory");
		goto fail;
	}
	*slot = c;
	return 0;
fail:
	cluster_clear(&c);
	return rc;
}

static int on_user(tau_kubeconfig *kc, yaml_document_t *doc, const char *name, yaml_node_t *b,
                   const char *dir)
{
	char where[320];
	kc_user u = {0};
	kc_user *slot;
	int rc;

	snprintf(where, sizeof(where), "user \"%.256s\"", name);
	if (has_user(kc, name))
		return 0;
	if (b != NULL && b->type != YAML_MAPPING_NODE && !tau_yaml_is_null(b))
		return tau_error_set(TAU_EINVAL, "kubeconfig: %s: \"user\" must be a mapping",
		                     where);
	if ((rc = get_str(&u.token, doc, b, "token", where)) < 0 ||
	    (rc = get_str(&u.token_file, doc, b, "tokenFile", where)) < 0 ||
	    (rc = get_str(&u.cert_file, doc, b, "client-certificate", where)) < 0 ||
	    (rc = get_str(&u.cert_data, doc, b, "client-certificate-data", where)) < 0 ||
	    (rc = get_str(&u.key_file, doc, b, "client-key", where)) < 0 ||
	    (rc = get_str(&u.key_data, doc, b, "client-key-data", where)) < 0 ||
	    (rc = get_str(&u.username, doc, b, "username", where)) < 0 ||
	    (rc = get_str(&u.password, doc, b, "password", where)) < 0 ||
	    (rc = absolutize(&u.token_file, dir)) < 0 || (rc = absolutize(&u.cert_file, dir)) < 0 ||
	    (rc = absolutize(&u.key_file, dir)) < 0)
		goto fail;
	u.has_exec = !tau_yaml_is_null(tau_yaml_map_get(doc, b, "exec"));
	u.has_auth_provider = !tau_yaml_is_null(tau_yaml_map_get(doc, b, "auth-provider"));
	u.name = tau_kube_strdup(name);
	slot = u.name ? grow((void **)&kc->users, &kc->n_users, sizeof(*slot)) : NULL;
	if (slot == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "kubeconfig: too many users or out of memory");
		goto fail;
	}
	*slot = u;
	return 0;
fail:
	user_clear(&u);
	return rc;
}

static int on_context(tau_kubeconfig *kc, yaml_document_t *doc, const char *name, yaml_node_t *b,
                      const char *dir)
{
	char where[320];
	kc_context c = {0};
	kc_context *slot;
	int rc;

	(void)dir;
	snprintf(where, sizeof(where), "context \"%.256s\"", name);
	if (has_context(kc, name))
		return 0;
	if (b != NULL && b->type != YAML_MAPPING_NODE && !tau_yaml_is_null(b))
		return tau_error_set(TAU_EINVAL, "kubeconfig: %s: \"context\" must be a mapping",
		                     where);
	if ((rc = get_str(&c.cluster, doc, b, "cluster", where)) < 0 ||
	    (rc = get_str(&c.user, doc, b, "user", where)) < 0 ||
	    (rc = get_str(&c.namespace, doc, b, "namespace", where)) < 0)
		goto fail;
	c.name = tau_kube_strdup(name);
	slot = c.name ? grow((void **)&kc->contexts, &kc->n_contexts, sizeof(*slot)) : NULL;
	if (slot == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "kubeconfig: too many contexts or out of memory");
		goto fail;
	}
	*slot = c;
	return 0;
fail:
	context_clear(&c);
	return rc;
}

/* What tau_kubeconfig_parse hands tau_yaml_read: the document being filled and its folder. */
typedef struct kc_read {
	tau_kubeconfig *kc;
	const char *dir;
} kc_read;

static int read_document(void *ctx, yaml_document_t *doc, yaml_node_t *root)
{
	kc_read *r = ctx;
	int rc;

	if (root != NULL && !tau_yaml_is_null(root) && root->type != YAML_MAPPING_NODE)
		return tau_error_set(TAU_EINVAL, "kubeconfig: the document is not a mapping");
	/* An empty document is a valid, empty kubeconfig. */
	if (root == NULL || root->type != YAML_MAPPING_NODE)
		return 0;
	if ((rc = walk_list(r->kc, doc, root, "clusters", "cluster", on_cluster, r->dir)) < 0 ||
	    (rc = walk_list(r->kc, doc, root, "users", "user", on_user, r->dir)) < 0 ||
	    (rc = walk_list(r->kc, doc, root, "contexts", "context", on_context, r->dir)) < 0 ||
	    (rc = get_str(&r->kc->current_context, doc, root, "current-context", "top level")) < 0)
		return rc;
	return 0;
}

int tau_kubeconfig_parse(tau_kubeconfig **out, const char *buf, size_t len, const char *dir)
{
	kc_read r = {.kc = calloc(1, sizeof(*r.kc)), .dir = dir};
	int rc;

	if (r.kc == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	rc = tau_yaml_read(buf, len, TAU_KUBECONFIG_MAX_BYTES, "kubeconfig", read_document, &r);
	if (rc < 0) {
		tau_kubeconfig_free(r.kc);
		return rc;
	}
	*out = r.kc;
	return 0;
}

int tau_kubeconfig_load_file(tau_kubeconfig **out, const char *path)
{
	char *buf = NULL, *dir = NULL, *slash;
	size_t len = 0;
	int rc;

	rc = tau_file_read(&buf, &len, path, TAU_KUBECONFIG_MAX_BYTES, "kubeconfig");
	if (rc < 0)
		return rc;
	dir = tau_kube_strdup(path);
	if (dir == NULL) {
		free(buf);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	slash = strrchr(dir, '/');
	if (slash == NULL) {
		free(dir);
		dir = tau_kube_strdup(".");
	} else if (slash == dir) {
		slash[1] = '\0';
	} else {
		*slash = '\0';
	}
	rc = dir ? tau_kubeconfig_parse(out, buf, len, dir)
	         : tau_error_set(TAU_ENOMEM, "out of memory");
	if (rc < 0 && rc != -TAU_ENOMEM)
		tau_error_wrap("%s", path);
	free(dir);
	free(buf);
	return rc;
}

#define DUP_OR_FAIL(dst, src)                                                                      \
	do {                                                                                       \
		if ((src) != NULL && ((dst) = tau_kube_strdup(src)) == NULL)                       \
			goto nomem;                                                                \
	} while (0)

int tau_kubeconfig_merge(tau_kubeconfig *into, const tau_kubeconfig *from)
{
	for (size_t i = 0; i < from->n_clusters; i++) {
		const kc_cluster *s = &from->clusters[i];
		kc_cluster *d;

		if (has_cluster(into, s->name))
			continue;
		d = grow((void **)&into->clusters, &into->n_clusters, sizeof(*d));
		if (d == NULL)
			goto nomem;
		d->insecure = s->insecure;
		DUP_OR_FAIL(d->name, s->name);
		DUP_OR_FAIL(d->server, s->server);
		DUP_OR_FAIL(d->ca_file, s->ca_file);
		DUP_OR_FAIL(d->ca_data, s->ca_data);
		DUP_OR_FAIL(d->tls_server_name, s->tls_server_name);
	}
	for (size_t i = 0; i < from->n_users; i++) {
		const kc_user *s = &from->users[i];
		kc_user *d;

		if (has_user(into, s->name))
			continue;
		d = grow((void **)&into->users, &into->n_users, sizeof(*d));
		if (d == NULL)
			goto nomem;
		d->has_exec = s->has_exec;
		d->has_auth_provider = s->has_auth_provider;
		DUP_OR_FAIL(d->name, s->name);
		DUP_OR_FAIL(d->token, s->token);
		DUP_OR_FAIL(d->token_file, s->token_file);
		DUP_OR_FAIL(d->cert_file, s->cert_file);
		DUP_OR_FAIL(d->cert_data, s->cert_data);
		DUP_OR_FAIL(d->key_file, s->key_file);
		DUP_OR_FAIL(d->key_data, s->key_data);
		DUP_OR_FAIL(d->username, s->username);
		DUP_OR_FAIL(d->password, s->password);
	}
	for (size_t i = 0; i < from->n_contexts; i++) {
		const kc_context *s = &from->contexts[i];
		kc_context *d;

		if (has_context(into, s->name))
			continue;
		d = grow((void **)&into->contexts, &into->n_contexts, sizeof(*d));
		if (d == NULL)
			goto nomem;
		DUP_OR_FAIL(d->name, s->name);
		DUP_OR_FAIL(d->cluster, s->cluster);
		DUP_OR_FAIL(d->user, s->user);
		DUP_OR_FAIL(d->namespace, s->namespace);
	}
	if ((into->current_context == NULL || into->current_context[0] == '\0') &&
	    from->current_context != NULL && from->current_context[0] != '\0') {
		free(into->current_context);
		into->current_context = NULL;
		DUP_OR_FAIL(into->current_context, from->current_context);
	}
	return 0;
nomem:
	/* A half-copied entry is still consistent (NULL fields); the caller frees `into`. */
	return tau_error_set(TAU_ENOMEM, "out of memory merging kubeconfig files");
}

const char *tau_kubeconfig_current_context(const tau_kubeconfig *kc)
{
	if (kc->current_context == NULL || kc->current_context[0] == '\0')
		return NULL;
	return kc->current_context;
}

/* ---- base64 (standard alphabet; whitespace ignored) ---- */

static int b64_decode(unsigned char **out, size_t *out_len, const char *in, const char *what)
{
	size_t n = strlen(in), o = 0;
	unsigned char *buf = malloc(n / 4 * 3 + 4);
	uint32_t acc = 0;
	int bits = 0, pad = 0;

	if (buf == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)in[i];
		int v;

		if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
			continue;
		if (ch == '=') {
			pad++;
			continue;
		}
		v = tau_base64_value(ch, false);
		if (v < 0 || pad > 0) {
			free(buf);
			return tau_error_set(TAU_EINVAL,
			                     "kubeconfig: %s is not valid base64 (offset %zu)",
			                     what, i);
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (unsigned char)(acc >> bits);
		}
	}
	if (pad > 2 || bits >= 6) {
		free(buf);
		return tau_error_set(TAU_EINVAL, "kubeconfig: %s is not valid base64 (length)",
		                     what);
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return 0;
}

int tau_kubeconfig_resolve(tau_kube_config **out, const tau_kubeconfig *kc, const char *context)
{
	const kc_context *ctx = NULL;
	const kc_cluster *cl = NULL;
	const kc_user *us = NULL;
	tau_kube_config *cfg = NULL;
	char where[300];
	int rc = -1;

	if (context == NULL || context[0] == '\0') {
		context = tau_kubeconfig_current_context(kc);
		if (context == NULL)
			return tau_error_set(
			        TAU_ENOTFOUND,
			        "kubeconfig: no context given and current-context is not set");
	}
	for (size_t i = 0; i < kc->n_contexts && ctx == NULL; i++)
		if (strcmp(kc->contexts[i].name, context) == 0)
			ctx = &kc->contexts[i];
	if (ctx == NULL)
		return tau_error_set(TAU_ENOTFOUND, "kubeconfig: context \"%.256s\" does not exist",
		                     context);
	snprintf(where, sizeof(where), "context \"%.256s\"", context);
	if (ctx->cluster == NULL || ctx->cluster[0] == '\0')
		return tau_error_set(TAU_ENOTFOUND, "kubeconfig: %s names no cluster", where);
	for (size_t i = 0; i < kc->n_clusters && cl == NULL; i++)
		if (strcmp(kc->clusters[i].name, ctx->cluster) == 0)
			cl = &kc->clusters[i];
	if (cl == NULL)
		return tau_error_set(TAU_ENOTFOUND,
		                     "kubeconfig: %s: cluster \"%.256s\" does not exist", where,
		                     ctx->cluster);
	if (ctx->user != NULL && ctx->user[0] != '\0') {
		for (size_t i = 0; i < kc->n_users && us == NULL; i++)
			if (strcmp(kc->users[i].name, ctx->user) == 0)
				us = &kc->users[i];
		if (us == NULL)
			return tau_error_set(TAU_ENOTFOUND,
			                     "kubeconfig: %s: user \"%.256s\" does not exist",
			                     where, ctx->user);
	}
	if (cl->server == NULL || cl->server[0] == '\0')
		return tau_error_set(TAU_EINVAL, "kubeconfig: cluster \"%.256s\" has no server",
		                     cl->name);
	if (us != NULL && (us->has_exec || us->has_auth_provider) && us->token == NULL &&
	    us->token_file == NULL && us->cert_data == NULL && us->cert_file == NULL)
		return tau_error_set(TAU_EINVAL,
		                     "kubeconfig: user \"%.256s\" uses an exec or auth-provider "
		                     "plugin, which libtau does not support",
		                     us->name);
	rc = tau_kube_config_new(&cfg);
	if (rc < 0)
		return rc;
	{
		size_t sl = strlen(cl->server);

		cfg->server = tau_kube_strdup(cl->server);
		if (cfg->server == NULL)
			goto nomem;
		while (sl > 0 && cfg->server[sl - 1] == '/')
			cfg->server[--sl] = '\0';
	}
	cfg->insecure_skip_tls_verify = cl->insecure;
	DUP_OR_FAIL(cfg->tls_server_name, cl->tls_server_name);
	DUP_OR_FAIL(cfg->context, ctx->name);
	free(cfg->namespace);
	cfg->namespace =
	        tau_kube_strdup(ctx->namespace && ctx->namespace[0] ? ctx->namespace : "default");
	if (cfg->namespace == NULL)
		goto nomem;
	if (cl->ca_data != NULL && cl->ca_data[0] != '\0') {
		rc = b64_decode(&cfg->ca_data, &cfg->ca_len, cl->ca_data,
		                "certificate-authority-data");
		if (rc < 0)
			goto out;
	} else {
		DUP_OR_FAIL(cfg->ca_file, cl->ca_file);
	}
	if (us != NULL) {
		if (us->cert_data != NULL && us->cert_data[0] != '\0') {
			rc = b64_decode(&cfg->cert_data, &cfg->cert_len, us->cert_data,
			                "client-certificate-data");
			if (rc < 0)
				goto out;
		} else {
			DUP_OR_FAIL(cfg->cert_file, us->cert_file);
		}
		if (us->key_data != NULL && us->key_data[0] != '\0') {
			rc = b64_decode(&cfg->key_data, &cfg->key_len, us->key_data,
			                "client-key-data");
			if (rc < 0)
				goto out;
		} else {
			DUP_OR_FAIL(cfg->key_file, us->key_file);
		}
		if (us->token != NULL && us->token[0] != '\0')
			DUP_OR_FAIL(cfg->token, us->token);
		else
			DUP_OR_FAIL(cfg->token_file, us->token_file);
		DUP_OR_FAIL(cfg->username, us->username);
		DUP_OR_FAIL(cfg->password, us->password);
	}
	if ((cfg->cert_data || cfg->cert_file) && !(cfg->key_data || cfg->key_file)) {
		rc = tau_error_set(TAU_EINVAL,
		                   "kubeconfig: user \"%.256s\" has a client certificate "
		                   "but no client key",
		                   us ? us->name : "");
		goto out;
	}
	*out = cfg;
	return 0;
nomem:
	rc = tau_error_set(TAU_ENOMEM, "out of memory");
out:
	tau_kube_config_free(cfg);
	return rc;
}

static int read_into(unsigned char **data, size_t *len, const char *path, const char *what)
{
	char *buf = NULL;
	int rc;

	if (*data != NULL || path == NULL)
		return 0;
	rc = tau_file_read(&buf, len, path, 1024u * 1024u, what);
	if (rc < 0)
		return rc;
	*data = (unsigned char *)buf;
	return 0;
}

int tau_kube_config_read_files(tau_kube_config *cfg)
{
	int rc;

	if ((rc = read_into(&cfg->ca_data, &cfg->ca_len, cfg->ca_file, "certificate authority")) <
	            0 ||
	    (rc = read_into(&cfg->cert_data, &cfg->cert_len, cfg->cert_file,
	                    "client certificate")) < 0 ||
	    (rc = read_into(&cfg->key_data, &cfg->key_len, cfg->key_file, "client key")) < 0)
		return rc;
	if (cfg->token == NULL && cfg->token_file != NULL) {
		char *tok = NULL;
		size_t n = 0;

		rc = tau_file_read(&tok, &n, cfg->token_file, 64u * 1024u, "token file");
		if (rc < 0)
			return rc;
		free(tok);
	}
	return 0;
}
