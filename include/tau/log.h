/*
 * tau/log.h - leveled, structured logs for the taugrid daemons and CLI.
 *
 * One line per event on stderr, logfmt by default
 * (`ts=2026-12-02T11:00:00.123Z level=info msg="agent connected" node=n1`)
 * or one JSON object per line for log shippers.  Key/value pairs are
 * passed as alternating const char * arguments ending with NULL, so values
 * are quoted and escaped by the logger, never by callers.
 *
 * libtau itself logs only at debug (docs/architecture.md, "Conventions"); the programs log
 * once, where an error is handled.
 */
#ifndef TAU_LOG_H
#define TAU_LOG_H

#include <stdio.h>

typedef enum tau_log_level {
	TAU_LOG_DEBUG = 0,
	TAU_LOG_INFO = 1,
	TAU_LOG_WARN = 2,
	TAU_LOG_ERROR = 3,
	TAU_LOG_OFF = 4
} tau_log_level;

typedef enum tau_log_format { TAU_LOG_FORMAT_LOGFMT = 0, TAU_LOG_FORMAT_JSON = 1 } tau_log_format;

/**
 * Parse a level name ("debug", "info", "warn"/"warning", "error", "off"),
 * case-insensitive.  @return 0 or -TAU_EINVAL (message lists the valid names).
 */
int tau_log_level_parse(tau_log_level *out, const char *name);

/** Parse "logfmt" or "json". @return 0 or -TAU_EINVAL. */
int tau_log_format_parse(tau_log_format *out, const char *name);

/** The level's lower-case name. */
const char *tau_log_level_name(tau_log_level level);

/**
 * Configure from the environment: TAU_LOG_LEVEL and TAU_LOG_FORMAT.
 * Invalid values leave the setting unchanged and return -TAU_EINVAL.
 */
int tau_log_init_from_env(void);

void tau_log_set_level(tau_log_level level);
tau_log_level tau_log_get_level(void);
void tau_log_set_format(tau_log_format format);

/**
 * Send log lines to `stream` instead of stderr (tests).  NULL restores stderr.
 * The stream is borrowed, not closed.
 */
void tau_log_set_stream(FILE *stream);

/** True when a message at `level` would be written. */
int tau_log_enabled(tau_log_level level);

/**
 * Write one line: `msg` then key/value string pairs ending with NULL.
 * A NULL value prints as an empty string.  Thread-safe; each line is written
 * with one fwrite so lines from threads never interleave.
 */
void tau_log(tau_log_level level, const char *msg, ...)
#if defined(__GNUC__)
        __attribute__((sentinel))
#endif
        ;

#define tau_log_debug(...) tau_log(TAU_LOG_DEBUG, __VA_ARGS__)
#define tau_log_info(...)  tau_log(TAU_LOG_INFO, __VA_ARGS__)
#define tau_log_warn(...)  tau_log(TAU_LOG_WARN, __VA_ARGS__)
#define tau_log_error(...) tau_log(TAU_LOG_ERROR, __VA_ARGS__)

#endif /* TAU_LOG_H */
