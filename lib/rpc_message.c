/*
 * rpc_message.c - decoding and checking protobuf-c messages for the gRPC layer.
 *
 * protobuf-c accepts any bytes in a `string` field; Python, Go and Java clients reject the
 * whole message when a string is not UTF-8. So every message is walked after decoding (and
 * before sending) through its descriptor, and a bad string is refused at our boundary rather
 * than passed on to break someone else's. Everything here is pure: bytes in, value out.
 */
#include "tau/rpc.h"

#include "tau/error.h"

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

int tau_rpc_message_decode(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
                           const uint8_t *data, size_t len, size_t max_len)
{
	ProtobufCMessage *msg;
	int rc;

	if (len > max_len)
		return tau_error_set(TAU_ETOOBIG, "%s: message of %zu bytes exceeds the cap of %zu",
		                     desc->name, len, max_len);
	msg = protobuf_c_message_unpack(desc, NULL, len, data);
	if (msg == NULL)
		return tau_error_set(TAU_EINVAL, "%s: malformed protobuf (%zu bytes)", desc->name,
		                     len);
	rc = check_message(msg, 0);
	if (rc < 0) {
		protobuf_c_message_free_unpacked(msg, NULL);
		return rc;
	}
	*out = msg;
	return 0;
}

void tau_rpc_message_free(ProtobufCMessage *msg)
{
	if (msg != NULL)
		protobuf_c_message_free_unpacked(msg, NULL);
}
