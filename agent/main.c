/*
 * tau-node-agent - probes its own GPU node and streams the inventory to the
 * aggregator (agent.c), or prints it once (--once -o json).
 *
 * main only parses the command line (config.c), sets up logging and picks
 * the mode; exit codes follow docs/agent.md: 0 success, 1 failure at run
 * time, 2 usage or input error.
 *
 * Before anything touches OpenSSL, the long-running agent tells it not to
 * load its error-string tables: libcurl's global init would otherwise load
 * them (about 0.9 MiB of libcrypto and libssl pages resident for the life
 * of an idle agent, bench/agent_rss.py; docs/PERFORMANCE.md).  The price is
 * that an OpenSSL failure in a log line reads as its code
 * ("error:0A00010B:lib(20)::reason(267)"; `openssl errstr 0A00010B` decodes
 * it); certificate verification failures keep their text (libcurl words
 * those from the verify result, a separate table).  The system OpenSSL
 * configuration is still loaded.  --once keeps the strings: it is a
 * one-shot command whose errors a person reads.
 */
#include "agent.h"
#include "config.h"

#include "tau/error.h"
#include "tau/log.h"

#include <openssl/ssl.h>

#include <stdio.h>

int main(int argc, char **argv)
{
	tau_agent_config cfg;

	if (tau_agent_config_parse(&cfg, argc, argv, NULL) < 0) {
		fprintf(stderr, "tau-node-agent: %s\n", tau_error_last()->msg);
		fputs("Try 'tau-node-agent --help'.\n", stderr);
		return 2;
	}
	if (cfg.help) {
		tau_agent_config_usage(stdout);
		return 0;
	}
	if (cfg.version) {
		printf("tau-node-agent %s\n", TAU_VERSION_STRING);
		return 0;
	}
	tau_log_set_level(cfg.log_level);
	tau_log_set_format(cfg.log_format);
	if (cfg.once)
		return tau_agent_once(&cfg, stdout);
	/* First caller wins: later default initialisations (libcurl, gRPC) no longer load them. */
	OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS | OPENSSL_INIT_NO_LOAD_SSL_STRINGS,
	                 NULL);
	return tau_agent_run(&cfg);
}
