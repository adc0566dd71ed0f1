/*
 * rpc_message.c - decoding and checking protobuf-c messages for the gRPC layer.
 *
 * protobuf-c accepts any bytes in a `string` field; Python, Go and Java clients reject the
 * whole message when a string is not UTF-8. So every message is walked after decoding (and
 * before sending) through its descriptor, and a bad string is refused at our boundary rather
 * than passed on to break someone else's. Everything here is pure: bytes in, value out.
 *
 * A decoded message lives in one arena: protobuf-c takes our allocator, which hands out room
 * from a block sized from the message's length (more blocks only when that was too little) and
 * frees nothing on its own, so a message of fifty strings and sub-messages costs one malloc and
 * one free instead of fifty of each. The block starts with the arena's header, then the message
 * itself (protobuf-c allocates it first), so tau_rpc_message_free finds the header from the
 * message. The bytes it was decoded from are kept at the block's end (tau_rpc_message_wire).
 */
#include "tau/rpc.h"

#include "tau/error.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

/* Our schemas are not recursive; this only stops a hostile descriptor from looping. */
#define MAX_DEPTH 32

const char *tau_rpc_code_name(int code)
{
	static const char *const names[] = {
	        "OK",
	        "CANCELLED",
	        "UNKNOWN",
	        "INVALID_ARGUMENT",
	        "DEADLINE_EXCEEDED",
	        "NOT_FOUND",
	        "ALREADY_EXISTS",
	        "PERMISSION_DENIED",
	        "RESOURCE_EXHAUSTED",
	        "FAILED_PRECONDITION",
	        "ABORTED",
	        "OUT_OF_RANGE",
	        "UNIMPLEMENTED",
	        "INTERNAL",
	        "UNAVAILABLE",
	        "DATA_LOSS",
	        "UNAUTHENTICATED",
	};

	if (code < 0 || (size_t)code >= sizeof(names) / sizeof(names[0]))
		return "UNKNOWN_CODE";
	return names[code];
}

bool tau_rpc_utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t need;
		uint32_t cp;
		uint32_t min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xE0) == 0xC0) {
			need = 1;
			cp = c & 0x1Fu;
			min = 0x80;
		} else if ((c & 0xF0) == 0xE0) {
			need = 2;
			cp = c & 0x0Fu;
			min = 0x800;
		} else if ((c & 0xF8) == 0xF0) {
			need = 3;
			cp = c & 0x07u;
			min = 0x10000;
		} else {
			return false;
		}
		if (len - i - 1 < need)
			return false;
		for (size_t k = 1; k <= need; k++) {
			unsigned char cc = s[i + k];

			if ((cc & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (cc & 0x3Fu);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += need + 1;
	}
	return true;
}

static int check_string(const ProtobufCMessageDescriptor *desc, const ProtobufCFieldDescriptor *f,
                        const char *s)
{
	if (s == NULL)
		return 0;
	if (!tau_rpc_utf8_valid(s, strlen(s)))
		return tau_error_set(TAU_EINVAL, "%s.%s: string is not valid UTF-8", desc->name,
		                     f->name);
	return 0;
}

static int check_message(const ProtobufCMessage *msg, int depth)
{
	const ProtobufCMessageDescriptor *desc = msg->descriptor;
	const char *base = (const char *)msg;

	if (depth > MAX_DEPTH)
		return tau_error_set(TAU_EINVAL, "%s: nested too deeply", desc->name);
	/* protobuf-c keeps a field numbered 0 when its tag is written in more than one byte
	 * (0x80 0x00), though 0 is no valid field number and it refuses the one-byte form: such
	 * a message would not survive being re-encoded, so it is malformed here. */
	for (size_t i = 0; i < msg->n_unknown_fields; i++)
		if (msg->unknown_fields[i].tag == 0)
			return tau_error_set(TAU_EINVAL, "%s: field number 0 is not valid protobuf",
			                     desc->name);
	for (unsigned i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &desc->fields[i];
		const void *member = base + f->offset;
		int rc;

		if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			uint32_t which;

			memcpy(&which, base + f->quantifier_offset, sizeof(which));
			if (which != f->id)
				continue;
		}
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n;
			void *const *items;

			memcpy(&n, base + f->quantifier_offset, sizeof(n));
			memcpy(&items, member, sizeof(items));
			for (size_t k = 0; k < n && items != NULL; k++) {
				if (f->type == PROTOBUF_C_TYPE_STRING)
					rc = check_string(desc, f, items[k]);
				else
					rc = items[k] ? check_message(items[k], depth + 1) : 0;
				if (rc < 0)
					return rc;
			}
			continue;
		}
		if (f->type == PROTOBUF_C_TYPE_STRING) {
			const char *s;

			memcpy(&s, member, sizeof(s));
			rc = check_string(desc, f, s);
		} else {
			const ProtobufCMessage *sub;

			memcpy(&sub, member, sizeof(sub));
			rc = sub ? check_message(sub, depth + 1) : 0;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int tau_rpc_message_check_utf8(const ProtobufCMessage *msg)
{
	if (msg == NULL)
		return tau_error_set(TAU_EINVAL, "no message");
	return check_message(msg, 0);
}

/* ---- the arena ---------------------------------------------------------------------------- */

#define ARENA_MAGIC    0x7461752d6172656eull /* "tau-aren" */
#define ARENA_ALIGN    alignof(max_align_t)
#define ARENA_MORE_MIN 4096 /* a further block holds at least this much */
#define ARENA_SLACK    1024 /* first block: the wire length twice, the message, and this */
#define ROUND_UP(n, a) (((n) + (a)-1) / (a) * (a))

/* A further block, when the first was too small (rare: the first is sized generously). */
typedef struct arena_more {
	struct arena_more *next;
	alignas(max_align_t) char room[];
} arena_more;

typedef struct arena {
	uint64_t magic; /* a message not decoded here is a bug to catch, not to free */
	ProtobufCAllocator pc;
	arena_more *more; /* further blocks, newest first */
	char *at;         /* free room of the current block */
	size_t left;
	const uint8_t *wire; /* the received bytes, at the end of the first block */
	size_t wire_len;
	alignas(max_align_t) char room[]; /* the message, then what protobuf-c asks for */
} arena;

static void *arena_alloc(void *data, size_t size)
{
	arena *a = data;
	size_t n = ROUND_UP(size > 0 ? size : 1, ARENA_ALIGN);
	void *p;

	if (n < size)
		return NULL;
	if (n > a->left) {
		size_t cap = n > ARENA_MORE_MIN ? n : ARENA_MORE_MIN;
		arena_more *m;

		if (cap > SIZE_MAX - sizeof(*m) || (m = malloc(sizeof(*m) + cap)) == NULL)
			return NULL;
		m->next = a->more;
		a->more = m;
		a->at = m->room;
		a->left = cap;
	}
	p = a->at;
	a->at += n;
	a->left -= n;
	return p;
}

/* Nothing is freed alone: the whole arena goes at once (protobuf-c frees on a failed unpack). */
static void arena_free_one(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

static arena *arena_new(size_t first_message, const uint8_t *wire, size_t len)
{
	size_t room, total;
	arena *a;

	/* protobuf-c's allocations for a message are about its wire length (strings, arrays)
	 * plus the structs of its sub-messages; twice the length and some slack covers the
	 * messages we exchange, and a rare larger one takes a further block. */
	if (len > (SIZE_MAX - ARENA_SLACK - first_message - sizeof(arena)) / 3)
		return NULL;
	room = ROUND_UP(first_message + 2 * len + ARENA_SLACK, ARENA_ALIGN);
	total = sizeof(arena) + room + len;
	a = malloc(total);
	if (a == NULL)
		return NULL;
	a->magic = ARENA_MAGIC;
	a->pc.alloc = arena_alloc;
	a->pc.free = arena_free_one;
	a->pc.allocator_data = a;
	a->more = NULL;
	a->at = a->room;
	a->left = room;
	a->wire = (const uint8_t *)a->room + room;
	a->wire_len = len;
	if (len > 0)
		memcpy((uint8_t *)a->room + room, wire, len);
	return a;
}

static void arena_release(arena *a)
{
	arena_more *m = a->more;

	while (m != NULL) {
		arena_more *next = m->next;

		free(m);
		m = next;
	}
	a->magic = 0;
	free(a);
}

static arena *arena_of(const ProtobufCMessage *msg)
{
	return (arena *)(void *)((char *)(uintptr_t)msg - offsetof(arena, room));
}

int tau_rpc_message_decode(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
                           const uint8_t *data, size_t len, size_t max_len)
{
	ProtobufCMessage *msg;
	arena *a;
	int rc;

	if (len > max_len)
		return tau_error_set(TAU_ETOOBIG, "%s: message of %zu bytes exceeds the cap of %zu",
		                     desc->name, len, max_len);
	a = arena_new(desc->sizeof_message, data, len);
	if (a == NULL)
		return tau_error_set(TAU_ENOMEM, "%s: out of memory decoding %zu bytes", desc->name,
		                     len);
	msg = protobuf_c_message_unpack(desc, &a->pc, len, data);
	if (msg == NULL) {
		arena_release(a);
		return tau_error_set(TAU_EINVAL, "%s: malformed protobuf (%zu bytes)", desc->name,
		                     len);
	}
	if ((void *)msg != (void *)a->room) {
		/* tau_rpc_message_free could not find the arena from this message. */
		arena_release(a);
		return tau_error_set(TAU_EINTERNAL,
		                     "%s: protobuf-c did not allocate the message first",
		                     desc->name);
	}
	rc = check_message(msg, 0);
	if (rc < 0) {
		arena_release(a);
		return rc;
	}
	*out = msg;
	return 0;
}

const uint8_t *tau_rpc_message_wire(const ProtobufCMessage *msg, size_t *len)
{
	const arena *a = arena_of(msg);

	*len = a->wire_len;
	return a->wire;
}

void tau_rpc_message_free(ProtobufCMessage *msg)
{
	arena *a;

	if (msg == NULL)
		return;
	a = arena_of(msg);
	if (a->magic != ARENA_MAGIC)
		abort(); /* not from tau_rpc_message_decode, or freed twice: a bug */
	arena_release(a);
}
