/*
 * str.c - string equality with both NULL meanings, formatting into an
 * optional buffer, and an enum value's text from its table.
 */
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool tau_str_eq_or_both_null(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

bool tau_str_eq_both_set(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

void tau_str_printf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (buf == NULL || cap == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
}

const char *tau_str_enum_name(const char *const *names, size_t n, int value, const char *unknown)
{
	if (value < 0 || (size_t)value >= n || names[value] == NULL)
		return unknown;
	return names[value];
}
