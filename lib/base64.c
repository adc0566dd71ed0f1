/*
 * base64.c - one base64 character's value.
 *
 * The one idea: the kubeconfig's standard base64 and a JWT's base64url read
 * their characters through the same table of ranges; each decoder keeps its
 * own rules for padding, white space and errors.
 */
#include "tau/base64.h"

#include <stdbool.h>

int tau_base64_value(unsigned char c, bool url_too)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || (url_too && c == '-'))
		return 62;
	if (c == '/' || (url_too && c == '_'))
		return 63;
	return -1;
}
