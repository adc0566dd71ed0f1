/*
 * parse.c - operator input parsers with range checks (tau/parse.h).
 *
 * One idea: numbers are accumulated digit by digit in int64 with an overflow
 * check at every step, so there is no floating point anywhere (no NaN, no
 * 1e300 turning into an undefined cast) and every refusal can say exactly
 * what was wrong with the text.
 */
#include "tau/parse.h"

#include "tau/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *tau_format_duration_ms(char *buf, size_t cap, int64_t ms)
{
	if (ms != 0 && ms % 3600000 == 0)
		snprintf(buf, cap, "%" PRId64 "h", ms / 3600000);
	else if (ms != 0 && ms % 60000 == 0)
		snprintf(buf, cap, "%" PRId64 "m", ms / 60000);
	else if (ms % 1000 == 0)
		snprintf(buf, cap, "%" PRId64 "s", ms / 1000);
	else
		snprintf(buf, cap, "%" PRId64 "ms", ms);
	return buf;
}

static int out_of_range_ms(const char *what, const char *text, int64_t min_ms, int64_t max_ms)
{
	char lo[32], hi[32];

	return tau_error_set(TAU_EINVAL, "%s %s: out of range (%s..%s)", what, text,
	                     tau_format_duration_ms(lo, sizeof(lo), min_ms),
	                     tau_format_duration_ms(hi, sizeof(hi), max_ms));
}

/* Multiply-add with an overflow check: *acc = *acc * mul + add. */
static bool mul_add(int64_t *acc, int64_t mul, int64_t add)
{
	if (*acc > (INT64_MAX - add) / mul)
		return false;
	*acc = *acc * mul + add;
	return true;
}

/*
 * One "<digits>[.<digits>]" at *p.  The whole part goes to *whole, the first nine
 * fraction digits to *frac_ns in billionths (later digits are below a millisecond).  Returns false
 * on no digits or overflow
 * (*overflow set).
 */
static bool number(const char **p, int64_t *whole, int64_t *frac_ns, bool *overflow)
{
	const char *s = *p;
	int64_t scale = 100000000;
	bool any = false;

	*whole = 0;
	*frac_ns = 0;
	while (*s >= '0' && *s <= '9') {
		if (!mul_add(whole, 10, *s - '0')) {
			*overflow = true;
			return false;
		}
		any = true;
		s++;
	}
	if (*s == '.') {
		s++;
		while (*s >= '0' && *s <= '9') {
			*frac_ns += (*s - '0') * scale;
			scale /= 10;
			any = true;
			s++;
		}
	}
	*p = s;
	return any;
}

int tau_parse_duration_ms(int64_t *out, const char *what, const char *text, int64_t min_ms,
                          int64_t max_ms)
{
	static const struct {
		const char *name;
		int64_t ms;
	} units[] = {{"ms", 1}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
	const char *p = text;
	int64_t total = 0;
	bool overflow = false;
	int parts = 0;

	if (text == NULL || text[0] == '\0')
		return tau_error_set(TAU_EINVAL, "%s: empty; expected a duration such as 60s",
		                     what);
	if (text[0] == '-')
		return tau_error_set(TAU_EINVAL, "%s %s: must not be negative", what, text);
	while (*p != '\0') {
		int64_t whole, frac_ns, unit = 0, part;
		size_t i;

		if (!number(&p, &whole, &frac_ns, &overflow)) {
			if (overflow)
				return out_of_range_ms(what, text, min_ms, max_ms);
			goto bad;
		}
		parts++;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t n = strlen(units[i].name);

			if (strncmp(p, units[i].name, n) == 0) {
				unit = units[i].ms;
				p += n;
				break;
			}
		}
		if (unit == 0) {
			/* A bare number is seconds, and only alone. */
			if (*p != '\0' || parts > 1)
				goto bad;
			unit = 1000;
		}
		part = whole;
		if (!mul_add(&part, unit, frac_ns * unit / 1000000000) || total > INT64_MAX - part)
			return out_of_range_ms(what, text, min_ms, max_ms);
		total += part;
	}
	if (total < min_ms || total > max_ms)
		return out_of_range_ms(what, text, min_ms, max_ms);
	*out = total;
	return 0;
bad:
	return tau_error_set(TAU_EINVAL, "%s %s: not a duration (e.g. 500ms, 60s, 2m, 1h30m)", what,
	                     text);
}

int tau_parse_int64(int64_t *out, const char *what, const char *text, int64_t min, int64_t max)
{
	const char *p = text;
	bool neg = false;
	int64_t v = 0;

	if (text == NULL || text[0] == '\0')
		return tau_error_set(TAU_EINVAL, "%s: empty; expected a whole number", what);
	if (*p == '-') {
		neg = true;
		p++;
	}
	if (*p == '\0')
		goto bad;
	for (; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		/* Accumulate negatively: INT64_MIN has no positive twin. */
		if (v < (INT64_MIN + (*p - '0')) / 10)
			goto range;
		v = v * 10 - (*p - '0');
	}
	if (!neg) {
		if (v == INT64_MIN)
			goto range;
		v = -v;
	}
	if (v < min || v > max)
		goto range;
	*out = v;
	return 0;
bad:
	return tau_error_set(TAU_EINVAL, "%s %s: expected a whole number", what, text);
range:
	return tau_error_set(TAU_EINVAL, "%s %s: out of range (%" PRId64 "..%" PRId64 ")", what,
	                     text, min, max);
}

int tau_parse_int(int *out, const char *what, const char *text, int min, int max)
{
	int64_t v;
	int rc = tau_parse_int64(&v, what, text, min, max);

	if (rc == 0)
		*out = (int)v;
	return rc;
}

int tau_parse_bool(bool *out, const char *what, const char *text)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off", ""};

	if (text == NULL)
		text = "";
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(text, yes[i]) == 0) {
			*out = true;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		if (strcasecmp(text, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return tau_error_set(TAU_EINVAL, "%s %s: expected true or false", what, text);
}

int tau_parse_listen(char *host, size_t host_cap, int *port, const char *addr)
{
	const char *colon, *h = addr;
	size_t hlen;
	int64_t p;

	if (addr == NULL || addr[0] == '\0')
		return tau_error_set(TAU_EINVAL,
		                     "empty listen address; expected HOST:PORT or :PORT");
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (close == NULL || close[1] != ':')
			return tau_error_set(TAU_EINVAL,
			                     "listen address %s: expected [ADDRESS]:PORT", addr);
		h = addr + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (colon == NULL)
			return tau_error_set(
			        TAU_EINVAL, "listen address %s: expected HOST:PORT or :PORT", addr);
		hlen = (size_t)(colon - addr);
		if (memchr(addr, ':', hlen) != NULL)
			return tau_error_set(TAU_EINVAL,
			                     "listen address %s: put an IPv6 address in brackets",
			                     addr);
	}
	if (hlen >= host_cap)
		return tau_error_set(TAU_EINVAL, "listen address %s: host too long", addr);
	if (colon[1] == '-' || tau_parse_int64(&p, "port", colon + 1, 0, 65535) < 0)
		return tau_error_set(TAU_EINVAL, "listen address %s: port must be 0..65535", addr);
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (int)p;
	return 0;
}
