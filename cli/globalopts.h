/*
 * globalopts.h - the options every `tau` command group takes, in one table:
 * --help, --context, --kubeconfig and --request-timeout (kubectl's names),
 * and --system-namespace for the groups that read TauWorkspaces or TauTeams.
 * main.c takes them before the command, each group after it, through the
 * same rows, the same parse function and the same messages (docs/cli.md,
 * "Global options").
 */
#ifndef TAU_CLI_GLOBALOPTS_H
#define TAU_CLI_GLOBALOPTS_H

#include "aggregator.h"
#include "cli.h"

#include <getopt.h>
#include <stdbool.h>
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

/** A group's parse: its name in messages, its getopt strings and its usage. */
typedef struct tau_cli_optspec {
	const char *cmd;               /**< "tau team": the prefix of every message */
	const char *optstring;         /**< getopt_long's, e.g. "ho:" */
	const struct option *longopts; /**< the group's rows, the shared ones among them */
	void (*usage)(FILE *out);      /**< for --help (stdout) and unknown options (stderr) */
	/**
	 * The group's options that are neither shared nor kept (tau_cli_keep), with the `ctx`
	 * given to tau_cli_parse; NULL where there are none.
	 * @return -1 to go on, else the exit code to stop with (after its own message).
	 */
	int (*take)(void *ctx, int c, const char *arg);
	bool wide_is_table; /**< -o wide is taken too, as table */
} tau_cli_optspec;

/** A group's option that is only kept: getopt's code and where its value goes. */
typedef struct tau_cli_keep {
	int code;
	const char **arg; /**< optarg is stored here (a required_argument row), or */
	bool *flag;       /**< true is stored here (a no_argument row) */
} tau_cli_keep;

/** What a group's parse fills besides its own options. */
typedef struct tau_cli_opts {
	tau_cli_globals gl;          /**< the shared options, over those given before the command */
	tau_cli_format fmt;          /**< -o table|json|yaml, where the rows have "output" */
	tau_cli_aggregator_opts agg; /**< the aggregator options, where the rows have them */
} tau_cli_opts;

/**
 * A group's whole option parse, over its argv (getopt starts over: optind 0, glibc
 * re-initialises and permutes; opterr 0: the messages are the ones below).  *o starts as the
 * options given before the command (`g`, may be NULL), format table, no aggregator option.
 * Each option getopt_long answers from spec->longopts is taken by the first of:
 * --context, --kubeconfig, --request-timeout and --system-namespace go into o->gl; a row of
 * `keep` (ending in a {0} row; NULL: none); -o into o->fmt (its message prefixed spec->cmd);
 * the aggregator options into o->agg; spec->take(ctx, c, optarg).  --help prints the usage
 * on stdout (exit 0); a bad --request-timeout prints "<cmd>: --request-timeout X: reason"
 * and an unknown option or a missing value "<cmd>: unknown option or missing value: X" and
 * the usage on stderr (exit 2).
 * @return -1 when the options are done (optind at the first operand), else the exit code
 *         (TAU_CLI_OK or TAU_CLI_USAGE, or what spec->take answered).
 */
int tau_cli_parse(tau_cli_opts *o, const tau_cli_globals *g, int argc, char **argv,
                  const tau_cli_optspec *spec, const tau_cli_keep *keep, void *ctx);

/**
 * After the options: exactly one operand, a NAME that can be a TauWorkspace.  Prints
 * "<cmd>: NAME is required", "<cmd>: one NAME only" or tau_cli_workspace_name_check's
 * message.  @return 0 with *name set, or -1 (exit TAU_CLI_USAGE).
 */
int tau_cli_one_workspace_name(const char **name, int argc, char **argv, const char *cmd);

/**
 * After the options of `<group> <verb>`: tau_cli_aggregator_check on o->agg, then
 * tau_cli_connect.  Prints "<group> <verb>: reason" or "<group>: reason" on stderr.
 * @return 0 with *client set, or TAU_CLI_USAGE.
 */
int tau_cli_check_connect(tau_kube_client **client, const tau_cli_opts *o, const char *group,
                          const char *verb);

#endif /* TAU_CLI_GLOBALOPTS_H */
