/*
 * localrpc.h - one-shot gRPC calls to node-local plugin sockets (kubelet pod-resources, CSI
 * registration and Identity), with a deadline and a reason in words when they fail.
 *
 * Shared by the probes that talk to unix sockets on the host: it checks that the path is a
 * socket before dialling (a missing socket is the common case and deserves its own words),
 * opens a libtau rpc channel on "unix:<path>" and makes blocking unary calls on it.
 */
#ifndef TAU_AGENT_LOCALRPC_H
#define TAU_AGENT_LOCALRPC_H

#include <stddef.h>
#include "tau/rpc_client.h"

/** Longest reason text written by these helpers, NUL included. */
#define TAU_AGENT_LOCALRPC_WHY_MAX 320

/**
 * Open a channel to the unix socket at `path` (host root already applied).
 * @param shown  the path as reasons name it (the host's own path, without --host-root)
 * @param why  receives the reason on failure ("<shown> does not exist", "... is not a socket")
 * @return 0 and *out (free with tau_rpc_channel_free); -TAU_ENOTFOUND when there is no socket
 *         there; -TAU_EINVAL for a path too long for a unix socket; -TAU_ENOMEM.
 */
int tau_agent_local_channel_open(tau_rpc_channel **out, const char *path, const char *shown,
                                 char *why, size_t why_cap);

/**
 * One unary call with a deadline of `timeout_ms`.  On failure `why` says
 * "<method>: <STATUS>: <message>" (DEADLINE_EXCEEDED for a peer that never answers).
 * @return 0 and *out (free with tau_rpc_message_free), or the error of tau_rpc_unary.
 */
int tau_agent_local_call(ProtobufCMessage **out, tau_rpc_channel *ch, const char *method,
                         const ProtobufCMessage *request,
                         const ProtobufCMessageDescriptor *response, int timeout_ms, char *why,
                         size_t why_cap);

#endif /* TAU_AGENT_LOCALRPC_H */
