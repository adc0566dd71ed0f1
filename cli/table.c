/*
 * table.c - kubectl-style aligned columns.
 *
 * Cells are copied into rows; widths are computed at render time so a row
 * added late can still widen a column.  The last column is not padded, so
 * lines carry no trailing blanks.
 */
#include "table.h"

#include "tau/error.h"

#include <stdbool.h>
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
	if (t->n_rows == t->cap_rows) {
		size_t cap = t->cap_rows ? t->cap_rows * 2 : 16;
		char **grown = realloc(t->cells, cap * t->n_cols * sizeof(char *));

		if (grown == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		t->cells = grown;
		t->cap_rows = cap;
	}
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

int tau_table_render(char **out, const tau_table *t)
{
	size_t width[TAU_TABLE_MAX_COLS] = {0};
	size_t total = 1;
	char *buf, *p;

	for (size_t r = 0; r < t->n_rows; r++) {
		for (size_t c = 0; c < t->n_cols; c++) {
			size_t w = strlen(t->cells[r * t->n_cols + c]);

			if (w > width[c])
				width[c] = w;
		}
	}
	for (size_t c = 0; c < t->n_cols; c++)
		total += width[c] + 3;
	total = total * t->n_rows + 1;
	buf = malloc(total);
	if (buf == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	p = buf;
	for (size_t r = 0; r < t->n_rows; r++) {
		for (size_t c = 0; c < t->n_cols; c++) {
			const char *cell = t->cells[r * t->n_cols + c];
			bool last = c + 1 == t->n_cols;
			int n = last ? sprintf(p, "%s", cell)
			             : sprintf(p, "%-*s   ", (int)width[c], cell);

			p += n;
		}
		while (p > buf && p[-1] == ' ')
			p--;
		*p++ = '\n';
	}
	*p = '\0';
	*out = buf;
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
