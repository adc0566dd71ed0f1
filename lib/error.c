/*
 * error.c - the thread-local last error.
 *
 * One fixed-size slot per thread: setting an error never allocates, so it
 * works even when the failure being reported is an allocation failure.
 */
#include "tau/error.h"

#include "tau/mem.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local tau_error last_error;

int tau_error_set(int code, const char *fmt, ...)
{
	va_list ap;

	if (code < 0)
		code = -code;
	last_error.code = code;
	va_start(ap, fmt);
	vsnprintf(last_error.msg, sizeof(last_error.msg), fmt, ap);
	va_end(ap);
	return -code;
}

int tau_error_wrap(const char *fmt, ...)
{
	char prefix[TAU_ERROR_MSG_MAX];
	/* Room for both parts; the result is truncated when stored. */
	char joined[2 * TAU_ERROR_MSG_MAX + 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	if (last_error.msg[0] != '\0')
		snprintf(joined, sizeof(joined), "%s: %s", prefix, last_error.msg);
	else
		snprintf(joined, sizeof(joined), "%s", prefix);
	snprintf(last_error.msg, sizeof(last_error.msg), "%.*s", TAU_ERROR_MSG_MAX - 1, joined);
	if (last_error.code == 0)
		last_error.code = TAU_EINTERNAL;
	return -last_error.code;
}

const tau_error *tau_error_last(void)
{
	return &last_error;
}

void tau_error_clear(void)
{
	last_error.code = 0;
	last_error.msg[0] = '\0';
}

const char *tau_error_name(int code)
{
	static const char *const names[] = {
	        [TAU_OK] = "OK",
	        [TAU_EINVAL] = "EINVAL",
	        [TAU_ENOMEM] = "ENOMEM",
	        [TAU_ERANGE] = "ERANGE",
	        [TAU_ENOTFOUND] = "ENOTFOUND",
	        [TAU_ETOOBIG] = "ETOOBIG",
	        [TAU_EIO] = "EIO",
	        [TAU_ETYPE] = "ETYPE",
	        [TAU_ECONFLICT] = "ECONFLICT",
	        [TAU_ETIMEOUT] = "ETIMEOUT",
	        [TAU_EPERM] = "EPERM",
	        [TAU_EAGAIN] = "EAGAIN",
	        [TAU_EINTERNAL] = "EINTERNAL",
	};

	if (code < 0)
		code = -code;
	return tau_str_enum_name(names, TAU_N_ELEMENTS(names), code, "EUNKNOWN");
}
