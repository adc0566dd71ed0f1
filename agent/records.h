/*
 * records.h - deep copies and frees of the probes' records whose string fields they own.
 *
 * Each probe's result type (a GPU, an RDMA port, a pod device, a DRA device, a live CSI
 * check) is a plain struct with some owned strings; copying one is "copy it whole, then
 * duplicate each string", freeing one is "free each string".  The type lists its string
 * fields once (offsetof) and these helpers do both.
 */
#ifndef TAU_AGENT_RECORDS_H
#define TAU_AGENT_RECORDS_H

#include <stdbool.h>
#include <stddef.h>

/** The owned string fields of a record type, as offsetof(type, field). */
typedef struct tau_agent_record_strings {
	const size_t *offsets;
	size_t n;
} tau_agent_record_strings;

/** Name a record type's string fields: TAU_AGENT_RECORD_STRINGS(OFFSETS_ARRAY). */
#define TAU_AGENT_RECORD_STRINGS(offsets)                                                          \
	((tau_agent_record_strings){(offsets), sizeof(offsets) / sizeof((offsets)[0])})

/**
 * strdup for a string that may be NULL (giving NULL); sets *failed when out of memory, so a
 * deep copy can dup every field and check once.
 */
char *tau_agent_strdup_opt(const char *s, bool *failed);

/** Free the string fields of each of the `n` records of `size` bytes; the array stays. */
void tau_agent_records_clear(void *records, size_t n, size_t size, tau_agent_record_strings s);

/** tau_agent_records_clear, then free the array.  NULL is a no-op. */
void tau_agent_records_free(void *records, size_t n, size_t size, tau_agent_record_strings s);

/**
 * A copy of `n` records of `size` bytes: each copied whole, then its string fields
 * duplicated.  `what` names them in the error ("RDMA ports").
 * @param out  receives the new array (tau_agent_records_free), NULL when n is 0
 * @return 0 or -TAU_ENOMEM (nothing allocated).
 */
int tau_agent_records_copy(void **out, const void *records, size_t n, size_t size,
                           tau_agent_record_strings s, const char *what);

#endif /* TAU_AGENT_RECORDS_H */
