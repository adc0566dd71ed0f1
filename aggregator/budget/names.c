/*
 * names.c - published names of the budget objects, made valid when needed.
 *
 * The one idea: the plain name wins whenever Kubernetes accepts it, so the
 * documented names ("taugrid-gpu-a100") are what users see; only an input
 * that cannot appear as is gets cleaned up, and then the hash of the
 * untouched input keeps names apart that clean up alike ("A100" and
 * "a100_" both become "a100-..." but with different suffixes).
 */
#include "names.h"

#include "tau/error.h"
#include "tau/names.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static char to_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The first TAU_BUDGET_NAME_HASH_HEX hex digits of SHA-256(input), NUL-terminated. */
static int hash_hex(char hex[TAU_BUDGET_NAME_HASH_HEX + 1], const char *input)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (EVP_Digest(input, strlen(input), md, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen * 2 < TAU_BUDGET_NAME_HASH_HEX)
		return tau_error_set(TAU_EINTERNAL, "SHA-256 of a name failed");
	for (unsigned i = 0; i < TAU_BUDGET_NAME_HASH_HEX / 2; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int tau_budget_name(char *out, size_t len, const char *prefix, const char *input)
{
	char name[TAU_BUDGET_NAME_MAX + 64];
	char hex[TAU_BUDGET_NAME_HASH_HEX + 1];
	size_t plen, keep, n;
	int rc;

	if (prefix == NULL || prefix[0] == '\0' || input == NULL || input[0] == '\0')
		return tau_error_set(TAU_EINVAL, "object name: empty %s",
		                     prefix == NULL || prefix[0] == '\0' ? "prefix" : "input");
	plen = strlen(prefix);
	if (plen + 1 + TAU_BUDGET_NAME_HASH_HEX >= TAU_BUDGET_NAME_MAX)
		return tau_error_set(TAU_EINVAL, "object name: prefix \"%.40s\" is too long",
		                     prefix);
	n = strlen(input);
	if (plen + n <= TAU_BUDGET_NAME_MAX) {
		memcpy(name, prefix, plen);
		memcpy(name + plen, input, n + 1);
		if (tau_names_check_dns1123_subdomain(name) == 0)
			goto done;
	}
	/* Clean up: lowercase, keep '.' only between alphanumerics, '-' elsewhere. */
	keep = TAU_BUDGET_NAME_MAX - plen - 1 - TAU_BUDGET_NAME_HASH_HEX;
	if (n > keep)
		n = keep;
	memcpy(name, prefix, plen);
	for (size_t i = 0; i < n; i++) {
		char c = to_lower(input[i]);

		if (!lower_alnum(c) && !(c == '.' && i > 0 && lower_alnum(to_lower(input[i - 1])) &&
		                         i + 1 < n && lower_alnum(to_lower(input[i + 1]))))
			c = '-';
		name[plen + i] = c;
	}
	if ((rc = hash_hex(hex, input)) < 0)
		return rc;
	snprintf(name + plen + n, sizeof(name) - plen - n, "-%s", hex);
	if (tau_names_check_dns1123_subdomain(name) < 0)
		return tau_error_wrap("object name: cleaned-up name is still invalid (a bug)");
done:
	if (strlen(name) >= len)
		return tau_error_set(TAU_ERANGE, "object name \"%.60s...\" does not fit %zu bytes",
		                     name, len);
	memcpy(out, name, strlen(name) + 1);
	return 0;
}

int tau_budget_flavor_name(char *out, size_t len, const char *gpu_class)
{
	return tau_budget_name(out, len, TAU_BUDGET_FLAVOR_PREFIX, gpu_class);
}

int tau_budget_cohort_name(char *out, size_t len, const char *team)
{
	return tau_budget_name(out, len, TAU_BUDGET_COHORT_PREFIX, team);
}

int tau_budget_cluster_queue_name(char *out, size_t len, const char *workspace)
{
	return tau_budget_name(out, len, TAU_BUDGET_CLUSTER_QUEUE_PREFIX, workspace);
}
