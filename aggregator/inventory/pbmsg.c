/*
 * pbmsg.c - a protobuf-c repeated message field filled in one step (pbmsg.h).
 */
#include "pbmsg.h"

#include "tau/error.h"

#include <stdlib.h>

int tau_pb_new_repeated(void *field, size_t *n, size_t len, const ProtobufCMessageDescriptor *d)
{
	void **items;

	if (len == 0)
		return 0;
	if ((items = calloc(len, sizeof(*items))) == NULL)
		return -TAU_ENOMEM;
	*(void ***)field = items;
	for (size_t i = 0; i < len; i++) {
		if ((items[i] = malloc(d->sizeof_message)) == NULL)
			return -TAU_ENOMEM;
		protobuf_c_message_init(d, items[i]);
		(*n)++;
	}
	return 0;
}
