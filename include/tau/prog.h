/*
 * tau/prog.h - what every tau daemon's command line answers before it starts:
 * --help, --version and a bad option, in the same words for each program.
 */
#ifndef TAU_PROG_H
#define TAU_PROG_H

#include <stdbool.h>
#include <stdio.h>

/**
 * With `help`, print the usage on stdout; else with `version`, print
 * "<prog> <version>" on stdout.  @return 0 (the exit status) when one of
 * them was asked, -1 when main goes on.
 */
int tau_prog_help_version(const char *prog, bool help, bool version, void (*usage)(FILE *out));

/**
 * The usage error for what getopt_long (with ':' leading its option string and opterr 0)
 * returned for a bad option: ':' is "--x needs a value", anything else "unknown option --x".
 * Reads getopt's optind and optopt.
 * @return -TAU_EINVAL.
 */
int tau_prog_getopt_error(int c, char *const *argv);

#endif /* TAU_PROG_H */
