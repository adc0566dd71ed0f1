/*
 * table.c - kubectl-style aligned columns.
 *
 * Cells are copied into rows; widths are computed at render time so a row
 * added late can still widen a column.  The last column is not padded, so
 * lines carry no trailing blanks.
 */
#include "table.h"

#include "tau/array.h"
#include "tau/buf.h"
#include "tau/error.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tau_table {
	size_t n_cols;
	char **cells; /* rows * n_cols, row 0 is the header */
	size_t n_rows, cap_rows;
};

int tau_table_new(tau_table **out, size_t n_cols, const char *const *headers)
{
	tau_table *t;

	if (n_cols == 0 || n_cols > TAU_TABLE_MAX_COLS)
		return tau_error_set(TAU_EINVAL, "table: bad column count %zu", n_cols);
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	t->n_cols = n_cols;
	if (tau_table_add(t, headers) < 0) {
		tau_table_free(t);
		return -TAU_ENOMEM;
	}
	*out = t;
	return 0;
}

int tau_table_add(tau_table *t, const char *const *cells)
{
	/* A row is n_cols cells: the array's element. */
	if (tau_array_grow((void **)&t->cells, &t->cap_rows, t->n_rows + 1,
	                   t->n_cols * sizeof(*t->cells)) < 0)
		return -TAU_ENOMEM;
	for (size_t c = 0; c < t->n_cols; c++) {
		char *copy = strdup(cells[c] != NULL ? cells[c] : "");

		if (copy == NULL) {
			for (size_t k = 0; k < c; k++)
				free(t->cells[t->n_rows * t->n_cols + k]);
			return tau_error_set(TAU_ENOMEM, "out of memory");
		}
		t->cells[t->n_rows * t->n_cols + c] = copy;
	}
	t->n_rows++;
	return 0;
}

/* n blanks. */
static void pad(tau_buf *b, size_t n)
{
	static const char blanks[] = "                                ";

	while (n > 0) {
		size_t k = n < sizeof(blanks) - 1 ? n : sizeof(blanks) - 1;

		tau_buf_append(b, blanks, k);
		n -= k;
	}
}

int tau_table_render(char **out, const tau_table *t)
{
	size_t width[TAU_TABLE_MAX_COLS] = {0};
	tau_buf b = TAU_BUF_INIT(TAU_TABLE_MAX_BYTES);
	char *text;

	for (size_t r = 0; r < t->n_rows; r++) {
		for (size_t c = 0; c < t->n_cols; c++) {
			size_t w = strlen(t->cells[r * t->n_cols + c]);

			if (w > width[c])
				width[c] = w;
		}
	}
	/* Appends into a capped buffer: no size is computed ahead, so none can wrap. */
	for (size_t r = 0; r < t->n_rows && tau_buf_error(&b) == 0; r++) {
		size_t line = b.len;

		for (size_t c = 0; c < t->n_cols; c++) {
			const char *cell = t->cells[r * t->n_cols + c];
			size_t len = strlen(cell);

			tau_buf_append(&b, cell, len);
			if (c + 1 < t->n_cols)
				pad(&b, width[c] - len + 3);
		}
		while (b.len > line && b.p[b.len - 1] == ' ')
			tau_buf_truncate(&b, b.len - 1);
		tau_buf_append(&b, "\n", 1);
	}
	if (tau_buf_error(&b) < 0) {
		int rc = tau_buf_error(&b);

		tau_buf_free(&b);
		if (rc == -TAU_ETOOBIG)
			return tau_error_set(TAU_ETOOBIG, "table larger than %u bytes",
			                     TAU_TABLE_MAX_BYTES);
		return rc;
	}
	text = tau_buf_take(&b, NULL);
	if (text == NULL)
		return -TAU_ENOMEM;
	*out = text;
	return 0;
}

void tau_table_free(tau_table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}
