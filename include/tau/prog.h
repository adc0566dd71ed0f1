/*
 * tau/prog.h - what every tau daemon's main answers before it starts: --help
 * and --version, in the same words for each program.
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

#endif /* TAU_PROG_H */
