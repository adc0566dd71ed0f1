/*
 * tau/prom.h - the Prometheus text exposition format (version 0.0.4) on tau_buf.
 *
 * The one home for the pieces every /metrics renderer needs: a family's HELP and
 * TYPE lines, a label value escaped (backslash, quote, newline: names come from node
 * labels and agents), a quantity printed as a sample value that sums exactly, and
 * latency histograms: observed from any thread (atomic counters, no lock), written
 * with cumulative buckets whose +Inf bucket always equals _count.
 */
#ifndef TAU_PROM_H
#define TAU_PROM_H

#include "tau/buf.h"
#include "tau/quantity.h"

#include <stdatomic.h>
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

/**
 * A sample with any labels: "name{k=\"v\",...} v\n".  `labels` is NULL or alternating
 * names and values ending with NULL (values escaped).
 */
void tau_prom_sample(tau_buf *b, const char *name, const char *const *labels, uint64_t v);

/** Append a label value with \, " and newline escaped (without the quotes). */
void tau_prom_label_value(tau_buf *b, const char *v);

/**
 * Write a quantity as a sample value: the exact decimal whenever it fits in
 * thousandths ("94.94", "2025164832768"), else the decimal exponent form, which
 * Prometheus parses.  @return 0 or -TAU_ETOOBIG (does not fit in `cap`).
 */
int tau_prom_quantity_value(char *buf, size_t cap, const tau_quantity *q);

/** The unit of a Kubernetes resource's base unit, so each metric carries one unit. */
typedef enum tau_prom_unit {
	TAU_PROM_UNIT_CORES = 0, /**< cpu */
	TAU_PROM_UNIT_BYTES,     /**< memory, ephemeral-storage, storage, hugepages-<size> */
	TAU_PROM_UNIT_COUNT,     /**< anything else: nvidia.com/gpu, rdma/..., pods */
	TAU_PROM_UNITS
} tau_prom_unit;

/** The unit of `resource` (a resource name such as "cpu" or "nvidia.com/gpu"). */
tau_prom_unit tau_prom_resource_unit(const char *resource);

/** A metric name's unit suffix: "_cores", "_bytes", or "" for a count. */
const char *tau_prom_unit_suffix(tau_prom_unit unit);

/** Number of finite buckets of every latency histogram (le 0.001 s to 60 s). */
#define TAU_PROM_LATENCY_BUCKETS 15

/**
 * A latency histogram in seconds, with the fixed bounds 0.001, 0.0025, 0.005, 0.01,
 * 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 and 60.  Zero-initialised is empty
 * (`= {0}` or calloc); observe and write are thread-safe without a lock.
 */
typedef struct tau_prom_histogram {
	/** Observations per bucket, not cumulative; the last is above 60 s (+Inf only). */
	atomic_uint_fast64_t in_bucket[TAU_PROM_LATENCY_BUCKETS + 1];
	atomic_uint_fast64_t sum_us; /**< sum of observations, microseconds */
} tau_prom_histogram;

/** Record one duration of `us` microseconds. */
void tau_prom_histogram_observe(tau_prom_histogram *h, uint64_t us);

/** Observations so far (the +Inf bucket). */
uint64_t tau_prom_histogram_count(const tau_prom_histogram *h);

/**
 * Write the samples of one histogram series: name_bucket{labels...,le="..."} for every
 * bound and +Inf (cumulative), then name_sum (seconds) and name_count.  `labels` is
 * NULL or alternating names and values ending with NULL (values escaped).  The
 * family's HELP and TYPE (tau_prom_family, type "histogram") come before the first
 * series.  Failures stick in `b`.
 */
void tau_prom_histogram_write(tau_buf *b, const char *name, const char *const *labels,
                              const tau_prom_histogram *h);

#endif /* TAU_PROM_H */
