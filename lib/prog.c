/*
 * prog.c - a daemon's answer to --help and --version.
 *
 * The one idea: each program's main asks once and returns the exit status it
 * is given, so the version line is written one way for every program.
 */
#include "tau/prog.h"

#include <stdbool.h>
#include <stdio.h>

#ifndef TAU_VERSION_STRING
#define TAU_VERSION_STRING "0.0.0"
#endif

int tau_prog_help_version(const char *prog, bool help, bool version, void (*usage)(FILE *out))
{
	if (help) {
		usage(stdout);
		return 0;
	}
	if (version) {
		printf("%s %s\n", prog, TAU_VERSION_STRING);
		return 0;
	}
	return -1;
}
