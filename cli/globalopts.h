/*
 * globalopts.h - the options every `tau` command group takes, in one table:
 * --help, --context, --kubeconfig and --request-timeout (kubectl's names),
 * and --system-namespace for the groups that read TauWorkspaces or TauTeams.
 * main.c takes them before the command, each group after it, through the
 * same rows, the same take function and the same messages (docs/cli.md,
 * "Global options").
 */
#ifndef TAU_CLI_GLOBALOPTS_H
#define TAU_CLI_GLOBALOPTS_H

#include "cli.h"

#include <getopt.h>

/**
 * getopt_long codes of the shared options: above a command's own (which start at 256) and
 * below the aggregator options' (aggregator.h, 0x1000).  --help is 'h'.
 */
enum {
	TAU_CLI_OPT_CONTEXT = 0x800,
	TAU_CLI_OPT_KUBECONFIG,
	TAU_CLI_OPT_REQUEST_TIMEOUT,
	TAU_CLI_OPT_SYSTEM_NAMESPACE
};

/** The rows every parser has: --help, --context, --kubeconfig, --request-timeout (a trailing
 * comma included). */
#define TAU_CLI_GLOBAL_LONGOPTS                                                                    \
	{"help", no_argument, NULL, 'h'},                                                          \
	        {"context", required_argument, NULL, TAU_CLI_OPT_CONTEXT},                         \
	        {"kubeconfig", required_argument, NULL, TAU_CLI_OPT_KUBECONFIG},                   \
	        {"request-timeout", required_argument, NULL, TAU_CLI_OPT_REQUEST_TIMEOUT},

/** The --system-namespace row, for the groups that read TauWorkspaces or TauTeams. */
#define TAU_CLI_SYSTEM_NAMESPACE_LONGOPT                                                           \
	{"system-namespace", required_argument, NULL, TAU_CLI_OPT_SYSTEM_NAMESPACE},

/**
 * Start a command group's parse: *gl becomes a copy of the options given before the command
 * (`g`, may be NULL), and getopt starts over on the group's argv (optind 0: glibc
 * re-initialises, permuting again after main's "+" parse) without printing its own messages
 * (opterr 0: the group prints tau_cli_unknown_option's).
 */
void tau_cli_opts_begin(tau_cli_globals *gl, const tau_cli_globals *g);

/**
 * Take getopt_long's answer `c` (its optarg `arg`) into *gl when it is a shared option other
 * than --help.  A bad --request-timeout prints "<cmd>: --request-timeout X: reason" on stderr.
 * @return 1 taken, 0 `c` is not a shared option, -1 refused (message printed; exit
 *         TAU_CLI_USAGE).
 */
int tau_cli_global_option(tau_cli_globals *gl, int c, const char *arg, const char *cmd);

/**
 * Print "<cmd>: unknown option or missing value: X" on stderr for the argument getopt_long
 * just refused (X is argv[optind - 1]).
 */
void tau_cli_unknown_option(const char *cmd, char *const *argv);

#endif /* TAU_CLI_GLOBALOPTS_H */
