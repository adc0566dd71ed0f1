/*
 * aggregator.c - how a `tau` command reaches the aggregator.
 *
 * The one idea: one home for the connection options.  --aggregator ADDR,
 * --ca-file F and --insecure are parsed (tau_cli_aggregator_option), refused
 * when they cannot work (tau_cli_aggregator_check: one set of messages) and
 * resolved against env TAU_AGGREGATOR (tau_cli_aggregator_addr) here only;
 * each command decides what no aggregator means for it (tau inventory goes to
 * TAU_CLI_DEFAULT_AGGREGATOR, the others do not ask).  The channel carries the
 * caller's bearer token (the global --token or the kubeconfig's).
 */
#include "aggregator.h"

#include "tau/error.h"
#include "tau/file.h"
#include "tau/kube.h"
#include "tau/pem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A CA bundle larger than this is a wrong path, not a bundle. */
#define TAU_CLI_CA_MAX_BYTES (1u << 20)

bool tau_cli_aggregator_option(tau_cli_aggregator_opts *a, int c, const char *arg)
{
	switch (c) {
	case TAU_CLI_OPT_AGGREGATOR:
		a->addr = arg;
		return true;
	case TAU_CLI_OPT_CA_FILE:
		a->ca_file = arg;
		return true;
	case TAU_CLI_OPT_INSECURE:
		a->insecure = true;
		return true;
	default:
		return false;
	}
}

bool tau_cli_aggregator_given(const tau_cli_aggregator_opts *a)
{
	return a != NULL && (a->addr != NULL || a->ca_file != NULL || a->insecure);
}

int tau_cli_aggregator_check(const tau_cli_aggregator_opts *a)
{
	if (a == NULL)
		return 0;
	if (a->addr != NULL && a->addr[0] == '\0')
		return tau_error_set(TAU_EINVAL, "--aggregator is empty");
	if (a->ca_file != NULL && a->insecure)
		return tau_error_set(TAU_EINVAL, "--ca-file and --insecure exclude each other");
	return 0;
}

const char *tau_cli_aggregator_addr(const tau_cli_aggregator_opts *a)
{
	const char *env;

	if (a != NULL && a->addr != NULL)
		return a->addr;
	env = getenv("TAU_AGGREGATOR");
	return env != NULL && env[0] != '\0' ? env : NULL;
}

/* Largest bearer token accepted from --token or a token file. */
#define TAU_CLI_TOKEN_MAX_BYTES (16u * 1024u)

int tau_cli_bearer_token(char **out, const tau_cli_globals *g)
{
	tau_kube_config_options o = {g != NULL ? g->kubeconfig : NULL,
	                             g != NULL ? g->context : NULL, NULL};
	tau_kube_config *cfg = NULL;
	char *text = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	if (g != NULL && g->token != NULL) {
		if (g->token[0] == '\0')
			return tau_error_set(TAU_EINVAL, "--token is empty");
		if (strlen(g->token) > TAU_CLI_TOKEN_MAX_BYTES)
			return tau_error_set(TAU_EINVAL, "--token is longer than %u bytes",
			                     TAU_CLI_TOKEN_MAX_BYTES);
		*out = strdup(g->token);
		return *out != NULL ? 0 : tau_error_set(TAU_ENOMEM, "out of memory");
	}
	rc = tau_kube_config_load(&cfg, &o);
	if (rc < 0) {
		/* Asked for a kubeconfig or context that cannot be used: say so. */
		if (g != NULL && (g->kubeconfig != NULL || g->context != NULL))
			return tau_error_wrap("kubeconfig (for the aggregator's bearer token)");
		tau_error_clear();
		return 0; /* no kubeconfig at all: the call goes without a token */
	}
	if (cfg->token != NULL && cfg->token[0] != '\0') {
		text = strdup(cfg->token);
		rc = text != NULL ? 0 : tau_error_set(TAU_ENOMEM, "out of memory");
	} else if (cfg->token_file != NULL) {
		rc = tau_file_read(&text, &len, cfg->token_file, TAU_CLI_TOKEN_MAX_BYTES,
		                   "token file");
		while (rc == 0 && len > 0 &&
		       (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ' ||
		        text[len - 1] == '\t'))
			text[--len] = '\0';
	}
	tau_kube_config_free(cfg);
	if (rc < 0) {
		free(text);
		return rc;
	}
	*out = text;
	return 0;
}

int tau_cli_aggregator_channel(tau_rpc_channel **out, const char **target,
                               const tau_cli_aggregator_opts *a, const tau_cli_globals *g)
{
	tau_rpc_channel_opts copts = {0};
	const char *ca_file = a != NULL ? a->ca_file : NULL;
	char *ca_pem = NULL, *token = NULL;
	int rc;

	if ((rc = tau_cli_aggregator_check(a)) < 0)
		return rc;
	copts.target = tau_cli_aggregator_addr(a);
	if (copts.target == NULL)
		copts.target = TAU_CLI_DEFAULT_AGGREGATOR;
	if (ca_file != NULL) {
		size_t ca_len = 0;
		char what[300];

		if ((rc = tau_file_read(&ca_pem, &ca_len, ca_file, TAU_CLI_CA_MAX_BYTES,
		                        "--ca-file")) < 0)
			return rc;
		snprintf(what, sizeof(what), "--ca-file %.250s", ca_file);
		if ((rc = tau_pem_check_certificates(ca_pem, ca_len, what)) < 0) {
			free(ca_pem);
			return rc;
		}
	}
	copts.ca_pem = ca_pem;
	if ((rc = tau_cli_bearer_token(&token, g)) < 0) {
		free(ca_pem);
		return rc;
	}
	rc = tau_rpc_channel_new(out, &copts);
	free(ca_pem); /* the channel's credentials hold their own copy */
	if (rc == 0 && token != NULL && (rc = tau_rpc_channel_set_bearer_token(*out, token)) < 0) {
		tau_rpc_channel_free(*out);
		*out = NULL;
	}
	if (token != NULL) {
		memset(token, 0, strlen(token));
		free(token);
	}
	if (rc == 0)
		*target = copts.target;
	return rc;
}
