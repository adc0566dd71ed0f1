/*
 * rpc_server_peer.c - what a server call knows of who sent it.
 *
 * Copied once when the call starts: the peer's address (and its host without the port), whether
 * it came over TLS, the TLS peer identity and certificate common name, and the request headers
 * (capped in count and bytes) in one allocation; the key that the per-peer call cap counts by.
 * Handlers read them through the tau_rpc_call_peer_* and metadata accessors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rpc_server_internal.h"
#include "tau/error.h"
#include "tau/rpc_server.h"

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_METADATA 64

static void copy_auth(tau_rpc_call *c, grpc_auth_context *ctx);

void tau_rpc_call_copy_peer(tau_rpc_call *c)
{
	grpc_auth_context *ctx = grpc_call_auth_context(c->call);
	char *peer = grpc_call_get_peer(c->call);

	if (peer != NULL) {
		/* "ipv4:10.0.0.7:43242", "ipv6:[::1]:43242": one host, whatever its ports. The
		 * host goes after the address's NUL, in the same allocation. */
		size_t len = strlen(peer);
		const char *colon = strrchr(peer, ':');
		size_t n =
		        colon != NULL && colon > strchr(peer, ':') ? (size_t)(colon - peer) : len;

		c->peer_address = malloc(len + 1 + n + 1);
		if (c->peer_address != NULL) {
			memcpy(c->peer_address, peer, len + 1);
			memcpy(c->peer_address + len + 1, peer, n);
			c->peer_address[len + 1 + n] = '\0';
		}
		gpr_free(peer);
	}
	if (ctx != NULL)
		copy_auth(c, ctx);
	if (c->peer_identity != NULL)
		c->peer_key = c->peer_identity;
	else if (c->peer_address != NULL)
		c->peer_key = c->peer_address + strlen(c->peer_address) + 1;
}

static void copy_auth(tau_rpc_call *c, grpc_auth_context *ctx)
{
	{
		grpc_auth_property_iterator it =
		        grpc_auth_context_find_properties_by_name(ctx, "transport_security_type");
		const grpc_auth_property *p = grpc_auth_property_iterator_next(&it);

		c->peer_tls = p != NULL && p->value_length == 3 && memcmp(p->value, "ssl", 3) == 0;
	}
	if (grpc_auth_context_peer_is_authenticated(ctx)) {
		grpc_auth_property_iterator it = grpc_auth_context_peer_identity(ctx);
		const grpc_auth_property *p = grpc_auth_property_iterator_next(&it);

		if (p != NULL)
			c->peer_identity = strndup(p->value, p->value_length);
		it = grpc_auth_context_find_properties_by_name(ctx, "x509_common_name");
		p = grpc_auth_property_iterator_next(&it);
		if (p != NULL)
			c->peer_cn = strndup(p->value, p->value_length);
	}
	grpc_auth_context_release(ctx);
}

int tau_rpc_call_copy_metadata(tau_rpc_call *c, const grpc_metadata_array *md, size_t max_bytes)
{
	size_t total = 0;
	struct md_block *b;
	char *p;

	if (md->count == 0)
		return 0;
	if (md->count > MAX_METADATA)
		return tau_error_set(TAU_ETOOBIG, "%zu metadata entries (cap %d)", md->count,
		                     MAX_METADATA);
	for (size_t i = 0; i < md->count; i++) {
		total += GRPC_SLICE_LENGTH(md->metadata[i].key) +
		         GRPC_SLICE_LENGTH(md->metadata[i].value);
		if (total > max_bytes)
			return tau_error_set(TAU_ETOOBIG,
			                     "request metadata over %zu bytes (a bearer token may "
			                     "have up to 16 KiB)",
			                     max_bytes);
	}
	/* One allocation: the block, its pairs, then each key and value with its NUL. */
	b = malloc(sizeof(*b) + md->count * sizeof(b->pairs[0]) + total + 2 * md->count);
	if (b == NULL)
		return tau_error_set(TAU_ENOMEM, "metadata");
	b->n = md->count;
	p = (char *)&b->pairs[md->count];
	for (size_t i = 0; i < md->count; i++) {
		const grpc_slice *kv[2] = {&md->metadata[i].key, &md->metadata[i].value};

		for (int j = 0; j < 2; j++) {
			size_t n = GRPC_SLICE_LENGTH(*kv[j]);

			memcpy(p, GRPC_SLICE_START_PTR(*kv[j]), n);
			p[n] = '\0';
			if (j == 0)
				b->pairs[i].key = p;
			else
				b->pairs[i].value = p;
			p += n + 1;
		}
	}
	atomic_store(&c->md, b);
	return 0;
}

/* ---- call accessors ----------------------------------------------------------------------- */

const char *tau_rpc_call_peer_key(const tau_rpc_call *call)
{
	return call->peer_key;
}

const char *tau_rpc_call_metadata(const tau_rpc_call *call, const char *key)
{
	size_t klen = strlen(key);
	const struct md_block *b = atomic_load(&((tau_rpc_call *)call)->md);

	if (b == NULL || (klen > 4 && strcmp(key + klen - 4, "-bin") == 0))
		return NULL;
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->pairs[i].key, key) == 0)
			return b->pairs[i].value;
	return NULL;
}

void tau_rpc_call_drop_metadata(tau_rpc_call *call)
{
	free(atomic_exchange(&call->md, NULL));
}

const char *tau_rpc_call_bearer_token(const tau_rpc_call *call)
{
	const char *v = tau_rpc_call_metadata(call, "authorization");

	if (v == NULL || strncasecmp(v, "Bearer ", 7) != 0)
		return NULL;
	v += 7;
	while (*v == ' ')
		v++;
	return *v ? v : NULL;
}

const char *tau_rpc_call_peer_identity(const tau_rpc_call *call)
{
	return call->peer_identity;
}

const char *tau_rpc_call_peer_common_name(const tau_rpc_call *call)
{
	return call->peer_cn;
}

bool tau_rpc_call_peer_is_tls(const tau_rpc_call *call)
{
	return call->peer_tls;
}

const char *tau_rpc_call_peer_address(const tau_rpc_call *call)
{
	return call->peer_address;
}
