/*
 * quantity.c - Kubernetes resource.Quantity as an exact 128-bit decimal.
 *
 * Design note.  Kubernetes keeps a quantity as an int64 with a decimal scale
 * and falls back to arbitrary precision (inf.Dec) when that overflows.  We
 * keep one representation instead: value = +/- mantissa * 10^exp10 with an
 * unsigned 128-bit mantissa that never ends in a decimal zero.  That form is
 * unique per value, so equality is field equality and comparison only has to
 * align exponents, and 128 bits hold every value a cluster produces (node
 * allocatables are ~15 digits; a sum over a million nodes adds six more).
 * What does not fit is refused with TAU_ERANGE; nothing ever wraps, and no
 * floating point is used anywhere.
 *
 * The one idea to know: every value is rounded where Kubernetes rounds it -
 * at parse time, up (away from zero) to a multiple of 10^-9.  Digits below
 * 10^-9 of a decimal number only decide that rounding, so the parser folds
 * them into a "sticky" bit instead of accumulating them; a BinarySI number
 * (digits times 2^10k) is computed exactly in 256 bits before rounding,
 * because there every digit can matter.  Arithmetic afterwards is exact.
 *
 * The parser follows the scanner of apimachinery's parseQuantityString byte
 * for byte, including its oddities (see the header); the formatter follows
 * CanonicalizeBytes with the kubernetes#140459 fix for exponents past "E".
 */
#include "tau/quantity.h"

#include "tau/error.h"

#include <assert.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

#define U128_MAX (~(u128)0)

/* (2^63 - 1) * 10^9: the BinarySI cap of Kubernetes in units of 10^-9. */
#define BINARY_CAP_NANO ((u128)INT64_MAX * 1000000000u)

/* Kubernetes' messages, reused verbatim so operators can search for them. */
#define MSG_FORMAT                                                                                 \
	"quantities must match the regular expression "                                            \
	"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define MSG_SUFFIX  "unable to parse quantity's suffix"
#define MSG_NUMERIC "unable to parse numeric part of quantity"

/* How much of a bad input a message quotes. */
#define QUOTE_INPUT_MAX 80

static const u128 pow10_tab[39] = {
        (u128)1u,
        (u128)10u,
        (u128)100u,
        (u128)1000u,
        (u128)10000u,
        (u128)100000u,
        (u128)1000000u,
        (u128)10000000u,
        (u128)100000000u,
        (u128)1000000000u,
        (u128)10000000000u,
        (u128)100000000000u,
        (u128)1000000000000u,
        (u128)10000000000000u,
        (u128)100000000000000u,
        (u128)1000000000000000u,
        (u128)10000000000000000u,
        (u128)100000000000000000u,
        (u128)1000000000000000000u,
        (u128)10000000000000000000u,
        (u128)10000000000000000000u * 10u,
        (u128)10000000000000000000u * 100u,
        (u128)10000000000000000000u * 1000u,
        (u128)10000000000000000000u * 10000u,
        (u128)10000000000000000000u * 100000u,
        (u128)10000000000000000000u * 1000000u,
        (u128)10000000000000000000u * 10000000u,
        (u128)10000000000000000000u * 100000000u,
        (u128)10000000000000000000u * 1000000000u,
        (u128)10000000000000000000u * 10000000000u,
        (u128)10000000000000000000u * 100000000000u,
        (u128)10000000000000000000u * 1000000000000u,
        (u128)10000000000000000000u * 10000000000000u,
        (u128)10000000000000000000u * 100000000000000u,
        (u128)10000000000000000000u * 1000000000000000u,
        (u128)10000000000000000000u * 10000000000000000u,
        (u128)10000000000000000000u * 100000000000000000u,
        (u128)10000000000000000000u * 1000000000000000000u,
        (u128)10000000000000000000u * 10000000000000000000u,
};

/* ---- 128-bit helpers ------------------------------------------------------------------------ */

static u128 q_mant(const tau_quantity *q)
{
	return ((u128)q->mant_hi << 64) | q->mant_lo;
}

/* Store a value already normalised (no trailing zeros; zero is mant 0, exp 0). */
static void q_store(tau_quantity *q, bool negative, u128 mant, int64_t exp10, unsigned format)
{
	q->mant_lo = (uint64_t)mant;
	q->mant_hi = (uint64_t)(mant >> 64);
	q->exp10 = mant == 0 ? 0 : (int32_t)exp10;
	q->negative = (uint8_t)(mant != 0 && negative);
	q->format = (uint8_t)format;
	q->zero_pad[0] = 0;
	q->zero_pad[1] = 0;
}

/* *x *= 10^n; false (x unchanged) when the product needs more than 128 bits. */
static bool mul_pow10(u128 *x, uint64_t n)
{
	u128 r;

	if (*x == 0 || n == 0)
		return true;
	if (n > 38)
		return false;
	if (__builtin_mul_overflow(*x, pow10_tab[n], &r))
		return false;
	*x = r;
	return true;
}

/* Move the trailing decimal zeros of *m into *e. */
static void normalize(u128 *m, int64_t *e)
{
	uint64_t small;

	if (*m == 0) {
		*e = 0;
		return;
	}
	while ((*m >> 64) != 0) {
		if (*m % 10 != 0)
			return;
		*m /= 10;
		(*e)++;
	}
	small = (uint64_t)*m;
	while (small % 10 == 0) {
		small /= 10;
		(*e)++;
	}
	*m = small;
}

/* Number of decimal digits of x > 0 (1..39). */
static int64_t digit_count(u128 x)
{
	int64_t n = 1;

	while (n < 39 && x >= pow10_tab[n])
		n++;
	return n;
}

/* Compare a * 10^ea with b * 10^eb (mantissas without trailing zeros). */
static int cmp_magnitude(u128 a, int64_t ea, u128 b, int64_t eb)
{
	int64_t la, lb;

	if (a == 0 || b == 0)
		return (a != 0) - (b != 0);
	la = digit_count(a) + ea;
	lb = digit_count(b) + eb;
	if (la != lb)
		return la < lb ? -1 : 1;
	/* Same leading position: the exponents differ by at most 38. */
	if (ea > eb) {
		if (!mul_pow10(&a, (uint64_t)(ea - eb)))
			return 1; /* a now exceeds 2^128 > b */
	} else if (eb > ea) {
		if (!mul_pow10(&b, (uint64_t)(eb - ea)))
			return -1;
	}
	return a < b ? -1 : (a > b ? 1 : 0);
}

/* Writes the decimal digits of x (no NUL) and returns how many (1..39). */
static size_t put_u128(char *p, u128 x)
{
	char rev[40];
	size_t n = 0;

	while ((x >> 64) != 0) {
		rev[n++] = (char)('0' + (unsigned)(x % 10));
		x /= 10;
	}
	for (uint64_t small = (uint64_t)x;; small /= 10) {
		rev[n++] = (char)('0' + (unsigned)(small % 10));
		if (small < 10)
			break;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = rev[n - 1 - i];
	return n;
}

/* ---- 256-bit helpers: hi * 2^128 + lo ---------------------------------------------------------
 */

struct wide {
	u128 hi;
	u128 lo;
};

/* The full 256-bit product of two 128-bit numbers. */
static struct wide mul_wide(u128 a, u128 b)
{
	u128 a0 = (uint64_t)a, a1 = a >> 64, b0 = (uint64_t)b, b1 = b >> 64;
	u128 ll = a0 * b0, lh = a0 * b1, hl = a1 * b0, hh = a1 * b1;
	u128 mid = (ll >> 64) + (uint64_t)lh + (uint64_t)hl;
	struct wide w;

	w.lo = (mid << 64) | (uint64_t)ll;
	w.hi = hh + (lh >> 64) + (hl >> 64) + (mid >> 64);
	return w;
}

/* *x /= 10, returning the remainder.  Needs x->hi < 2^124. */
static unsigned wide_div10(struct wide *x)
{
	u128 r = x->hi % 10;
	u128 cur, q1, q0;

	x->hi /= 10;
	cur = (r << 64) | (uint64_t)(x->lo >> 64);
	q1 = cur / 10;
	cur = ((cur % 10) << 64) | (uint64_t)x->lo;
	q0 = cur / 10;
	x->lo = (q1 << 64) | q0;
	return (unsigned)(cur % 10);
}

/* ---- parsing ----------------------------------------------------------------------------------
 */

/* The pieces of a quantity string, as apimachinery's parseQuantityString splits it. */
struct quantity_text {
	bool negative;
	bool has_digit;         /* the number holds at least one digit, zeros included */
	const char *int_digits; /* integer digits after the leading zeros */
	size_t n_int;
	const char *frac_digits;
	size_t n_frac;
	const char *suffix;
	size_t n_suffix;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Move *pos past the digits of s[*pos, len); returns how many there were. */
static size_t skip_digits(const char *s, size_t len, size_t *pos)
{
	size_t start = *pos;

	while (*pos < len && is_digit(s[*pos]))
		(*pos)++;
	return *pos - start;
}

static bool is_suffix_char(char c)
{
	switch (c) {
	case 'e':
	case 'E':
	case 'i':
	case 'n':
	case 'u':
	case 'm':
	case 'k':
	case 'K':
	case 'M':
	case 'G':
	case 'T':
	case 'P':
		return true;
	default:
		return false;
	}
}

/*
 * [+-] zeros digits [. digits] then a suffix that is a run of suffix letters,
 * an optional sign and digits.  false is Kubernetes' ErrFormatWrong.
 */
static bool split_text(struct quantity_text *t, const char *s, size_t len)
{
	size_t pos = 0, start;

	memset(t, 0, sizeof(*t));
	if (len > 0 && (s[0] == '-' || s[0] == '+')) {
		t->negative = s[0] == '-';
		pos = 1;
	}
	while (pos < len && s[pos] == '0') {
		t->has_digit = true;
		pos++;
	}
	t->int_digits = s + pos;
	t->n_int = skip_digits(s, len, &pos);
	t->frac_digits = s + pos;
	if (pos < len && s[pos] == '.') {
		/* "1." and "1.G" are accepted, as in Kubernetes. */
		pos++;
		t->frac_digits = s + pos;
		t->n_frac = skip_digits(s, len, &pos);
	}
	if (t->n_int > 0 || t->n_frac > 0)
		t->has_digit = true;

	t->suffix = s + pos;
	start = pos;
	while (pos < len && is_suffix_char(s[pos]))
		pos++;
	if (pos < len && (s[pos] == '+' || s[pos] == '-'))
		pos++;
	skip_digits(s, len, &pos);
	if (pos < len)
		return false;
	t->n_suffix = len - start;
	return true;
}

enum suffix_result { SUFFIX_OK, SUFFIX_BAD, SUFFIX_RANGE };

/*
 * The suffix table of suffix.go.  *exp is the power of 10 (decimal forms) or
 * of 2 (BinarySI).  e<int>/E<int> takes an optionally signed decimal integer;
 * one beyond TAU_QUANTITY_EXP_MAX is SUFFIX_RANGE.
 */
static enum suffix_result interpret_suffix(const char *sfx, size_t n, unsigned *format,
                                           int64_t *exp)
{
	static const char decimal[] = "num kMGTPE"; /* ' ' holds the place of "" (10^0) */
	static const char binary[] = "KMGTPE";
	const char *hit;
	size_t i = 1;
	bool negative = false, too_big = false;
	int64_t v = 0;

	*format = TAU_QUANTITY_DECIMAL_SI;
	if (n == 0) {
		*exp = 0;
		return SUFFIX_OK;
	}
	if (n == 1 && sfx[0] != ' ' && (hit = memchr(decimal, sfx[0], sizeof(decimal) - 1))) {
		*exp = 3 * (int64_t)(hit - decimal) - 9;
		return SUFFIX_OK;
	}
	if (n == 2 && sfx[1] == 'i' && (hit = memchr(binary, sfx[0], sizeof(binary) - 1))) {
		*format = TAU_QUANTITY_BINARY_SI;
		*exp = 10 * (int64_t)(hit - binary + 1);
		return SUFFIX_OK;
	}
	if (n < 2 || (sfx[0] != 'e' && sfx[0] != 'E'))
		return SUFFIX_BAD;
	/* strconv.ParseInt(sfx[1:], 10, 64): a sign, then one or more digits. */
	if (sfx[1] == '+' || sfx[1] == '-') {
		negative = sfx[1] == '-';
		i = 2;
	}
	if (i == n)
		return SUFFIX_BAD;
	for (; i < n; i++) {
		if (!is_digit(sfx[i]))
			return SUFFIX_BAD;
		if (!too_big) {
			v = v * 10 + (sfx[i] - '0');
			too_big = v > TAU_QUANTITY_EXP_MAX;
		}
	}
	if (too_big)
		return SUFFIX_RANGE;
	*format = TAU_QUANTITY_DECIMAL_EXPONENT;
	*exp = negative ? -v : v;
	return SUFFIX_OK;
}

/* Accumulates digits into a mantissa; positions are powers of ten. */
struct digit_acc {
	u128 mant;      /* digits up to the last non-zero one */
	int64_t last;   /* position of the last non-zero digit taken */
	uint64_t zeros; /* zeros seen since then */
	bool sticky;    /* a non-zero digit fell below the cut */
};

/*
 * Take n digits, the first at position p0.  Digits below position cut only
 * set the sticky bit.  false when the mantissa would exceed 128 bits.
 */
static bool acc_digits(struct digit_acc *a, const char *d, size_t n, int64_t p0, int64_t cut)
{
	for (size_t i = 0; i < n; i++) {
		int64_t pos = p0 - (int64_t)i;
		unsigned digit = (unsigned)(d[i] - '0');
		u128 m = a->mant;

		if (pos < cut) {
			for (; i < n && !a->sticky; i++)
				a->sticky = d[i] != '0';
			return true;
		}
		if (digit == 0) {
			a->zeros += m != 0;
			continue;
		}
		if (a->zeros == 0 && m < pow10_tab[37]) {
			m = m * 10 + digit; /* the common case, cannot overflow */
		} else {
			if (!mul_pow10(&m, a->zeros + 1) || m > U128_MAX - digit)
				return false;
			m += digit;
		}
		a->mant = m;
		a->zeros = 0;
		a->last = pos;
	}
	return true;
}

enum value_result { VALUE_OK, VALUE_DIGITS, VALUE_EXPONENT };

/* DecimalSI / DecimalExponent: digits * 10^shift, rounded up to 10^-9. */
static enum value_result value_decimal(tau_quantity *q, const struct quantity_text *t,
                                       int64_t shift, unsigned format)
{
	struct digit_acc a = {0};
	u128 m;
	int64_t e;

	if (!acc_digits(&a, t->int_digits, t->n_int, (int64_t)t->n_int - 1 + shift, -9) ||
	    !acc_digits(&a, t->frac_digits, t->n_frac, shift - 1, -9))
		return VALUE_DIGITS;
	m = a.mant;
	e = a.last;
	if (a.sticky) {
		/* inf.RoundUp to nano: add one unit in the 10^-9 place. */
		if (m == 0) {
			m = 1;
		} else {
			if (!mul_pow10(&m, (uint64_t)(e + 9)) || m == U128_MAX)
				return VALUE_DIGITS;
			m += 1;
		}
		e = -9;
	}
	normalize(&m, &e);
	if (e > TAU_QUANTITY_EXP_MAX)
		return VALUE_EXPONENT;
	q_store(q, t->negative, m, e, format);
	return VALUE_OK;
}

/* BinarySI: digits * 2^bits, computed exactly, rounded up to 10^-9, capped at 2^63-1. */
static enum value_result value_binary(tau_quantity *q, const struct quantity_text *t, unsigned bits)
{
	struct digit_acc a = {0};
	struct wide x;
	bool capped = false;
	unsigned format = TAU_QUANTITY_BINARY_SI;
	u128 m;
	int64_t e, nano_shift;

	if (!acc_digits(&a, t->int_digits, t->n_int, (int64_t)t->n_int - 1, INT64_MIN) ||
	    !acc_digits(&a, t->frac_digits, t->n_frac, -1, INT64_MIN))
		return VALUE_DIGITS;
	if (a.mant == 0) {
		q_store(q, false, 0, 0, format);
		return VALUE_OK;
	}
	/* The common case ("1977700032Ki"): an integer well below the cap. */
	m = a.mant;
	if (a.last >= 0 && mul_pow10(&m, (uint64_t)a.last) && m <= (u128)(INT64_MAX >> bits)) {
		m <<= bits;
		e = 0;
		normalize(&m, &e);
		q_store(q, t->negative, m, e, format);
		return VALUE_OK;
	}
	/* x = mantissa * 2^bits, then scaled to units of 10^-9. */
	x.hi = a.mant >> (128 - bits);
	x.lo = a.mant << bits;
	nano_shift = a.last + 9;
	if (nano_shift >= 0) {
		for (int64_t i = 0; i < nano_shift && !capped; i++) {
			capped = x.hi != 0 || x.lo > BINARY_CAP_NANO;
			if (!capped)
				x.lo *= 10;
		}
	} else {
		bool sticky = false;

		for (int64_t i = 0; i < -nano_shift && (x.hi != 0 || x.lo != 0); i++)
			sticky |= wide_div10(&x) != 0;
		if (sticky && ++x.lo == 0)
			x.hi++;
	}
	if (capped || x.hi != 0 || x.lo > BINARY_CAP_NANO)
		x.lo = BINARY_CAP_NANO;
	m = x.lo;
	e = -9;
	if (m < pow10_tab[9])
		format = TAU_QUANTITY_DECIMAL_SI; /* 0 < |v| < 1 */
	normalize(&m, &e);
	q_store(q, t->negative, m, e, format);
	return VALUE_OK;
}

/* Quote at most QUOTE_INPUT_MAX bytes of s for a message, escaping the unprintable. */
static void quote_input(char *dst, size_t cap, const char *s, size_t len)
{
	size_t n = 0;
	size_t shown = len < QUOTE_INPUT_MAX ? len : QUOTE_INPUT_MAX;

	for (size_t i = 0; i < shown && n + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			dst[n++] = '\\';
			dst[n++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			n += (size_t)snprintf(dst + n, cap - n, "\\x%02x", c);
		} else {
			dst[n++] = (char)c;
		}
	}
	if (shown < len && n + 4 < cap) {
		memcpy(dst + n, "...", 3);
		n += 3;
	}
	dst[n] = '\0';
}

static int parse_error(int code, const char *s, size_t len, const char *reason)
{
	char quoted[4 * QUOTE_INPUT_MAX + 8];

	quote_input(quoted, sizeof(quoted), s, len);
	return tau_error_set(code, "quantity \"%s\": %s", quoted, reason);
}

int tau_quantity_parse(tau_quantity *out, const char *s, size_t len)
{
	struct quantity_text t;
	tau_quantity q;
	unsigned format;
	int64_t exp;
	enum value_result vr;

	assert(out != NULL && (s != NULL || len == 0));
	if (len == 0)
		return parse_error(TAU_EINVAL, "", 0, MSG_FORMAT);
	if (len > INT32_MAX)
		return tau_error_set(TAU_ETOOBIG, "quantity of %zu bytes is longer than %d bytes",
		                     len, INT32_MAX);
	if (!split_text(&t, s, len))
		return parse_error(TAU_EINVAL, s, len, MSG_FORMAT);
	switch (interpret_suffix(t.suffix, t.n_suffix, &format, &exp)) {
	case SUFFIX_OK:
		break;
	case SUFFIX_BAD:
		return parse_error(TAU_EINVAL, s, len, MSG_SUFFIX);
	case SUFFIX_RANGE:
		return parse_error(TAU_ERANGE, s, len,
		                   "exponent out of range (more than 1000000 in magnitude)");
	}
	if (!t.has_digit) {
		/*
		 * "+", ".", "m", "Ki": Kubernetes' int64 fast path reads these as
		 * zero; where it would take the inf.Dec path instead (small scales,
		 * Pi and Ei) the empty number fails to parse.
		 */
		bool fast = format == TAU_QUANTITY_BINARY_SI ? 13 - exp * 3 / 10 >= 0 : exp >= -9;

		if (!fast)
			return parse_error(TAU_EINVAL, s, len, MSG_NUMERIC);
		q_store(out, false, 0, 0, format);
		return 0;
	}
	if (format == TAU_QUANTITY_BINARY_SI)
		vr = value_binary(&q, &t, (unsigned)exp);
	else
		vr = value_decimal(&q, &t, exp, format);
	switch (vr) {
	case VALUE_OK:
		break;
	case VALUE_DIGITS:
		return parse_error(TAU_ERANGE, s, len,
		                   "too many significant digits (the mantissa exceeds 128 bits)");
	case VALUE_EXPONENT:
		return parse_error(TAU_ERANGE, s, len,
		                   "value too large (decimal exponent beyond 1000000)");
	}
	*out = q;
	return 0;
}

int tau_quantity_parse_str(tau_quantity *out, const char *s)
{
	assert(s != NULL);
	return tau_quantity_parse(out, s, strlen(s));
}

static bool is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int tau_quantity_parse_json_value(tau_quantity *out, const char *s, size_t len)
{
	assert(out != NULL && (s != NULL || len == 0));
	if (len == 4 && memcmp(s, "null", 4) == 0) {
		*out = tau_quantity_zero();
		return 0;
	}
	if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
		s++;
		len -= 2;
	}
	while (len > 0 && is_json_space(s[0])) {
		s++;
		len--;
	}
	while (len > 0 && is_json_space(s[len - 1]))
		len--;
	return tau_quantity_parse(out, s, len);
}

/* ---- formatting -------------------------------------------------------------------------------
 */

/* Writes the canonical text of q into p (room for TAU_QUANTITY_STR_MAX); returns its length. */
static size_t format_into(char *p, const tau_quantity *q)
{
	static const char *const decimal_suffix[] = {"n", "u", "m", "",  "k",
	                                             "M", "G", "T", "P", "E"};
	static const char *const binary_suffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
	u128 m = q_mant(q);
	int64_t e = q->exp10;
	unsigned format = q->format;
	size_t n = 0;
	unsigned pad;

	if (m == 0) {
		memcpy(p, "0", 2);
		return 1;
	}
	if (format > TAU_QUANTITY_DECIMAL_EXPONENT)
		format = TAU_QUANTITY_DECIMAL_EXPONENT;
	if (q->negative)
		p[n++] = '-';
	if (format == TAU_QUANTITY_BINARY_SI) {
		u128 v = m;
		unsigned k = 0;

		/* Below 1024, fractional, or (our limit) past 2^128: print as DecimalSI. */
		if (cmp_magnitude(m, e, 1024, 0) < 0 || e < 0 || !mul_pow10(&v, (uint64_t)e)) {
			format = TAU_QUANTITY_DECIMAL_SI;
		} else {
			while (k < 6 && (v & 1023) == 0) {
				v >>= 10;
				k++;
			}
			n += put_u128(p + n, v);
			memcpy(p + n, binary_suffix[k], strlen(binary_suffix[k]) + 1);
			return n + strlen(binary_suffix[k]);
		}
	}
	/* Lower the exponent to a multiple of three, padding the mantissa with zeros. */
	pad = (unsigned)(((e % 3) + 3) % 3);
	e -= pad;
	n += put_u128(p + n, m);
	for (unsigned i = 0; i < pad; i++)
		p[n++] = '0';
	if (format == TAU_QUANTITY_DECIMAL_SI && e >= -9 && e <= 18) {
		const char *sfx = decimal_suffix[(e + 9) / 3];

		memcpy(p + n, sfx, strlen(sfx) + 1);
		return n + strlen(sfx);
	}
	/* DecimalExponent, and DecimalSI beyond its table (kubernetes#140459). */
	if (e == 0) {
		p[n] = '\0';
		return n;
	}
	return n + (size_t)snprintf(p + n, TAU_QUANTITY_STR_MAX - n, "e%" PRId64, e);
}

int tau_quantity_format(char *buf, size_t cap, const tau_quantity *q)
{
	char text[TAU_QUANTITY_STR_MAX];
	size_t n;

	assert(q != NULL && (buf != NULL || cap == 0));
	n = format_into(text, q);
	if (n + 1 > cap)
		return tau_error_set(TAU_ETOOBIG, "quantity %s needs %zu bytes, the buffer has %zu",
		                     text, n + 1, cap);
	memcpy(buf, text, n + 1);
	return 0;
}

/* ---- arithmetic -------------------------------------------------------------------------------
 */

tau_quantity tau_quantity_zero(void)
{
	tau_quantity q;

	q_store(&q, false, 0, 0, TAU_QUANTITY_DECIMAL_SI);
	return q;
}

static int range_error(const char *op, const tau_quantity *x, const tau_quantity *y)
{
	char a[TAU_QUANTITY_STR_MAX], b[TAU_QUANTITY_STR_MAX];

	format_into(a, x);
	format_into(b, y);
	return tau_error_set(TAU_ERANGE, "quantity %s %s %s does not fit in 128 bits of mantissa",
	                     a, op, b);
}

/* *out = x + (negate_y ? -y : y), exactly; the format rule of Quantity.Add. */
static int add_signed(tau_quantity *out, const tau_quantity *x, const tau_quantity *y,
                      bool negate_y)
{
	u128 a = q_mant(x), b = q_mant(y), r;
	int64_t ea = x->exp10, eb = y->exp10, e;
	bool na = x->negative, nb = (bool)y->negative != negate_y, neg;
	unsigned format = a == 0 ? y->format : x->format;

	if (b == 0) {
		q_store(out, na, a, ea, format);
		return 0;
	}
	if (a == 0) {
		q_store(out, nb, b, eb, format);
		return 0;
	}
	/* Bring the larger exponent down to the smaller one. */
	if (ea < eb) {
		u128 tm = a;
		int64_t te = ea;
		bool tn = na;

		a = b, ea = eb, na = nb;
		b = tm, eb = te, nb = tn;
	}
	e = eb;
	if (ea - eb > 38)
		goto overflow; /* a * 10^39 > 2^128 + b: no sum or difference fits */
	if (mul_pow10(&a, (uint64_t)(ea - eb))) {
		if (na == nb) {
			if (__builtin_add_overflow(a, b, &r)) {
				/*
				 * 2^128 + r.  With equal exponents the sum can end in a
				 * zero and fit once normalised; otherwise its last
				 * digit is b's, non-zero, and it cannot.
				 */
				struct wide w = {1, r};

				if (ea != eb || wide_div10(&w) != 0 || w.hi != 0)
					goto overflow;
				r = w.lo;
				e++;
			}
			neg = na;
		} else if (a >= b) {
			r = a - b;
			neg = na;
		} else {
			r = b - a;
			neg = nb;
		}
	} else {
		/* a * 10^k exceeds 128 bits; only a difference can come back in range. */
		struct wide w = mul_wide(a, pow10_tab[ea - eb]);

		if (na == nb)
			goto overflow;
		if (w.lo < b)
			w.hi--;
		w.lo -= b;
		if (w.hi != 0)
			goto overflow;
		r = w.lo;
		neg = na;
	}
	normalize(&r, &e);
	if (e > TAU_QUANTITY_EXP_MAX)
		goto overflow;
	q_store(out, neg, r, e, format);
	return 0;
overflow:
	return range_error(negate_y ? "-" : "+", x, y);
}

int tau_quantity_add(tau_quantity *out, const tau_quantity *x, const tau_quantity *y)
{
	assert(out != NULL && x != NULL && y != NULL);
	return add_signed(out, x, y, false);
}

int tau_quantity_sub(tau_quantity *out, const tau_quantity *x, const tau_quantity *y)
{
	assert(out != NULL && x != NULL && y != NULL);
	return add_signed(out, x, y, true);
}

int tau_quantity_sum(tau_quantity *out, const tau_quantity *items, size_t n)
{
	tau_quantity acc = tau_quantity_zero();
	int rc;

	assert(out != NULL && (items != NULL || n == 0));
	for (size_t i = 0; i < n; i++) {
		rc = add_signed(&acc, &acc, &items[i], false);
		if (rc < 0)
			return tau_error_wrap("summing item %zu of %zu", i, n);
	}
	*out = acc;
	return 0;
}

int tau_quantity_cmp(const tau_quantity *x, const tau_quantity *y)
{
	int sx = tau_quantity_sign(x), sy = tau_quantity_sign(y);

	if (sx != sy)
		return sx < sy ? -1 : 1;
	if (sx == 0)
		return 0;
	return sx * cmp_magnitude(q_mant(x), x->exp10, q_mant(y), y->exp10);
}

int tau_quantity_is_zero(const tau_quantity *q)
{
	assert(q != NULL);
	return q->mant_lo == 0 && q->mant_hi == 0;
}

int tau_quantity_sign(const tau_quantity *q)
{
	assert(q != NULL);
	if (tau_quantity_is_zero(q))
		return 0;
	return q->negative ? -1 : 1;
}

tau_quantity_fmt tau_quantity_get_format(const tau_quantity *q)
{
	assert(q != NULL);
	switch (q->format) {
	case TAU_QUANTITY_DECIMAL_SI:
		return TAU_QUANTITY_DECIMAL_SI;
	case TAU_QUANTITY_BINARY_SI:
		return TAU_QUANTITY_BINARY_SI;
	default:
		return TAU_QUANTITY_DECIMAL_EXPONENT;
	}
}

void tau_quantity_set_format(tau_quantity *q, tau_quantity_fmt format)
{
	assert(q != NULL && (unsigned)format <= TAU_QUANTITY_DECIMAL_EXPONENT);
	if ((unsigned)format > TAU_QUANTITY_DECIMAL_EXPONENT)
		format = TAU_QUANTITY_DECIMAL_EXPONENT;
	q->format = (uint8_t)format;
}

int tau_quantity_scaled_value(int64_t *out, const tau_quantity *q, int32_t scale)
{
	u128 m = q_mant(q);
	int64_t e = (int64_t)q->exp10 - scale;
	u128 limit = (u128)INT64_MAX + (q->negative ? 1u : 0u);
	char text[TAU_QUANTITY_STR_MAX];

	assert(out != NULL && q != NULL);
	if (m != 0 && e < 0) {
		/* ceil(m / 10^-e) for a positive m */
		if (e < -38) {
			m = 1;
		} else {
			u128 p = pow10_tab[-e];

			m = m / p + (m % p != 0);
		}
	} else if (!mul_pow10(&m, (uint64_t)e)) {
		goto overflow;
	}
	if (m > limit)
		goto overflow;
	if (!q->negative)
		*out = (int64_t)m;
	else if (m > (u128)INT64_MAX)
		*out = INT64_MIN;
	else
		*out = -(int64_t)m;
	return 0;
overflow:
	format_into(text, q);
	return tau_error_set(TAU_ERANGE, "quantity %s does not fit in int64 at scale 10^%" PRId32,
	                     text, scale);
}

int tau_quantity_value(int64_t *out, const tau_quantity *q)
{
	return tau_quantity_scaled_value(out, q, 0);
}

int tau_quantity_milli_value(int64_t *out, const tau_quantity *q)
{
	return tau_quantity_scaled_value(out, q, -3);
}

int tau_quantity_from_scaled(tau_quantity *out, int64_t value, int32_t scale,
                             tau_quantity_fmt format)
{
	u128 m = value < 0 ? (u128)(0 - (uint64_t)value) : (u128)value;
	int64_t e = scale;

	assert(out != NULL);
	if ((unsigned)format > TAU_QUANTITY_DECIMAL_EXPONENT)
		return tau_error_set(TAU_EINVAL, "quantity format %d is not a tau_quantity_fmt",
		                     (int)format);
	normalize(&m, &e);
	if (e > TAU_QUANTITY_EXP_MAX || e < -TAU_QUANTITY_EXP_MAX)
		return tau_error_set(TAU_ERANGE,
		                     "quantity %" PRId64 "e%" PRId32 ": exponent beyond +/-1000000",
		                     value, scale);
	q_store(out, value < 0, m, e, format);
	return 0;
}
