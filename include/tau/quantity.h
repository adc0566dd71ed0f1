/*
 * tau/quantity.h - Kubernetes resource.Quantity, exact and without floating point.
 *
 * A quantity is a signed decimal number (a 128-bit mantissa times a power of
 * ten) plus the Format it was written in, which only steers how it is printed
 * again.  Parsing, canonical formatting and arithmetic follow
 * k8s.io/apimachinery/pkg/api/resource (cases pinned in tests/unit/lib/test_quantity.c):
 *
 *   tau_quantity q;
 *   if (tau_quantity_parse_str(&q, "1.5Gi") == 0)
 *           tau_quantity_format(buf, sizeof(buf), &q);     -> "1536Mi"
 *
 * Deliberate limits (Kubernetes uses arbitrary precision instead): a value
 * must fit in 128 bits of mantissa (at most 39 significant digits after the
 * rounding to 10^-9) and its decimal exponent in +/-TAU_QUANTITY_EXP_MAX;
 * anything larger is refused with -TAU_ERANGE rather than overflowing.
 *
 * tau_quantity is a small value type (24 bytes) so that callers can hold and
 * sum thousands of them without allocating.  A zero-initialised struct
 * (`tau_quantity q = {0};`) is the DecimalSI zero.
 */
#ifndef TAU_QUANTITY_H
#define TAU_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/** Kubernetes' Format: the notation a quantity was written in, which decides how it prints. */
typedef enum tau_quantity_fmt {
	TAU_QUANTITY_DECIMAL_SI = 0,      /**< 12M, 1500m, 5n (powers of 1000) */
	TAU_QUANTITY_BINARY_SI = 1,       /**< 12Mi, 1Gi (powers of 1024) */
	TAU_QUANTITY_DECIMAL_EXPONENT = 2 /**< 12e6, 80e-3 */
} tau_quantity_fmt;

/**
 * A quantity: value = (negative ? -1 : 1) * mantissa * 10^exp10.
 *
 * The fields are PRIVATE: read and build quantities through the functions
 * below only.  Invariants kept by every function: the mantissa has no
 * trailing decimal zeros; zero is mantissa 0, exp10 0, negative 0; exp10 is
 * within +/-TAU_QUANTITY_EXP_MAX.  So two quantities built by these functions
 * hold the same value and format exactly when their bytes are equal.
 */
typedef struct tau_quantity {
	uint64_t mant_lo;    /**< private: low 64 bits of the mantissa */
	uint64_t mant_hi;    /**< private: high 64 bits of the mantissa */
	int32_t exp10;       /**< private: decimal exponent */
	uint8_t negative;    /**< private: 1 when the value is below zero */
	uint8_t format;      /**< private: a tau_quantity_fmt */
	uint8_t zero_pad[2]; /**< private: always zero, so equal values compare equal bytewise */
} tau_quantity;

/** Largest accepted |decimal exponent|, written ("1e1000000") or resulting. */
#define TAU_QUANTITY_EXP_MAX 1000000

/**
 * Buffer size that holds the canonical form of any quantity, NUL included:
 * sign, 39 mantissa digits, 2 padding zeros, "e", an int32 exponent.
 */
#define TAU_QUANTITY_STR_MAX 64

/** The zero quantity, DecimalSI (the same as a zero-initialised struct). */
tau_quantity tau_quantity_zero(void);

/**
 * Parse the quantity text s[0..len) exactly as Kubernetes ParseQuantity does
 * (no surrounding whitespace, suffixes n u m "" k M G T P E, Ki..Ei, e<int>):
 * the value is rounded up away from zero to a multiple of 10^-9, BinarySI
 * magnitudes above 2^63-1 are capped to 2^63-1, and BinarySI values strictly
 * between 0 and 1 in magnitude become DecimalSI.  s need not be NUL-terminated
 * and may hold any bytes.
 *
 * Returns 0 and fills *out; on failure *out is untouched and:
 *   -TAU_EINVAL  malformed text; the message names the input and gives the
 *                Kubernetes reason ("quantities must match the regular
 *                expression ...", "unable to parse quantity's suffix",
 *                "unable to parse numeric part of quantity");
 *   -TAU_ERANGE  valid syntax but outside what tau_quantity holds: a written
 *                exponent beyond +/-TAU_QUANTITY_EXP_MAX, a mantissa over
 *                128 bits, or a resulting exponent beyond the limit;
 *   -TAU_ETOOBIG len exceeds INT32_MAX.
 * Kubernetes quirks kept: "1." and ".5" and "1.G" parse; a number with no
 * digits at all ("+", ".", "m", "Ki") is zero where Kubernetes' fast path
 * takes it and "unable to parse numeric part" where it does not ("Pi", ".e-10").
 */
int tau_quantity_parse(tau_quantity *out, const char *s, size_t len);

/** tau_quantity_parse() of a NUL-terminated string. */
int tau_quantity_parse_str(tau_quantity *out, const char *s);

/**
 * Parse the raw text of a JSON value the way Quantity.UnmarshalJSON does:
 * `null` gives zero; one pair of surrounding double quotes is removed (the
 * content is not JSON-unescaped, like Kubernetes); surrounding ASCII
 * whitespace is trimmed; a bare JSON number ("1.5", 2e3) is accepted.
 * Returns and leaves *out as tau_quantity_parse() does.
 */
int tau_quantity_parse_json_value(tau_quantity *out, const char *s, size_t len);

/**
 * Write the canonical form of q (Kubernetes CanonicalizeBytes) into buf as a
 * NUL-terminated string: "0" for zero; no fractional digits; the largest
 * suffix that loses nothing; "-" only for negative values.  BinarySI values
 * that are below 1024 in magnitude or not integers print as DecimalSI.  A
 * DecimalSI exponent beyond the table (>18, <-9) prints as an exponent
 * ("1000E" -> "1e21"), as fixed by kubernetes#140459.  Deviation: a BinarySI
 * value beyond 2^128 prints as DecimalSI, and one with more than six factors
 * of 1024 keeps "Ei" with a larger number ("1024Ei"), where Kubernetes would
 * drop the suffix.
 *
 * Returns 0, or -TAU_ETOOBIG when cap is too small for the text and its NUL
 * (buf is then untouched); a cap of TAU_QUANTITY_STR_MAX always suffices.
 */
int tau_quantity_format(char *buf, size_t cap, const tau_quantity *q);

/**
 * *out = x + y (tau_quantity_add) or x - y (tau_quantity_sub), exactly.  The
 * result keeps x's format, unless x is zero: then it takes y's (Kubernetes
 * Add/Sub).  out may alias x or y.
 * Returns 0, or -TAU_ERANGE when the exact result does not fit the 128-bit
 * mantissa or the exponent limit (*out untouched).
 */
int tau_quantity_add(tau_quantity *out, const tau_quantity *x, const tau_quantity *y);
int tau_quantity_sub(tau_quantity *out, const tau_quantity *x, const tau_quantity *y);

/**
 * *out = items[0] + ... + items[n-1], adding left to right from zero with the
 * format rule of tau_quantity_add (the value does not depend on the order;
 * the format may).  items may be NULL when n is 0 (the sum is then zero).
 * Returns 0, or -TAU_ERANGE on overflow (*out untouched).
 */
int tau_quantity_sum(tau_quantity *out, const tau_quantity *items, size_t n);

/** Exact comparison: -1 if x < y, 0 if equal, 1 if x > y.  Formats are ignored. */
int tau_quantity_cmp(const tau_quantity *x, const tau_quantity *y);

/** 1 when q is zero, else 0. */
int tau_quantity_is_zero(const tau_quantity *q);

/** -1, 0 or 1 as q is negative, zero or positive. */
int tau_quantity_sign(const tau_quantity *q);

/** The format q was parsed or built with (zero-valued quantities keep one too). */
tau_quantity_fmt tau_quantity_get_format(const tau_quantity *q);

/**
 * Change only the notation q prints in (its value stays), e.g. to print a sum
 * of BinarySI items as BinarySI.  An unknown format is a programmer error
 * (asserted); it is stored as DecimalExponent, as Kubernetes prints it.
 */
void tau_quantity_set_format(tau_quantity *q, tau_quantity_fmt format);

/**
 * *out = q / 10^scale rounded up away from zero to an integer (Kubernetes
 * ScaledValue): scale 0 is Value(), -3 is MilliValue().
 * Returns 0, or -TAU_ERANGE when the result does not fit int64_t (*out untouched).
 */
int tau_quantity_scaled_value(int64_t *out, const tau_quantity *q, int32_t scale);

/** tau_quantity_scaled_value(out, q, 0): the value rounded up away from zero. */
int tau_quantity_value(int64_t *out, const tau_quantity *q);

/** tau_quantity_scaled_value(out, q, -3): the value in thousandths, rounded up. */
int tau_quantity_milli_value(int64_t *out, const tau_quantity *q);

/**
 * *out = value * 10^scale with the given format (Kubernetes
 * NewScaledQuantity; NewQuantity is scale 0, NewMilliQuantity scale -3).
 * No rounding happens here, so scales below -9 give values below nano.
 * Returns 0, -TAU_EINVAL for an unknown format, or -TAU_ERANGE when the
 * normalised exponent is beyond +/-TAU_QUANTITY_EXP_MAX (*out untouched).
 */
int tau_quantity_from_scaled(tau_quantity *out, int64_t value, int32_t scale,
                             tau_quantity_fmt format);

#endif /* TAU_QUANTITY_H */
