/*
 * tau/parse.h - operator input: durations, whole numbers, booleans, listen addresses.
 *
 * Flags and environment variables reach the daemons and the CLI as text.
 * Every parser here takes the whole string, checks a range the caller
 * names, and refuses anything else with a message that quotes the setting
 * and the value and says what was expected, e.g.
 *
 *   --heartbeat-interval 1e300: not a duration (e.g. 500ms, 60s, 2m, 1h30m)
 *   --timeout -5: must not be negative
 *   --probe-interval 99999999999999999999: out of range (1..86400)
 *
 * Nothing here calls strtod: NaN, infinities, exponents, hexadecimal,
 * leading blanks and trailing junk are all refused, and every product is
 * checked for overflow before it is formed.
 */
#ifndef TAU_PARSE_H
#define TAU_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Parse a duration into milliseconds.
 *
 * Syntax: one or more `<digits>[.<digits>]<unit>` with unit `ms`, `s`, `m` or `h`
 * ("500ms", "1.5s", "2m", "1h30m"), or a bare number of seconds ("60", "0.25").
 * Fractions below a millisecond are dropped.  No sign, no blanks.
 *
 * @param out     receives the milliseconds; untouched on failure.
 * @param what    the setting, for messages ("--heartbeat-interval"); must not be NULL.
 * @param text    the value; NULL or "" is refused.
 * @param min_ms  smallest accepted value.
 * @param max_ms  largest accepted value.
 * @return 0, or -TAU_EINVAL with "<what> <text>: <reason>" (not a duration, must not be
 *         negative, out of range (MIN..MAX)).
 */
int tau_parse_duration_ms(int64_t *out, const char *what, const char *text, int64_t min_ms,
                          int64_t max_ms);

/**
 * Parse a whole decimal number: an optional '-' and digits, nothing else.
 * @return 0, or -TAU_EINVAL with "<what> <text>: <reason>" (expected a whole number,
 *         out of range (MIN..MAX)).
 */
int tau_parse_int64(int64_t *out, const char *what, const char *text, int64_t min, int64_t max);

/** tau_parse_int64 into an int. */
int tau_parse_int(int *out, const char *what, const char *text, int min, int max);

/**
 * Parse a boolean: 1/true/yes/on or 0/false/no/off (any case); "" is false.
 * @return 0, or -TAU_EINVAL "<what> <text>: expected true or false".
 */
int tau_parse_bool(bool *out, const char *what, const char *text);

/**
 * Split a listen address: "HOST:PORT", ":PORT" (every address) or "[V6]:PORT", port 0..65535
 * (0 lets the kernel choose).  An IPv6 address must be in brackets.
 *
 * @param host      receives the host ("" for every address), NUL-terminated.
 * @param host_cap  size of host.
 * @param port      receives the port.
 * @param addr      the address.
 * @return 0, or -TAU_EINVAL with "listen address <addr>: <reason>".
 */
int tau_parse_listen(char *host, size_t host_cap, int *port, const char *addr);

/**
 * Render milliseconds in the largest unit that divides them ("5m", "200ms", "90s").
 * @return buf.
 */
const char *tau_format_duration_ms(char *buf, size_t cap, int64_t ms);

#endif /* TAU_PARSE_H */
