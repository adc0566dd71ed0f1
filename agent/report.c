/*
 * report.c - inventory to protobuf, and the report session of one stream.
 *
 * The one idea: the session is a pure function of (what was sent and acked
 * on this stream, the clock, the current digest), so "what to send now" is
 * decided in one place, without timers of its own, and the event loop just
 * asks it after every event and sleeps until tau_agent_session_wait_ms.
 *
 * Conversion allocates every string and sub-message with malloc, so one
 * protobuf_c_message_free_unpacked releases the whole tree.
 */
#include "report.h"

#include "tau/error.h"
#include "tau/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- UTF-8 */

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when invalid. */
static size_t utf8_seq_len(const unsigned char *p)
{
	unsigned char c = p[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80;
		unsigned char hi = c == 0xed ? 0x9f : 0xbf; /* no surrogates */

		if (p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80;
		unsigned char hi = c == 0xf4 ? 0x8f : 0xbf;

		if (p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

char *tau_agent_utf8_dup(const char *s)
{
	const unsigned char *p;
	size_t len;
	char *out;
	size_t o = 0;

	if (s == NULL)
		s = "";
	len = strlen(s);
	out = malloc(len + 1);
	if (out == NULL)
		return NULL;
	p = (const unsigned char *)s;
	while (*p != '\0') {
		/* A NUL inside a sequence makes it invalid, so reads stay in bounds. */
		size_t n = utf8_seq_len(p);

		if (n == 0) {
			out[o++] = '?';
			p++;
			continue;
		}
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	out[o] = '\0';
	return out;
}

/* ------------------------------------------------------ to protobuf */

/* The wire's NodeKind of each tau_node_kind (UNKNOWN: unspecified). */
static const Tau__Inventory__V1__NodeKind node_kinds[] = {
        [TAU_NODE_KIND_UNKNOWN] = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_UNSPECIFIED,
        [TAU_NODE_KIND_AGENT_POOL] = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_AGENT_POOL,
        [TAU_NODE_KIND_FLEX] = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_FLEX,
        [TAU_NODE_KIND_OTHER] = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_OTHER,
};

/* The wire's CsiManagedBy of each tau_csi_managed_by. */
static const Tau__Inventory__V1__CsiManagedBy csi_managers[] = {
        [TAU_CSI_MANAGED_UNKNOWN] = TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_UNKNOWN,
        [TAU_CSI_MANAGED_AKS_ADDON] = TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_AKS_ADDON,
        [TAU_CSI_MANAGED_DEPLOYMENT] =
                TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_DEPLOYMENT,
};

static uint32_t count_to_u32(int64_t v)
{
	if (v < 0)
		return 0;
	if (v > UINT32_MAX)
		return UINT32_MAX;
	return (uint32_t)v;
}

/* Why a driver is not supported or not healthy, "" when all is well (CsiDriver.detail). */
static const char *driver_detail(const tau_agent_inventory *inv, const tau_agent_csi_driver *d,
                                 bool supported)
{
	if (!supported)
		return d->managed_by == TAU_CSI_MANAGED_AKS_ADDON
		               ? "not supported on a Flex node (AKS add-on)"
		               : "not supported on a Flex node";
	if (d->in_csinode && d->socket == TAU_AGENT_FALSE)
		return "registered in CSINode but its registration socket is missing";
	if (!d->in_csinode && d->socket == TAU_AGENT_TRUE)
		return "registration socket present but not in CSINode";
	if (!d->in_csinode && d->has_node_pod)
		return "node pod runs but kubelet has not registered the driver";
	if (d->socket == TAU_AGENT_UNKNOWN && inv->devices.host_probed)
		return "registration socket could not be checked";
	return "";
}

static Tau__Inventory__V1__TriState tri_to_proto(int v)
{
	if (v < 0)
		return TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_UNKNOWN;
	return v ? TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE
	         : TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_FALSE;
}

/*
 * A new message of `desc`, initialised, with every string field NULL: the fill then sets
 * only owned strings, so protobuf-c's free can free each one it finds even when a fill
 * stops half way (out of memory).  NULL when out of memory.
 */
static void *new_message(const ProtobufCMessageDescriptor *desc)
{
	ProtobufCMessage *m = malloc(desc->sizeof_message);

	if (m == NULL)
		return NULL;
	protobuf_c_message_init(desc, m);
	for (unsigned i = 0; i < desc->n_fields; i++)
		if (desc->fields[i].type == PROTOBUF_C_TYPE_STRING &&
		    desc->fields[i].label != PROTOBUF_C_LABEL_REPEATED)
			*(char **)((char *)m + desc->fields[i].offset) = NULL;
	return m;
}

/* Valid-UTF-8 copies of n strings into a new array; 0 or -TAU_ENOMEM (*n_out counts them). */
static int dup_strings(char ***out, size_t *n_out, const char *const *strings, size_t n)
{
	if (n == 0)
		return 0;
	*out = calloc(n, sizeof(**out));
	if (*out == NULL)
		return -TAU_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char *s = tau_agent_utf8_dup(strings[i]);

		if (s == NULL)
			return -TAU_ENOMEM;
		(*out)[(*n_out)++] = s;
	}
	return 0;
}

/* Fill message `msg` from the i-th item that `ctx` holds.  @return 0 or -TAU_ENOMEM. */
typedef int (*fill_item_fn)(void *msg, const void *ctx, size_t i);

/*
 * A repeated message field: `field` points at protobuf-c's T ** and n_field at its count.  n
 * new messages of `desc`, each counted as soon as it is made (protobuf-c's free then finds
 * exactly those when a fill stops half way) and filled by fill(msg, ctx, i).
 * @return 0 or -TAU_ENOMEM.
 */
static int fill_repeated(void *field, size_t *n_field, size_t n,
                         const ProtobufCMessageDescriptor *desc, fill_item_fn fill, const void *ctx)
{
	void **msgs;

	if (n == 0)
		return 0;
	msgs = calloc(n, sizeof(*msgs));
	if (msgs == NULL)
		return -TAU_ENOMEM;
	memcpy(field, &msgs, sizeof(msgs));
	for (size_t i = 0; i < n; i++) {
		void *m = new_message(desc);

		if (m == NULL)
			return -TAU_ENOMEM;
		msgs[(*n_field)++] = m;
		if (fill(m, ctx, i) < 0)
			return -TAU_ENOMEM;
	}
	return 0;
}

/* Valid-UTF-8 copies of a key and its value into *key and *value.  0 or -TAU_ENOMEM. */
static int dup_kv(char **key, char **value, const tau_agent_kv *kv)
{
	if ((*key = tau_agent_utf8_dup(kv->key)) == NULL ||
	    (*value = tau_agent_utf8_dup(kv->value)) == NULL)
		return -TAU_ENOMEM;
	return 0;
}

/* fill_item_fn: a label of the node from the tau_agent_kv array ctx. */
static int fill_label(void *msg, const void *ctx, size_t i)
{
	Tau__Inventory__V1__NodeInventory__LabelsEntry *e = msg;

	return dup_kv(&e->key, &e->value, &((const tau_agent_kv *)ctx)[i]);
}

/* fill_item_fn: an allocatable quantity of the node from the tau_agent_kv array ctx. */
static int fill_quantity(void *msg, const void *ctx, size_t i)
{
	Tau__Inventory__V1__ResourceQuantity *q = msg;

	return dup_kv(&q->name, &q->quantity, &((const tau_agent_kv *)ctx)[i]);
}

/* CsiDriver's live-check fields (all "" / UNKNOWN when not probed). */
static int fill_csi_live(Tau__Inventory__V1__CsiDriver *c, const tau_agent_csi_live *l)
{
	c->probed = l != NULL;
	c->probe_ready = tri_to_proto(l != NULL ? l->ready : -1);
	if ((c->endpoint = tau_agent_utf8_dup(l != NULL ? l->endpoint : NULL)) == NULL ||
	    (c->plugin_name = tau_agent_utf8_dup(l != NULL ? l->plugin_name : NULL)) == NULL ||
	    (c->vendor_version = tau_agent_utf8_dup(l != NULL ? l->vendor_version : NULL)) ==
	            NULL ||
	    (c->probe_error = tau_agent_utf8_dup(l != NULL ? l->error : NULL)) == NULL)
		return -TAU_ENOMEM;
	return 0;
}

/* fill_item_fn: one CsiDriver from the inventory ctx. */
static int fill_csi_driver(void *msg, const void *ctx, size_t i)
{
	const tau_agent_inventory *inv = ctx;
	const tau_agent_csi_driver *d = &inv->csi_drivers[i];
	Tau__Inventory__V1__CsiDriver *c = msg;
	bool supported = tau_agent_csi_driver_supported(inv, d);

	c->in_csi_node = d->in_csinode;
	c->socket_present = d->socket == TAU_AGENT_TRUE;
	c->managed_by = (size_t)d->managed_by < TAU_N_ELEMENTS(csi_managers)
	                        ? csi_managers[d->managed_by]
	                        : TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_UNKNOWN;
	c->supported = supported;
	if (fill_csi_live(c, d->live) < 0)
		return -TAU_ENOMEM;
	if ((c->name = tau_agent_utf8_dup(d->name)) == NULL ||
	    (c->detail = tau_agent_utf8_dup(driver_detail(inv, d, supported))) == NULL)
		return -TAU_ENOMEM;
	return 0;
}

/* fill_item_fn: one Gpu from the tau_agent_nvml ctx. */
static int fill_gpu(void *msg, const void *ctx, size_t i)
{
	const tau_agent_gpu *g = &((const tau_agent_nvml *)ctx)->gpus[i];
	Tau__Inventory__V1__Gpu *m = msg;

	m->index = g->index;
	m->healthy = g->healthy;
	m->lost = tri_to_proto(g->lost);
	m->remap_pending = tri_to_proto(g->remap_pending);
	m->remap_failure = tri_to_proto(g->remap_failure);
	m->remapped_rows_correctable = g->remapped_correctable;
	m->remapped_rows_uncorrectable = g->remapped_uncorrectable;
	m->retired_pages_single_bit = g->retired_pages_sbe;
	m->retired_pages_double_bit = g->retired_pages_dbe;
	m->retire_pending = tri_to_proto(g->retired_pending);
	m->mig_enabled = tri_to_proto(g->mig_mode);
	m->nvlink_links_active = g->nvlink_active;
	m->nvlink_links_down = g->nvlink_down;
	m->xid_critical_count = g->xid_critical;
	m->last_xid = g->last_xid;
	m->mig_devices = g->mig_devices;
	if ((m->uuid = tau_agent_utf8_dup(g->uuid)) == NULL ||
	    (m->name = tau_agent_utf8_dup(g->name)) == NULL ||
	    (m->reason = tau_agent_utf8_dup(g->reason)) == NULL ||
	    (m->mig_profiles = tau_agent_utf8_dup(g->mig_profiles)) == NULL)
		return -TAU_ENOMEM;
	return 0;
}

/* LocalDevices' NVML fields: versions, missing symbols, one Gpu per GPU described. */
static int fill_gpus(Tau__Inventory__V1__LocalDevices *ld, const tau_agent_devices *dev)
{
	const tau_agent_nvml *n = &dev->nvml;
	char cuda[16] = "";

	if (n->cuda_version > 0)
		snprintf(cuda, sizeof(cuda), "%d.%d", n->cuda_version / 1000,
		         (n->cuda_version % 1000) / 10);
	if ((ld->driver_version = tau_agent_utf8_dup(n->driver_version)) == NULL ||
	    (ld->cuda_version = tau_agent_utf8_dup(cuda)) == NULL ||
	    (ld->gpus_not_probed_reason = tau_agent_utf8_dup(
	             dev->nvml_probed ? "" : (dev->nvml_note != NULL ? dev->nvml_note : ""))) ==
	            NULL)
		return -TAU_ENOMEM;
	if (dup_strings(&ld->nvml_missing_symbols, &ld->n_nvml_missing_symbols, n->missing_symbols,
	                n->n_missing) < 0)
		return -TAU_ENOMEM;
	return fill_repeated(&ld->gpus, &ld->n_gpus, n->n_gpus,
	                     &tau__inventory__v1__gpu__descriptor, fill_gpu, n);
}

/* fill_item_fn: one DraDevice (a device a ResourceClaim holds) from the tau_agent_podres ctx. */
static int fill_dra_device(void *msg, const void *ctx, size_t i)
{
	const tau_agent_dra_device *d = &((const tau_agent_podres *)ctx)->dra[i];
	Tau__Inventory__V1__DraDevice *m = msg;

	if ((m->driver_name = tau_agent_utf8_dup(d->driver)) == NULL ||
	    (m->pool_name = tau_agent_utf8_dup(d->pool)) == NULL ||
	    (m->device_name = tau_agent_utf8_dup(d->device)) == NULL ||
	    (m->claim_namespace = tau_agent_utf8_dup(d->claim_namespace)) == NULL ||
	    (m->claim_name = tau_agent_utf8_dup(d->claim_name)) == NULL ||
	    (m->pod_namespace = tau_agent_utf8_dup(d->pod_namespace)) == NULL ||
	    (m->pod_name = tau_agent_utf8_dup(d->pod_name)) == NULL ||
	    (m->container_name = tau_agent_utf8_dup(d->container)) == NULL)
		return -TAU_ENOMEM;
	return 0;
}

/* fill_item_fn: one PodDevice from the tau_agent_podres ctx. */
static int fill_pod_device(void *msg, const void *ctx, size_t i)
{
	const tau_agent_pod_device *d = &((const tau_agent_podres *)ctx)->devices[i];
	Tau__Inventory__V1__PodDevice *m = msg;

	m->numa_node = d->numa_node;
	m->allocatable = d->allocatable;
	if ((m->resource_name = tau_agent_utf8_dup(d->resource)) == NULL ||
	    (m->device_id = tau_agent_utf8_dup(d->id)) == NULL ||
	    (m->pod_namespace = tau_agent_utf8_dup(d->pod_namespace)) == NULL ||
	    (m->pod_name = tau_agent_utf8_dup(d->pod_name)) == NULL ||
	    (m->container_name = tau_agent_utf8_dup(d->container)) == NULL)
		return -TAU_ENOMEM;
	return 0;
}

/* LocalDevices' pod-resources fields, the DRA devices among them. */
static int fill_pod_devices(Tau__Inventory__V1__LocalDevices *ld, const tau_agent_devices *dev)
{
	const tau_agent_podres *r = &dev->podres;

	ld->pod_resources_probed = r->probed;
	ld->pod_resources_allocatable_known = r->allocatable_known;
	ld->pod_resources_note = tau_agent_utf8_dup(r->note);
	if (ld->pod_resources_note == NULL)
		return -TAU_ENOMEM;
	ld->dra_devices_read = r->probed;
	ld->dra_devices_dropped = count_to_u32((int64_t)r->n_dra_dropped);
	if (fill_repeated(&ld->dra_devices, &ld->n_dra_devices, r->n_dra,
	                  &tau__inventory__v1__dra_device__descriptor, fill_dra_device, r) < 0)
		return -TAU_ENOMEM;
	return fill_repeated(&ld->pod_devices, &ld->n_pod_devices, r->n_devices,
	                     &tau__inventory__v1__pod_device__descriptor, fill_pod_device, r);
}

/* fill_item_fn: one RdmaPort from the tau_agent_devices ctx's port details. */
static int fill_rdma_port(void *msg, const void *ctx, size_t i)
{
	const tau_agent_rdma_port *p = &((const tau_agent_devices *)ctx)->rdma_ports[i];
	Tau__Inventory__V1__RdmaPort *r = msg;

	r->state = p->state > 0 ? (uint32_t)p->state : 0;
	r->phys_state = p->phys_state > 0 ? (uint32_t)p->phys_state : 0;
	r->rate_mbps = p->rate_mbps > 0 ? (uint64_t)p->rate_mbps : 0;
	r->link_downed = p->link_downed;
	if ((r->device = tau_agent_utf8_dup(p->device)) == NULL ||
	    (r->port = tau_agent_utf8_dup(p->port)) == NULL ||
	    (r->rate = tau_agent_utf8_dup(p->rate)) == NULL ||
	    (r->link_layer = tau_agent_utf8_dup(p->link_layer)) == NULL)
		return -TAU_ENOMEM;
	return 0;
}

/* Fill the heap-allocated fields of a NodeInventory; everything goes into `m`. */
static int fill_proto(Tau__Inventory__V1__NodeInventory *m, const tau_agent_inventory *inv,
                      const char *digest, int64_t observed_ms, const char *version)
{
	const tau_agent_devices *dev = &inv->devices;
	Tau__Inventory__V1__LocalDevices *ld;

#define DUP(field, value)                                                                          \
	do {                                                                                       \
		if ((m->field = tau_agent_utf8_dup(value)) == NULL)                                \
			return -TAU_ENOMEM;                                                        \
	} while (0)

	DUP(node_name, inv->node_name);
	DUP(node_uid, inv->node_uid);
	DUP(gpu_class, inv->gpu_class);
	DUP(os, inv->os);
	DUP(provider_id, inv->provider_id);
	DUP(resource_version, inv->resource_version);
	DUP(agent_version, version);
	DUP(digest, digest);
	m->ready = inv->ready == TAU_AGENT_TRUE;
	m->schedulable = inv->schedulable == TAU_AGENT_TRUE;
	m->deleting = inv->deleting == TAU_AGENT_TRUE;
	m->kind = (size_t)inv->kind < TAU_N_ELEMENTS(node_kinds)
	                  ? node_kinds[inv->kind]
	                  : TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_UNSPECIFIED;
	m->observed_unix_ms = observed_ms;
	if (fill_repeated(&m->labels, &m->n_labels, inv->n_labels,
	                  &tau__inventory__v1__node_inventory__labels_entry__descriptor, fill_label,
	                  inv->labels) < 0 ||
	    fill_repeated(&m->allocatable, &m->n_allocatable, inv->n_allocatable,
	                  &tau__inventory__v1__resource_quantity__descriptor, fill_quantity,
	                  inv->allocatable) < 0 ||
	    fill_repeated(&m->csi_drivers, &m->n_csi_drivers, inv->n_csi_drivers,
	                  &tau__inventory__v1__csi_driver__descriptor, fill_csi_driver, inv) < 0)
		return -TAU_ENOMEM;

	ld = new_message(&tau__inventory__v1__local_devices__descriptor);
	if (ld == NULL)
		return -TAU_ENOMEM;
	m->devices = ld;
	ld->gpus_probed = dev->nvml_probed;
	ld->gpus_present = count_to_u32(dev->nvml_probed ? dev->nvml_gpus : dev->gpu_device_nodes);
	ld->gpus_healthy = dev->nvml_probed ? count_to_u32(dev->nvml_healthy) : 0;
	ld->rdma_ports_total = count_to_u32(dev->rdma_ports_total);
	ld->rdma_ports_up = count_to_u32(dev->rdma_ports_up);
	if (fill_repeated(&ld->rdma_ports, &ld->n_rdma_ports, dev->n_rdma_ports,
	                  &tau__inventory__v1__rdma_port__descriptor, fill_rdma_port, dev) < 0 ||
	    fill_gpus(ld, dev) < 0 || fill_pod_devices(ld, dev) < 0)
		return -TAU_ENOMEM;

	if (dup_strings(&m->problems, &m->n_problems, (const char *const *)inv->problems.items,
	                inv->problems.n) < 0)
		return -TAU_ENOMEM;
#undef DUP
	return 0;
}

int tau_agent_inventory_to_proto(Tau__Inventory__V1__NodeInventory **out,
                                 const tau_agent_inventory *inv, const char *digest,
                                 int64_t observed_ms, const char *version)
{
	Tau__Inventory__V1__NodeInventory *m;

	if (out == NULL || inv == NULL)
		return tau_error_set(TAU_EINVAL, "no inventory to convert");
	m = new_message(&tau__inventory__v1__node_inventory__descriptor);
	if (m == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory converting the inventory");
	if (fill_proto(m, inv, digest, observed_ms, version) < 0) {
		tau_agent_node_inventory_free(m);
		return tau_error_set(TAU_ENOMEM, "out of memory converting the inventory");
	}
	*out = m;
	return 0;
}

void tau_agent_node_inventory_free(Tau__Inventory__V1__NodeInventory *msg)
{
	if (msg == NULL)
		return;
	/* NULL string fields (left by a failed fill) are skipped by protobuf-c's free. */
	protobuf_c_message_free_unpacked(&msg->base, NULL);
}

/* ----------------------------------------------------------- session */

void tau_agent_session_init(tau_agent_session *s)
{
	memset(s, 0, sizeof(*s));
	s->heartbeat_s = TAU_AGENT_DEFAULT_HEARTBEAT_S;
}

void tau_agent_session_connected(tau_agent_session *s, int64_t now_ms)
{
	uint32_t hb = s->heartbeat_s;

	memset(s, 0, sizeof(*s));
	s->heartbeat_s = hb ? hb : TAU_AGENT_DEFAULT_HEARTBEAT_S;
	s->connected = true;
	s->need_full = true;
	s->last_send_ms = now_ms;
}

void tau_agent_session_closed(tau_agent_session *s)
{
	uint32_t hb = s->heartbeat_s;

	memset(s, 0, sizeof(*s));
	s->heartbeat_s = hb ? hb : TAU_AGENT_DEFAULT_HEARTBEAT_S;
}

tau_agent_ack_result tau_agent_session_ack(tau_agent_session *s, uint64_t seq, uint32_t interval_s,
                                           int status, int64_t now_ms)
{
	if (!s->connected || seq == 0 || seq > s->last_seq)
		return TAU_AGENT_ACK_IGNORED;
	if (interval_s > 0)
		s->heartbeat_s = interval_s > TAU_AGENT_MAX_HEARTBEAT_S ? TAU_AGENT_MAX_HEARTBEAT_S
		                                                        : interval_s;
	if (seq > s->last_acked)
		s->last_acked = seq;
	/* Anything acked restarts the watchdog; all acked stops it. */
	s->unacked_since_ms = s->last_acked >= s->last_seq ? 0 : now_ms;
	switch (status) {
	case TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_RESEND_FULL:
		s->need_full = true;
		return TAU_AGENT_ACK_RESEND;
	case TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_REJECTED:
		return TAU_AGENT_ACK_REJECTED;
	default:
		return TAU_AGENT_ACK_OK;
	}
}

static int64_t interval_ms(const tau_agent_session *s)
{
	return (int64_t)s->heartbeat_s * 1000;
}

tau_agent_action tau_agent_session_next(const tau_agent_session *s, int64_t now_ms,
                                        const char *digest)
{
	bool have = digest != NULL && digest[0] != '\0';

	if (!s->connected)
		return TAU_AGENT_ACTION_NONE;
	if (s->unacked_since_ms != 0 &&
	    now_ms - s->unacked_since_ms >= TAU_AGENT_ACK_TIMEOUT_INTERVALS * interval_ms(s))
		return TAU_AGENT_ACTION_RECONNECT;
	if (have && (s->need_full || strcmp(digest, s->sent_digest) != 0))
		return TAU_AGENT_ACTION_INVENTORY;
	/* No heartbeat before the stream's first inventory: it would only earn RESEND_FULL. */
	if (s->sent_digest[0] != '\0' && now_ms - s->last_send_ms >= interval_ms(s))
		return TAU_AGENT_ACTION_HEARTBEAT;
	return TAU_AGENT_ACTION_NONE;
}

uint64_t tau_agent_session_next_seq(const tau_agent_session *s)
{
	return s->last_seq + 1;
}

void tau_agent_session_sent(tau_agent_session *s, tau_agent_action what, const char *digest,
                            int64_t now_ms)
{
	if (s->last_acked >= s->last_seq)
		s->unacked_since_ms = now_ms;
	s->last_seq++;
	s->last_send_ms = now_ms;
	if (what == TAU_AGENT_ACTION_INVENTORY) {
		s->need_full = false;
		snprintf(s->sent_digest, sizeof(s->sent_digest), "%s",
		         digest != NULL ? digest : "");
	}
}

int64_t tau_agent_session_wait_ms(const tau_agent_session *s, int64_t now_ms)
{
	int64_t due = -1;

	if (!s->connected)
		return -1;
	if (s->sent_digest[0] != '\0')
		due = s->last_send_ms + interval_ms(s);
	if (s->unacked_since_ms != 0) {
		int64_t watchdog =
		        s->unacked_since_ms + TAU_AGENT_ACK_TIMEOUT_INTERVALS * interval_ms(s);

		if (due < 0 || watchdog < due)
			due = watchdog;
	}
	if (due < 0)
		return -1;
	return due > now_ms ? due - now_ms : 0;
}

/* An AgentReport with seq and the body case set; the caller sets the body. */
static void init_report(Tau__Inventory__V1__AgentReport *report, uint64_t seq,
                        Tau__Inventory__V1__AgentReport__BodyCase body)
{
	tau__inventory__v1__agent_report__init(report);
	report->seq = seq;
	report->body_case = body;
}

void tau_agent_report_init_inventory(Tau__Inventory__V1__AgentReport *report, uint64_t seq,
                                     Tau__Inventory__V1__NodeInventory *inv)
{
	init_report(report, seq, TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY);
	report->inventory = inv;
}

void tau_agent_report_init_heartbeat(Tau__Inventory__V1__AgentReport *report, uint64_t seq,
                                     Tau__Inventory__V1__Heartbeat *hb)
{
	init_report(report, seq, TAU__INVENTORY__V1__AGENT_REPORT__BODY_HEARTBEAT);
	report->heartbeat = hb;
}

void tau_agent_report_init_stopping(Tau__Inventory__V1__AgentReport *report, uint64_t seq,
                                    Tau__Inventory__V1__Stopping *stopping)
{
	init_report(report, seq, TAU__INVENTORY__V1__AGENT_REPORT__BODY_STOPPING);
	report->stopping = stopping;
}
