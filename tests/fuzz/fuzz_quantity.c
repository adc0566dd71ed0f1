/*
 * fuzz_quantity.c - libFuzzer target for tau/quantity.
 *
 * Any bytes go to the parser (plain and JSON flavour).  Whatever parses must
 * format, parse back to the same value and re-format to the same text.  An
 * input "A|B" also checks the arithmetic on the pair: a + b == b + a,
 * (a + b) - b == a, and cmp agrees with the sign of a - b.  A broken
 * property aborts, which libFuzzer and the corpus replay report.
 */
#include "tau/error.h"
#include "tau/quantity.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_quantity: %s (%s)\n", what, tau_error_last()->msg);
		abort();
	}
}

/* Parse s[0..len); on success check the text round trip and return 1. */
static int parse_and_round_trip(tau_quantity *q, const char *s, size_t len)
{
	char text[TAU_QUANTITY_STR_MAX], again[TAU_QUANTITY_STR_MAX];
	tau_quantity back;
	int64_t v;

	if (tau_quantity_parse(q, s, len) != 0) {
		check(tau_error_last()->msg[0] != '\0', "error without a message");
		return 0;
	}
	check(tau_quantity_format(text, sizeof(text), q) == 0, "format failed");
	check(strlen(text) < TAU_QUANTITY_STR_MAX, "text too long");
	check(tau_quantity_parse_str(&back, text) == 0, "canonical text does not parse");
	check(tau_quantity_cmp(q, &back) == 0, "round trip changed the value");
	check(tau_quantity_format(again, sizeof(again), &back) == 0, "format failed");
	check(strcmp(text, again) == 0, "canonical text is not stable");
	/* Only for crashes and sanitizers: the results may be ERANGE. */
	(void)tau_quantity_value(&v, q);
	(void)tau_quantity_milli_value(&v, q);
	return 1;
}

static void check_pair(const tau_quantity *a, const tau_quantity *b)
{
	tau_quantity ab, ba, d;

	if (tau_quantity_add(&ab, a, b) == 0) {
		check(tau_quantity_add(&ba, b, a) == 0, "b + a failed where a + b did not");
		check(tau_quantity_cmp(&ab, &ba) == 0, "a + b != b + a");
		check(tau_quantity_sub(&d, &ab, b) == 0, "(a + b) - b failed");
		check(tau_quantity_cmp(&d, a) == 0, "(a + b) - b != a");
	}
	if (tau_quantity_sub(&d, a, b) == 0)
		check(tau_quantity_sign(&d) == tau_quantity_cmp(a, b), "cmp disagrees with a - b");
	check(tau_quantity_cmp(a, b) == -tau_quantity_cmp(b, a), "cmp is not antisymmetric");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	const char *bar = memchr(s, '|', size);
	tau_quantity a, b;

	parse_and_round_trip(&a, s, size);
	if (tau_quantity_parse_json_value(&a, s, size) == 0) {
		char text[TAU_QUANTITY_STR_MAX];

		check(tau_quantity_format(text, sizeof(text), &a) == 0, "format failed");
	}
	if (bar != NULL) {
		size_t left = (size_t)(bar - s);

		if (parse_and_round_trip(&a, s, left) &&
		    parse_and_round_trip(&b, bar + 1, size - left - 1))
			check_pair(&a, &b);
	}
	return 0;
}
