/*
 * tau/buf.h - a growable byte buffer with a hard cap.
 *
 * Every buffer that grows from outside input (HTTP bodies, watch lines,
 * files, rendered metrics) has a cap (docs/architecture.md, "Conventions"); tau_buf is the one
 * way to build one.  The bytes are always NUL-terminated once anything was
 * appended, so text can be handed on as a C string.  The first failure
 * sticks: later appends do nothing and return the same error, so a renderer
 * can append many pieces and check once at the end.
 *
 *   tau_buf b = TAU_BUF_INIT(1u << 20);
 *   tau_buf_printf(&b, "%s=%d\n", k, v);
 *   if (tau_buf_error(&b) < 0) { tau_buf_free(&b); return tau_buf_error(&b); }
 *   *out = tau_buf_take(&b, NULL);
 */
#ifndef TAU_BUF_H
#define TAU_BUF_H

#include <stddef.h>

/** A growable buffer; zero-initialise (or TAU_BUF_INIT) before use. */
typedef struct tau_buf {
	char *p;    /**< the bytes, NUL-terminated; NULL until the first append */
	size_t len; /**< bytes held, not counting the NUL */
	size_t cap; /**< bytes allocated */
	size_t max; /**< most bytes it may hold (not counting the NUL); 0 = no cap */
	int err;    /**< 0, or the negative TAU_E* code of the first failed append */
} tau_buf;

/** An empty buffer that refuses to hold more than `max_bytes` (0 = no cap). */
#define TAU_BUF_INIT(max_bytes)                                                                    \
	{                                                                                          \
		NULL, 0, 0, (max_bytes), 0                                                         \
	}

/**
 * Append n bytes (data may be NULL when n is 0).
 * @return 0; -TAU_ETOOBIG when the buffer would pass its cap (message "more than
 *         MAX bytes"); -TAU_ENOMEM; or the error of an earlier failed append.
 *         On failure the buffer keeps what it held.
 */
int tau_buf_append(tau_buf *b, const void *data, size_t n);

/** Append a NUL-terminated string; same returns as tau_buf_append. */
int tau_buf_append_str(tau_buf *b, const char *s);

/** Append formatted text; same returns as tau_buf_append (-TAU_EINVAL on a format error). */
int tau_buf_printf(tau_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Drop the first n bytes (all of them when n >= len). */
void tau_buf_consume(tau_buf *b, size_t n);

/** Keep only the first len bytes (no-op when len >= b->len). */
void tau_buf_truncate(tau_buf *b, size_t len);

/** 0, or the sticky error of the first failed append. */
int tau_buf_error(const tau_buf *b);

/**
 * Give away the bytes as a NUL-terminated string ("" when nothing was appended)
 * and leave the buffer empty (its cap kept).  `len` (may be NULL) receives the length.
 * @return the string to free(), or NULL when out of memory (the buffer is then unchanged).
 */
char *tau_buf_take(tau_buf *b, size_t *len);

/** Release the storage and reset to empty (its cap kept, the error cleared). NULL is a no-op. */
void tau_buf_free(tau_buf *b);

#endif /* TAU_BUF_H */
