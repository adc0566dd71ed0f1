/*
 * config.c - flags and environment of tau-node-agent.
 *
 * The one idea: the environment is applied first, as if it were a set of
 * flags, and argv second, so a DaemonSet can configure everything with env
 * while a person at a shell overrides one thing with a flag.  Validation
 * runs once, on the merged result, and every failure is a usage error
 * (exit 2) with a sentence naming the flag and its environment variable.
 */
#include "config.h"

#include "tau/error.h"
#include "tau/mem.h"
#include "tau/parse.h"
#include "tau/prog.h"

#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void tau_agent_config_usage(FILE *out)
{
	fputs("Usage: tau-node-agent --node-name NAME --aggregator HOST:PORT "
	      "(--ca-file F | --insecure) [options]\n"
	      "       tau-node-agent --node-name NAME --once -o json [--kubeconfig F]\n"
	      "\n"
	      "Probe this GPU node and stream its inventory to the tau-aggregator.\n"
	      "Every option can also be set with the environment variable shown.\n"
	      "\n"
	      "Options:\n"
	      "  --node-name NAME        the node this agent runs on (NODE_NAME)\n"
	      "  --aggregator HOST:PORT  aggregator gRPC address (TAU_AGGREGATOR)\n"
	      "  --kubeconfig FILE       kubeconfig (KUBECONFIG; default: in-cluster config)\n"
	      "  --context NAME          kubeconfig context (TAU_CONTEXT)\n"
	      "  --host-root DIR         prefix of the host paths probed (TAU_HOST_ROOT; /)\n"
	      "  --token-file FILE       ServiceAccount token presented to the aggregator,\n"
	      "                          re-read before every connect (TAU_TOKEN_FILE)\n"
	      "  --ca-file FILE          CA that signs the aggregator's certificate (TAU_CA_FILE)\n"
	      "  --insecure              plaintext gRPC instead of TLS (TAU_INSECURE=1)\n"
	      "  --once                  probe once, print the inventory and exit (TAU_ONCE=1)\n"
	      "  -o, --output json       output format of --once (TAU_OUTPUT)\n"
	      "  --http-listen ADDR      serve /healthz and /metrics on [HOST]:PORT "
	      "(TAU_HTTP_LISTEN)\n"
	      "  --probe-interval SEC    periodic host re-probe (TAU_PROBE_INTERVAL; 60)\n"
	      "  --request-timeout D     --once: give up on each API request after D, one\n"
	      "                          attempt each (1s, 2m; 0: the client's 30 s and retries)\n"
	      "                          (TAU_REQUEST_TIMEOUT)\n"
	      "  --node-conditions       publish TauGPUHealthy and TauNetworkReady on this\n"
	      "                          node's status.conditions; needs patch on nodes/status\n"
	      "                          (TAU_NODE_CONDITIONS=1; off)\n"
	      "  --log-level LEVEL       debug|info|warn|error (TAU_LOG_LEVEL; info)\n"
	      "  --log-format FORMAT     logfmt|json (TAU_LOG_FORMAT; logfmt)\n"
	      "  --help                  show this help\n"
	      "  --version               print the version\n",
	      out);
}

/* HOST:PORT with a port 1..65535, or a gRPC target with a scheme (unix:, dns:, ipv4:). */
static int check_aggregator(const char *addr)
{
	char host[256];
	int port = 0;

	if (addr[0] == '\0')
		return tau_error_set(TAU_EINVAL, "--aggregator (TAU_AGGREGATOR) is empty");
	if (strncmp(addr, "unix:", 5) == 0 || strncmp(addr, "dns:", 4) == 0 ||
	    strncmp(addr, "ipv4:", 5) == 0 || strncmp(addr, "ipv6:", 5) == 0)
		return 0;
	if (tau_parse_listen(host, sizeof(host), &port, addr) < 0 || host[0] == '\0' || port == 0)
		return tau_error_set(TAU_EINVAL,
		                     "--aggregator %s: expected HOST:PORT (port 1..65535)", addr);
	return 0;
}

static int apply_log_level(tau_agent_config *cfg, const char *what, const char *value)
{
	if (tau_log_level_parse(&cfg->log_level, value) < 0)
		return tau_error_set(TAU_EINVAL, "%s %s: expected debug, info, warn or error", what,
		                     value);
	return 0;
}

static int apply_log_format(tau_agent_config *cfg, const char *what, const char *value)
{
	if (tau_log_format_parse(&cfg->log_format, value) < 0)
		return tau_error_set(TAU_EINVAL, "%s %s: expected logfmt or json", what, value);
	return 0;
}

/* How a setting's value is taken. */
typedef enum setting_kind {
	SET_STRING,          /* kept as it is (an empty variable is unset) */
	SET_BOOL,            /* a flag sets true; a variable is tau_parse_bool'd */
	SET_PROBE_INTERVAL,  /* seconds, 1..TAU_AGENT_MAX_PROBE_INTERVAL_S */
	SET_REQUEST_TIMEOUT, /* a duration, 0..TAU_AGENT_MAX_REQUEST_TIMEOUT_MS */
	SET_LOG_LEVEL,
	SET_LOG_FORMAT,
} setting_kind;

/* A setting: its flag, its environment variable (NULL: a flag only) and its field. */
typedef struct setting {
	const char *flag;
	const char *env;
	setting_kind kind;
	size_t offset; /* of the field in tau_agent_config (SET_STRING, SET_BOOL) */
} setting;

#define FIELD(f) offsetof(tau_agent_config, f)

/*
 * Every setting, in the order the environment is applied (the first variable that does not
 * parse is the one reported).  getopt_long's code of a flag is 256 + its row.
 */
static const setting SETTINGS[] = {
        {"node-name", "NODE_NAME", SET_STRING, FIELD(node_name)},
        {"aggregator", "TAU_AGGREGATOR", SET_STRING, FIELD(aggregator)},
        /* KUBECONFIG itself is left to the kube client: it may be a colon-separated list. */
        {"kubeconfig", NULL, SET_STRING, FIELD(kubeconfig)},
        {"context", "TAU_CONTEXT", SET_STRING, FIELD(context)},
        {"host-root", "TAU_HOST_ROOT", SET_STRING, FIELD(host_root)},
        {"token-file", "TAU_TOKEN_FILE", SET_STRING, FIELD(token_file)},
        {"ca-file", "TAU_CA_FILE", SET_STRING, FIELD(ca_file)},
        {"output", "TAU_OUTPUT", SET_STRING, FIELD(output)}, /* also -o */
        {"http-listen", "TAU_HTTP_LISTEN", SET_STRING, FIELD(http_listen)},
        {"insecure", "TAU_INSECURE", SET_BOOL, FIELD(insecure)},
        {"once", "TAU_ONCE", SET_BOOL, FIELD(once)},
        {"node-conditions", "TAU_NODE_CONDITIONS", SET_BOOL, FIELD(node_conditions)},
        {"probe-interval", "TAU_PROBE_INTERVAL", SET_PROBE_INTERVAL, 0},
        {"request-timeout", "TAU_REQUEST_TIMEOUT", SET_REQUEST_TIMEOUT, 0},
        {"log-level", "TAU_LOG_LEVEL", SET_LOG_LEVEL, 0},
        {"log-format", "TAU_LOG_FORMAT", SET_LOG_FORMAT, 0},
        {"help", NULL, SET_BOOL, FIELD(help)},
        {"version", NULL, SET_BOOL, FIELD(version)},
};

#undef FIELD

/*
 * Take `value` for setting s, named `what` in messages (--flag or the variable); a flag of
 * SET_BOOL comes with value NULL.  @return 0, or <0 (error set).
 */
static int apply(tau_agent_config *cfg, const setting *s, const char *what, const char *value)
{
	char *field = (char *)cfg + s->offset;
	int rc;

	switch (s->kind) {
	case SET_STRING:
		*(const char **)field = value;
		return 0;
	case SET_BOOL:
		if (value == NULL) {
			*(bool *)field = true;
			return 0;
		}
		return tau_parse_bool((bool *)field, what, value);
	case SET_PROBE_INTERVAL:
		return tau_parse_int(&cfg->probe_interval_s, what, value, 1,
		                     TAU_AGENT_MAX_PROBE_INTERVAL_S);
	case SET_REQUEST_TIMEOUT:
		rc = tau_parse_duration_ms(&cfg->request_timeout_ms, what, value, 0,
		                           TAU_AGENT_MAX_REQUEST_TIMEOUT_MS);
		if (rc == 0)
			cfg->request_timeout_set = true;
		return rc;
	case SET_LOG_LEVEL:
		return apply_log_level(cfg, what, value);
	case SET_LOG_FORMAT:
		return apply_log_format(cfg, what, value);
	}
	return 0;
}

/* The setting getopt_long answered `c` for (256 + its row; -o is --output), or NULL. */
static const setting *setting_of(int c)
{
	for (size_t i = 0; i < TAU_N_ELEMENTS(SETTINGS); i++)
		if (c == 256 + (int)i || (c == 'o' && strcmp(SETTINGS[i].flag, "output") == 0))
			return &SETTINGS[i];
	return NULL;
}

/* The environment, as if its variables were flags; an empty one is unset, but for a boolean. */
static int from_env(tau_agent_config *cfg, tau_env_fn env)
{
	for (size_t i = 0; i < TAU_N_ELEMENTS(SETTINGS); i++) {
		const setting *s = &SETTINGS[i];
		const char *v = s->env != NULL ? env(s->env) : NULL;
		int rc;

		if (v == NULL || (v[0] == '\0' && s->kind != SET_BOOL))
			continue;
		if ((rc = apply(cfg, s, s->env, v)) < 0)
			return rc;
	}
	return 0;
}

static int validate(tau_agent_config *cfg)
{
	char host[256];
	int port;
	int rc;

	if (cfg->node_name == NULL || cfg->node_name[0] == '\0')
		return tau_error_set(TAU_EINVAL, "--node-name (or NODE_NAME) is required");
	if (strlen(cfg->node_name) > 253)
		return tau_error_set(TAU_EINVAL, "--node-name is longer than 253 characters");
	if (cfg->output != NULL && strcmp(cfg->output, "json") != 0)
		return tau_error_set(TAU_EINVAL, "-o %s: the only output format is json",
		                     cfg->output);
	if (cfg->output != NULL && !cfg->once)
		return tau_error_set(TAU_EINVAL, "-o only applies to --once");
	if (cfg->node_conditions && cfg->once)
		return tau_error_set(TAU_EINVAL, "--node-conditions (TAU_NODE_CONDITIONS) does not "
		                                 "apply to --once, which writes nothing");
	if (cfg->request_timeout_set && !cfg->once)
		return tau_error_set(TAU_EINVAL, "--request-timeout only applies to --once (the "
		                                 "running agent retries the API without end)");
	if (cfg->http_listen != NULL &&
	    tau_parse_listen(host, sizeof(host), &port, cfg->http_listen) < 0)
		return tau_error_wrap("--http-listen");
	if (cfg->once)
		return 0;
	if (cfg->aggregator == NULL)
		return tau_error_set(TAU_EINVAL,
		                     "--aggregator HOST:PORT (or TAU_AGGREGATOR) is required "
		                     "unless --once");
	rc = check_aggregator(cfg->aggregator);
	if (rc < 0)
		return rc;
	if (cfg->ca_file != NULL && cfg->insecure)
		return tau_error_set(TAU_EINVAL,
		                     "--ca-file and --insecure exclude each other (check "
		                     "TAU_CA_FILE and TAU_INSECURE)");
	if (cfg->ca_file == NULL && !cfg->insecure)
		return tau_error_set(TAU_EINVAL,
		                     "TLS needs --ca-file FILE (TAU_CA_FILE); pass --insecure "
		                     "(TAU_INSECURE=1) for plaintext");
	return 0;
}

int tau_agent_config_parse(tau_agent_config *cfg, int argc, char **argv, tau_env_fn env)
{
	struct option opts[TAU_N_ELEMENTS(SETTINGS) + 1] = {{0}};
	char what[64];
	int c;
	int rc;

	for (size_t i = 0; i < TAU_N_ELEMENTS(SETTINGS); i++)
		opts[i] = (struct option){SETTINGS[i].flag,
		                          SETTINGS[i].kind == SET_BOOL ? no_argument
		                                                       : required_argument,
		                          NULL, 256 + (int)i};
	memset(cfg, 0, sizeof(*cfg));
	cfg->host_root = "/";
	cfg->probe_interval_s = TAU_AGENT_DEFAULT_PROBE_INTERVAL_S;
	cfg->log_level = TAU_LOG_INFO;
	cfg->log_format = TAU_LOG_FORMAT_LOGFMT;
	rc = from_env(cfg, env != NULL ? env : tau_env_get);
	if (rc < 0)
		return rc;

	optind = 0; /* GNU: full reinitialisation, so tests can parse again */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
		const setting *s = setting_of(c);

		if (s == NULL)
			return tau_prog_getopt_error(c, argv);
		snprintf(what, sizeof(what), "--%s", s->flag);
		if ((rc = apply(cfg, s, what, s->kind == SET_BOOL ? NULL : optarg)) < 0)
			return rc;
	}
	if (optind < argc)
		return tau_error_set(TAU_EINVAL, "unexpected argument %s", argv[optind]);
	if (cfg->help || cfg->version)
		return 0;
	if (cfg->host_root[0] == '\0')
		return tau_error_set(TAU_EINVAL, "--host-root is empty");
	return validate(cfg);
}
