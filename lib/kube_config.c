/*
 * kube_config.c - finding and holding the configuration of an API client.
 *
 * A tau_kube_config says how to reach and authenticate to one API server.
 * It is made from defaults, from the in-cluster ServiceAccount directory, or
 * from kubeconfig files (a $KUBECONFIG list merged, as kubectl does), and is
 * deep-copied into each client.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/kube.h"

#include "kube_internal.h"
#include "tau/error.h"
#include "tau/kubeconfig.h"
#include "tau/log.h"
#include "tau/mem.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *tau_kube_strdup(const char *s)
{
	size_t n;
	char *d;

	if (s == NULL)
		return NULL;
	n = strlen(s) + 1;
	d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

int tau_kube_config_new(tau_kube_config **out)
{
	tau_kube_config *cfg = calloc(1, sizeof(*cfg));

	if (cfg == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cfg->namespace = tau_kube_strdup("default");
	if (cfg->namespace == NULL) {
		free(cfg);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cfg->qps = 20.0;
	cfg->burst = 30;
	cfg->max_retries = 10;
	cfg->retry_initial_ms = 200;
	cfg->retry_cap_ms = 10000;
	cfg->retry_after_cap_ms = 60000;
	cfg->timeout_ms = 30000;
	cfg->connect_timeout_ms = 10000;
	cfg->body_cap = 64u * 1024u * 1024u;
	cfg->watch_line_cap = 4u * 1024u * 1024u;
	cfg->token_reread_ms = 60000;
	*out = cfg;
	return 0;
}

void tau_kube_config_set_request_timeout(tau_kube_config *cfg, uint64_t ms)
{
	cfg->timeout_ms = ms; /* 0: curl waits as long as the server takes */
	if (ms > 0) {
		if (cfg->connect_timeout_ms == 0 || cfg->connect_timeout_ms > ms)
			cfg->connect_timeout_ms = ms;
		cfg->max_retries = 0;
	}
	cfg->no_transport_retry = true;
}

void tau_kube_config_free(tau_kube_config *cfg)
{
	if (cfg == NULL)
		return;
	tau_free_many(cfg->server, cfg->tls_server_name, cfg->ca_file, cfg->ca_data, cfg->cert_file,
	              cfg->cert_data, cfg->key_file, cfg->key_data, cfg->token, cfg->token_file,
	              cfg->username, cfg->password, cfg->namespace, cfg->context, cfg->user_agent);
	free(cfg);
}

static int dup_bytes(unsigned char **dst, const unsigned char *src, size_t len)
{
	if (src == NULL) {
		*dst = NULL;
		return 0;
	}
	*dst = malloc(len + 1);
	if (*dst == NULL)
		return -1;
	memcpy(*dst, src, len);
	(*dst)[len] = '\0';
	return 0;
}

int tau_kube_config_dup(tau_kube_config **out, const tau_kube_config *cfg)
{
	tau_kube_config *d = malloc(sizeof(*d));
	bool bad = false;

	if (d == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	*d = *cfg;
#define DUPS(f)                                                                                    \
	do {                                                                                       \
		d->f = tau_kube_strdup(cfg->f);                                                    \
		bad |= (cfg->f != NULL && d->f == NULL);                                           \
	} while (0)
	DUPS(server);
	DUPS(tls_server_name);
	DUPS(ca_file);
	DUPS(cert_file);
	DUPS(key_file);
	DUPS(token);
	DUPS(token_file);
	DUPS(username);
	DUPS(password);
	DUPS(namespace);
	DUPS(context);
	DUPS(user_agent);
#undef DUPS
	bad |= dup_bytes(&d->ca_data, cfg->ca_data, cfg->ca_len) < 0;
	bad |= dup_bytes(&d->cert_data, cfg->cert_data, cfg->cert_len) < 0;
	bad |= dup_bytes(&d->key_data, cfg->key_data, cfg->key_len) < 0;
	if (bad) {
		tau_kube_config_free(d);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	*out = d;
	return 0;
}

static char *join_path(const char *dir, const char *file)
{
	size_t n = strlen(dir) + strlen(file) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, file);
	return p;
}

int tau_kube_config_in_cluster(tau_kube_config **out, const char *sa_dir)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *pod_ns = getenv("POD_NAMESPACE");
	tau_kube_config *cfg = NULL;
	char *ns_path = NULL, *ns_text = NULL;
	size_t ns_len = 0;
	int rc;

	if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
		return tau_error_set(
		        TAU_ENOTFOUND,
		        "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST "
		        "and KUBERNETES_SERVICE_PORT must be defined");
	if (sa_dir == NULL)
		sa_dir = getenv("TAU_KUBE_SA_DIR");
	if (sa_dir == NULL || sa_dir[0] == '\0')
		sa_dir = TAU_KUBE_SA_DIR;
	rc = tau_kube_config_new(&cfg);
	if (rc < 0)
		return rc;
	{
		/* Tests may point at plain http with TAU_KUBE_SCHEME=http. */
		const char *scheme = getenv("TAU_KUBE_SCHEME");
		bool v6 = strchr(host, ':') != NULL;
		size_t n = strlen(host) + strlen(port) + 16;

		if (scheme == NULL || strcmp(scheme, "http") != 0)
			scheme = "https";
		cfg->server = malloc(n);
		if (cfg->server == NULL)
			goto nomem;
		snprintf(cfg->server, n, "%s://%s%s%s:%s", scheme, v6 ? "[" : "", host,
		         v6 ? "]" : "", port);
	}
	cfg->token_file = join_path(sa_dir, "token");
	cfg->ca_file = join_path(sa_dir, "ca.crt");
	ns_path = join_path(sa_dir, "namespace");
	if (cfg->token_file == NULL || cfg->ca_file == NULL || ns_path == NULL)
		goto nomem;
	if (access(cfg->ca_file, F_OK) != 0) {
		/* No CA file: fall back to the system store (client-go only logs too). */
		free(cfg->ca_file);
		cfg->ca_file = NULL;
	}
	free(cfg->namespace);
	cfg->namespace = NULL;
	if (pod_ns != NULL && pod_ns[0] != '\0') {
		cfg->namespace = tau_kube_strdup(pod_ns);
	} else if (tau_file_read(&ns_text, &ns_len, ns_path, 4096, "namespace file") == 0) {
		size_t a = 0, b = ns_len;

		while (a < b && isspace((unsigned char)ns_text[a]))
			a++;
		while (b > a && isspace((unsigned char)ns_text[b - 1]))
			b--;
		ns_text[b] = '\0';
		if (b > a)
			cfg->namespace = tau_kube_strdup(ns_text + a);
	}
	tau_error_clear();
	if (cfg->namespace == NULL)
		cfg->namespace = tau_kube_strdup("default");
	if (cfg->namespace == NULL)
		goto nomem;
	rc = tau_kube_config_read_files(cfg);
	if (rc < 0)
		goto out;
	*out = cfg;
	cfg = NULL;
	rc = 0;
	goto out;
nomem:
	rc = tau_error_set(TAU_ENOMEM, "out of memory");
out:
	free(ns_path);
	free(ns_text);
	tau_kube_config_free(cfg);
	return rc;
}

/* Load and merge a colon-separated list of kubeconfig files (empty entries skipped). */
static int load_kubeconfig_list(tau_kubeconfig **out, const char *list, bool explicit_file)
{
	tau_kubeconfig *merged = NULL;
	char *copy = tau_kube_strdup(list), *save = NULL;
	int rc = 0, loaded = 0;

	if (copy == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (char *p = explicit_file ? copy : strtok_r(copy, ":", &save); p != NULL;
	     p = explicit_file ? NULL : strtok_r(NULL, ":", &save)) {
		tau_kubeconfig *one = NULL;

		if (p[0] == '\0')
			continue;
		/* kubectl skips missing files in KUBECONFIG but not an explicit --kubeconfig. */
		if (!explicit_file && access(p, F_OK) != 0)
			continue;
		rc = tau_kubeconfig_load_file(&one, p);
		if (rc < 0)
			break;
		loaded++;
		if (merged == NULL) {
			merged = one;
		} else {
			rc = tau_kubeconfig_merge(merged, one);
			tau_kubeconfig_free(one);
			if (rc < 0)
				break;
		}
	}
	free(copy);
	if (rc == 0 && loaded == 0)
		rc = tau_error_set(TAU_ENOTFOUND, "no kubeconfig file found in KUBECONFIG=%.400s",
		                   list);
	if (rc < 0) {
		tau_kubeconfig_free(merged);
		return rc;
	}
	*out = merged;
	return 0;
}

int tau_kube_config_load(tau_kube_config **out, const tau_kube_config_options *opts)
{
	tau_kube_config_options none = {0};
	tau_kubeconfig *kc = NULL;
	tau_kube_config *cfg = NULL;
	const char *env = getenv("KUBECONFIG");
	char *home_path = NULL;
	int rc;

	if (opts == NULL)
		opts = &none;
	if (opts->kubeconfig != NULL && opts->kubeconfig[0] != '\0') {
		rc = load_kubeconfig_list(&kc, opts->kubeconfig, true);
	} else if (env != NULL && env[0] != '\0') {
		rc = load_kubeconfig_list(&kc, env, false);
	} else if (getenv("KUBERNETES_SERVICE_HOST") != NULL && opts->context == NULL) {
		return tau_kube_config_in_cluster(out, opts->sa_dir);
	} else {
		const char *home = getenv("HOME");

		if (home == NULL || home[0] == '\0')
			return tau_error_set(TAU_ENOTFOUND,
			                     "no kubeconfig: --kubeconfig, KUBECONFIG and HOME are "
			                     "unset and not running in a cluster");
		home_path = join_path(home, ".kube/config");
		if (home_path == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		rc = load_kubeconfig_list(&kc, home_path, true);
	}
	if (rc < 0)
		goto out;
	rc = tau_kubeconfig_resolve(&cfg, kc, opts->context);
	if (rc < 0)
		goto out;
	rc = tau_kube_config_read_files(cfg);
	if (rc < 0) {
		tau_error_wrap("context \"%s\"", cfg->context ? cfg->context : "");
		goto out;
	}
	*out = cfg;
	cfg = NULL;
out:
	free(home_path);
	tau_kubeconfig_free(kc);
	tau_kube_config_free(cfg);
	return rc;
}
