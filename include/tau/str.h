/*
 * tau/str.h - small string helpers every part needs.
 *
 * String equality where NULL is allowed comes in two meanings, and each has
 * its own name so a caller says which it means: "both unset or both the same
 * text" (tau_str_eq_or_both_null) and "both set and the same text"
 * (tau_str_eq_both_set).  NULL never equals a string, not even "".
 */
#ifndef TAU_STR_H
#define TAU_STR_H

#include <stdbool.h>
#include <stddef.h>

/** True when both are NULL or both are the same string; NULL differs from every string. */
bool tau_str_eq_or_both_null(const char *a, const char *b);

/** True when both are set and the same string; false when either is NULL (two NULLs differ). */
bool tau_str_eq_both_set(const char *a, const char *b);

/**
 * Format into an optional buffer (a "why" text for the caller): does nothing
 * when buf is NULL or cap is 0, else writes at most cap - 1 bytes and a NUL
 * (truncating like snprintf).
 */
void tau_str_printf(char *buf, size_t cap, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/**
 * The text of an enum value from a table indexed by the value (a designated
 * initializer, `[TAU_X_FOO] = "Foo"`): unknown when the value is outside the
 * table or its slot is empty.
 *
 *   static const char *const names[] = {[TAU_NODE_KIND_FLEX] = "Flex", ...};
 *   return tau_str_enum_name(names, TAU_N_ELEMENTS(names), kind, "Unknown");
 */
const char *tau_str_enum_name(const char *const *names, size_t n, int value, const char *unknown);

#endif /* TAU_STR_H */
