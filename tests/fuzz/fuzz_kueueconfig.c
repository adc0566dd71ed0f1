/*
 * fuzz_kueueconfig.c - libFuzzer target for the Kueue Configuration reader (libyaml).
 *
 * Any bytes go to tau_kueue_config_parse; whatever parses is looked up by a class name.
 * Nothing may crash or leak; errors are fine.
 */
#include "tau/kueueconfig.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tau_kueue_config *cfg = NULL;

	if (tau_kueue_config_parse(&cfg, (const char *)data, size) < 0)
		return 0;
	(void)tau_kueue_config_mapping_for(cfg, "gpu.nvidia.com");
	tau_kueue_config_free(cfg);
	return 0;
}
