/*
 * dra_fixture.h - DRA objects as the API hands them (JSON), built for the aggregator's unit
 * tests: NVIDIA's GPU DeviceClass and a node's ResourceSlice of whole GPUs.
 */
#ifndef TAU_TEST_DRA_FIXTURE_H
#define TAU_TEST_DRA_FIXTURE_H

#include <cjson/cJSON.h>

/* The driver of the fixtures' slices and class. */
#define DRA_FIXTURE_DRIVER "gpu.nvidia.com"

/*
 * DeviceClass gpu.nvidia.com selecting devices of the driver whose attribute `attr` equals
 * `value`, with extendedResourceName nvidia.com/gpu.  Aborts when it does not parse.
 */
cJSON *dra_fixture_gpu_class(const char *attr, const char *value);

/*
 * ResourceSlice <node>-gpu of pool <node> on node `node`, generation `gen`, one slice in the
 * pool: devices gpu-0..gpu-<n-1>, attribute type "gpu".  Aborts when it does not parse.
 */
cJSON *dra_fixture_gpu_slice(const char *node, int n, long gen);

#endif /* TAU_TEST_DRA_FIXTURE_H */
