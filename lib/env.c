/*
 * env.c - getenv behind the tau_env_fn type.
 *
 * The one idea: a program's options reader defaults to this lookup, and its
 * tests pass a table of their own instead.
 */
#include "tau/env.h"

#include <stdlib.h>

const char *tau_env_get(const char *name)
{
	return getenv(name);
}
