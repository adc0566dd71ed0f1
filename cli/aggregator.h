/*
 * aggregator.h - how a `tau` command reaches the aggregator: the options
 * --aggregator ADDR, --ca-file F and --insecure (one table, one check, one
 * reading of env TAU_AGGREGATOR), the bearer token, and the channel.
 * tau inventory, tau storage check, tau workspace check and tau team status
 * all take these options through here (docs/cli.md, "Aggregator options").
 */
#ifndef TAU_CLI_AGGREGATOR_H
#define TAU_CLI_AGGREGATOR_H

#include "cli.h"
#include "tau/rpc_client.h"

#include <getopt.h>
#include <stdbool.h>

/** Where `tau inventory` goes when no aggregator is named (flag or env). */
#define TAU_CLI_DEFAULT_AGGREGATOR "localhost:50051"
/** How to name one, for the messages of commands that ask only when one is named. */
#define TAU_CLI_AGGREGATOR_HINT "(give --aggregator ADDR or set TAU_AGGREGATOR)"

/** getopt_long codes of the three options, above any command's own (which start at 256). */
enum { TAU_CLI_OPT_AGGREGATOR = 0x1000, TAU_CLI_OPT_CA_FILE, TAU_CLI_OPT_INSECURE };

/** The rows of a getopt_long table for the three options (a trailing comma included). */
#define TAU_CLI_AGGREGATOR_LONGOPTS                                                                \
	{"aggregator", required_argument, NULL, TAU_CLI_OPT_AGGREGATOR},                           \
	        {"ca-file", required_argument, NULL, TAU_CLI_OPT_CA_FILE},                         \
	        {"insecure", no_argument, NULL, TAU_CLI_OPT_INSECURE},

/** What the command line said about the aggregator (NULL / false: not given). */
typedef struct tau_cli_aggregator_opts {
	const char *addr;    /**< --aggregator ADDR */
	const char *ca_file; /**< --ca-file F: TLS trusting the CA(s) in F */
	bool insecure;       /**< --insecure: plaintext, said explicitly */
} tau_cli_aggregator_opts;

/**
 * Take getopt_long's answer `c` (its optarg `arg`) into *a when it is one of the three
 * options.  @return true when taken, false when `c` is another option.
 */
bool tau_cli_aggregator_option(tau_cli_aggregator_opts *a, int c, const char *arg);

/** Whether any of the three was given (for commands where they belong to one verb). */
bool tau_cli_aggregator_given(const tau_cli_aggregator_opts *a);

/**
 * Refuse options that cannot work, before any request.  `a` may be NULL (nothing given).
 * @return 0, or -TAU_EINVAL: "--aggregator is empty", "--ca-file and --insecure exclude each
 *         other".
 */
int tau_cli_aggregator_check(const tau_cli_aggregator_opts *a);

/**
 * The aggregator named: --aggregator when given, else env TAU_AGGREGATOR when set and not
 * empty, else NULL (none named).  `a` may be NULL (env only).
 */
const char *tau_cli_aggregator_addr(const tau_cli_aggregator_opts *a);

/**
 * Open a channel to the aggregator: tau_cli_aggregator_check, then the address
 * tau_cli_aggregator_addr names, else TAU_CLI_DEFAULT_AGGREGATOR; TLS trusting the CA in
 * --ca-file when given, plaintext otherwise; the bearer token of tau_cli_bearer_token.
 * *target lends the address used (for messages).  `a` may be NULL.
 * @return 0 and gives *out (tau_rpc_channel_free); -TAU_EINVAL when the options are refused,
 *         the CA file cannot be read or the target is bad (tau_error_last() says which),
 *         -TAU_ENOMEM.
 */
int tau_cli_aggregator_channel(tau_rpc_channel **out, const char **target,
                               const tau_cli_aggregator_opts *a, const tau_cli_globals *g);

/**
 * The bearer token the aggregator gets: the global --token, else the token (or token file) of
 * the kubeconfig context in use (`--kubeconfig`/`--context`, $KUBECONFIG, in-cluster,
 * ~/.kube/config, as kubectl finds it).  *out is NULL when there is no kubeconfig at all or
 * its user has no token (the aggregator then answers UNAUTHENTICATED, unless it runs with
 * --allow-anonymous-queries).  Free *out with free().
 * @return 0; -TAU_EINVAL (an empty or oversized --token); the errors of loading an explicitly
 *         named kubeconfig or context, or of reading its token file.
 */
int tau_cli_bearer_token(char **out, const tau_cli_globals *g);

#endif /* TAU_CLI_AGGREGATOR_H */
