/*
 * bench_quantity.c - how fast libtau turns node allocatables into flavor totals.
 *
 * The aggregator's hot path: for every node, parse each allocatable quantity
 * string and add it into the running total of the node's flavor.  This bench
 * builds N nodes (10,000 by default) from the three fixture node shapes, with
 * small per-node variations so that no two nodes print alike, and times
 * parse + sum over several repetitions with CLOCK_MONOTONIC.
 *
 *   bench/quantity [--nodes N] [--reps R]
 */
#define _POSIX_C_SOURCE 200809L

#include "tau/error.h"
#include "tau/quantity.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_NODES     10000000L
#define MAX_REPS      1000L
#define QUANTITY_TEXT 32

/* Resource names across the three fixture nodes. */
enum resource {
	RES_CPU,
	RES_EPHEMERAL_STORAGE,
	RES_HUGEPAGES_1GI,
	RES_HUGEPAGES_2MI,
	RES_MEMORY,
	RES_NVIDIA_GPU,
	RES_NVIDIA_HOSTDEV,
	RES_NVIDIA_MIG_1G_10GB,
	RES_PODS,
	RES_RDMA_SHARED_DEVICE_A,
	RES_RDMA_IB,
	RES_COUNT
};

static const char *const resource_names[RES_COUNT] = {
        "cpu",
        "ephemeral-storage",
        "hugepages-1Gi",
        "hugepages-2Mi",
        "memory",
        "nvidia.com/gpu",
        "nvidia.com/hostdev",
        "nvidia.com/mig-1g.10gb",
        "pods",
        "rdma/rdma_shared_device_a",
        "rdma/ib",
};

struct allocatable {
	enum resource resource;
	const char *text;
};

/*
 * status.allocatable of the fixture nodes, copied from
 * tests/fixtures/kube/node-flex-h100.json (edge-gpu-01),
 * tests/fixtures/kube/node-nc-a100-v4-mig.json (aks-nca100-41729305-vmss000002) and
 * tests/fixtures/kube/node-nd-h100-v5.json (aks-ndh100-35817294-vmss000000).
 * Each fixture node stands for one flavor.
 */
static const char *const flavor_names[] = {"flex-h100", "nc-a100-v4-mig", "nd-h100-v5"};
#define FLAVOR_COUNT (sizeof(flavor_names) / sizeof(flavor_names[0]))

static const struct allocatable flex_h100[] = {
        {RES_CPU, "126500m"},
        {RES_EPHEMERAL_STORAGE, "3454538474Ki"},
        {RES_HUGEPAGES_1GI, "0"},
        {RES_HUGEPAGES_2MI, "0"},
        {RES_MEMORY, "2105082040Ki"},
        {RES_NVIDIA_GPU, "8"},
        {RES_NVIDIA_HOSTDEV, "8"},
        {RES_PODS, "110"},
        {RES_RDMA_SHARED_DEVICE_A, "63"},
};
static const struct allocatable nc_a100_v4_mig[] = {
        {RES_CPU, "23660m"},         {RES_EPHEMERAL_STORAGE, "119703055367"},
        {RES_HUGEPAGES_1GI, "0"},    {RES_HUGEPAGES_2MI, "0"},
        {RES_MEMORY, "227205812Ki"}, {RES_NVIDIA_MIG_1G_10GB, "7"},
        {RES_PODS, "110"},
};
static const struct allocatable nd_h100_v5[] = {
        {RES_CPU, "94940m"},
        {RES_EPHEMERAL_STORAGE, "119703055367"},
        {RES_HUGEPAGES_1GI, "0"},
        {RES_HUGEPAGES_2MI, "0"},
        {RES_MEMORY, "1977700032Ki"},
        {RES_NVIDIA_GPU, "8"},
        {RES_PODS, "110"},
        {RES_RDMA_IB, "8"},
};

static const struct {
	const struct allocatable *items;
	size_t n;
} shapes[FLAVOR_COUNT] = {
        {flex_h100, sizeof(flex_h100) / sizeof(flex_h100[0])},
        {nc_a100_v4_mig, sizeof(nc_a100_v4_mig) / sizeof(nc_a100_v4_mig[0])},
        {nd_h100_v5, sizeof(nd_h100_v5) / sizeof(nd_h100_v5[0])},
};

/* One allocatable entry of one node, as the aggregator would see it. */
struct entry {
	unsigned char flavor;
	unsigned char resource;
	unsigned char len;
	char text[QUANTITY_TEXT];
};

/*
 * The fixture string with a small per-node change in the same notation:
 * CPU loses 10m steps (kube-reserved varies), memory and disk lose whole
 * KiB or bytes, device counts stay.
 */
static void vary(char *out, size_t cap, const char *text, enum resource r, long node)
{
	char *end;
	unsigned long long v = strtoull(text, &end, 10);

	switch (r) {
	case RES_CPU:
		snprintf(out, cap, "%llu%s", v - 10ull * (unsigned long long)(node % 17), end);
		break;
	case RES_MEMORY:
	case RES_EPHEMERAL_STORAGE:
		snprintf(out, cap, "%llu%s", v - 4096ull * (unsigned long long)(node % 101), end);
		break;
	default:
		snprintf(out, cap, "%s", text);
		break;
	}
}

static int parse_count(const char *arg, const char *name, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno != 0 || *end != '\0' || v < 1 || v > max) {
		fprintf(stderr, "quantity: %s must be an integer in 1..%ld, got '%s'\n", name, max,
		        arg);
		return -1;
	}
	*out = v;
	return 0;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Parse every entry and add it into totals[flavor][resource]; 0 or a tau error. */
static int parse_and_sum(const struct entry *entries, size_t n,
                         tau_quantity totals[FLAVOR_COUNT][RES_COUNT])
{
	for (size_t f = 0; f < FLAVOR_COUNT; f++)
		for (size_t r = 0; r < RES_COUNT; r++)
			totals[f][r] = tau_quantity_zero();
	for (size_t i = 0; i < n; i++) {
		const struct entry *e = &entries[i];
		tau_quantity q, *total = &totals[e->flavor][e->resource];
		int rc = tau_quantity_parse(&q, e->text, e->len);

		if (rc == 0)
			rc = tau_quantity_add(total, total, &q);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static tau_quantity totals[FLAVOR_COUNT][RES_COUNT];
	long nodes = 10000, reps = 20;
	struct entry *entries = NULL;
	tau_quantity *parsed = NULL;
	double *both = NULL, *parse_only = NULL, *sum_only = NULL;
	size_t n = 0, cap = 0;
	int rc = 1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc) {
			if (parse_count(argv[++i], "--nodes", MAX_NODES, &nodes) != 0)
				return 2;
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			if (parse_count(argv[++i], "--reps", MAX_REPS, &reps) != 0)
				return 2;
		} else {
			fprintf(stderr, "usage: %s [--nodes N] [--reps R]\n", argv[0]);
			return 2;
		}
	}

	for (size_t f = 0; f < FLAVOR_COUNT; f++)
		cap = shapes[f].n > cap ? shapes[f].n : cap;
	cap *= (size_t)nodes;
	entries = calloc(cap, sizeof(*entries));
	parsed = calloc(cap, sizeof(*parsed));
	both = calloc((size_t)reps, sizeof(*both));
	parse_only = calloc((size_t)reps, sizeof(*parse_only));
	sum_only = calloc((size_t)reps, sizeof(*sum_only));
	if (entries == NULL || parsed == NULL || both == NULL || parse_only == NULL ||
	    sum_only == NULL) {
		fprintf(stderr, "quantity: out of memory for %ld nodes\n", nodes);
		goto out;
	}
	for (long node = 0; node < nodes; node++) {
		size_t f = (size_t)node % FLAVOR_COUNT;

		for (size_t k = 0; k < shapes[f].n; k++) {
			struct entry *e = &entries[n++];

			e->flavor = (unsigned char)f;
			e->resource = (unsigned char)shapes[f].items[k].resource;
			vary(e->text, sizeof(e->text), shapes[f].items[k].text,
			     shapes[f].items[k].resource, node);
			e->len = (unsigned char)strlen(e->text);
		}
	}

	for (long r = 0; r < reps; r++) {
		double t0 = now_ns(), t1, t2;

		if (parse_and_sum(entries, n, totals) != 0)
			goto tau_failed;
		t1 = now_ns();
		both[r] = t1 - t0;

		/* The two halves apart: parse into an array, then sum it per flavor. */
		t1 = now_ns();
		for (size_t i = 0; i < n; i++)
			if (tau_quantity_parse(&parsed[i], entries[i].text, entries[i].len) != 0)
				goto tau_failed;
		t2 = now_ns();
		parse_only[r] = t2 - t1;
		for (size_t i = 0; i < n; i++) {
			tau_quantity *total = &totals[entries[i].flavor][entries[i].resource];

			if (tau_quantity_add(total, total, &parsed[i]) != 0)
				goto tau_failed;
		}
		sum_only[r] = now_ns() - t2;
	}
	qsort(both, (size_t)reps, sizeof(double), cmp_double);
	qsort(parse_only, (size_t)reps, sizeof(double), cmp_double);
	qsort(sum_only, (size_t)reps, sizeof(double), cmp_double);

	/* Clean totals to print: the split pass above added on top of the last ones. */
	if (parse_and_sum(entries, n, totals) != 0)
		goto tau_failed;
	for (size_t f = 0; f < FLAVOR_COUNT; f++) {
		printf("flavor %-15s", flavor_names[f]);
		for (size_t r = 0; r < RES_COUNT; r++) {
			char text[TAU_QUANTITY_STR_MAX];

			if (tau_quantity_is_zero(&totals[f][r]))
				continue;
			if (tau_quantity_format(text, sizeof(text), &totals[f][r]) != 0)
				goto tau_failed;
			printf(" %s=%s", resource_names[r], text);
		}
		printf("\n");
	}
	printf("quantity: nodes=%ld quantities=%zu reps=%ld parse+sum ns/quantity=%.1f "
	       "(median %.1f) total_ms=%.3f parse ns/quantity=%.1f add ns/quantity=%.1f\n",
	       nodes, n, reps, both[0] / (double)n, both[reps / 2] / (double)n, both[0] / 1e6,
	       parse_only[0] / (double)n, sum_only[0] / (double)n);
	rc = 0;
	goto out;
tau_failed:
	fprintf(stderr, "quantity: %s\n", tau_error_last()->msg);
out:
	free(entries);
	free(parsed);
	free(both);
	free(parse_only);
	free(sum_only);
	return rc;
}
