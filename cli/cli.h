/*
 * cli.h - what the `tau` subcommands share: global options, exit codes and
 * the entry point of each command group.  cli/main.c dispatches on a table
 * of these; each group lives in its own file (inventory.c, workspace.c,
 * storage.c).
 */
#ifndef TAU_CLI_CLI_H
#define TAU_CLI_CLI_H

#include <stdio.h>

/** Exit codes of DESIGN.md §3. */
#define TAU_CLI_OK     0 /**< success */
#define TAU_CLI_FAILED 1 /**< a check failed, or the answer could not be obtained */
#define TAU_CLI_USAGE  2 /**< usage or input error */

/** Output format of -o, shared by every command group. */
typedef enum tau_cli_format { TAU_CLI_TABLE = 0, TAU_CLI_JSON } tau_cli_format;

/** Options given before the command. */
typedef struct tau_cli_globals {
	const char *kubeconfig;
	const char *context;
	const char *system_namespace;
} tau_cli_globals;

/** A command group: `tau NAME ...`.  `run` gets argv starting at NAME. */
typedef struct tau_cli_command {
	const char *name;
	const char *usage; /**< one line for `tau --help` */
	int (*run)(int argc, char **argv, const tau_cli_globals *g);
} tau_cli_command;

/** `tau inventory nodes|pool|explain NODE ...` (cli/inventory.c). */
int tau_cli_inventory(int argc, char **argv, const tau_cli_globals *g);

/** `tau workspace list|status NAME|check NAME ...` (cli/workspace.c). */
int tau_cli_workspace(int argc, char **argv, const tau_cli_globals *g);

/** `tau team list|status NAME ...` (cli/team.c). */
int tau_cli_team(int argc, char **argv, const tau_cli_globals *g);

/** `tau storage check --driver NAME [--selector SEL]` (cli/storage.c). */
int tau_cli_storage(int argc, char **argv, const tau_cli_globals *g);

#endif /* TAU_CLI_CLI_H */
