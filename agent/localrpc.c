/*
 * localrpc.c - gRPC calls to sockets on the node, bounded by a deadline.
 *
 * The one idea: a plugin socket is untrusted and may be stale (its server gone) or hung, so
 * every call carries a deadline and every failure becomes a sentence for the inventory, never
 * an error that stops the agent.  A channel lives for one probe only: nothing stays connected
 * to kubelet or a driver between probes.
 */
#include "localrpc.h"

#include "tau/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

int tau_agent_local_channel_open(tau_rpc_channel **out, const char *path, const char *shown,
                                 char *why, size_t why_cap)
{
	struct sockaddr_un addr;
	tau_rpc_channel_opts opts;
	char target[sizeof(addr.sun_path) + 8];
	struct stat st;

	if (stat(path, &st) != 0) {
		int e = errno;

		if (e == ENOENT)
			snprintf(why, why_cap, "%s does not exist", shown);
		else
			snprintf(why, why_cap, "cannot stat %s: %s", shown, strerror(e));
		return tau_error_set(TAU_ENOTFOUND, "%s", why);
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, why_cap, "%s is not a socket", shown);
		return tau_error_set(TAU_ENOTFOUND, "%s", why);
	}
	if (strlen(path) >= sizeof(addr.sun_path)) {
		snprintf(why, why_cap, "%s is too long for a unix socket path (%zu bytes at most)",
		         shown, sizeof(addr.sun_path) - 1);
		return tau_error_set(TAU_EINVAL, "%s", why);
	}
	snprintf(target, sizeof(target), "unix:%s", path);
	memset(&opts, 0, sizeof(opts));
	opts.target = target;
	opts.own_connection = true;
	if (tau_rpc_channel_new(out, &opts) < 0) {
		snprintf(why, why_cap, "cannot make a channel to %s: %s", shown,
		         tau_error_last()->msg);
		return -TAU_ENOMEM;
	}
	return 0;
}

int tau_agent_local_call(ProtobufCMessage **out, tau_rpc_channel *ch, const char *method,
                         const ProtobufCMessage *request,
                         const ProtobufCMessageDescriptor *response, int timeout_ms, char *why,
                         size_t why_cap)
{
	tau_rpc_status status;
	const char *name = strrchr(method, '/');
	int rc;

	rc = tau_rpc_unary(out, ch, method, request, response, timeout_ms, &status);
	if (rc == 0)
		return 0;
	if (status.code == TAU_RPC_DEADLINE_EXCEEDED)
		snprintf(why, why_cap, "%s: no answer within %d ms (DEADLINE_EXCEEDED)",
		         name != NULL ? name + 1 : method, timeout_ms);
	else if (status.code == TAU_RPC_UNAVAILABLE) /* gRPC's own text names temporary paths */
		snprintf(why, why_cap, "%s: UNAVAILABLE (nothing answers on the socket)",
		         name != NULL ? name + 1 : method);
	else if (status.code == TAU_RPC_OK) /* answered, but the answer was not valid */
		snprintf(why, why_cap, "%s: %.250s", name != NULL ? name + 1 : method,
		         tau_error_last()->msg);
	else
		snprintf(why, why_cap, "%s: %s%s%.200s", name != NULL ? name + 1 : method,
		         tau_rpc_code_name(status.code), status.message[0] != '\0' ? ": " : "",
		         status.message);
	return rc;
}
