/*
 * prog.c - a daemon's answer to --help, --version and a bad option.
 *
 * The one idea: each program's main asks once and returns the exit status it
 * is given, so the version line is written one way for every program.
 */
#include "tau/prog.h"

#include "tau/error.h"

#include <getopt.h>

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

int tau_prog_getopt_error(int c, char *const *argv)
{
	if (c == ':')
		return tau_error_set(TAU_EINVAL, "%s needs a value", argv[optind - 1]);
	if (optopt != 0 && optopt < 256)
		return tau_error_set(TAU_EINVAL, "unknown option -%c", optopt);
	return tau_error_set(TAU_EINVAL, "unknown option %s", argv[optind - 1]);
}
