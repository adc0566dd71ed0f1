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
#include "tau/parse.h"

#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
	OPT_NODE_NAME = 256,
	OPT_AGGREGATOR,
	OPT_KUBECONFIG,
	OPT_CONTEXT,
	OPT_HOST_ROOT,
	OPT_TOKEN_FILE,
	OPT_CA_FILE,
	OPT_INSECURE,
	OPT_ONCE,
	OPT_HTTP_LISTEN,
	OPT_PROBE_INTERVAL,
	OPT_LOG_LEVEL,
	OPT_LOG_FORMAT,
	OPT_HELP,
	OPT_VERSION,
	OPT_REQUEST_TIMEOUT,
	OPT_NODE_CONDITIONS,
};

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

static const char *env_lookup(const char *name)
{
	return getenv(name);
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

/* An environment variable and the field of tau_agent_config it sets. */
typedef struct env_field {
	const char *name;
	size_t offset;
} env_field;

/* The variables that set a string as they are (an empty one is unset). */
static const env_field ENV_STRINGS[] = {
        {"NODE_NAME", offsetof(tau_agent_config, node_name)},
        {"TAU_AGGREGATOR", offsetof(tau_agent_config, aggregator)},
        /* KUBECONFIG itself is left to the kube client: it may be a colon-separated list. */
        {"TAU_CONTEXT", offsetof(tau_agent_config, context)},
        {"TAU_HOST_ROOT", offsetof(tau_agent_config, host_root)},
        {"TAU_TOKEN_FILE", offsetof(tau_agent_config, token_file)},
        {"TAU_CA_FILE", offsetof(tau_agent_config, ca_file)},
        {"TAU_OUTPUT", offsetof(tau_agent_config, output)},
        {"TAU_HTTP_LISTEN", offsetof(tau_agent_config, http_listen)},
};

/* The boolean variables (tau_parse_bool: an empty or other value is an error). */
static const env_field ENV_BOOLS[] = {
        {"TAU_INSECURE", offsetof(tau_agent_config, insecure)},
        {"TAU_ONCE", offsetof(tau_agent_config, once)},
        {"TAU_NODE_CONDITIONS", offsetof(tau_agent_config, node_conditions)},
};

static int from_env(tau_agent_config *cfg, tau_agent_env_fn env)
{
	const char *v;
	int rc;

	for (size_t i = 0; i < sizeof(ENV_STRINGS) / sizeof(ENV_STRINGS[0]); i++)
		if ((v = env(ENV_STRINGS[i].name)) != NULL && v[0] != '\0')
			*(const char **)((char *)cfg + ENV_STRINGS[i].offset) = v;
	for (size_t i = 0; i < sizeof(ENV_BOOLS) / sizeof(ENV_BOOLS[0]); i++)
		if ((v = env(ENV_BOOLS[i].name)) != NULL &&
		    (rc = tau_parse_bool((bool *)((char *)cfg + ENV_BOOLS[i].offset),
		                         ENV_BOOLS[i].name, v)) < 0)
			return rc;
	if ((v = env("TAU_PROBE_INTERVAL")) != NULL && v[0] != '\0' &&
	    (rc = tau_parse_int(&cfg->probe_interval_s, "TAU_PROBE_INTERVAL", v, 1,
	                        TAU_AGENT_MAX_PROBE_INTERVAL_S)) < 0)
		return rc;
	if ((v = env("TAU_REQUEST_TIMEOUT")) != NULL && v[0] != '\0') {
		if ((rc = tau_parse_duration_ms(&cfg->request_timeout_ms, "TAU_REQUEST_TIMEOUT", v,
		                                0, TAU_AGENT_MAX_REQUEST_TIMEOUT_MS)) < 0)
			return rc;
		cfg->request_timeout_set = true;
	}
	if ((v = env("TAU_LOG_LEVEL")) != NULL && v[0] != '\0' &&
	    (rc = apply_log_level(cfg, "TAU_LOG_LEVEL", v)) < 0)
		return rc;
	if ((v = env("TAU_LOG_FORMAT")) != NULL && v[0] != '\0' &&
	    (rc = apply_log_format(cfg, "TAU_LOG_FORMAT", v)) < 0)
		return rc;
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

int tau_agent_config_parse(tau_agent_config *cfg, int argc, char **argv, tau_agent_env_fn env)
{
	static const struct option opts[] = {
	        {"node-name", required_argument, NULL, OPT_NODE_NAME},
	        {"aggregator", required_argument, NULL, OPT_AGGREGATOR},
	        {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
	        {"context", required_argument, NULL, OPT_CONTEXT},
	        {"host-root", required_argument, NULL, OPT_HOST_ROOT},
	        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	        {"ca-file", required_argument, NULL, OPT_CA_FILE},
	        {"insecure", no_argument, NULL, OPT_INSECURE},
	        {"once", no_argument, NULL, OPT_ONCE},
	        {"output", required_argument, NULL, 'o'},
	        {"http-listen", required_argument, NULL, OPT_HTTP_LISTEN},
	        {"probe-interval", required_argument, NULL, OPT_PROBE_INTERVAL},
	        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
	        {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
	        {"help", no_argument, NULL, OPT_HELP},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
	        {"node-conditions", no_argument, NULL, OPT_NODE_CONDITIONS},
	        {NULL, 0, NULL, 0},
	};
	int c;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->host_root = "/";
	cfg->probe_interval_s = TAU_AGENT_DEFAULT_PROBE_INTERVAL_S;
	cfg->log_level = TAU_LOG_INFO;
	cfg->log_format = TAU_LOG_FORMAT_LOGFMT;
	rc = from_env(cfg, env != NULL ? env : env_lookup);
	if (rc < 0)
		return rc;

	optind = 0; /* GNU: full reinitialisation, so tests can parse again */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
		switch (c) {
		case OPT_NODE_NAME:
			cfg->node_name = optarg;
			break;
		case OPT_AGGREGATOR:
			cfg->aggregator = optarg;
			break;
		case OPT_KUBECONFIG:
			cfg->kubeconfig = optarg;
			break;
		case OPT_CONTEXT:
			cfg->context = optarg;
			break;
		case OPT_HOST_ROOT:
			cfg->host_root = optarg;
			break;
		case OPT_TOKEN_FILE:
			cfg->token_file = optarg;
			break;
		case OPT_CA_FILE:
			cfg->ca_file = optarg;
			break;
		case OPT_INSECURE:
			cfg->insecure = true;
			break;
		case OPT_ONCE:
			cfg->once = true;
			break;
		case 'o':
			cfg->output = optarg;
			break;
		case OPT_HTTP_LISTEN:
			cfg->http_listen = optarg;
			break;
		case OPT_PROBE_INTERVAL:
			rc = tau_parse_int(&cfg->probe_interval_s, "--probe-interval", optarg, 1,
			                   TAU_AGENT_MAX_PROBE_INTERVAL_S);
			if (rc < 0)
				return rc;
			break;
		case OPT_LOG_LEVEL:
			rc = apply_log_level(cfg, "--log-level", optarg);
			if (rc < 0)
				return rc;
			break;
		case OPT_LOG_FORMAT:
			rc = apply_log_format(cfg, "--log-format", optarg);
			if (rc < 0)
				return rc;
			break;
		case OPT_HELP:
			cfg->help = true;
			break;
		case OPT_VERSION:
			cfg->version = true;
			break;
		case OPT_NODE_CONDITIONS:
			cfg->node_conditions = true;
			break;
		case OPT_REQUEST_TIMEOUT:
			rc = tau_parse_duration_ms(&cfg->request_timeout_ms, "--request-timeout",
			                           optarg, 0, TAU_AGENT_MAX_REQUEST_TIMEOUT_MS);
			if (rc < 0)
				return rc;
			cfg->request_timeout_set = true;
			break;
		default:
			return tau_parse_getopt_error(c, argv);
		}
	}
	if (optind < argc)
		return tau_error_set(TAU_EINVAL, "unexpected argument %s", argv[optind]);
	if (cfg->help || cfg->version)
		return 0;
	if (cfg->host_root[0] == '\0')
		return tau_error_set(TAU_EINVAL, "--host-root is empty");
	return validate(cfg);
}
