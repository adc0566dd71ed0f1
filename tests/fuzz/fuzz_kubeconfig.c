/*
 * fuzz_kubeconfig.c - libFuzzer target for the kubeconfig parser (libyaml).
 *
 * Any bytes go to tau_kubeconfig_parse; whatever parses is resolved for its
 * current context.  Nothing may crash or leak; errors are fine.  The parse
 * is given no directory, so relative file references are not read.
 */
#include "tau/kube.h"
#include "tau/kubeconfig.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tau_kubeconfig *kc = NULL;
	tau_kube_config *cfg = NULL;

	if (tau_kubeconfig_parse(&kc, (const char *)data, size, NULL) < 0)
		return 0;
	if (tau_kubeconfig_resolve(&cfg, kc, NULL) == 0)
		tau_kube_config_free(cfg);
	tau_kubeconfig_free(kc);
	return 0;
}
