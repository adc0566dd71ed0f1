/*
 * promtext.c - Prometheus text exposition pieces shared by the /metrics renderers.
 */
#include "tau/promtext.h"

#include "tau/error.h"

#include <inttypes.h>
#include <stdio.h>

void tau_prom_family(tau_buf *b, const char *name, const char *type, const char *help)
{
	tau_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void tau_prom_scalar(tau_buf *b, const char *name, const char *type, const char *help,
                     uint64_t value)
{
	tau_prom_family(b, name, type, help);
	tau_buf_printf(b, "%s %" PRIu64 "\n", name, value);
}

void tau_prom_labelled(tau_buf *b, const char *name, const char *label, const char *value,
                       uint64_t v)
{
	tau_buf_printf(b, "%s{%s=\"", name, label);
	tau_prom_label_value(b, value);
	tau_buf_printf(b, "\"} %" PRIu64 "\n", v);
}

void tau_prom_label_value(tau_buf *b, const char *v)
{
	const char *run = v;

	for (; *v != '\0'; v++) {
		const char *esc = *v == '\\'   ? "\\\\"
		                  : *v == '"'  ? "\\\""
		                  : *v == '\n' ? "\\n"
		                               : NULL;

		if (esc == NULL)
			continue;
		tau_buf_append(b, run, (size_t)(v - run));
		tau_buf_append_str(b, esc);
		run = v + 1;
	}
	tau_buf_append(b, run, (size_t)(v - run));
}

int tau_prom_quantity_value(char *buf_out, size_t cap, const tau_quantity *q)
{
	int64_t milli;
	int n;

	if (tau_quantity_milli_value(&milli, q) == 0) {
		int64_t whole = milli / 1000, frac = milli % 1000;
		const char *sign = milli < 0 && whole == 0 ? "-" : "";

		if (frac < 0)
			frac = -frac;
		if (frac == 0)
			n = snprintf(buf_out, cap, "%" PRId64, whole);
		else if (frac % 100 == 0)
			n = snprintf(buf_out, cap, "%s%" PRId64 ".%" PRId64, sign, whole,
			             frac / 100);
		else if (frac % 10 == 0)
			n = snprintf(buf_out, cap, "%s%" PRId64 ".%02" PRId64, sign, whole,
			             frac / 10);
		else
			n = snprintf(buf_out, cap, "%s%" PRId64 ".%03" PRId64, sign, whole, frac);
	} else {
		char text[TAU_QUANTITY_STR_MAX];
		tau_quantity d = *q;

		/* Too large for thousandths: the exponent form, which Prometheus parses. */
		tau_quantity_set_format(&d, TAU_QUANTITY_DECIMAL_EXPONENT);
		if (tau_quantity_format(text, sizeof(text), &d) < 0)
			return tau_error_set(TAU_ETOOBIG, "quantity does not print");
		n = snprintf(buf_out, cap, "%s", text);
	}
	if (n < 0 || (size_t)n >= cap)
		return tau_error_set(TAU_ETOOBIG, "metric value does not fit");
	return 0;
}
