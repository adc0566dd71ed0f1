/*
 * tau/base64.h - the value of one base64 character, in the standard alphabet
 * (RFC 4648 section 4) and, where asked, the URL-safe one (section 5) too.
 */
#ifndef TAU_BASE64_H
#define TAU_BASE64_H

#include <stdbool.h>

/**
 * The 6-bit value of `c`: A-Z a-z 0-9 + / are 0..63; with `url_too`, '-' and
 * '_' are 62 and 63 as well.  @return -1 for any other character ('=' included).
 */
int tau_base64_value(unsigned char c, bool url_too);

#endif /* TAU_BASE64_H */
