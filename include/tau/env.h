/*
 * tau/env.h - the process environment as a lookup function, so that option
 * readers take their environment as a parameter and tests can hand in their own.
 */
#ifndef TAU_ENV_H
#define TAU_ENV_H

/** Looks up an environment variable; returns NULL when unset (getenv's contract). */
typedef const char *(*tau_env_fn)(const char *name);

/** The process environment as a tau_env_fn: getenv(name). */
const char *tau_env_get(const char *name);

#endif /* TAU_ENV_H */
