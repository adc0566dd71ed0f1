/* dra_fixture.c - DRA objects for unit tests (dra_fixture.h). */
#include "dra_fixture.h"

#include "tau/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *parse_or_abort(const char *text)
{
	cJSON *j = NULL;

	if (tau_json_parse(&j, text, strlen(text), 0) != 0)
		abort();
	return j;
}

cJSON *dra_fixture_gpu_class(const char *attr, const char *value)
{
	char text[1024];

	snprintf(text, sizeof(text),
	         "{\"metadata\":{\"name\":\"" DRA_FIXTURE_DRIVER "\"},\"spec\":{\"selectors\":[{"
	         "\"cel\":{\"expression\":\"device.driver == '" DRA_FIXTURE_DRIVER "' && "
	         "device.attributes['" DRA_FIXTURE_DRIVER "'].%s == '%s'\"}}],"
	         "\"extendedResourceName\":\"nvidia.com/gpu\"}}",
	         attr, value);
	return parse_or_abort(text);
}

cJSON *dra_fixture_gpu_slice(const char *node, int n, long gen)
{
	char text[8192];
	size_t len;

	len = (size_t)snprintf(text, sizeof(text),
	                       "{\"metadata\":{\"name\":\"%s-gpu\"},\"spec\":{\"driver\":"
	                       "\"" DRA_FIXTURE_DRIVER "\",\"nodeName\":\"%s\",\"pool\":{\"name\":"
	                       "\"%s\",\"generation\":%ld,\"resourceSliceCount\":1},\"devices\":[",
	                       node, node, node, gen);
	for (int i = 0; i < n && len < sizeof(text); i++)
		len += (size_t)snprintf(
		        text + len, sizeof(text) - len,
		        "%s{\"name\":\"gpu-%d\",\"attributes\":{\"type\":{\"string\":"
		        "\"gpu\"}}}",
		        i > 0 ? "," : "", i);
	if (len >= sizeof(text) - 4)
		abort();
	snprintf(text + len, sizeof(text) - len, "]}}");
	return parse_or_abort(text);
}
