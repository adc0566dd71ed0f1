/*
 * records.c - deep copies and frees of records with owned string fields.
 *
 * The one idea: a record type lists its string fields once (records.h), and one copy and
 * one free serve every probe's result type.  A failed duplicate leaves that field NULL and
 * the copy goes on, so a partial copy is always safe to free.
 */
#include "records.h"

#include "tau/error.h"

#include <stdlib.h>
#include <string.h>

char *tau_agent_strdup_opt(const char *s, bool *failed)
{
	char *copy;

	if (s == NULL)
		return NULL;
	copy = strdup(s);
	if (copy == NULL)
		*failed = true;
	return copy;
}

static char **field(void *records, size_t i, size_t size, size_t offset)
{
	return (char **)((char *)records + i * size + offset);
}

void tau_agent_records_clear(void *records, size_t n, size_t size, tau_agent_record_strings s)
{
	for (size_t i = 0; records != NULL && i < n; i++)
		for (size_t j = 0; j < s.n; j++) {
			char **f = field(records, i, size, s.offsets[j]);

			free(*f);
			*f = NULL;
		}
}

void tau_agent_records_free(void *records, size_t n, size_t size, tau_agent_record_strings s)
{
	tau_agent_records_clear(records, n, size, s);
	free(records);
}

int tau_agent_records_copy(void **out, const void *records, size_t n, size_t size,
                           tau_agent_record_strings s, const char *what)
{
	bool failed = false;
	void *copy;

	*out = NULL;
	if (n == 0)
		return 0;
	copy = calloc(n, size);
	if (copy == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory copying %s", what);
	memcpy(copy, records, n * size);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < s.n; j++) {
			char **f = field(copy, i, size, s.offsets[j]);

			*f = tau_agent_strdup_opt(*f, &failed);
		}
	if (failed) {
		tau_agent_records_free(copy, n, size, s);
		return tau_error_set(TAU_ENOMEM, "out of memory copying %s", what);
	}
	*out = copy;
	return 0;
}
