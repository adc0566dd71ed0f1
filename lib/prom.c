/*
 * prom.c - Prometheus text exposition pieces shared by the /metrics renderers.
 *
 * A histogram counts each observation once, in its own bucket; the cumulative counts
 * Prometheus wants are summed while writing, from one read of each bucket, so the
 * series written is always consistent (buckets never decrease, +Inf equals _count)
 * even while other threads observe.
 */
#include "tau/prom.h"

#include "tau/error.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

tau_prom_unit tau_prom_resource_unit(const char *resource)
{
	if (strcmp(resource, "cpu") == 0)
		return TAU_PROM_UNIT_CORES;
	if (strcmp(resource, "memory") == 0 || strcmp(resource, "ephemeral-storage") == 0 ||
	    strcmp(resource, "storage") == 0 || strncmp(resource, "hugepages-", 10) == 0)
		return TAU_PROM_UNIT_BYTES;
	return TAU_PROM_UNIT_COUNT;
}

const char *tau_prom_unit_suffix(tau_prom_unit unit)
{
	return unit == TAU_PROM_UNIT_CORES ? "_cores" : unit == TAU_PROM_UNIT_BYTES ? "_bytes" : "";
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

/* Bucket bounds in microseconds, and as written in `le`. */
static const uint64_t latency_bound_us[TAU_PROM_LATENCY_BUCKETS] = {
        1000,   2500,    5000,    10000,   25000,    50000,    100000,  250000,
        500000, 1000000, 2500000, 5000000, 10000000, 30000000, 60000000};
static const char *const latency_le[TAU_PROM_LATENCY_BUCKETS] = {
        "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
        "0.5",   "1",      "2.5",   "5",    "10",    "30",   "60"};

void tau_prom_histogram_observe(tau_prom_histogram *h, uint64_t us)
{
	size_t i = 0;

	while (i < TAU_PROM_LATENCY_BUCKETS && us > latency_bound_us[i])
		i++;
	atomic_fetch_add_explicit(&h->in_bucket[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

uint64_t tau_prom_histogram_count(const tau_prom_histogram *h)
{
	uint64_t n = 0;

	for (size_t i = 0; i <= TAU_PROM_LATENCY_BUCKETS; i++)
		n += atomic_load_explicit(&h->in_bucket[i], memory_order_relaxed);
	return n;
}

/* k="v",k="v" (no braces); `labels` may be NULL. */
static void label_pairs(tau_buf *b, const char *const *labels)
{
	for (size_t i = 0; labels != NULL && labels[i] != NULL && labels[i + 1] != NULL; i += 2) {
		tau_buf_printf(b, "%s%s=\"", i > 0 ? "," : "", labels[i]);
		tau_prom_label_value(b, labels[i + 1]);
		tau_buf_append_str(b, "\"");
	}
}

static bool has_labels(const char *const *labels)
{
	return labels != NULL && labels[0] != NULL && labels[1] != NULL;
}

/* name_suffix or name_suffix{labels} */
static void series(tau_buf *b, const char *name, const char *suffix, const char *const *labels)
{
	tau_buf_printf(b, "%s%s", name, suffix);
	if (has_labels(labels)) {
		tau_buf_append_str(b, "{");
		label_pairs(b, labels);
		tau_buf_append_str(b, "}");
	}
}

void tau_prom_sample(tau_buf *b, const char *name, const char *const *labels, uint64_t v)
{
	series(b, name, "", labels);
	tau_buf_printf(b, " %" PRIu64 "\n", v);
}

void tau_prom_histogram_write(tau_buf *b, const char *name, const char *const *labels,
                              const tau_prom_histogram *h)
{
	uint64_t cumulative = 0, sum_us = atomic_load_explicit(&h->sum_us, memory_order_relaxed);

	for (size_t i = 0; i <= TAU_PROM_LATENCY_BUCKETS; i++) {
		cumulative += atomic_load_explicit(&h->in_bucket[i], memory_order_relaxed);
		tau_buf_printf(b, "%s_bucket{", name);
		label_pairs(b, labels);
		tau_buf_printf(b, "%sle=\"%s\"} %" PRIu64 "\n", has_labels(labels) ? "," : "",
		               i < TAU_PROM_LATENCY_BUCKETS ? latency_le[i] : "+Inf", cumulative);
	}
	series(b, name, "_sum", labels);
	tau_buf_printf(b, " %" PRIu64 ".%06" PRIu64 "\n", sum_us / 1000000u, sum_us % 1000000u);
	series(b, name, "_count", labels);
	tau_buf_printf(b, " %" PRIu64 "\n", cumulative);
}
