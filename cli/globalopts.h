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
#include <stdio.h>

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
 * (opterr 0: tau_cli_getopt prints its own messages).
 */
void tau_cli_opts_begin(tau_cli_globals *gl, const tau_cli_globals *g);

/** A group's parse: its name in messages, its getopt strings and its usage. */
typedef struct tau_cli_optspec {
	const char *cmd;               /**< "tau team": the prefix of every message */
	const char *optstring;         /**< getopt_long's, e.g. "ho:" */
	const struct option *longopts; /**< the group's rows, the shared ones among them */
	void (*usage)(FILE *out);      /**< for --help (stdout) and unknown options (stderr) */
} tau_cli_optspec;

/** tau_cli_getopt's answer when the parse ends before the group's own options are done. */
#define TAU_CLI_OPT_EXIT 0x7f0

/**
 * getopt_long over spec->longopts that answers what every group answers the same way:
 * --context, --kubeconfig, --request-timeout and --system-namespace go into *gl; --help prints
 * the usage on stdout (exit 0); a bad --request-timeout prints "<cmd>: --request-timeout X:
 * reason" and an unknown option or a missing value "<cmd>: unknown option or missing value:
 * X" and the usage on stderr (exit 2).
 * @return the next option the group handles (optarg set), -1 after the last, or
 *         TAU_CLI_OPT_EXIT with *exit_code (TAU_CLI_OK or TAU_CLI_USAGE) set.
 */
int tau_cli_getopt(tau_cli_globals *gl, int *exit_code, int argc, char **argv,
                   const tau_cli_optspec *spec);

/**
 * After the options: exactly one operand, a NAME that can be a TauWorkspace.  Prints
 * "<cmd>: NAME is required", "<cmd>: one NAME only" or tau_cli_workspace_name_check's
 * message.  @return 0 with *name set, or -1 (exit TAU_CLI_USAGE).
 */
int tau_cli_one_workspace_name(const char **name, int argc, char **argv, const char *cmd);

#endif /* TAU_CLI_GLOBALOPTS_H */
