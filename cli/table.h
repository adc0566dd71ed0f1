/*
 * table.h - aligned text columns like kubectl's: upper-case headers, every
 * column as wide as its widest cell, three spaces between columns.
 */
#ifndef TAU_CLI_TABLE_H
#define TAU_CLI_TABLE_H

#include <stddef.h>

#define TAU_TABLE_MAX_COLS 12
/** Largest rendered table; larger is refused (-TAU_ETOOBIG), never a wrapped size. */
#define TAU_TABLE_MAX_BYTES (256u << 20)

typedef struct tau_table tau_table;

/** A table with `n_cols` headers (copied).  @return 0 or -TAU_ENOMEM. */
int tau_table_new(tau_table **out, size_t n_cols, const char *const *headers);

/** Append a row of `n_cols` cells (copied; NULL prints as "").  @return 0 or -TAU_ENOMEM. */
int tau_table_add(tau_table *t, const char *const *cells);

/** Render into a new string (free()).  @return 0, -TAU_ETOOBIG (over TAU_TABLE_MAX_BYTES) or
 * -TAU_ENOMEM. */
int tau_table_render(char **out, const tau_table *t);

void tau_table_free(tau_table *t);

#endif /* TAU_CLI_TABLE_H */
