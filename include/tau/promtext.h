/*
 * tau/promtext.h - the Prometheus text exposition format (version 0.0.4) on tau_buf.
 *
 * The one home for the pieces every /metrics renderer needs: a family's HELP and
 * TYPE lines, a label value escaped (backslash, quote, newline: names come from node
 * labels and agents) and a quantity printed as a sample value that sums exactly.
 */
#ifndef TAU_PROMTEXT_H
#define TAU_PROMTEXT_H

#include "tau/buf.h"
#include "tau/quantity.h"

#include <stddef.h>
#include <stdint.h>

/** "# HELP name help\n# TYPE name type\n".  Failures stick in `b` (tau_buf_error). */
void tau_prom_family(tau_buf *b, const char *name, const char *type, const char *help);

/** A family with one unlabelled sample: HELP, TYPE and "name value\n". */
void tau_prom_scalar(tau_buf *b, const char *name, const char *type, const char *help,
                     uint64_t value);

/** A sample with one label: "name{label=\"value\"} v\n", the value escaped. */
void tau_prom_labelled(tau_buf *b, const char *name, const char *label, const char *value,
                       uint64_t v);

/** Append a label value with \, " and newline escaped (without the quotes). */
void tau_prom_label_value(tau_buf *b, const char *v);

/**
 * Write a quantity as a sample value: the exact decimal whenever it fits in
 * thousandths ("94.94", "2025164832768"), else the decimal exponent form, which
 * Prometheus parses.  @return 0 or -TAU_ETOOBIG (does not fit in `cap`).
 */
int tau_prom_quantity_value(char *buf, size_t cap, const tau_quantity *q);

#endif /* TAU_PROMTEXT_H */
