/*
 * names.c - Kubernetes name and label syntax checks.
 *
 * Design: each grammar is a tiny hand-written scanner over a byte span (no
 * regex engine), and each check collects the same list of reasons that
 * apimachinery's validation returns, in the same order, joined with "; ".
 * The reasons are fixed strings so a caller (or a test) can compare them
 * with what an API server would say for the same input.
 */
#include "tau/names.h"

#include "tau/error.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Reasons, worded as apimachinery 1.32 words them (the double spaces are theirs). */
#define MSG_DNS1123_LABEL                                                                          \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "   \
	"and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "   \
	"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define MSG_DNS1123_SUBDOMAIN                                                                      \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "  \
	"or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "      \
	"regex used for validation is "                                                            \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define MSG_QUALIFIED_NAME                                                                         \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "   \
	"an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "  \
	"validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define MSG_QUALIFIED_NAME_SLASHES                                                                 \
	"a qualified name " MSG_QUALIFIED_NAME                                                     \
	" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
#define MSG_LABEL_VALUE                                                                            \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "   \
	"or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "      \
	"'my_value',  or '12345', regex used for validation is "                                   \
	"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define MSG_EMPTY "must be non-empty"

/* Longest quoted value shown in a message; longer values end in "...". */
#define QUOTE_MAX 160

/* Reasons gathered for one value; the stored error truncates anyway. */
struct reasons {
	char text[2 * TAU_ERROR_MSG_MAX];
	size_t len;
	unsigned count;
};

static void reasons_add(struct reasons *r, const char *prefix, const char *msg)
{
	int n;

	if (r->len >= sizeof(r->text) - 1)
		return;
	n = snprintf(r->text + r->len, sizeof(r->text) - r->len, "%s%s%s", r->count ? "; " : "",
	             prefix, msg);
	r->count++;
	if (n < 0)
		return;
	r->len += (size_t)n;
	if (r->len > sizeof(r->text) - 1)
		r->len = sizeof(r->text) - 1;
}

static void reasons_add_maxlen(struct reasons *r, const char *prefix, int max)
{
	char msg[64];

	snprintf(msg, sizeof(msg), "must be no more than %d characters", max);
	reasons_add(r, prefix, msg);
}

const char *tau_names_quote(char *out, size_t cap, const char *p, size_t len, bool quotes)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	assert(cap >= 8);
	if (quotes)
		out[o++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		char esc[4];
		size_t n = 0;

		if (quotes && (c == '"' || c == '\\')) {
			esc[n++] = '\\';
			esc[n++] = (char)c;
		} else if (c == '\t' || c == '\n' || c == '\r') {
			esc[n++] = '\\';
			esc[n++] = c == '\t' ? 't' : (c == '\n' ? 'n' : 'r');
		} else if (c < 0x20 || c >= 0x7f) {
			esc[n++] = '\\';
			esc[n++] = 'x';
			esc[n++] = hex[c >> 4];
			esc[n++] = hex[c & 0xf];
		} else {
			esc[n++] = (char)c;
		}
		/* Keep room for the escape, `..."` and the NUL. */
		if (o + n + 5 > cap) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(out + o, esc, n);
		o += n;
	}
	if (quotes)
		out[o++] = '"';
	out[o] = '\0';
	return out;
}

static int fail(const char *value, const struct reasons *r)
{
	char quoted[QUOTE_MAX];

	tau_names_quote(quoted, sizeof(quoted), value, strlen(value), true);
	return tau_error_set(TAU_EINVAL, "%s: %s", quoted, r->text);
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..len). */
static bool match_dns_label(const char *s, size_t len)
{
	if (len == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
		return false;
	for (size_t i = 1; i + 1 < len; i++) {
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	}
	return true;
}

/* Dot-separated DNS labels; an empty part (leading, trailing, "..") fails. */
static bool match_dns_subdomain(const char *s, size_t len)
{
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i == len || s[i] == '.') {
			if (!match_dns_label(s + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..len). */
static bool match_qualified_name(const char *s, size_t len)
{
	if (len == 0 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (size_t i = 1; i + 1 < len; i++) {
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	}
	return true;
}

static void check_subdomain(struct reasons *r, const char *prefix, const char *s, size_t len)
{
	if (len > TAU_NAMES_DNS1123_SUBDOMAIN_MAX)
		reasons_add_maxlen(r, prefix, TAU_NAMES_DNS1123_SUBDOMAIN_MAX);
	if (!match_dns_subdomain(s, len))
		reasons_add(r, prefix, MSG_DNS1123_SUBDOMAIN);
}

/*
 * A name of at most max bytes that must match, else msg; empty_ok: "" needs no match (its
 * length alone is checked).
 */
static int check_capped(const char *s, int max, bool (*match)(const char *, size_t), bool empty_ok,
                        const char *msg)
{
	struct reasons r = {.len = 0};
	size_t len;

	assert(s != NULL);
	len = strlen(s);
	if (len > (size_t)max)
		reasons_add_maxlen(&r, "", max);
	if (!(empty_ok && len == 0) && !match(s, len))
		reasons_add(&r, "", msg);
	return r.count ? fail(s, &r) : 0;
}

int tau_names_check_dns1123_label(const char *s)
{
	return check_capped(s, TAU_NAMES_DNS1123_LABEL_MAX, match_dns_label, false,
	                    MSG_DNS1123_LABEL);
}

int tau_names_check_dns1123_subdomain(const char *s)
{
	struct reasons r = {.len = 0};

	assert(s != NULL);
	check_subdomain(&r, "", s, strlen(s));
	return r.count ? fail(s, &r) : 0;
}

int tau_names_check_label_key(const char *s)
{
	struct reasons r = {.len = 0};
	const char *slash;
	const char *name = s;
	size_t name_len;

	assert(s != NULL);
	slash = strchr(s, '/');
	if (slash != NULL) {
		if (strchr(slash + 1, '/') != NULL) {
			/* Kubernetes gives this one reason alone. */
			reasons_add(&r, "", MSG_QUALIFIED_NAME_SLASHES);
			return fail(s, &r);
		}
		if (slash == s)
			reasons_add(&r, "prefix part ", MSG_EMPTY);
		else
			check_subdomain(&r, "prefix part ", s, (size_t)(slash - s));
		name = slash + 1;
	}
	name_len = strlen(name);
	if (name_len == 0)
		reasons_add(&r, "name part ", MSG_EMPTY);
	else if (name_len > TAU_NAMES_LABEL_KEY_NAME_MAX)
		reasons_add_maxlen(&r, "name part ", TAU_NAMES_LABEL_KEY_NAME_MAX);
	if (!match_qualified_name(name, name_len))
		reasons_add(&r, "name part ", MSG_QUALIFIED_NAME);
	return r.count ? fail(s, &r) : 0;
}

int tau_names_check_label_value(const char *s)
{
	return check_capped(s, TAU_NAMES_LABEL_VALUE_MAX, match_qualified_name, true,
	                    MSG_LABEL_VALUE);
}
