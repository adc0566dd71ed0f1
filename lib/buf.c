/*
 * buf.c - the capped growable buffer (tau/buf.h).
 *
 * Growth doubles from 256 bytes; every size is checked against SIZE_MAX and
 * the cap before realloc, and the first failure is remembered so a chain of
 * appends needs one check.
 */
#include "tau/buf.h"

#include "tau/error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(tau_buf *b, int rc)
{
	b->err = rc;
	return rc;
}

int tau_buf_append(tau_buf *b, const void *data, size_t n)
{
	size_t need;

	if (b->err < 0)
		return b->err;
	if (n > SIZE_MAX - b->len - 1)
		return fail(b, tau_error_set(TAU_ETOOBIG, "buffer size overflow"));
	need = b->len + n + 1;
	if (b->max != 0 && need - 1 > b->max)
		return fail(b, tau_error_set(TAU_ETOOBIG, "more than %zu bytes", b->max));
	if (need > b->cap) {
		size_t cap = b->cap != 0 ? b->cap : 256;
		char *p;

		while (cap < need)
			cap = cap > SIZE_MAX / 2 ? need : cap * 2;
		p = realloc(b->p, cap);
		if (p == NULL)
			return fail(b, tau_error_set(TAU_ENOMEM, "out of memory"));
		b->p = p;
		b->cap = cap;
	}
	if (n != 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int tau_buf_append_str(tau_buf *b, const char *s)
{
	return tau_buf_append(b, s, strlen(s));
}

int tau_buf_printf(tau_buf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	int n, rc;
	char *big;

	if (b->err < 0)
		return b->err;
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return fail(b, tau_error_set(TAU_EINVAL, "format error"));
	if ((size_t)n < sizeof(small))
		return tau_buf_append(b, small, (size_t)n);
	big = malloc((size_t)n + 1);
	if (big == NULL)
		return fail(b, tau_error_set(TAU_ENOMEM, "out of memory"));
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	rc = tau_buf_append(b, big, (size_t)n);
	free(big);
	return rc;
}

void tau_buf_consume(tau_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->p, b->p + n, b->len - n);
		b->len -= n;
	}
	if (b->p != NULL)
		b->p[b->len] = '\0';
}

void tau_buf_truncate(tau_buf *b, size_t len)
{
	if (len >= b->len)
		return;
	b->len = len;
	b->p[len] = '\0';
}

int tau_buf_error(const tau_buf *b)
{
	return b->err;
}

char *tau_buf_take(tau_buf *b, size_t *len)
{
	char *p = b->p;

	if (p == NULL) {
		p = calloc(1, 1);
		if (p == NULL) {
			tau_error_set(TAU_ENOMEM, "out of memory");
			return NULL;
		}
	}
	if (len != NULL)
		*len = b->len;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

void tau_buf_free(tau_buf *b)
{
	if (b == NULL)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->err = 0;
}
