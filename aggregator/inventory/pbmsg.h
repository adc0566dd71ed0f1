/*
 * pbmsg.h - a protobuf-c repeated message field filled in one step.
 *
 * A list in an answer or an inventory (a node's devices, the labels) is an array of pointers
 * to messages and its count.  tau_pb_new_repeated makes the array and every message in it,
 * initialised, so the caller only sets their fields; the count always says how many exist,
 * so protobuf-c's free frees them even when out of memory stopped the filling half way.
 */
#ifndef TAU_AGGREGATOR_PBMSG_H
#define TAU_AGGREGATOR_PBMSG_H

#include <protobuf-c/protobuf-c.h>

#include <stddef.h>

/**
 * Fill the repeated field `field` (the address of its `T **`) and its count `*n` with `len`
 * new messages of descriptor `d`.  Nothing when `len` is 0.
 * @return 0, or -TAU_ENOMEM (the tau error not set: the caller says what it was building).
 */
int tau_pb_new_repeated(void *field, size_t *n, size_t len, const ProtobufCMessageDescriptor *d);

#endif /* TAU_AGGREGATOR_PBMSG_H */
