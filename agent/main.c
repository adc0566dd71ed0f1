/*
 * tau-node-agent - probes its own GPU node and streams the inventory to the
 * aggregator (agent.c), or prints it once (--once -o json).
 *
 * main only parses the command line (config.c), sets up logging and picks
 * the mode; exit codes follow docs/agent.md: 0 success, 1 failure at run
 * time, 2 usage or input error.
 */
#include "agent.h"
#include "config.h"

#include "tau/error.h"
#include "tau/log.h"
#include "tau/prog.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	tau_agent_config cfg;

	if (tau_agent_config_parse(&cfg, argc, argv, NULL) < 0) {
		fprintf(stderr, "tau-node-agent: %s\n", tau_error_last()->msg);
		fputs("Try 'tau-node-agent --help'.\n", stderr);
		return 2;
	}
	if (tau_prog_help_version("tau-node-agent", cfg.help, cfg.version,
	                          tau_agent_config_usage) == 0)
		return 0;
	tau_log_set_level(cfg.log_level);
	tau_log_set_format(cfg.log_format);
	if (cfg.once)
		return tau_agent_once(&cfg, stdout);
	return tau_agent_run(&cfg);
}
