/*
 * fuzz_selector.c - libFuzzer target for the label selector string form.
 *
 * Beyond "no crash, no leak", it checks the promise tau_selector_to_string
 * makes: the canonical form of a parsed selector parses again to the same
 * canonical form, and a failed parse leaves the out pointer alone.  It also
 * runs the matcher on labels cut from the input so matching is exercised
 * on arbitrary bytes.  Input that happens to be JSON also goes through
 * tau_selector_from_json, whose canonical form must parse as well.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tau/selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_json(const char *text)
{
	cJSON *js = cJSON_Parse(text);
	tau_selector *sel = NULL;
	tau_selector *again = NULL;
	char *canon = NULL;

	if (js == NULL)
		return;
	if (tau_selector_from_json(&sel, js) != 0) {
		if (sel != NULL)
			abort();
		goto out;
	}
	if (tau_selector_is_nothing(sel)) {
		if (tau_selector_to_string(&canon, sel) == 0)
			abort();
		goto out;
	}
	if (tau_selector_to_string(&canon, sel) != 0 || tau_selector_parse(&again, canon) != 0)
		abort();
	(void)tau_selector_matches(sel, js);
out:
	free(canon);
	tau_selector_free(again);
	tau_selector_free(sel);
	cJSON_Delete(js);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tau_selector *sel = NULL;
	tau_selector *again = NULL;
	char *first = NULL;
	char *second = NULL;
	char *text;
	int rc;

	/* A little past the cap, so the size check is reached too. */
	if (size > TAU_SELECTOR_MAX_STRING + 2)
		return 0;
	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	if (size != 0)
		memcpy(text, data, size);
	text[size] = '\0';

	check_json(text);
	rc = tau_selector_parse(&sel, text);
	if (rc != 0) {
		if (sel != NULL)
			abort();
		goto out;
	}
	if (tau_selector_to_string(&first, sel) != 0)
		abort();
	if (tau_selector_parse(&again, first) != 0)
		abort();
	if (tau_selector_to_string(&second, again) != 0)
		abort();
	if (strcmp(first, second) != 0)
		abort();

	/* Labels from the input's own words: key i = word i, value = word i+1. */
	{
		const char *keys[8];
		const char *values[8];
		size_t n = 0;
		char *save = NULL;
		char *word = strtok_r(text, " ,=()!<>", &save);

		while (word != NULL && n < 8) {
			char *value = strtok_r(NULL, " ,=()!<>", &save);

			keys[n] = word;
			values[n] = value != NULL ? value : "";
			n++;
			word = value != NULL ? strtok_r(NULL, " ,=()!<>", &save) : NULL;
		}
		if (tau_selector_matches_pairs(sel, keys, values, n) !=
		    tau_selector_matches_pairs(again, keys, values, n))
			abort();
	}
out:
	free(first);
	free(second);
	tau_selector_free(again);
	tau_selector_free(sel);
	free(text);
	return 0;
}
