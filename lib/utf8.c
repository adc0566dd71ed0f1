/*
 * utf8.c - the length of the UTF-8 character at a position, checked with the
 * wire's validity rule (no overlong forms, no surrogates, nothing past U+10FFFF).
 */
#include "tau/utf8.h"

#include "tau/rpc.h"

size_t tau_utf8_sequence(const char *s, size_t len)
{
	unsigned char c;
	size_t n;

	if (len == 0)
		return 0;
	c = (unsigned char)s[0];
	n = c < 0x80             ? 1
	    : (c & 0xE0) == 0xC0 ? 2
	    : (c & 0xF0) == 0xE0 ? 3
	    : (c & 0xF8) == 0xF0 ? 4
	                         : 0;
	if (n == 0 || n > len || !tau_rpc_utf8_valid(s, n))
		return 0;
	return n;
}
