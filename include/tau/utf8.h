/*
 * tau/utf8.h - reading UTF-8 one character at a time.
 *
 * Whole-string validity is tau_rpc_utf8_valid (tau/rpc.h, the wire rule);
 * this header is for callers that walk bytes and need to know where the
 * next character ends, such as repairing text from an untrusted source.
 */
#ifndef TAU_UTF8_H
#define TAU_UTF8_H

#include <stddef.h>

/**
 * Bytes of the valid UTF-8 sequence that starts at `s` (at most `len` bytes are looked at):
 * 1 for ASCII, 2 to 4 for a well-formed multi-byte character, 0 when none starts there.
 */
size_t tau_utf8_sequence(const char *s, size_t len);

#endif /* TAU_UTF8_H */
